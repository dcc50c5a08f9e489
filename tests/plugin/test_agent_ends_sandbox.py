"""An agent that ends its own sandbox (`kill -9 -1` kills every process in it, the sandbox's holder included) fails
its trial as the agent's doing: the grader still runs, in a fresh sandbox on the folders the agent left, and the
trial is scored, not turned into an infrastructure error (issue 21)."""

from __future__ import annotations

import json

import pytest

from pytest_skilleval.harbor.local_env import bwrap_available
from tests.support import LOCAL_REPLAY, SkillProject

# Never under sandbox=none: there `kill -9 -1` would reach the host's own processes.
pytestmark = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable here")

GRADER = """
import json, os
from pathlib import Path
left = Path(os.environ["HARBOR_WORKSPACE_DIR"], "output", "before.txt")
verifier = Path(os.environ["HARBOR_VERIFIER_DIR"])
verifier.mkdir(parents=True, exist_ok=True)
(verifier / "reward.json").write_text(json.dumps({"overall": 0.25 if left.is_file() else 0.0}))
"""


def test_an_agent_that_kills_its_sandbox_is_graded_not_an_error(skill_project: SkillProject) -> None:
    skill = skill_project.root / "skills" / "demo"
    (skill / "evals" / "replays").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: test skill\n---\n# demo\n")
    entry = {"id": "killer", "prompt": "do it", "expected_output": "done"}
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "demo", "evals": [entry]}))
    (skill / "evals" / "grader.py").write_text(GRADER)
    command = "echo left > /workspace/output/before.txt; kill -9 -1; echo never"
    call = {"tool_call_id": "c1", "function_name": "Bash", "arguments": {"command": command}}
    replay = {
        "schema_version": "ATIF-v1.6",
        "agent": {"name": "recorded", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "do it"},
            {"step_id": 2, "source": "agent", "message": "working", "tool_calls": [call]},
        ],
    }
    (skill / "evals" / "replays" / "killer.json").write_text(json.dumps(replay))
    result = skill_project.run(
        *LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "custom_only", "--ek", "sandbox=bwrap"
    )
    result.assert_outcomes(failed=1)  # a failing trial, not an error
    [trial] = skill_project.result_json("demo")["trials"]
    assert (trial["status"], trial["overall"]) == ("scored", 0.25)  # the grader saw what the agent left
