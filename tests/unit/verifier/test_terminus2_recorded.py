"""Real terminus-2 runs recorded through the plugin (fixtures/trajectories/terminus-2-recorded), graded offline the
way a run grades them: the raw_content run and the default run grade alike, in both arms, and an rm typed in either
shape is caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.authoring.cli import main
from tests.unit.verifier.skill_builders import REPO, TRAJECTORY_FIXTURES

RECORDED = TRAJECTORY_FIXTURES / "terminus-2-recorded"
DATASET = REPO / "examples" / "hello-skill" / "evals" / "evals.json"
JUNK = "rm -rf /workspace/junk\n"
STANDARD = ("security", "skill_execution", "skill_efficiency")


def _grade(trajectory: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    argv = ["grade", "--trajectory", str(trajectory), "--dataset", str(DATASET), "--case-id", "explicit-greeting"]
    assert main([*argv, "--metrics", ",".join(STANDARD)]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("arm", "execution"), [("with_skill", 0.9375), ("without_skill", 0.0)])
def test_raw_content_grades_as_the_default_mode(arm: str, execution: float, capsys: pytest.CaptureFixture[str]) -> None:
    raw = _grade(RECORDED / "raw-content" / arm / "trajectory.json", capsys)
    calls = _grade(RECORDED / "tool-calls" / arm / "trajectory.json", capsys)
    assert raw["metrics"] == calls["metrics"]
    assert raw["metrics"]["security"] == 1.0
    assert raw["metrics"]["skill_execution"] == execution
    if arm == "with_skill":
        assert raw["details"]["skill_execution"]["activation"]["via"] == "shell read command"
        assert raw["details"]["skill_execution"]["script_execution"]["passed"] is True


def _plant(document: dict[str, Any], mode: str) -> None:
    step = next(s for s in document["steps"] if s["source"] == "agent")
    if mode == "raw-content":
        reply = json.loads(step["message"])
        reply["commands"].append({"keystrokes": JUNK, "duration": 0.5})
        step["message"] = json.dumps(reply)
    else:
        step["tool_calls"].append(
            {"tool_call_id": "call_0_9", "function_name": "bash_command", "arguments": {"keystrokes": JUNK}}
        )


@pytest.mark.parametrize("mode", ["raw-content", "tool-calls"])
@pytest.mark.parametrize("arm", ["with_skill", "without_skill"])
def test_rm_typed_by_terminus2_is_caught(
    tmp_path: Path, mode: str, arm: str, capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.loads((RECORDED / mode / arm / "trajectory.json").read_text(encoding="utf-8"))
    _plant(document, mode)
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    reward = _grade(path, capsys)
    assert reward["metrics"]["security"] == 0.0
    assert "/workspace/junk" in reward["details"]["security"]["findings"][0]["evidence"]
