"""What the init scaffolds write is runnable as is: `pytest --skill-eval` with the replay agent and the local
environment passes on a custom grader scaffold and on a native task scaffold, after `validate --strict` passed."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skilleval.authoring.scaffold import run_init_custom_grader, run_init_harbor_task
from pytest_skilleval.authoring.validate import validate_skill
from tests.support import LOCAL_REPLAY, SkillProject, simple_entries

LOCAL_NO_SANDBOX = (*LOCAL_REPLAY, "--ek", "sandbox=none")


def answer_replay(text: str) -> dict:
    """A recorded agent that writes the answer the native scaffold's tests/test.sh expects."""
    command = f"mkdir -p /workspace/output && printf '%s\\n' '{text}' > /workspace/output/answer.txt"
    return {
        "schema_version": "ATIF-v1.6",
        "agent": {"name": "recorded", "version": "1.0"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Write the answer."},
            {
                "step_id": 2,
                "source": "agent",
                "message": f"I wrote '{text}' to /workspace/output/answer.txt.",
                "tool_calls": [{"tool_call_id": "c1", "function_name": "Bash", "arguments": {"command": command}}],
                "observation": {"results": [{"source_call_id": "c1", "content": ""}]},
            },
        ],
    }


def assert_strictly_valid(skill: Path) -> None:
    report = validate_skill(skill, harbor_contract=True)
    assert report.ok(strict=True), [f"{f.rule}: {f.message}" for f in report.errors + report.warnings]


def test_scaffolds_run_green_with_replay_agent_and_local_env(skill_project: SkillProject) -> None:
    byog = skill_project.make_skill("byog", {**simple_entries("c1"), "skill_name": "byog"}, grader=False)
    assert run_init_custom_grader([str(byog), "--mode", "custom_only"]) == 0

    byot = skill_project.make_skill("byot", grader=False)
    assert run_init_harbor_task([str(byot), "--with-config"]) == 0
    (byot / "evals" / "replays").mkdir()
    (byot / "evals" / "replays" / "case-001.json").write_text(json.dumps(answer_replay("hello from case-001")))

    for skill in (byog, byot):
        assert_strictly_valid(skill)

    result = skill_project.run(*LOCAL_NO_SANDBOX)
    result.assert_outcomes(passed=4)

    custom = skill_project.result_json("byog")
    assert {(t["case"], t["arm"]) for t in custom["trials"]} == {("c1", "with_skill"), ("c1", "without_skill")}
    assert all(t["status"] == "scored" and t["custom_metrics"] for t in custom["trials"])

    native = skill_project.result_json("byot")
    for trial in native["trials"]:
        assert trial["case"] == "case-001" and trial["overall"] == 1.0
        assert trial["custom_metrics"] == {"answer_present": 1.0, "answer_correct": 1.0}
