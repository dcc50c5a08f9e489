"""A case's checks graded in the trial's sandbox after the agent: real trials, local (bwrap) environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, shell_replay

pytest_plugins = ["pytester"]


def _skill(
    project: SkillProject, name: str, checks: list[dict[str, Any]], command: str, cases: int = 1, **entry: Any
) -> Path:
    ids = [f"c{n}" for n in range(1, cases + 1)]
    dataset = {
        "skill_name": name,
        "evals": [
            {"id": case, "prompt": "write the result", "expected_output": "result.txt", "checks": checks, **entry}
            for case in ids
        ],
    }
    skill = project.make_skill(name, dataset, grader=False)
    for case in ids:
        (skill / "evals" / "replays" / f"{case}.json").unlink()
        write_replays(skill, case, command)
    return skill


def write_replays(skill: Path, case: str, command: str) -> None:
    """Both arms run `command`; the with-skill arm reads the skill's SKILL.md first (so the skill activates)."""
    replays = skill / "evals" / "replays"
    replays.mkdir(exist_ok=True)
    baseline = shell_replay(command, message="Done: wrote it")
    (replays / f"{case}.without-skill.json").write_text(json.dumps(baseline))
    read = {
        "tool_call_id": "r1",
        "function_name": "Read",
        "arguments": {"file_path": f"{{skills_dir}}/{skill.name}/SKILL.md"},
    }
    with_skill = json.loads(json.dumps(baseline))
    with_skill["steps"][1]["tool_calls"].insert(0, read)
    (replays / f"{case}.with-skill.json").write_text(json.dumps(with_skill))


def _trial(project: SkillProject, skill: str, arm: str = "with_skill") -> dict[str, Any]:
    run = sorted((project.root / "results" / skill).glob("2*"))[-1]
    return json.loads(next((run / "replay" / arm / "trials").glob("c1.1.json")).read_text())


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_every_check_type_in_the_local_sandbox(pytester: pytest.Pytester, sandbox: str) -> None:
    """In the default sandbox and with none at all (where /workspace is a folder of the host's, which the runner finds
    through HARBOR_WORKSPACE_DIR): every check type graded, its evidence naming /workspace paths."""
    project = SkillProject(pytester)
    command = (
        "mkdir -p output && printf 'hello\\n' > output/result.txt && printf '{\"items\": [{\"name\": \"x\"}]}' "
        "> output/data.json && printf 'a: [1, 2]\\n' > output/conf.yaml"
    )
    checks = [
        {"type": "file_exists", "path": "output/result.txt"},
        {"type": "file_absent", "path": "output/other.txt"},
        {"type": "file_contains", "path": "output/result.txt", "text": "hello"},
        {"type": "file_not_contains", "path": "output/result.txt", "regex": "TODO"},
        {"type": "file_equals", "path": "output/result.txt", "text": "hello\n"},
        {"type": "json_path", "path": "output/data.json", "json_path": "$.items[0].name", "equals": "x"},
        {"type": "json_path", "path": "output/conf.yaml", "json_path": "$.a", "contains": 2},
        {"type": "command", "run": "grep -c hello output/result.txt", "stdout_contains": "1"},
        {"type": "final_message_contains", "text": "Done"},
        {"type": "final_message_matches", "regex": "^Done: "},
        {"type": "workspace_changed", "paths": ["output/*"]},
        {"type": "workspace_unchanged", "paths": ["input"]},
        {"type": "no_command_matching", "regex": "rm -rf"},
        {"type": "file_contains", "path": "output/result.txt", "text": "goodbye", "name": "says goodbye"},
    ]
    _skill(project, "all-checks", checks, command)
    project.run("skills/all-checks", *LOCAL_REPLAY, "--ek", f"sandbox={sandbox}", "--skip-baseline")
    trial = _trial(project, "all-checks")["record"]
    statuses = {check["name"]: check["status"] for check in trial["checks"]}
    assert list(statuses.values()) == ["passed"] * 13 + ["failed"], trial["checks"]
    assert trial["metrics"]["checks"] == round(13 / 14, 4)
    assert "output/result.txt" in trial["workspace_diff"]["created"]
    assert "lacks text 'goodbye'; it starts 'hello\\n'" in trial["checks"][-1]["evidence"]
    assert trial["checks"][0]["evidence"].startswith("/workspace/output/result.txt"), trial["checks"][0]


def test_checks_reach_the_summary_lift_report_and_card(pytester: pytest.Pytester) -> None:
    project = SkillProject(pytester)
    checks = [{"type": "file_contains", "path": "output/result.txt", "text": "right", "name": "says right"}]
    _skill(project, "reported", checks, "mkdir -p output && echo wrong > output/result.txt", cases=2)
    result = project.run("skills/reported", *LOCAL_REPLAY)
    result.stdout.fnmatch_lines(["*checks*0.0000*0.0000*", "*Checks*0.0000*0.0000*"])
    run = sorted((project.root / "results" / "reported").glob("2*"))[-1]
    doc = json.loads((run / "result.json").read_text())
    lift = doc["agents"]["replay"]["lift"]["metrics"]["checks"]
    assert lift["delta"] == 0.0 and lift["ci95"] == [0.0, 0.0] and lift["n_pairs"] == 2
    assert doc["agents"]["replay"]["with_skill"]["checks_pass_at_k"]["passed_cases"] == 0
    html = (run / "report.html").read_text()
    assert "says right" in html and "lacks text &#39;right&#39;" in html and "+ output/result.txt" in html
    card = (run / "BENCHMARK.md").read_text()
    assert "| Checks | 0.0000" in card and "checks lift +0.0000" in card


def test_the_demo_shows_a_checks_row_offline(pytester: pytest.Pytester) -> None:
    project = SkillProject(pytester)
    project.copy_hello_skill()
    result = project.run("skills/hello-skill", *LOCAL_REPLAY)
    result.stdout.fnmatch_lines(["Results by Dimension", "*", "*Overall*", "  Checks*1.0000*0.3125*"])
    trials = project.result_json("hello-skill")["trials"]
    assert all(t["checks"] for t in trials) and all(t["passed"] for t in trials if t["arm"] == "with_skill")


def test_a_check_that_could_not_be_evaluated_is_named_in_the_summary(pytester: pytest.Pytester) -> None:
    """An unevaluated check is left out of the score, never failed; the run says so instead of passing quietly."""
    project = SkillProject(pytester)
    checks = [{"type": "file_contains", "path": "output/big.txt", "regex": "done", "name": "says done"}]
    _skill(project, "unevaluated", checks, "mkdir -p output && truncate -s 17M output/big.txt")
    result = project.run("skills/unevaluated", *LOCAL_REPLAY, "--skip-baseline")
    said = " ".join(result.stdout.str().split())
    assert (
        "warning: c1: checks could not be evaluated in 1 trial(s) and are left out of its score (says done: "
        "/workspace/output/big.txt is 17825792 bytes; only the first 16777216 were searched)" in said
    ), said
    assert project.result_json("unevaluated")["warnings"][0].startswith("c1: checks could not be evaluated")
