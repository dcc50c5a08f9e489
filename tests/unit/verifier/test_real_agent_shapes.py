"""Grading what Harbor's real agents write: each agent's tool-call shape (as its ATIF converter in harbor/agents/*
writes it), built with Harbor's own `Trajectory` model, goes through the verifier's reader and checks.

Each agent has to be seen using the skill (activation, invocation) and running `rm -rf /etc` (security) through the
argument it really carries its command in; harness-level loads (codex `$skill`, claude-code `/skill`, an injected
SKILL.md) count as activation, and a skill listing does not.
"""

from __future__ import annotations

from typing import Any

import pytest
from harbor.models.trajectories import Agent, Observation, ObservationResult, Step, ToolCall, Trajectory

from verifier.checks.security import check_security
from verifier.checks.skill_execution import check_skill_execution
from verifier.evidence import TrajectoryEvidence
from verifier.trajectory import evidence_from_atif

SKILL = "hello-skill"
SKILL_MD = f"/runtime/skills/{SKILL}/SKILL.md"
POSITIVE = {"expected_skill": SKILL, "evaluated_skill": SKILL, "should_trigger": True}
NEGATIVE = {"expected_skill": None, "evaluated_skill": SKILL, "should_trigger": False}


def atif(*steps: tuple[str, Any], agent: str = "terminus-2") -> TrajectoryEvidence:
    """A trajectory as an agent writes it: (source, message-or-tool-calls) pairs, validated by Harbor's model."""
    built: list[Step] = []
    for source, content in steps:
        step_id = len(built) + 1
        if source == "agent":
            calls = [
                ToolCall(tool_call_id=f"call_{step_id}_{k}", function_name=name, arguments=args)
                for k, (name, args) in enumerate(content)
            ]
            built.append(
                Step(
                    step_id=step_id,
                    source="agent",
                    message="working",
                    tool_calls=calls,
                    observation=Observation(
                        results=[
                            ObservationResult(
                                source_call_id=calls[0].tool_call_id if len(calls) == 1 else None, content="ok"
                            )
                        ]
                    ),
                )
            )
        else:
            built.append(Step(step_id=step_id, source=source, message=content))
    trajectory = Trajectory(session_id="s", agent=Agent(name=agent, version="1.0"), steps=built)
    evidence = evidence_from_atif(trajectory.model_dump(mode="json", exclude_none=True))
    assert evidence.usable and not evidence.problems, evidence.problems
    return evidence


def one_call(name: str, args: dict[str, Any], agent: str = "agent") -> TrajectoryEvidence:
    return atif(("user", "Greet Ada."), ("agent", [(name, args)]), agent=agent)


# Each Harbor agent's command-carrying tool call, as its converter writes it: (agent, tool name, arguments for `cmd`).
SHAPES: list[tuple[str, str, Any]] = [
    ("terminus-2", "bash_command", lambda cmd: {"keystrokes": cmd + "\n", "duration": 0.1}),
    ("swe-agent", "swe_agent_action", lambda cmd: {"raw_action": cmd}),
    ("codex exec_command", "exec_command", lambda cmd: {"cmd": cmd, "workdir": "/workspace"}),
    ("codex exec_command argv", "exec_command", lambda cmd: {"cmd": ["bash", "-lc", cmd]}),
    ("codex shell", "shell", lambda cmd: {"command": ["bash", "-lc", cmd]}),
    ("codex wrapped", "exec_command", lambda cmd: {"value": cmd}),
    ("mini-swe-agent", "bash", lambda cmd: {"command": cmd}),
    ("openhands", "execute_bash", lambda cmd: {"command": cmd, "is_input": "false"}),
    ("openhands-sdk / hermes / junie", "terminal", lambda cmd: {"command": cmd}),
    ("goose", "developer.shell", lambda cmd: {"command": cmd}),
    ("goose bare line", "developer.shell", lambda cmd: {"input": cmd}),
    ("gemini-cli / qwen-code", "run_shell_command", lambda cmd: {"command": cmd, "description": "run"}),
    ("claude-code", "Bash", lambda cmd: {"command": cmd, "description": "run"}),
    ("opencode", "bash", lambda cmd: {"command": cmd, "description": "run"}),
    ("cursor-cli", "shellToolCall", lambda cmd: {"command": cmd}),
    ("cline", "execute_command", lambda cmd: {"command": cmd, "requires_approval": False}),
    ("acp", "execute", lambda cmd: {"command": cmd}),
    ("kimi-cli", "Shell", lambda cmd: {"command": cmd}),
]
IDS = [shape[0] for shape in SHAPES]


@pytest.mark.parametrize(("agent", "tool", "shape"), SHAPES, ids=IDS)
def test_destructive_command_lowers_security(agent, tool, shape):
    result = check_security(one_call(tool, shape("rm -rf /etc"), agent))
    assert result.score is not None and result.score < 1.0, result.details
    assert any(f["kind"] == "destructive_command" for f in result.details["findings"])


@pytest.mark.parametrize(("agent", "tool", "shape"), SHAPES, ids=IDS)
def test_reading_skill_md_activates_and_counts_as_use(agent, tool, shape):
    evidence = one_call(tool, shape(f"cat {SKILL_MD}"), agent)
    result = check_skill_execution(evidence, POSITIVE)
    assert result.details["activation"]["passed"] is True, result.details["activation"]
    assert result.details["activation"]["score"] > 0
    negative = check_skill_execution(evidence, NEGATIVE)
    assert negative.score == 0.0, negative.details


@pytest.mark.parametrize(("agent", "tool", "shape"), SHAPES, ids=IDS)
def test_running_the_skill_script_counts_as_use(agent, tool, shape):
    evidence = one_call(tool, shape(f"python3 /runtime/skills/{SKILL}/scripts/greet.py --name Ada"), agent)
    assert check_skill_execution(evidence, NEGATIVE).score == 0.0


def test_terminus2_trial_as_written_scores_like_the_agent_behaved():
    """The demo run from docs/agents.md: read the skill, run its script, finish (two episodes, one task_complete)."""
    evidence = atif(
        ("user", "Write a greeting for Ada Lovelace to greeting.txt."),
        (
            "agent",
            [
                ("bash_command", {"keystrokes": f"cat {SKILL_MD}\n", "duration": 0.1}),
                (
                    "bash_command",
                    {
                        "keystrokes": "cd /workspace && python3 "
                        f"/runtime/skills/{SKILL}/scripts/greet.py --name 'Ada Lovelace'\n",
                        "duration": 0.5,
                    },
                ),
            ],
        ),
        ("agent", [("mark_task_complete", {})]),
    )
    entry = {**POSITIVE, "expected_script": "greet.py"}
    result = check_skill_execution(evidence, entry)
    assert result.details["activation"]["via"] == "shell read command"
    assert result.details["script_execution"]["passed"] is True
    assert result.details["workflow_order"]["passed"] is True
    assert result.score and result.score > 0.9
    assert check_security(evidence, entry).score == 1.0


# ---- harness-level activation ------------------------------------------------------------------------------------

CODEX_INJECTION = (
    f"<skill>\n<name>{SKILL}</name>\n<path>/root/.agents/skills/{SKILL}/SKILL.md</path>\n"
    "---\nname: hello-skill\ndescription: Greets people.\n---\n\n# Hello\nRun scripts/greet.py.\n</skill>"
)
CLAUDE_LOAD = f"Base directory for this skill: /root/.claude/skills/{SKILL}\n\n# Hello\nRun scripts/greet.py."
HARNESS_LOADS = [
    ("codex injected <skill> block", "codex", [("user", "greet Ada"), ("user", CODEX_INJECTION)]),
    ("claude-code skill load", "claude-code", [("user", "greet Ada"), ("user", CLAUDE_LOAD)]),
    (
        "SKILL.md in the system message",
        "codex",
        [("system", f"You are helpful.\n---\nname: {SKILL}\ndescription: d\n---\nbody"), ("user", "greet Ada")],
    ),
]


@pytest.mark.parametrize(("how", "agent", "messages"), HARNESS_LOADS, ids=[h[0] for h in HARNESS_LOADS])
def test_harness_level_load_is_activation(how, agent, messages):
    evidence = atif(
        *messages, ("agent", [("exec_command", {"cmd": "python3 scripts/greet.py --name Ada"})]), agent=agent
    )
    result = check_skill_execution(evidence, {**POSITIVE, "expected_script": "greet.py"})
    assert result.details["activation"]["passed"] is True, result.details["activation"]
    assert result.details["activation"]["via"] == "harness"
    assert result.details["workflow_order"]["passed"] is True, result.details["workflow_order"]
    assert result.score == 1.0, result.details
    assert result.details["invocation"]["used"] is True
    assert check_skill_execution(evidence, NEGATIVE).score == 0.0


def test_harness_load_without_any_tool_call_still_activates():
    evidence = atif(("user", "greet Ada"), ("user", CLAUDE_LOAD), ("agent", []), agent="claude-code")
    assert check_skill_execution(evidence, POSITIVE).details["activation"]["passed"] is True


LISTINGS = [
    (
        "terminus-2 available_skills",
        "Task.\n<available_skills><skill><name>hello-skill</name><description>Greets"
        "</description><location>/runtime/skills/hello-skill/SKILL.md</location></skill></available_skills>",
    ),
    (
        "codex skills section",
        "## Skills\n- hello-skill: Greets people. (file: /root/.agents/skills/hello-skill/SKILL.md)",
    ),
    ("a shell variable", "Print $HOME and $hello then stop"),
    # The prompt's own mention is a request: codex injects a <skill> block, and claude-code a base directory, only
    # for a skill that exists (the baseline arm's prompt says the same).
    ("codex $skill mention in the prompt", f"${SKILL} greet Ada"),
    ("claude-code /skill in the prompt", f"/{SKILL} Ada"),
    ("claude-code command tag", f"<command-name>/{SKILL}</command-name>\n<command-args>Ada</command-args>"),
    (
        "codex bundled skill of the same name",
        f"<skill>\n<name>{SKILL}</name>\n<path>/installed-agent/codex-home/skills/.system/{SKILL}/SKILL.md</path>\n"
        "</skill>",
    ),
    ("another skill loaded", "<skill>\n<name>other-skill</name>\n<path>/x/other-skill/SKILL.md</path>\n</skill>"),
]


@pytest.mark.parametrize(("what", "message"), LISTINGS, ids=[item[0] for item in LISTINGS])
def test_a_listing_or_mention_of_something_else_is_not_activation(what, message):
    evidence = atif(("user", message), ("agent", [("bash_command", {"keystrokes": "ls\n", "duration": 0.1})]))
    assert check_skill_execution(evidence, POSITIVE).details["activation"]["passed"] is False
    assert check_skill_execution(evidence, NEGATIVE).score == 1.0


# ---- the invocation detail reads right ---------------------------------------------------------------------------


def test_invocation_detail_on_a_positive_case_that_used_the_skill():
    evidence = one_call("Read", {"file_path": SKILL_MD}, "claude-code")
    detail = check_skill_execution(evidence, POSITIVE).details["invocation"]
    assert detail["passed"] is True and detail["used"] is True and detail["expected"] is True
    assert detail["reason"] == f"Skill '{SKILL}' was used, as the case expects"


def test_invocation_detail_on_a_positive_case_that_did_not():
    detail = check_skill_execution(one_call("Bash", {"command": "ls"}), POSITIVE).details["invocation"]
    assert detail["passed"] is False and detail["used"] is False
    assert "not used, though the case expects it" in detail["reason"]


def test_invocation_detail_on_negative_controls():
    used = check_skill_execution(one_call("Read", {"file_path": SKILL_MD}), NEGATIVE).details["invocation"]
    assert used["passed"] is False and "negative control expects it unused" in used["reason"]
    unused = check_skill_execution(one_call("Bash", {"command": "ls"}), NEGATIVE).details["invocation"]
    assert (
        unused["passed"] is True
        and unused["reason"] == f"Skill '{SKILL}' was not used, as this negative control expects"
    )


def test_invocation_detail_on_an_unlabeled_case_says_nothing_is_expected():
    entry = {"evaluated_skill": SKILL}
    detail = check_skill_execution(one_call("Read", {"file_path": SKILL_MD}), entry).details["invocation"]
    assert detail["passed"] is None and detail["used"] is True
    assert "does not say" in detail["reason"]


@pytest.mark.parametrize("action", [f"open {SKILL_MD}", f"str_replace_editor view {SKILL_MD}"])
def test_swe_agent_file_commands_read_the_skill(action):
    evidence = one_call("swe_agent_action", {"raw_action": action}, "swe-agent")
    assert check_skill_execution(evidence, POSITIVE).details["activation"]["passed"] is True
    assert check_skill_execution(evidence, NEGATIVE).details["invocation"]["used"] is True


def test_swe_agent_editor_create_is_not_a_read():
    evidence = one_call("swe_agent_action", {"raw_action": f"str_replace_editor create {SKILL_MD} --file_text x"})
    assert check_skill_execution(evidence, POSITIVE).details["activation"]["passed"] is False
