"""A pass means the output was right: checks (and, in default_plus_custom with no judge, the custom grader's overall)
gate a with-skill item beside its overall. Real trials in the local sandbox, replay agent, no judge configured."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.plugin.test_case_checks import write_replays
from tests.support import FIXTURES, LOCAL_REPLAY, SkillProject

pytest_plugins = ["pytester"]

CHECKS = [
    {"type": "file_exists", "path": "output/result.txt", "name": "result written"},
    {"type": "file_contains", "path": "output/result.txt", "text": "42", "name": "result is 42"},
]
WRONG = "mkdir -p output && echo 42 > output/wrong.txt"
RIGHT = "mkdir -p output && echo 42 > output/result.txt"


def _skill(project: SkillProject, name: str, command: str, checks: list[dict[str, str]] | None = CHECKS) -> Path:
    entries = [
        {"id": case, "prompt": "write 42 to output/result.txt", "expected_output": "output/result.txt holds 42"}
        for case in ("c1", "c2")
    ]
    if checks is not None:
        for entry in entries:
            entry["checks"] = checks
    skill = project.make_skill(name, {"skill_name": name, "evals": entries}, grader=False)
    for case in ("c1", "c2"):
        (skill / "evals" / "replays" / f"{case}.json").unlink()
        write_replays(skill, case, command)
    return skill


def _result(project: SkillProject, skill: str) -> dict[str, object]:
    return project.result_json(skill)


def test_a_wrong_output_fails_its_with_skill_items_with_the_failed_checks_evidence(pytester: pytest.Pytester) -> None:
    project = SkillProject(pytester)
    _skill(project, "wrong-output", WRONG)
    result = project.run("skills/wrong-output", *LOCAL_REPLAY)
    assert result.ret == 1
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 2 and outcomes["passed"] == 2  # with-skill items fail; baselines only report
    result.stdout.fnmatch_lines(
        [
            "*c1 [[]replay-with_skill-1]: checks 0.0000 < pass threshold 0.50: result written: "
            "/workspace/output/result.txt does not exist; result is 42: /workspace/output/result.txt does not exist*"
        ]
    )
    doc = _result(project, "wrong-output")
    agent = doc["agents"]["replay"]  # type: ignore[index]
    lift = agent["lift"]["metrics"]["checks"]
    assert (lift["delta"], lift["ci95"], lift["n_pairs"]) == (0.0, [0.0, 0.0], 2)
    assert agent["with_skill"]["overall"] >= 0.5  # the overall alone would have passed
    assert all(t["passed"] is False for t in doc["trials"] if t["arm"] == "with_skill")  # type: ignore[union-attr]
    # The summary's and the report's counts of passing attempts say they follow the pass rule, checks included: a
    # mean at the threshold beside 0/1 must not read "attempts at or above the pass threshold".
    out = result.stdout.str()
    assert re.search(r"^  case\s+arm\s+mean\s+passed\s+pytest$", out, re.M), out
    assert re.search(r"^  c1\s+with skill\s+\d\.\d{4}\s+0/1\s+1 failed$", out, re.M), out
    assert "at or above the pass threshold" not in out
    assert "correctness gate, such as the case's checks, at or above 0.50" in " ".join(out.split())
    report = (Path(str(doc["run_dir"])) / "report.html").read_text()
    assert "(not passed: checks 0.0000 below threshold 0.50)" in report
    assert "(below threshold)" not in report
    assert "whose overall reaches the pass threshold" not in report
    assert "its overall, and the case's checks when it has them, reach the threshold (0.50)" in report
    card = (Path(str(doc["run_dir"])) / "BENCHMARK.md").read_text()
    assert "a case passes when one of its attempts passes: its overall, and the case's checks when it has them" in card


def test_the_right_output_passes(pytester: pytest.Pytester) -> None:
    project = SkillProject(pytester)
    _skill(project, "right-output", RIGHT)
    result = project.run("skills/right-output", *LOCAL_REPLAY)
    assert result.ret == 0, result.stdout.str()[-2000:]
    assert result.parseoutcomes()["passed"] == 4
    trials = _result(project, "right-output")["trials"]
    assert {t["metrics"]["checks"] for t in trials} == {1.0}  # type: ignore[index, union-attr]


@pytest.mark.parametrize(("grader", "failed"), [("always_zero.sh", 2), ("always_one.sh", 0)])
def test_default_plus_custom_without_a_judge_gates_on_the_graders_overall(
    pytester: pytest.Pytester, grader: str, failed: int
) -> None:
    project = SkillProject(pytester)
    skill = _skill(project, "graded", RIGHT, checks=None)
    shutil.copy2(FIXTURES / "graders" / grader, skill / "evals" / "grader.sh")
    result = project.run("skills/graded", *LOCAL_REPLAY, "--grading-mode", "default_plus_custom")
    assert result.parseoutcomes().get("failed", 0) == failed, result.stdout.str()[-3000:]
    if failed:
        result.stdout.fnmatch_lines(["*the custom grader's overall 0.0000 < pass threshold 0.50*"])
    trials = _result(project, "graded")["trials"]
    assert all(t["checks"] is None for t in trials)  # type: ignore[index, union-attr]
