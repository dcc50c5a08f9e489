"""From a bare skill: `skilleval create-eval-dataset` and `pytest --skill-eval SKILL --autopilot`, with the drafting
model played by the scripted model server (real HTTP through litellm). A valid reply is written (or run), a reply
that is not JSON, a case the dataset reader rejects and a refusal each end in one line with nothing written. With
`--full` a second request drafts evals/triggers.json, which `skilleval validate` and `optimize-description` accept
as written; a bad trigger reply keeps the cases and writes no trigger set."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.authoring.cli import main as skilleval_main
from pytest_skilleval.skill.triggers import load_trigger_set
from tests.plugin.test_cli import assert_one_line_reason, skilleval
from tests.plugin.test_judge_runs import _script
from tests.support import FIXTURES, LOCAL_REPLAY, SkillProject, bash_replay

MODEL = "drafter"
ASKED = "You draft evaluation cases"
ASKED_TRIGGERS = "You draft a trigger set"
# The same model also judges the trials an autopilot run makes: its judge prompts get judge answers.
JUDGING = _script(MODEL)["models"][MODEL]
STARTER = {
    "skill_name": "whatever-the-model-says",
    "evals": [
        {
            "id": "greet-ada",
            "prompt": "Greet Ada in /workspace/output/greeting.txt",
            "expected_output": "/workspace/output/greeting.txt says Hello, Ada!",
            "expected_skill": "greeter",
            "assertions": ["writes the greeting file"],
        }
    ],
}
FULL = {
    "skill_name": "greeter",
    "evals": [
        {**STARTER["evals"][0]},
        {
            "id": "greet-bob",
            "prompt": "Say hello to Bob in a file",
            "expected_output": "a file greeting Bob",
            "expected_skill": "greeter",
            "assertions": ["writes a file"],
        },
        {
            "id": "weather-negative",
            "prompt": "What is the weather in Paris?",
            "expected_output": "an answer that does not use the greeter skill",
            "expected_skill": None,
            "assertions": ["does not write a greeting"],
        },
    ],
}


SHOULD = ["Greet Ada in a file", "It is Barbara's first day, welcome her", "Say hi to Carl", "Write Dee a hello note"]
SHOULD_NOT = ["Write a hello world program in C", "Write a goodbye note", "Translate hello", "Explain greetings"]
TRIGGERS = [{"id": f"should-{n}", "query": q, "should_trigger": True} for n, q in enumerate(SHOULD, 1)] + [
    {"id": f"near-miss-{n}", "query": q, "should_trigger": False, "note": "near miss"}
    for n, q in enumerate(SHOULD_NOT, 1)
]


def bare_skill(root: Path, name: str = "greeter") -> Path:
    skill = root / name
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: writes greetings\n---\n# {name}\nWrite `Hello, NAME!` to a file.\n"
    )
    return skill


@pytest.fixture
def skilleval_here(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """`skilleval` run through its own `main` in this process, its exit status and output as a subprocess's: the
    same command and the same real HTTP to the scripted server, without paying a fresh interpreter and litellm
    import per variant. One variant of each failure still runs the console script as a subprocess."""

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        monkeypatch.setenv("PYTHON_DOTENV_DISABLED", "1")  # main sets it for the process: undone after the test
        capsys.readouterr()
        status = skilleval_main([str(arg) for arg in args])
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["skilleval", *map(str, args)], status, out, err)

    return run


def runner(via: str, skilleval_here: Any) -> Any:
    """The console script as a subprocess (the end-to-end wiring), or `main` in this process (one variant's reply)."""
    return skilleval if via == "subprocess" else skilleval_here


@pytest.fixture
def drafter(monkeypatch: pytest.MonkeyPatch, scripted_model: Any):
    """Start the scripted server with the given replies for the drafting model and point the LLM settings at it."""

    def start(*replies: dict[str, Any], triggers: tuple[dict[str, Any], ...] = ()) -> Any:
        drafts = [{**reply, "match": ASKED} for reply in replies]
        drafts += [{**reply, "match": ASKED_TRIGGERS} for reply in triggers]
        server = scripted_model({"models": {MODEL: [*drafts, *JUDGING]}})
        for name in ("LLM_JUDGE_MODEL", "SKILL_EVAL_JUDGE_MODEL", "SKILL_EVAL_LLM_PROVIDER", "OPENAI_BASE_URL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("SKILL_EVAL_LLM_API_KEY", "scripted-drafting-key-01")
        monkeypatch.setenv("SKILL_EVAL_LLM_MODEL", f"openai/{MODEL}")
        return server

    return start


def test_a_valid_starter_reply_becomes_evals_json(tmp_path: Path, drafter: Any):
    server = drafter({"text": "Here it is:\n```json\n" + json.dumps(STARTER) + "\n```"})
    skill = bare_skill(tmp_path)
    done = skilleval("create-eval-dataset", skill)
    assert done.returncode == 0, done.stderr
    written = json.loads((skill / "evals" / "evals.json").read_text())
    assert written["skill_name"] == "greeter"  # the folder's name, whatever the model said
    assert [case["id"] for case in written["evals"]] == ["greet-ada"]
    assert "1 case(s), 0 negative control(s)" in done.stdout
    (request,) = server.requests
    asked = json.dumps(request.body)
    assert "Write `Hello, NAME!` to a file." in asked and "exactly ONE starter case" in asked
    assert "scripted-drafting-key" not in done.stdout + done.stderr


def asked(server: Any, marker: str) -> list[Any]:
    return [request for request in server.requests if marker in json.dumps(request.body)]


def test_full_drafts_a_covering_set_and_a_trigger_set(tmp_path: Path, drafter: Any):
    server = drafter({"text": json.dumps(FULL)}, triggers=({"text": "```json\n" + json.dumps(TRIGGERS) + "\n```"},))
    skill = bare_skill(tmp_path)
    done = skilleval("create-eval-dataset", skill, "--full")
    assert done.returncode == 0, done.stderr
    written = json.loads((skill / "evals" / "evals.json").read_text())
    assert [case["expected_skill"] for case in written["evals"]] == ["greeter", "greeter", None]
    assert "3 case(s), 1 negative control(s)" in done.stdout
    assert "near-miss negative controls" in json.dumps(asked(server, ASKED)[0].body)
    (trigger_request,) = asked(server, ASKED_TRIGGERS)
    assert "near-miss should-not-trigger" in json.dumps(trigger_request.body)
    assert "Write `Hello, NAME!` to a file." in json.dumps(trigger_request.body)
    triggers = load_trigger_set(skill / "evals" / "triggers.json")  # the reader a run uses
    assert [(q.id, q.should_trigger, q.split) for q in triggers.queries] == [
        ("should-1", True, "train"),
        ("should-2", True, "test"),
        ("should-3", True, "train"),
        ("should-4", True, "test"),
        ("near-miss-1", False, "train"),
        ("near-miss-2", False, "test"),
        ("near-miss-3", False, "train"),
        ("near-miss-4", False, "test"),
    ]
    assert "8 trigger queries, 4 should-trigger and 4 should-not-trigger, 4 held out" in done.stdout
    assert f"skilleval optimize-description {skill}" in done.stdout
    validated = skilleval("validate", skill)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "scripted-drafting-key" not in done.stdout + done.stderr


def test_optimize_description_runs_on_the_drafted_trigger_set(tmp_path: Path, drafter: Any, skilleval_here: Any):
    """The drafted split is what the optimiser needs: it runs at once (the replay agent, no proposal asked) and
    scores the held-out queries."""
    drafter({"text": json.dumps(FULL)}, triggers=({"text": json.dumps(TRIGGERS)},))
    skill = bare_skill(tmp_path / "skills")
    assert skilleval_here("create-eval-dataset", skill, "--full").returncode == 0
    (skill / "evals" / "replays").mkdir()
    for query in TRIGGERS:  # the replay agent's recording per query: it never loads the skill
        (skill / "evals" / "replays" / f"{query['id']}.json").write_text(json.dumps(bash_replay("echo 144")))
    argv = [sys.executable, "-m", "pytest_skilleval.authoring.cli", "optimize-description", str(skill)]
    argv += ["--iterations", "0", "--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none"]
    done = subprocess.run(argv, cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    # Never loading the skill: the 2 held-out negatives are right, the 2 held-out positives wrong.
    assert "winner: candidate 0: train accuracy 0.50, held-out test accuracy 0.50" in done.stdout


BAD_TRIGGERS = [
    ({"text": "Here are some ideas: greet people."}, "trigger reply is not one JSON list"),
    (
        {"text": json.dumps([{**TRIGGERS[0], "shuold_trigger": True}, *TRIGGERS[1:]])},
        "the drafted trigger set fails validation: unknown field (did you mean 'should_trigger'?)",
    ),
    ({"refusal": "I won't."}, "refused: I won't."),
    ({"text": json.dumps(TRIGGERS[:6])}, "at least 4 should-trigger and 4 should-not-trigger queries"),
    ({"text": json.dumps([{**TRIGGERS[0], "id": "GREET-ADA"}, *TRIGGERS[1:]])}, "'GREET-ADA' has a case's id"),
]


@pytest.mark.parametrize(
    ("reply", "reason", "via"),
    [
        (reply, reason, "subprocess" if index == 0 else "in-process")
        for index, (reply, reason) in enumerate(BAD_TRIGGERS)
    ],
    ids=["not-json", "invalid", "refusal", "few", "case-id"],
)
def test_a_bad_trigger_reply_keeps_the_cases_and_writes_no_trigger_set(
    tmp_path: Path, drafter: Any, skilleval_here: Any, reply: dict, reason: str, via: str
):
    drafter({"text": json.dumps(FULL)}, triggers=(reply,))
    skill = bare_skill(tmp_path)
    done = runner(via, skilleval_here)("create-eval-dataset", skill, "--full")
    assert done.returncode == 1
    evals = skill / "evals" / "evals.json"
    prefix = f"skilleval create-eval-dataset: {evals} was written and is kept; {skill / 'evals' / 'triggers.json'}"
    assert_one_line_reason(done, prefix + " was not: ")
    assert reason in done.stderr and "run the same command again to draft the trigger set alone" in done.stderr
    assert "3 case(s), 1 negative control(s)" in done.stdout
    assert [case["id"] for case in json.loads(evals.read_text())["evals"]] == [
        "greet-ada",
        "greet-bob",
        "weather-negative",
    ]
    assert sorted(p.name for p in (skill / "evals").iterdir()) == ["evals.json"]


def test_a_rerun_drafts_the_missing_trigger_set_alone(tmp_path: Path, drafter: Any, skilleval_here: Any):
    server = drafter({"text": json.dumps(FULL)}, triggers=({"text": "not json"}, {"text": json.dumps(TRIGGERS)}))
    skill = bare_skill(tmp_path)
    assert skilleval_here("create-eval-dataset", skill, "--full").returncode == 1
    kept = (skill / "evals" / "evals.json").read_text()
    done = skilleval_here("create-eval-dataset", skill, "--full")
    assert done.returncode == 0, done.stderr
    assert (skill / "evals" / "evals.json").read_text() == kept
    assert "case(s)" not in done.stdout and "8 trigger queries" in done.stdout
    assert len(asked(server, ASKED)) == 1 and len(asked(server, ASKED_TRIGGERS)) == 2
    assert len(load_trigger_set(skill / "evals" / "triggers.json").split("test")) == 4
    again = skilleval_here("create-eval-dataset", skill, "--full")  # both there now: nothing to draft
    assert again.returncode == 1 and "already exists; nothing written" in again.stderr


def test_an_existing_trigger_set_is_kept_and_an_invalid_one_is_an_error(
    tmp_path: Path, drafter: Any, skilleval_here: Any
):
    server = drafter({"text": json.dumps(FULL)}, triggers=({"text": json.dumps(TRIGGERS), "repeat": "forever"},))
    skill = bare_skill(tmp_path)
    (skill / "evals").mkdir()
    triggers = skill / "evals" / "triggers.yaml"
    triggers.write_text("- {query: greet Ada, should_trigger: true}\n- {query: a bad one, should_trigger: maybe}\n")
    broken = skilleval_here("create-eval-dataset", skill, "--full")
    assert broken.returncode == 1
    assert_one_line_reason(broken, "skilleval create-eval-dataset: existing trigger set is invalid and is not replaced")
    assert "field 'should_trigger'" in broken.stderr
    assert server.requests == [] and sorted(p.name for p in (skill / "evals").iterdir()) == ["triggers.yaml"]

    mine = "- {query: greet Ada, should_trigger: true}\n"
    triggers.write_text(mine)
    done = skilleval_here("create-eval-dataset", skill, "--full")
    assert done.returncode == 0, done.stderr
    assert triggers.read_text() == mine and not (skill / "evals" / "triggers.json").exists()
    assert "3 case(s)" in done.stdout and "trigger queries" not in done.stdout
    assert asked(server, ASKED_TRIGGERS) == []


@pytest.mark.parametrize(
    ("reply", "reason", "via"),
    [
        ({"text": "Sure! I would suggest testing greetings."}, "reply is not one JSON document", "in-process"),
        (
            {"text": json.dumps({"evals": [{**STARTER["evals"][0], "id": "bad id/with slash"}]})},
            "the drafted dataset fails validation",
            "in-process",
        ),
        ({"refusal": "I can't help with that."}, "refused: I can't help with that.", "in-process"),
        ({"text": json.dumps({"evals": [{"id": "x", "prompt": "hi"}]})}, "field 'expected_output'", "in-process"),
        # litellm's banner is printed on its errors: the console script proves the one line holds on an HTTP error.
        ({"status": 500, "message": "the model is down"}, "failed: HTTP 500", "subprocess"),
    ],
    ids=["not-json", "invalid-case", "refusal", "missing-field", "http-500"],
)
def test_a_bad_reply_is_one_line_and_nothing_is_written(
    tmp_path: Path, drafter: Any, skilleval_here: Any, reply: dict, reason: str, via: str
):
    drafter(reply)
    skill = bare_skill(tmp_path)
    done = runner(via, skilleval_here)("create-eval-dataset", skill)
    assert done.returncode == 1
    assert_one_line_reason(done, "skilleval create-eval-dataset: ")
    assert reason in done.stderr
    assert "Give Feedback" not in done.stdout  # litellm's help banner, printed on every error unless suppressed
    assert not (skill / "evals").exists()


def test_an_existing_source_is_never_replaced(tmp_path: Path, drafter: Any):
    server = drafter({"text": json.dumps(STARTER), "repeat": "forever"})
    skill = bare_skill(tmp_path)
    (skill / "evals").mkdir()
    valid = json.dumps({"skill_name": "greeter", "evals": [{"id": "mine", "prompt": "p", "expected_output": "o"}]})
    (skill / "evals" / "evals.json").write_text(valid)
    done = skilleval("create-eval-dataset", skill)
    assert done.returncode == 1 and "already exists" in done.stderr
    assert (skill / "evals" / "evals.json").read_text() == valid

    (skill / "evals" / "evals.json").write_text('{"evals": [{"id": "mine"}]}')
    broken = skilleval("create-eval-dataset", skill)
    assert broken.returncode == 1
    assert_one_line_reason(broken, "skilleval create-eval-dataset: existing source is invalid and is not replaced")
    assert (skill / "evals" / "evals.json").read_text() == '{"evals": [{"id": "mine"}]}'
    assert server.requests == []  # nothing was asked of the model


def test_without_a_model_the_fix_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("LLM_JUDGE_MODEL", "SKILL_EVAL_JUDGE_MODEL", "SKILL_EVAL_LLM_MODEL", "SKILL_EVAL_LLM_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    done = skilleval("create-eval-dataset", bare_skill(tmp_path))
    assert done.returncode == 1
    assert_one_line_reason(done, "skilleval create-eval-dataset: no drafting model: pass --model")


def test_a_provider_key_that_is_not_set_is_named_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, skilleval_here: Any
):
    """A model whose provider needs a key, with no key set: one line naming the variable, no request, no file."""
    for name in ("OPENAI_API_KEY", "SKILL_EVAL_LLM_API_KEY", "SKILL_EVAL_LLM_BASE_URL", "SKILL_EVAL_LLM_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    skill = bare_skill(tmp_path)
    done = skilleval_here("create-eval-dataset", skill, "--model", "openai/gpt-4o")
    assert done.returncode == 1
    assert_one_line_reason(
        done,
        "skilleval create-eval-dataset: the drafting model openai/gpt-4o needs OPENAI_API_KEY: set it "
        "(or SKILL_EVAL_LLM_API_KEY), or choose another drafting model",
    )
    assert not (skill / "evals").exists()


def _bare_project_skill(project: SkillProject) -> Path:
    skill = bare_skill(project.root / "skills")
    (skill / "evals" / "replays").mkdir(parents=True)  # the replay agent's recording for the case the model drafts
    shutil.copy2(FIXTURES / "replays" / "noop.json", skill / "evals" / "replays" / "greet-ada.json")
    return skill


def test_autopilot_drafts_into_the_results_folder_runs_it_and_says_how_to_keep_it(
    skill_project: SkillProject, drafter: Any
):
    server = drafter({"text": json.dumps(STARTER)})
    skill = _bare_project_skill(skill_project)
    before = sorted(p.relative_to(skill) for p in skill.rglob("*"))
    run = skill_project.run(str(skill), "--autopilot", *LOCAL_REPLAY, "--skip-baseline")
    run.assert_outcomes(passed=1)
    assert sorted(p.relative_to(skill) for p in skill.rglob("*")) == before  # the skill folder is untouched
    (draft,) = (skill_project.root / "results" / "greeter" / "autopilot").glob("*/greeter/evals/evals.json")
    assert [case["id"] for case in json.loads(draft.read_text())["evals"]] == ["greet-ada"]
    out = " ".join(run.stdout.str().split())
    assert f"autopilot drafted one starter case (greet-ada, model openai/{MODEL}) for {skill}" in out
    assert f"cp {draft} {skill / 'evals' / 'evals.json'}" in out
    assert "DeprecationWarning" not in run.stdout.str() + run.stderr.str()  # litellm's import, in pytest_configure
    result = skill_project.result_json("greeter")
    assert [trial["case"] for trial in result["trials"]] == ["greet-ada"]
    assert len([r for r in server.requests if ASKED in json.dumps(r.body)]) == 1


def test_autopilot_runs_under_xdist_with_results_in_the_skill_folder(skill_project: SkillProject, drafter: Any):
    """The default results folder is the skill's evals/results/, so the drafted copy sits inside the skill it copies:
    the plan is the copy's (1 trial, not the bare skill's 0), and xdist workers, which start from the command line
    as typed, run the copy too."""
    drafter({"text": json.dumps(STARTER)})
    skill = _bare_project_skill(skill_project)
    argv = ["--skill-eval", "-p", "no:cacheprovider", str(skill), "--autopilot", *LOCAL_REPLAY, "--skip-baseline"]
    run = skill_project.pytester.runpytest_subprocess(*argv, "-n", "2", timeout=300)
    run.assert_outcomes(passed=1)
    out = " ".join(run.stdout.str().split())
    assert "skilleval: greeter: 1 trial planned (1 case x 1 agent x 1 arm x 1 attempt)" in out
    (draft,) = (skill / "evals" / "results" / "autopilot").glob("*/greeter/evals/evals.json")
    assert f"autopilot drafted one starter case (greet-ada, model openai/{MODEL}) for {skill} into {draft}" in out


def test_autopilot_leaves_a_skill_with_a_dataset_alone(skill_project: SkillProject, drafter: Any):
    server = drafter({"text": json.dumps(STARTER), "repeat": "forever"})
    skill_project.copy_hello_skill(cases=["explicit-greeting"])
    run = skill_project.run(str(skill_project.root / "skills" / "hello-skill"), "--autopilot", *LOCAL_REPLAY)
    run.assert_outcomes(passed=2)
    assert not (skill_project.root / "results" / "hello-skill" / "autopilot").exists()
    assert "autopilot drafted" not in run.stdout.str()
    assert not [r for r in server.requests if ASKED in json.dumps(r.body)]


def test_a_failed_autopilot_draft_stops_the_run_in_one_line(skill_project: SkillProject, drafter: Any):
    drafter({"text": "no JSON here"})
    skill = _bare_project_skill(skill_project)
    before = sorted(p.relative_to(skill) for p in skill.rglob("*"))
    run = skill_project.run(str(skill), "--autopilot", *LOCAL_REPLAY)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert f"skilleval --autopilot: {skill}: the drafting model's reply is not one JSON document" in run.stderr.str()
    # Nothing is left behind: not the half-made copy, nor the results folders made for it.
    assert sorted(p.relative_to(skill) for p in skill.rglob("*")) == before
    assert not (skill_project.root / "results").exists()


def test_autopilot_without_a_model_names_pytests_flag(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch):
    """Under pytest the drafting model is `--judge-model` (pytest has no `--model`, which is `skilleval`'s)."""
    for name in ("LLM_JUDGE_MODEL", "SKILL_EVAL_JUDGE_MODEL", "SKILL_EVAL_LLM_MODEL", "SKILL_EVAL_LLM_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    skill = _bare_project_skill(skill_project)
    run = skill_project.run(str(skill), "--autopilot", *LOCAL_REPLAY)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert f"skilleval --autopilot: {skill}: no drafting model: pass --judge-model, or set" in run.stderr.str()


def test_without_autopilot_nothing_to_run_names_both_commands(skill_project: SkillProject):
    skill = bare_skill(skill_project.root / "skills")
    run = skill_project.run(str(skill), *LOCAL_REPLAY)
    out = " ".join(run.stdout.str().split())
    assert f"skilleval create-eval-dataset {skill}" in out
    assert f"pytest --skill-eval {skill} --autopilot" in out


def test_a_folder_of_bare_skills_names_both_commands_not_no_skill_here(skill_project: SkillProject):
    skills = skill_project.root / "skills"
    for name in ("farewell", "greeter"):
        bare_skill(skills, name)
    run = skill_project.run(str(skills), *LOCAL_REPLAY)
    out = " ".join(run.stdout.str().split())
    assert "no skill here" not in out
    assert f"{skills / 'farewell'}, {skills / 'greeter'}: SKILL.md but no evals/ folder, so nothing to run" in out
    assert f"pytest --skill-eval {skills} --autopilot" in out and "skilleval create-eval-dataset SKILL_DIR" in out


def test_autopilot_drafts_a_starter_case_for_each_bare_skill_in_a_folder(skill_project: SkillProject, drafter: Any):
    """A folder of skills: each bare one gets its own drafted copy in its results folder (the default, inside the
    skill's evals/results/), a skill with a dataset runs as it is, and the copies are collected once each, under
    xdist too."""
    farewell = {
        "skill_name": "farewell",
        "evals": [{**STARTER["evals"][0], "id": "bye-bob", "prompt": "Say bye to Bob", "expected_skill": "farewell"}],
    }
    server = drafter(
        {"text": json.dumps(STARTER), "match_regex": "name: greeter"},
        {"text": json.dumps(farewell), "match_regex": "name: farewell"},
    )
    greeter = _bare_project_skill(skill_project)
    bye = bare_skill(skill_project.root / "skills", "farewell")
    (bye / "evals" / "replays").mkdir(parents=True)
    shutil.copy2(FIXTURES / "replays" / "noop.json", bye / "evals" / "replays" / "bye-bob.json")
    skill_project.copy_hello_skill(cases=["explicit-greeting"])
    sources = {s: sorted(p.relative_to(s) for p in s.rglob("*")) for s in (greeter, bye)}
    argv = ["--skill-eval", "-p", "no:cacheprovider", "skills", "--autopilot", *LOCAL_REPLAY, "--skip-baseline"]
    run = skill_project.pytester.runpytest_subprocess(*argv, "-n", "2", timeout=300)  # workers swap as the controller
    run.assert_outcomes(passed=3)
    out = " ".join(run.stdout.str().split())
    for skill, case in ((greeter, "greet-ada"), (bye, "bye-bob")):
        (draft,) = (skill / "evals" / "results" / "autopilot").glob(f"*/{skill.name}/evals/evals.json")
        assert f"autopilot drafted one starter case ({case}, model openai/{MODEL}) for {skill} into {draft}" in out
        outside_results = sorted(p.relative_to(skill) for p in skill.rglob("*") if "results" not in p.parts)
        assert outside_results == sources[skill]  # the skill's own files are untouched
    assert len([r for r in server.requests if ASKED in json.dumps(r.body)]) == 2


def test_the_offline_full_example_in_the_docs_drafts_both_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scripted_model: Any
):
    """docs/datasets.md's `--full` example, as written: its script, served by the scripted model server, drafts a
    covering set and a trigger set that the run's readers accept."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "datasets.md").read_text()
    block = text[text.index("cat > draft-full.json <<'JSON'\n") :]
    script = json.loads(block.split("\n", 1)[1].split("\nJSON\n", 1)[0])
    assert "create-eval-dataset ./my-skill --full --model openai/drafter" in block
    server = scripted_model(script)
    for name in ("LLM_JUDGE_MODEL", "SKILL_EVAL_JUDGE_MODEL", "SKILL_EVAL_LLM_PROVIDER", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("SKILL_EVAL_LLM_API_KEY", "x")
    skill = bare_skill(tmp_path, "my-skill")
    done = skilleval("create-eval-dataset", "./my-skill", "--full", "--model", "openai/drafter", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 case(s), 1 negative control(s)" in done.stdout
    queries = load_trigger_set(skill / "evals" / "triggers.json").queries
    held_out = [(q.should_trigger, q.split == "test") for q in queries]  # skilleval's split: 2 of 4 of each kind
    assert sorted(held_out) == sorted((kind, test) for kind in (True, False) for test in (True, True, False, False))
    assert skilleval("validate", skill).returncode == 0
