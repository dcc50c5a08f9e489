"""terminus-2, Harbor's own agent, end to end through `pytest --skill-eval` against the scripted model server.

The demo skill's positive case and its negative control run in both arms, in the `local` environment under each
sandbox mode. The script makes the agent do what each case needs: with the skill, read SKILL.md and run its script;
without it, write a wrong greeting by hand; for the arithmetic control, just write the answer. The test then checks
the ATIF trajectory terminus-2 wrote (through Harbor's `Trajectory` model), the scores the plugin gave, and that the
baseline arm's model requests and trajectory never held the skill.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.agent_runs import (
    NEGATIVE_CASE,
    POSITIVE_CASE,
    SKILL,
    assert_never_saw_the_skill,
    regex_all,
    requests_of,
    trials,
)
from tests.support import SkillProject, require_system

pytestmark = [pytest.mark.e2e, pytest.mark.agents]

MODEL = "scripted"
SKILL_MD = f"/runtime/skills/{SKILL}/SKILL.md"
GREET = f"cd /workspace && python3 /runtime/skills/{SKILL}/scripts/greet.py --name 'Ada Lovelace'"
LISTING = "<available_skills>"  # what terminus-2 adds to the instruction when it was given skills
ADA = "Ada Lovelace"
ARITHMETIC = "17 multiplied by 23"


def episode(*keystrokes: str, done: bool = False) -> str:
    """One terminus-2 reply: its JSON response format, with the commands it should type."""
    return json.dumps({
        "analysis": "Scripted.", "plan": "Follow the script.",
        "commands": [{"keystrokes": keys + "\n", "duration": 0.5} for keys in keystrokes],
        "task_complete": done,
    })


def script() -> dict:
    """Replies per arm and case, told apart by guards on what each request's conversation holds."""
    def arm_case(needle: str, with_skill: bool, *steps: str) -> list[dict]:
        guard = regex_all(LISTING, needle) if with_skill else regex_all(needle, absent=(LISTING,))
        # terminus-2 asks once more before it accepts task_complete, so the last reply answers forever.
        return [{"match_regex": guard, "text": episode(*steps)},
                {"match_regex": guard, "text": episode(done=True), "repeat": "forever"}]

    return {"models": {MODEL: [
        *arm_case(ADA, True, f"cat {SKILL_MD}", GREET),
        *arm_case(ADA, False, "mkdir -p /workspace/output && printf 'Hello Ada Lovelace\\n' > /workspace/output/greeting.txt"),
        *arm_case(ARITHMETIC, True, "mkdir -p /workspace/output && echo 391 > /workspace/output/answer.txt"),
        *arm_case(ARITHMETIC, False, "mkdir -p /workspace/output && echo 391 > /workspace/output/answer.txt"),
    ]}}


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_terminus2_on_the_demo_skill(skill_project: SkillProject, scripted_model, monkeypatch: pytest.MonkeyPatch,
                                    sandbox: str) -> None:
    if sandbox == "bwrap":
        from pytest_skilleval.harbor.local_env import bwrap_available

        if not bwrap_available():
            require_system("bubblewrap (bwrap) that can create namespaces", "apt-get install bubblewrap")
    import shutil

    if shutil.which("tmux") is None:
        require_system("tmux (terminus-2 drives a tmux session)", "apt-get install tmux")
    server = scripted_model(script())
    for name, value in server.client_env().items():
        monkeypatch.setenv(name, value)
    skill_project.copy_hello_skill()
    result = skill_project.run(
        "--agents", "terminus-2", "--agent-model", f"terminus-2=openai/{MODEL}", "--env-mode", "local",
        "--ek", f"sandbox={sandbox}", "--agent-kwarg", "terminus-2:record_terminal_session=false",
        "-k", f"{POSITIVE_CASE} or {NEGATIVE_CASE}",
    )
    out = result.stdout.str()
    views = trials(skill_project.root / "results")
    assert set(views) == {(case, arm) for case in (POSITIVE_CASE, NEGATIVE_CASE)
                          for arm in ("with_skill", "without_skill")}, out

    # With the skill: terminus-2 typed the SKILL.md read and the script run; graded as activation and execution.
    used = views[(POSITIVE_CASE, "with_skill")]
    calls = used.tool_calls()
    assert ("bash_command", {"keystrokes": f"cat {SKILL_MD}\n", "duration": 0.5}) in calls, calls
    assert any(name == "bash_command" and "greet.py" in args["keystrokes"] for name, args in calls)
    assert calls[-1][0] == "mark_task_complete"
    execution = used.reward["details"]["skill_execution"]
    assert execution["activation"]["passed"] is True and execution["activation"]["via"] == "shell read command"
    assert execution["script_execution"]["passed"] is True and execution["workflow_order"]["passed"] is True
    assert execution["invocation"]["passed"] is True and execution["invocation"]["used"] is True
    assert used.metrics["skill_execution"] == pytest.approx(0.9375)
    assert used.metrics["security"] == 1.0
    assert used.record["custom_metrics"]["greeting_correct"] == 1.0, used.record["custom_metrics"]

    # Without it: a hand-written greeting, no activation, the grader's format check fails.
    baseline = views[(POSITIVE_CASE, "without_skill")]
    assert baseline.metrics["skill_execution"] == 0.0
    assert baseline.reward["details"]["skill_execution"]["invocation"]["used"] is False
    assert baseline.record["custom_metrics"]["greeting_correct"] == 0.0
    assert baseline.record["overall"] < used.record["overall"]

    # The negative control: the skill stays unused in both arms and the answer is right.
    for arm in ("with_skill", "without_skill"):
        control = views[(NEGATIVE_CASE, arm)]
        assert control.metrics["skill_execution"] == 1.0
        assert control.reward["details"]["skill_execution"]["negative_check"]["passed"] is True
        assert control.record["custom_metrics"]["answer_correct"] == 1.0, control.record["custom_metrics"]

    # The baseline never saw the skill: not in what the model was sent, not in what the agent wrote.
    for needle in (ADA, ARITHMETIC):
        sent = requests_of(server.requests, needle)
        with_skill = [entry for entry in sent if LISTING in entry.text]
        without = [entry for entry in sent if LISTING not in entry.text]
        assert with_skill and without, f"both arms must have asked the model about {needle!r}"
        for entry in without:
            assert_never_saw_the_skill(entry.text, "a baseline model request")
    for case in (POSITIVE_CASE, NEGATIVE_CASE):
        assert_never_saw_the_skill(views[(case, "without_skill")].text(), "a baseline trajectory")
        assert LISTING not in views[(case, "without_skill")].text()
        assert LISTING in views[(case, "with_skill")].text()
    assert all(entry.status == 200 for entry in server.requests), [(e.path, e.status) for e in server.requests]
