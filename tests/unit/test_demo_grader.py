"""The demo skill's custom grader (examples/hello-skill/evals/grader.py), run as a trial runs it (a separate Python
process told its paths through HARBOR_* variables) on real terminus-2 trajectories recorded through the plugin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit.verifier.skill_builders import REPO, TRAJECTORY_FIXTURES

GRADER = REPO / "examples" / "hello-skill" / "evals" / "grader.py"
RECORDED = TRAJECTORY_FIXTURES / "terminus-2-recorded"
ENTRY = {"id": "explicit-greeting", "greeting_name": "Ada Lovelace"}


def _run_grader(tmp_path: Path, trajectory: Path) -> dict[str, Any]:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "entry.json").write_text(json.dumps(ENTRY), encoding="utf-8")
    env = {
        "HARBOR_ENTRY_JSON": str(tmp_path / "entry.json"),
        "HARBOR_ATIF_PATH": str(trajectory),
        "HARBOR_WORKSPACE_DIR": str(tmp_path / "workspace"),
        "HARBOR_VERIFIER_DIR": str(tmp_path / "verifier"),
    }
    subprocess.run([sys.executable, str(GRADER)], env=env, check=True, capture_output=True, timeout=60)
    return json.loads((tmp_path / "verifier" / "reward.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("mode", ["raw-content", "tool-calls"])
@pytest.mark.parametrize(("arm", "used"), [("with_skill", 1.0), ("without_skill", 0.0)])
def test_script_used_reads_terminus2_in_both_modes(tmp_path: Path, mode: str, arm: str, used: float) -> None:
    """With raw_content terminus-2 keeps its commands only in its JSON replies (no tool calls): the script run
    typed there counts as it does in the default mode; the baseline, which never ran it, scores 0."""
    scores = _run_grader(tmp_path, RECORDED / mode / arm / "trajectory.json")
    assert scores["script_used"] == used


def test_a_plan_in_the_instruction_is_not_a_command(tmp_path: Path) -> None:
    """Only the agent's own replies are read: the instruction's example plan, or a user message quoting a plan that
    runs the script, is not a script run."""
    document = json.loads((RECORDED / "raw-content" / "without_skill" / "trajectory.json").read_text(encoding="utf-8"))
    quoted = {"analysis": "", "plan": "", "commands": [{"keystrokes": "python3 scripts/greet.py\n"}]}
    document["steps"].insert(1, {"step_id": 99, "source": "user", "message": json.dumps(quoted)})
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert _run_grader(tmp_path, path)["script_used"] == 0.0


def test_script_used_follows_a_linear_history_run_into_its_continuation(tmp_path: Path) -> None:
    """terminus-2 with linear_history ran the script after summarizing, in trajectory.cont-1.json: the grader reads
    the segment named by continued_trajectory_ref beside the trajectory."""
    scores = _run_grader(tmp_path, RECORDED / "linear-history" / "with_skill" / "trajectory.json")
    assert scores["script_used"] == 1.0


def test_a_continuation_that_is_not_a_segment_name_is_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    first = json.loads((RECORDED / "linear-history" / "with_skill" / "trajectory.json").read_text(encoding="utf-8"))
    segment = (RECORDED / "linear-history" / "with_skill" / "trajectory.cont-1.json").read_text(encoding="utf-8")
    (folder / "other.json").write_text(segment, encoding="utf-8")
    first["continued_trajectory_ref"] = "other.json"
    (folder / "trajectory.json").write_text(json.dumps(first), encoding="utf-8")
    assert _run_grader(tmp_path, folder / "trajectory.json")["script_used"] == 0.0
