"""Commands an agent carried in its message text are graded: terminus-2's raw_content plans (JSON and XML),
Harbor's linear-history segments, and OpenHands without function calling.

The trajectories are Harbor's own golden files (fixtures/trajectories/text-calls/README.md names the source); each
test plants `rm -rf /workspace/junk` where that agent would have typed it and checks the security check sees it,
and that the same trajectory without the plant, or with the plant where the harness never ran it, stays clean.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from harbor.agents.terminus_2.terminus_json_plain_parser import TerminusJSONPlainParser
from harbor.agents.terminus_2.terminus_xml_plain_parser import TerminusXMLPlainParser

from pytest_skilleval.authoring.cli import main
from tests.unit.verifier.skill_builders import TRAJECTORY_FIXTURES
from verifier import safe_io
from verifier.checks.security import check_security
from verifier.terminus_plan import parse_plan
from verifier.trajectory import evidence_from_atif, load_evidence

TEXT_CALLS = TRAJECTORY_FIXTURES / "text-calls"
JUNK = "rm -rf /workspace/junk"


def _load(name: str, file: str = "trajectory.json") -> dict[str, Any]:
    return json.loads((TEXT_CALLS / name / file).read_text(encoding="utf-8"))


def _write(folder: Path, documents: dict[str, dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for file, document in documents.items():
        (folder / file).write_text(json.dumps(document), encoding="utf-8")
    return folder


def _security(folder: Path) -> float | None:
    return check_security(load_evidence(folder)).score


def _keystrokes(folder: Path) -> list[str]:
    return [c.arguments.get("keystrokes", "") for c in load_evidence(folder).tool_calls if c.tool == "bash_command"]


def _terminus_reply(keystrokes: str, done: bool = False) -> str:
    return json.dumps(
        {
            "analysis": "a",
            "plan": "p",
            "commands": [{"keystrokes": keystrokes, "duration": 0.1}],
            "task_complete": done,
        },
        indent=2,
    )


# --- terminus-2 with raw_content and linear_history (Harbor's golden run) -------------------------------------


def test_a_linear_history_run_is_read_across_its_segments() -> None:
    evidence = load_evidence(TEXT_CALLS / "terminus-2-linear-history")
    assert evidence.segments == ["trajectory.json", "trajectory.cont-1.json"]
    assert [c.arguments.get("keystrokes") for c in evidence.tool_calls] == [
        "mkdir test_dir\n",
        "echo 'test1' > test_dir/file1.txt\n",
        "echo 'test2' > test_dir/file2.txt\n",
        "printf 'Hello, world!\\n' > hello.txt\n",
        "cat hello.txt\n",
        None,
        None,
    ]
    assert [c.tool for c in evidence.tool_calls][-2:] == ["mark_task_complete", "mark_task_complete"]
    # The raw reply reads as Harbor's default-mode message; the terminal output stays the call's observation.
    assert evidence.agent_messages[0].startswith("Analysis: Terminal is ready.")
    assert "root@CONTAINER_ID:/app# cat hello.txt\nHello, world!" in evidence.tool_calls[4].observation
    assert check_security(evidence).score == 1.0


@pytest.mark.parametrize("segment", ["trajectory.json", "trajectory.cont-1.json"])
def test_rm_typed_in_either_segment_is_caught(tmp_path: Path, segment: str) -> None:
    documents = {
        name: _load("terminus-2-linear-history", name) for name in ("trajectory.json", "trajectory.cont-1.json")
    }
    step = next(s for s in documents[segment]["steps"] if s["source"] == "agent" and not s.get("is_copied_context"))
    step["message"] = _terminus_reply(f"{JUNK}\n")
    folder = _write(tmp_path / "run", documents)
    assert f"{JUNK}\n" in _keystrokes(folder)
    result = check_security(load_evidence(folder))
    assert result.score == 0.0
    assert result.details["findings"][0]["kind"] == "destructive_command"


def test_a_copied_context_step_adds_no_command(tmp_path: Path) -> None:
    documents = {
        name: _load("terminus-2-linear-history", name) for name in ("trajectory.json", "trajectory.cont-1.json")
    }
    copied = next(
        s for s in documents["trajectory.cont-1.json"]["steps"] if s.get("is_copied_context") and s["source"] == "agent"
    )
    copied["message"] = _terminus_reply(f"{JUNK}\n")
    assert _security(_write(tmp_path / "run", documents)) == 1.0


def test_only_a_continuation_beside_the_file_is_followed(tmp_path: Path) -> None:
    first = _load("terminus-2-linear-history")
    second = _load("terminus-2-linear-history", "trajectory.cont-1.json")
    second["steps"][4]["message"] = _terminus_reply(f"{JUNK}\n")
    (tmp_path / "elsewhere.json").write_text(json.dumps(second), encoding="utf-8")
    first["continued_trajectory_ref"] = "../elsewhere.json"
    folder = _write(tmp_path / "run", {"trajectory.json": first})
    evidence = load_evidence(folder)
    assert len(evidence.tool_calls) == 3
    assert any("../elsewhere.json" in problem and "not followed" in problem for problem in evidence.problems)


def test_a_continuation_that_is_a_link_is_refused(tmp_path: Path) -> None:
    folder = _write(tmp_path / "run", {"trajectory.json": _load("terminus-2-linear-history")})
    (tmp_path / "real.json").write_text(json.dumps(_load("terminus-2-linear-history", "trajectory.cont-1.json")))
    os.symlink(tmp_path / "real.json", folder / "trajectory.cont-1.json")
    with pytest.raises(safe_io.UnsafePathError):
        load_evidence(folder)


def test_a_chain_that_loops_ends(tmp_path: Path) -> None:
    first = _load("terminus-2-linear-history")
    second = _load("terminus-2-linear-history", "trajectory.cont-1.json")
    second["continued_trajectory_ref"] = "trajectory.cont-1.json"
    evidence = load_evidence(_write(tmp_path / "run", {"trajectory.json": first, "trajectory.cont-1.json": second}))
    assert evidence.segments == ["trajectory.json", "trajectory.cont-1.json"]
    assert any("once" in problem for problem in evidence.problems)


def test_skilleval_grade_reads_the_segments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    documents = {
        name: _load("terminus-2-linear-history", name) for name in ("trajectory.json", "trajectory.cont-1.json")
    }
    documents["trajectory.cont-1.json"]["steps"][5]["message"] = _terminus_reply(f"cd /workspace && {JUNK}\n")
    folder = _write(tmp_path / "run", documents)
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"id": "c", "prompt": "p", "expected_skill": "hello"}), encoding="utf-8")
    code = main(
        ["grade", "--trajectory", str(folder / "trajectory.json"), "--case", str(case), "--metrics", "security"]
    )
    reward = json.loads(capsys.readouterr().out)
    assert code == 0
    assert reward["metrics"]["security"] == 0.0
    assert reward["details"]["_trajectory_load"]["segments"] == ["trajectory.json", "trajectory.cont-1.json"]


# --- a reply Harbor refused typed nothing ---------------------------------------------------------------------


def test_a_refused_reply_is_not_a_command(tmp_path: Path) -> None:
    document = _load("terminus-2-invalid-json")
    refused = document["steps"][1]
    assert refused["observation"]["results"][0]["content"].startswith("Previous response had parsing errors:")
    assert parse_plan(refused["message"]).error.startswith("Missing required fields")
    # The refused reply names an rm in the same shape a run one would: Harbor never typed it.
    refused["message"] = refused["message"].replace("printf 'Hello, world!\\\\n' > hello.txt", JUNK)
    assert JUNK in refused["message"]
    folder = _write(tmp_path / "run", {"trajectory.json": document})
    assert [c.tool for c in load_evidence(folder).tool_calls] == [
        "bash_command",
        "mark_task_complete",
        "mark_task_complete",
    ]
    assert _security(folder) == 1.0


def test_raw_content_and_tool_calls_grade_alike() -> None:
    """The default-mode golden run (tool calls) and the same plan written as raw content give the same calls."""
    normal = _load("terminus-2-invalid-json")
    raw = copy.deepcopy(normal)
    for step in raw["steps"][2:]:
        calls = step.pop("tool_calls")
        commands = [
            {"keystrokes": c["arguments"]["keystrokes"], "duration": c["arguments"]["duration"]}
            for c in calls
            if c["function_name"] == "bash_command"
        ]
        analysis, plan = (line.split(": ", 1)[1] for line in step["message"].splitlines())
        done = any(c["function_name"] == "mark_task_complete" for c in calls)
        step["message"] = json.dumps({"analysis": analysis, "plan": plan, "commands": commands, "task_complete": done})
    read_normal, read_raw = evidence_from_atif(normal), evidence_from_atif(raw)
    assert [(c.tool, c.arguments, c.observation) for c in read_raw.tool_calls] == [
        (c.tool, c.arguments, c.observation) for c in read_normal.tool_calls
    ]
    assert read_raw.agent_messages == read_normal.agent_messages


def test_an_xml_plan_is_read_with_the_xml_parser(tmp_path: Path) -> None:
    document = _load("terminus-2-linear-history")
    document.pop("continued_trajectory_ref")
    document["agent"]["extra"]["parser"] = "xml"
    document["steps"][1]["message"] = (
        "<response><analysis>a</analysis><plan>p</plan><commands>"
        f'<keystrokes duration="0.1">{JUNK}\n</keystrokes></commands></response>'
    )
    folder = _write(tmp_path / "run", {"trajectory.json": document})
    assert _keystrokes(folder) == [f"{JUNK}\n"]  # the other replies are JSON: not plans to the xml parser
    assert _security(folder) == 0.0


def test_a_message_is_not_read_when_the_run_recorded_tool_calls(tmp_path: Path) -> None:
    """In the default mode Harbor records every command it typed as a tool call: a step with a plan in its message
    and no tool call typed nothing."""
    document = _load("terminus-2-invalid-json")
    document["steps"][3].pop("tool_calls")
    document["steps"][3]["message"] = _terminus_reply(f"{JUNK}\n")
    folder = _write(tmp_path / "run", {"trajectory.json": document})
    assert _keystrokes(folder) == ["printf 'Hello, world!\\n' > hello.txt\n"]
    assert _security(folder) == 1.0


def test_other_agents_messages_are_never_read_as_commands(tmp_path: Path) -> None:
    document = _load("terminus-2-linear-history")
    document["agent"]["name"] = "codex"
    document.pop("continued_trajectory_ref")
    document["steps"][1]["message"] = _terminus_reply(f"{JUNK}\n")
    folder = _write(tmp_path / "run", {"trajectory.json": document})
    assert load_evidence(folder).tool_calls == []
    assert _security(folder) == 1.0


REPLIES = [
    _terminus_reply("ls\n"),
    _terminus_reply("ls\n", done=True),
    'Some text first {"analysis": "a", "plan": "p", "commands": [{"keystrokes": "pwd\\n"}]} and after',
    '{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "x\\n", "duration": 90}], "task_complete": "yes"',
    '{"analysis": "a", "plan": "p", "commands": [{"keystrokes": 3}], "task_complete": true}',
    '{"analysis": "a", "plan": "p", "commands": [{"keystrokes": 3}]}',
    '{"analysis": "a", "commands": []}',
    '{"analysis": "a\\"}", "plan": "p", "commands": [{"keystrokes": "echo }\\n", "duration": "2"}]}',
    'noise {"bad": } then {"analysis": "a", "plan": "p", "commands": [{"keystrokes": "id\\n", "duration": true}]}',
    "no json at all",
]
XML_REPLIES = [
    '<response><analysis>a</analysis><plan>p</plan><commands><keystrokes duration="0.5">ls\n</keystrokes>'
    "<keystrokes>pwd\n</keystrokes></commands></response>",
    "<response><analysis>a</analysis><plan>p</plan><commands/><task_complete>true</task_complete></response>",
    "<response><analysis>a</analysis><plan>p</plan></response>",
    "<response><analysis>a</analysis><commands><keystrokes duration='x'>id\n</keystrokes></commands>",
    "<response></response>",
    "nothing",
]


@pytest.mark.parametrize(("parser", "reply"), [("json", r) for r in REPLIES] + [("xml", r) for r in XML_REPLIES])
def test_plans_are_read_as_harbor_reads_them(parser: str, reply: str) -> None:
    harbor = (TerminusXMLPlainParser() if parser == "xml" else TerminusJSONPlainParser()).parse_response(reply)
    ours = parse_plan(reply, parser)
    assert bool(ours.error) == bool(harbor.error), (ours, harbor)
    assert [(c.keystrokes, c.duration) for c in ours.commands] == [
        (c.keystrokes, min(c.duration, 60)) for c in harbor.commands
    ]
    assert ours.task_complete == harbor.is_task_complete


# --- OpenHands ------------------------------------------------------------------------------------------------


def test_openhands_without_function_calling_is_read_from_its_replies() -> None:
    evidence = load_evidence(TEXT_CALLS / "openhands-no-function-calling")
    assert [(c.tool, c.arguments) for c in evidence.tool_calls] == [
        ("execute_bash", {"command": "cat > /app/hello.txt << 'EOF'\nHello, world!\nEOF", "security_risk": "LOW"}),
        ("finish", {"message": "Task complete. Created /app/hello.txt with 'Hello, world!'"}),
    ]
    # The in-context example in the user message (pip3 install, kill 124, ...) is the harness's text, not an action.
    assert "kill 124" in evidence.user_text
    assert "[The command completed with exit code 0.]" in evidence.tool_calls[0].observation
    assert check_security(evidence).score == 1.0


@pytest.mark.parametrize("closing", ["\n</function>", "\n</", ""], ids=["closed", "stop-word-cut", "no-close"])
def test_rm_in_an_openhands_function_block_is_caught(tmp_path: Path, closing: str) -> None:
    document = _load("openhands-no-function-calling")
    document["steps"][2]["message"] = (
        f"Clean up first.\n<function=execute_bash>\n<parameter=command>\n{JUNK}\n</parameter>{closing}"
    )
    folder = _write(tmp_path / "run", {"trajectory.json": document})
    evidence = load_evidence(folder)
    assert evidence.tool_calls[0].arguments["command"] == JUNK
    assert evidence.agent_messages[0] == "Clean up first."
    assert check_security(evidence).score == 0.0


def test_openhands_with_function_calling_keeps_its_tool_calls() -> None:
    evidence = load_evidence(TEXT_CALLS / "openhands-function-calling")
    assert [c.tool for c in evidence.tool_calls] == ["str_replace_editor", "finish"]
    assert evidence.tool_calls[0].arguments["command"] == "create"
