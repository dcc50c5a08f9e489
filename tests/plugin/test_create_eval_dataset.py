"""From a bare skill: `skilleval create-eval-dataset` and `pytest --skill-eval SKILL --autopilot`, with the drafting
model played by the scripted model server (real HTTP through litellm). A valid reply is written (or run), a reply
that is not JSON, a case the dataset reader rejects and a refusal each end in one line with nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.test_cli import assert_one_line_reason, skilleval
from tests.plugin.test_judge_runs import _script
from tests.support import FIXTURES, LOCAL_REPLAY, SkillProject

MODEL = "drafter"
ASKED = "You draft evaluation cases"
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


def bare_skill(root: Path, name: str = "greeter") -> Path:
    skill = root / name
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: writes greetings\n---\n# {name}\nWrite `Hello, NAME!` to a file.\n"
    )
    return skill


@pytest.fixture
def drafter(monkeypatch: pytest.MonkeyPatch, scripted_model: Any):
    """Start the scripted server with the given replies for the drafting model and point the LLM settings at it."""

    def start(*replies: dict[str, Any]) -> Any:
        drafts = [{**reply, "match": ASKED} for reply in replies]
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


def test_full_asks_for_a_covering_set_with_negative_controls(tmp_path: Path, drafter: Any):
    server = drafter({"text": json.dumps(FULL)})
    skill = bare_skill(tmp_path)
    done = skilleval("create-eval-dataset", skill, "--full")
    assert done.returncode == 0, done.stderr
    written = json.loads((skill / "evals" / "evals.json").read_text())
    assert [case["expected_skill"] for case in written["evals"]] == ["greeter", "greeter", None]
    assert "3 case(s), 1 negative control(s)" in done.stdout
    assert "near-miss negative controls" in json.dumps(server.requests[0].body)
    validated = skilleval("validate", skill)
    assert validated.returncode == 0, validated.stdout + validated.stderr


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ({"text": "Sure! I would suggest testing greetings."}, "reply is not one JSON document"),
        (
            {"text": json.dumps({"evals": [{**STARTER["evals"][0], "id": "bad id/with slash"}]})},
            "the drafted dataset fails validation",
        ),
        ({"refusal": "I can't help with that."}, "refused: I can't help with that."),
        ({"text": json.dumps({"evals": [{"id": "x", "prompt": "hi"}]})}, "field 'expected_output'"),
        ({"status": 500, "message": "the model is down"}, "failed: HTTP 500"),
    ],
    ids=["not-json", "invalid-case", "refusal", "missing-field", "http-500"],
)
def test_a_bad_reply_is_one_line_and_nothing_is_written(tmp_path: Path, drafter: Any, reply: dict, reason: str):
    drafter(reply)
    skill = bare_skill(tmp_path)
    done = skilleval("create-eval-dataset", skill)
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
    assert "skilleval: greeter: 1 trials planned (1 cases x 1 agents x 1 arms x 1 attempts)" in out
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
    run = skill_project.run(str(skill), "--autopilot", *LOCAL_REPLAY)
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    assert f"skilleval --autopilot: {skill}: the drafting model's reply is not one JSON document" in run.stderr.str()


def test_without_autopilot_nothing_to_run_names_both_commands(skill_project: SkillProject):
    skill = bare_skill(skill_project.root / "skills")
    run = skill_project.run(str(skill), *LOCAL_REPLAY)
    out = " ".join(run.stdout.str().split())
    assert f"skilleval create-eval-dataset {skill}" in out
    assert f"pytest --skill-eval {skill} --autopilot" in out
