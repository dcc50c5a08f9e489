"""terminus-2, Harbor's own agent, end to end through `pytest --skill-eval` against the scripted model server.

The demo skill's positive case and its negative control run in both arms, in the `local` environment under each
sandbox mode. The script makes the agent do what each case needs: with the skill, read SKILL.md and run its script;
without it, write a wrong greeting by hand; for the arithmetic control, just write the answer. The test then checks
the ATIF trajectory terminus-2 wrote (through Harbor's `Trajectory` model), the scores the plugin gave, and that the
baseline arm's model requests and trajectory never held the skill.
"""

from __future__ import annotations

import pytest
from harbor.models.trial.paths import EnvironmentPaths

from pytest_skilleval.testing.script import regex_all
from tests.e2e.agent_runs import (
    CASES,
    NEGATIVE_CASE,
    POSITIVE_CASE,
    SKILL,
    assert_arms_scored_as_scripted,
    assert_baseline_never_saw_the_skill,
    terminus_args,
    trials,
)
from tests.e2e.agent_runs import terminus_episode as episode
from tests.e2e.conftest import terminus_local
from tests.support import SkillProject

pytestmark = [pytest.mark.e2e, pytest.mark.agents, pytest.mark.slow]

MODEL = "scripted"
# Where Harbor installs the skills: /runtime/skills on 0.25, /harbor/skills on 0.24 (terminus-2 lists that path).
SKILLS_DIR = EnvironmentPaths().default_skills_dir.as_posix()
SKILL_MD = f"{SKILLS_DIR}/{SKILL}/SKILL.md"
GREET = f"cd /workspace && python3 {SKILLS_DIR}/{SKILL}/scripts/greet.py --name 'Ada Lovelace'"
LISTING = "<available_skills>"  # what terminus-2 adds to the instruction when it was given skills
ADA = "Ada Lovelace"
ARITHMETIC = "17 multiplied by 23"


def script() -> dict:
    """Replies per arm and case, told apart by guards on what each request's conversation holds."""

    def arm_case(needle: str, with_skill: bool, *steps: str) -> list[dict]:
        guard = regex_all(LISTING, needle) if with_skill else regex_all(needle, absent=(LISTING,))
        # terminus-2 asks once more before it accepts task_complete, so the last reply answers forever.
        return [
            {"match_regex": guard, "text": episode(*steps)},
            {"match_regex": guard, "text": episode(done=True), "repeat": "forever"},
        ]

    return {
        "models": {
            MODEL: [
                *arm_case(ADA, True, f"cat {SKILL_MD}", GREET),
                *arm_case(
                    ADA,
                    False,
                    "mkdir -p /workspace/output && printf 'Hello Ada Lovelace\\n' > /workspace/output/greeting.txt",
                ),
                *arm_case(ARITHMETIC, True, "mkdir -p /workspace/output && echo 391 > /workspace/output/answer.txt"),
                *arm_case(ARITHMETIC, False, "mkdir -p /workspace/output && echo 391 > /workspace/output/answer.txt"),
            ]
        }
    }


@pytest.mark.parametrize("sandbox", ["bwrap", "none", pytest.param("docker", marks=pytest.mark.docker)])
def test_terminus2_on_the_demo_skill(
    skill_project: SkillProject,
    scripted_model,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    sandbox: str,
) -> None:
    """In the local environment under each sandbox mode, and in Docker (terminus-2 itself runs in this process and
    calls the model from here; it types into a tmux session inside the container, which the test image has)."""
    if sandbox == "docker":
        environment = ("--env-mode", "docker", "--base-image", request.getfixturevalue("test_base_image"))
    else:
        environment = terminus_local(sandbox)
    server = scripted_model(script())
    for name, value in server.client_env().items():
        monkeypatch.setenv(name, value)
    skill_project.copy_hello_skill()
    skill_project.run(
        *terminus_args(MODEL, *environment),
        "-k",
        f"{POSITIVE_CASE} or {NEGATIVE_CASE}",
    )
    views = trials(skill_project.root / "results")

    # With the skill: terminus-2 typed the SKILL.md read and the script run; graded as activation and execution.
    used = assert_arms_scored_as_scripted(views)
    calls = used.tool_calls()
    assert ("bash_command", {"keystrokes": f"cat {SKILL_MD}\n", "duration": 0.5}) in calls, calls
    assert any(name == "bash_command" and "greet.py" in args["keystrokes"] for name, args in calls)
    assert calls[-1][0] == "mark_task_complete"
    assert used.reward["details"]["skill_execution"]["activation"]["via"] == "shell read command"
    assert used.metrics["skill_execution"] == pytest.approx(0.9375)

    # The baseline never saw the skill: not in what the model was sent, not in what the agent wrote.
    assert_baseline_never_saw_the_skill(views, server.requests, LISTING, (ADA, ARITHMETIC))
    for case in CASES:
        assert LISTING not in views[(case, "without_skill")].text()
        assert LISTING in views[(case, "with_skill")].text()
    assert all(entry.status == 200 for entry in server.requests), [(e.path, e.status) for e in server.requests]
