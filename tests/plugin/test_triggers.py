"""Trigger sets (evals/triggers.json): collected as items, run with the skill among its siblings, scored as
precision and recall; offline with the replay agent, whose replays decide which skill each query loads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_skilleval.skill.triggers import SCHEMA_PATH, render_schema
from tests.support import LOCAL_REPLAY, SkillProject, bash_replay, simple_entries

DEMO_SIBLING = Path(__file__).parents[2] / "examples" / "farewell-skill"
READ_OWN = "cat {skills_dir}/demo/SKILL.md"
READ_SIBLING = "cat {skills_dir}/other/SKILL.md"
NOTHING = "echo 144"

# (id, should_trigger, what the replay does): 3 should-trigger queries, 2 of them loaded (one miss, taken by the
# sibling); 3 should-not queries, 1 of them loaded (a false trigger). Precision 2/3, recall 2/3, accuracy 4/6.
QUERIES = [
    ("greet-ada", True, READ_OWN),
    ("greet-bob", True, READ_OWN),
    ("greet-cy", True, READ_SIBLING),
    ("farewell", False, READ_SIBLING),
    ("hello-world", False, READ_OWN),
    ("arithmetic", False, NOTHING),
]


def _selected(result: pytest.RunResult) -> list[str]:
    return sorted(line.split("::")[1].strip() for line in result.outlines if "::" in line)


def trigger_skill(project: SkillProject, queries: list[tuple[str, bool, str]] = QUERIES, **extra: Any) -> Path:
    """Skill `demo` with only a trigger set (and replays), next to a sibling skill `other` (a distractor)."""
    skill = project.root / "skills" / "demo"
    (skill / "evals" / "replays").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: greets people\n---\n# demo\n")
    sibling = project.root / "skills" / "other"
    sibling.mkdir()
    (sibling / "SKILL.md").write_text("---\nname: other\ndescription: says goodbye\n---\n# other\n")
    entries = [
        {"id": qid, "query": f"please handle {qid}", "should_trigger": should, **extra} for qid, should, _ in queries
    ]
    (skill / "evals" / "triggers.json").write_text(json.dumps(entries))
    for qid, _, command in queries:
        (skill / "evals" / "replays" / f"{qid}.json").write_text(json.dumps(bash_replay(command)))
    return skill


def test_skill_creator_shape_collects_one_item_per_query_agent_and_attempt(skill_project: SkillProject) -> None:
    skill = trigger_skill(skill_project)
    plain = [{"query": "say hello to Ada", "should_trigger": True}, {"query": "what is 2+2", "should_trigger": False}]
    (skill / "evals" / "triggers.json").write_text(json.dumps(plain))
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "--n-attempts", "2", subprocess=False)
    assert _selected(result) == ["query-1[replay-1]", "query-1[replay-2]", "query-2[replay-1]", "query-2[replay-2]"]
    assert "skills/demo/evals/triggers.json::query-1[replay-1]" in result.stdout.str()


@pytest.mark.parametrize("name", ["triggers.jsonl", "triggers.yaml"])
def test_jsonl_and_yaml_trigger_sets(skill_project: SkillProject, name: str) -> None:
    skill = trigger_skill(skill_project)
    (skill / "evals" / "triggers.json").unlink()
    rows = [{"id": "a", "query": "greet Ada", "should_trigger": True, "split": "train", "note": "plain"}]
    text = "\n".join(json.dumps(row) for row in rows) if name.endswith("jsonl") else yaml.safe_dump(rows)
    (skill / "evals" / name).write_text(text)
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    assert _selected(result) == ["a[replay-1]"]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (
            [{"id": "x", "query": "hi", "should_trigger": "yes"}],
            "triggers.json: entry 0 (id 'x'): field 'should_trigger': must be true or false",
        ),
        (
            [{"query": "hi", "shuold_trigger": True}],
            "triggers.json: entry 0: field 'shuold_trigger': unknown field (did you mean 'should_trigger'?)",
        ),
        ([{"id": "x", "query": "hi"}], "triggers.json: entry 0 (id 'x'): field 'should_trigger': is required"),
        (
            [{"id": "x", "query": "hi", "should_trigger": True, "split": "dev"}],
            "triggers.json: entry 0 (id 'x'): field 'split': Input should be 'train' or 'test'",
        ),
        ({"query": "hi", "should_trigger": True}, "triggers.json: must be a list of"),
        ([], "triggers.json: the trigger set has no queries"),
        (
            [{"id": "a", "query": "hi", "should_trigger": True}, {"id": "A", "query": "ho", "should_trigger": False}],
            "triggers.json: entry 1 (id 'A'): field 'id': id 'A' is used by entry 0 too",
        ),
    ],
)
def test_a_bad_trigger_set_is_one_line_naming_file_entry_and_field(
    skill_project: SkillProject, entries: Any, message: str
) -> None:
    skill = trigger_skill(skill_project)
    (skill / "evals" / "triggers.json").write_text(json.dumps(entries))
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    lines = [line for line in result.outlines if "triggers.json:" in line and "ERROR" not in line]
    assert any(message in line for line in lines), result.outlines


def test_two_trigger_sets_are_refused(skill_project: SkillProject) -> None:
    skill = trigger_skill(skill_project)
    (skill / "evals" / "triggers.yaml").write_text("- {query: hi, should_trigger: true}\n")
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    assert "the skill already has a trigger set, triggers.json" in result.stdout.str()


def test_shipped_schema_is_current_and_accepts_both_shapes() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render_schema()
    schema = json.loads(render_schema())
    jsonschema.validate([{"query": "q", "should_trigger": True}], schema)
    jsonschema.validate([{"id": "a", "query": "q", "should_trigger": False, "split": "test", "files": []}], schema)
    demo = Path(__file__).parents[2] / "examples" / "hello-skill" / "evals" / "triggers.json"
    jsonschema.validate(json.loads(demo.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"query": "q"}], schema)


def test_marker_and_keyword_selection(skill_project: SkillProject) -> None:
    trigger_skill(skill_project)
    negatives = skill_project.run(
        "--collect-only", "-q", *LOCAL_REPLAY, "-m", "skilleval_trigger(should_trigger=False)", subprocess=False
    )
    assert _selected(negatives) == ["arithmetic[replay-1]", "farewell[replay-1]", "hello-world[replay-1]"]
    keyword = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "-k", "greet and not ada", subprocess=False)
    assert _selected(keyword) == ["greet-bob[replay-1]", "greet-cy[replay-1]"]


def _triggering(project: SkillProject) -> dict[str, Any]:
    document = project.result_json("demo")
    assert document["trials"] == []  # trigger items never join the case trials, dimensions or lift
    for agent in document["agents"].values():
        assert agent["with_skill"]["n_trials"] == 0 and agent["lift"]["overall"]["n_pairs"] == 0
    return document["triggering"]["replay"]


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_replayed_trigger_set_gives_the_precision_and_recall_its_replays_imply(
    skill_project: SkillProject, workers: tuple[str, ...]
) -> None:
    trigger_skill(skill_project)
    junit = skill_project.root / "junit.xml"
    result = skill_project.run(*LOCAL_REPLAY, *workers, "-v", f"--junitxml={junit}")
    result.assert_outcomes(passed=4, failed=2)
    triggering = _triggering(skill_project)
    assert triggering["precision"] == pytest.approx(2 / 3, abs=1e-4)
    assert triggering["recall"] == pytest.approx(2 / 3, abs=1e-4)
    assert triggering["f1"] == pytest.approx(2 / 3, abs=1e-4)
    assert triggering["accuracy"] == pytest.approx(4 / 6, abs=1e-4)
    assert triggering["missed"] == ["greet-cy"]
    assert triggering["false_triggers"] == ["hello-world"]
    assert triggering["missed_to"] == {"greet-cy": ["other"]}
    rates = {query["id"]: query for query in triggering["queries"]}
    assert [rates[qid]["trigger_rate"] for qid, _, _ in QUERIES] == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    assert rates["farewell"]["distractors_loaded"] == {"other": 1}
    assert rates["greet-ada"]["interval"] == pytest.approx([0.2065, 1.0], abs=1e-4)  # Wilson, 1 of 1
    low, high = triggering["intervals"]["precision"]
    assert 0.0 <= low <= 2 / 3 <= high <= 1.0
    output = result.stdout.str()
    assert "demo triggering (replay, 6 queries): precision 0.67" in output
    assert "missed: greet-cy (loaded other)" in output
    assert "false triggers: hello-world" in output
    assert "greet-cy [replay-1]: should trigger, but the agent did not load the skill; loaded instead: other" in output
    # A query's reason says what the agent did, never what a case expects (a should-not query passes unused).
    reasons = {trial["query"]: trial["reason"] for trial in triggering["trials"]}
    assert reasons["farewell"] == reasons["greet-cy"] == "Skill 'demo' was not used"
    assert "expects" not in output

    # The same figures in every published form: report.html (a chart per agent), BENCHMARK.md, JUnit properties.
    run_dir = sorted((skill_project.root / "results" / "demo").glob("2*/result.json"))[-1].parent
    report = (run_dir / "report.html").read_text()
    assert "Triggering: replay" in report and 'id="chart-triggers1"' in report
    assert "should not trigger" in report and "other (1)" in report
    # Rates and their intervals unsigned (a lift's interval is signed, a rate's is not), as the terminal prints them.
    section = report[report.index('<section class="triggering"') : report.index("<h3>Trigger trials")]
    assert "[0.2065, 1.0000]" in section and "[+" not in section, section
    card = (run_dir / "BENCHMARK.md").read_text()
    assert "| replay | 6 | 0.67 [" in card
    assert "- replay missed: `greet-cy`" in card and "- replay false triggers: `hello-world`" in card
    xml = junit.read_text()
    assert '<property name="skilleval.demo.replay.trigger_recall" value="0.6667"' in xml
    assert '<property name="skilleval.triggered" value="false"' in xml
    # `skilleval view` prints the trigger set's lines again, as the session printed them (a process of its own, as
    # a user runs it).
    view = subprocess.run(
        [sys.executable, "-m", "pytest_skilleval.authoring.cli", "view", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert view.returncode == 0, view.stderr
    start = output.index("demo triggering (replay")
    said = output[start : output.index("\n", output.index("false triggers: hello-world", start))]
    assert said in view.stdout, view.stdout


def test_last_failed_reruns_only_the_failed_queries(skill_project: SkillProject) -> None:
    trigger_skill(skill_project)
    cached = ("--skill-eval", *LOCAL_REPLAY, "--results-dir", str(skill_project.root / "results"))
    skill_project.pytester.runpytest_subprocess(*cached).assert_outcomes(passed=4, failed=2)
    rerun = skill_project.pytester.runpytest_subprocess(*cached, "--lf", "-v")
    rerun.assert_outcomes(failed=2)
    assert "triggers.json::greet-cy[replay-1] FAILED" in rerun.stdout.str()
    assert "triggers.json::hello-world[replay-1] FAILED" in rerun.stdout.str()


def test_distractor_skills_dir_replaces_the_siblings(skill_project: SkillProject) -> None:
    trigger_skill(skill_project, [("greet-cy", True, "cat {skills_dir}/elsewhere/SKILL.md")])
    pool = skill_project.root / "pool" / "elsewhere"
    pool.mkdir(parents=True)
    (pool / "SKILL.md").write_text("---\nname: elsewhere\ndescription: other work\n---\n")
    skill_project.run(*LOCAL_REPLAY, "--distractor-skills", str(pool.parent)).assert_outcomes(failed=1)
    triggering = _triggering(skill_project)
    assert triggering["missed_to"] == {"greet-cy": ["elsewhere"]}
    assert triggering["recall"] == 0.0
    assert triggering["precision"] is None  # nothing triggered: no precision to report, never a zero


def test_demo_trigger_set_runs_offline_with_its_sibling_as_distractor(skill_project: SkillProject) -> None:
    skill = skill_project.copy_hello_skill(triggers=True)
    shutil.copytree(DEMO_SIBLING, skill.parent / "farewell-skill")
    result = skill_project.run(*LOCAL_REPLAY, "-m", "skilleval_trigger", "-q")
    result.assert_outcomes(passed=7)
    out = result.stdout.str()
    assert "hello-skill triggering (replay, 7 queries): precision 1.00 [1.00, 1.00]  recall 1.00" in out
    # the cases were left out by -m, as docs/triggering.md suggests: no "run failed" or "read the errors above"
    assert "hello-skill: trigger set only (no case selected); results: " in out, out
    assert "Execution: failed" not in out and "run failed" not in out and "read the errors" not in out, out
    triggering = skill_project.result_json("hello-skill")["triggering"]["replay"]
    rates = {query["id"]: query for query in triggering["queries"]}
    assert rates["t-farewell"]["distractors_loaded"] == {"farewell-skill": 1}
    assert {query["split"] for query in triggering["queries"]} == {"train", "test"}


def test_regrade_grades_a_skills_cases_and_trigger_items_again(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("alpha"))
    (skill / "evals" / "triggers.json").write_text(json.dumps([{"id": "t", "query": "hi", "should_trigger": True}]))
    (skill / "evals" / "replays" / "t.json").write_text(json.dumps(bash_replay(READ_OWN)))
    skill_project.run(*LOCAL_REPLAY, "--skip-baseline").assert_outcomes(passed=2)
    (source,) = sorted((skill_project.root / "results" / "demo").glob("2*"))
    regrade = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--regrade", "latest")
    regrade.assert_outcomes(passed=2)  # the case and the trigger item, neither running an agent
    result = skill_project.result_json("demo")
    assert result["run_config"]["regraded_from"] == source.name
    assert result["triggering"]["replay"]["recall"] == 1.0


def test_a_linked_sibling_is_never_installed_as_a_distractor(skill_project: SkillProject) -> None:
    trigger_skill(skill_project, [("greet-cy", True, "cat {skills_dir}/linked/SKILL.md")])
    outside = skill_project.root / "outside"
    outside.mkdir()
    (outside / "SKILL.md").write_text("---\nname: linked\ndescription: x\n---\n")
    (skill_project.root / "skills" / "linked").symlink_to(outside, target_is_directory=True)
    skill_project.run(*LOCAL_REPLAY).assert_outcomes(failed=1)
    triggering = _triggering(skill_project)
    assert triggering["queries"][0]["distractors_loaded"] == {} and triggering["missed_to"] == {}


def test_an_oversized_sibling_is_refused_naming_it(skill_project: SkillProject) -> None:
    trigger_skill(skill_project, QUERIES[:1])
    with (skill_project.root / "skills" / "other" / "blob.bin").open("wb") as blob:
        blob.truncate(33 * 1024 * 1024)  # sparse: costs no disk, counts by its size
    result = skill_project.run(*LOCAL_REPLAY)
    result.assert_outcomes(errors=1)
    assert "distractor skill" in result.stdout.str() and "holds more than 32 MiB" in result.stdout.str()


def test_a_query_with_a_cases_id_is_refused_at_collection_and_in_validate(
    skill_project: SkillProject, capsys: pytest.CaptureFixture[str]
) -> None:
    """A query and a case share evals/replays/<id>.json: the run would replay one's trajectory for the other, so
    collection refuses the clash (ids compared case-folded, as duplicate ids are) with one line, and validate too."""
    from pytest_skilleval.authoring.cli import main as skilleval

    skill = trigger_skill(skill_project)
    (skill / "evals" / "evals.json").write_text(json.dumps(simple_entries("Greet-Ada", "other-case")))
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    lines = [line for line in result.outlines if "has a case's id" in line and "ERROR" not in line]
    assert len(lines) == 1, result.outlines
    assert lines[0].startswith(f"{skill / 'evals' / 'triggers.json'}: query 'greet-ada' has a case's id: both")
    assert "rename the query" in lines[0] and "Traceback" not in result.stdout.str()
    assert skilleval(["validate", str(skill)]) != 0
    assert "query 'greet-ada' has a case's id" in capsys.readouterr().out


def test_a_query_with_a_native_tasks_id_is_refused_in_validate_as_in_a_run(skill_project: SkillProject) -> None:
    """A native task's folder name is a case id too: validate refuses the clash with the run's own line."""
    from pytest_skilleval.authoring.validate import validate_skill

    skill = trigger_skill(skill_project)
    task = skill / "evals" / "harbor" / "Greet-Bob"
    task.mkdir(parents=True)
    (task / "task.toml").write_text('schema_version = "1.4"\n[task]\nname = "demo/greet-bob"\n')
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    [run_line] = [line for line in result.outlines if "has a case's id" in line and "ERROR" not in line]
    [finding] = [f for f in validate_skill(skill).findings if f.rule == "trigger-id-shared"]
    assert finding.severity == "error" and run_line.endswith(finding.message), (run_line, finding.message)
