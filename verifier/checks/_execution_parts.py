"""The four sub-scores of skill_execution for a positive case: activation, script execution, workflow order and
error recovery, read from what ran in the sandbox. Each returns a details dict with a `score` key so an author can
see which call and which path earned or cost the score.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from verifier.checks._harness_skills import HarnessLoad, load_evidence
from verifier.checks._shell_words import shell_text
from verifier.checks._skill_dirs import (
    DEFAULT_CWD,
    installed_skill,
    read_failed,
    skill_tool_failed,
)
from verifier.checks._skill_reads import (
    has_read_evidence_args,
    is_native_skill_read,
    iter_skill_reads,
    shell_skill_reads,
)
from verifier.checks.skill_entry import ACCEPTABLE_ALTERNATE_SCORE, match_accepted, match_type
from verifier.evidence import ToolCallRecord
from verifier.skill_folders import DEFAULT_SKILLS_DIRS
from verifier.tools import is_exec_tool, is_skill_tool, path_argument, skill_tool_name, workdir_argument

SHELL_READ_CAP = 0.75


def _accepted_details(accepted: list[str]) -> dict[str, Any]:
    return {
        "expected_skill": accepted[0] if accepted else "",
        "acceptable_skills": accepted,
        "acceptable_alternates": accepted[1:],
        "accepted_skills": accepted,
    }


def _activated(
    accepted: list[str], matched: tuple[str, float], how: str, call: ToolCallRecord, cap: float = 1.0, **extra: Any
) -> dict[str, Any]:
    name, raw_score = matched
    return {
        "score": min(cap, raw_score),
        "passed": True,
        "message": f"Skill activated via {how}",
        "match_type": match_type(raw_score),
        "matched_skill": name,
        "via": how,
        "call_index": call.index,
        "tool": call.tool,
        **extra,
        **_accepted_details(accepted),
    }


_Candidate = tuple[tuple[str, float], ToolCallRecord, dict[str, Any]]


def _best(candidates: list[_Candidate]) -> _Candidate | None:
    """The highest-scoring candidate, earliest first on ties."""
    best: _Candidate | None = None
    for candidate in candidates:
        if best is None or candidate[0][1] > best[0][1]:
            best = candidate
    return best


def _harness_activation(accepted: list[str], loads: list[HarnessLoad]) -> dict[str, Any] | None:
    """The best skill the harness itself loaded (codex `$skill`, claude-code `/skill`, an injected SKILL.md)."""
    best: tuple[tuple[str, float], HarnessLoad] | None = None
    for load in loads:
        matched = match_accepted(load.skill, accepted, exact=True) or match_accepted(
            load.skill.rsplit(":", 1)[-1], accepted, exact=True
        )
        if matched and (best is None or matched[1] > best[0][1]):
            best = (matched, load)
    if best is None:
        return None
    (name, raw_score), load = best
    return {
        "score": raw_score,
        "passed": True,
        "message": f"Skill activated by the harness: {load.how}",
        "match_type": match_type(raw_score),
        "matched_skill": name,
        "via": "harness",
        **load_evidence(load),
        **_accepted_details(accepted),
    }


_READS_SHOWN = 20


def _other_skill_reads(calls: list[ToolCallRecord], skills_dirs: tuple[str, ...]) -> list[dict[str, Any]]:
    """The SKILL.md reads that did not activate the expected skill (the first 20): another skill's, one from outside
    the trial's skills folders, or a read that failed."""
    found: list[dict[str, Any]] = []
    by_index = {call.index: call for call in calls}
    for read in iter_skill_reads(calls):
        if read.kind == "skill_tool":
            continue
        call = by_index[read.call_index]
        entry: dict[str, Any] = {"call_index": read.call_index, "tool": read.tool, "path": read.path}
        if read_failed(call.observation, read.path):
            entry["failed"] = True
        elif not installed_skill(read.path, skills_dirs, workdir_argument(call.arguments) or DEFAULT_CWD):
            entry["outside_skills_dirs"] = True
        found.append(entry)
        if len(found) >= _READS_SHOWN:
            break
    return found


def check_activation(
    calls: list[ToolCallRecord],
    accepted: list[str],
    loads: list[HarnessLoad] | None = None,
    skills_dirs: tuple[str, ...] = DEFAULT_SKILLS_DIRS,
) -> dict[str, Any]:
    """Did the agent load the expected skill (or an accepted alternate) from a skills folder of the trial? First
    matching rule wins: a Skill tool call that succeeded, a native read of its SKILL.md, a load by the harness
    (`loads`, already those of the trial's skills folders), then a shell read. A load that failed is no load."""
    if not accepted:
        return {"score": 1.0, "passed": True, "skipped": True, "message": "No expected_skill -- skipped"}

    skill_tool_calls = [c for c in calls if is_skill_tool(c.tool) and not skill_tool_failed(c.observation)]
    hits = []
    for call in skill_tool_calls:
        matched = match_accepted(skill_tool_name(call.arguments), accepted, exact=False)
        if matched:
            hits.append((matched, call, {"skill_tool_name": skill_tool_name(call.arguments)}))
    if best := _best(hits):
        return _activated(accepted, best[0], "Skill tool", best[1], **best[2])

    hits = []
    for call in calls:
        if not is_native_skill_read(call):
            continue
        path = path_argument(call.arguments)
        name = installed_skill(path, skills_dirs, workdir_argument(call.arguments) or DEFAULT_CWD)
        matched = match_accepted(name, accepted, exact=True) if name else None
        if matched and not read_failed(call.observation, path):
            hits.append((matched, call, {"path": path}))
    if best := _best(hits):
        return _activated(accepted, best[0], "native read of SKILL.md", best[1], **best[2])

    if harness := _harness_activation(accepted, list(loads or [])):
        return harness

    hits = []
    for call in calls:
        if not is_exec_tool(call.tool):
            continue
        command = shell_text(call.arguments)
        cwd = workdir_argument(call.arguments) or DEFAULT_CWD
        for path in shell_skill_reads(command):
            matched = match_accepted(installed_skill(path, skills_dirs, cwd), accepted, exact=True)
            if matched and not read_failed(call.observation, path):
                hits.append((matched, call, {"path": path, "command": command[:300]}))
                break
    if best := _best(hits):
        return _activated(accepted, best[0], "shell read command", best[1], cap=SHELL_READ_CAP, **best[2])

    other_reads = _other_skill_reads(calls, skills_dirs)
    refused = [
        {"call_index": c.index, "skill": skill_tool_name(c.arguments)}
        for c in calls
        if is_skill_tool(c.tool) and skill_tool_failed(c.observation)
    ]
    extra: dict[str, Any] = {"skill_md_reads": other_reads, "skills_dirs": list(skills_dirs)}
    if refused:
        extra["refused_skill_tool_calls"] = refused
    if skill_tool_calls:
        names = sorted({skill_tool_name(c.arguments) for c in skill_tool_calls})
        return {
            "score": 0.0,
            "passed": False,
            "message": f"Activated different skill(s): {', '.join(names)}",
            "activated_skills": names,
            **extra,
            **_accepted_details(accepted),
        }
    return {
        "score": 0.0,
        "passed": False,
        "message": "Expected skill was not activated (no successful Skill tool call, read of its SKILL.md in a "
        "skills folder of the trial, or harness load of it)",
        **extra,
        **_accepted_details(accepted),
    }


def check_script_execution(calls: list[ToolCallRecord], script: str) -> dict[str, Any]:
    """Did an exec call run the expected script? A run that found no such file did not run it; seeing its name only
    in an output earns 0.75."""
    if not script:
        return {"score": 1.0, "passed": True, "skipped": True, "message": "No expected_script"}
    exec_calls = [c for c in calls if is_exec_tool(c.tool)]
    missing = None
    for call in exec_calls:
        if script in shell_text(call.arguments):
            if read_failed(call.observation, script, exit_codes=False):
                missing = missing or call
                continue
            return {
                "score": 1.0,
                "passed": True,
                "message": f"Ran {script}",
                "call_index": call.index,
                "tool": call.tool,
                "command": shell_text(call.arguments)[:300],
            }
    if missing is not None:
        return {
            "score": 0.0,
            "passed": False,
            "message": f"Tried to run {script}, but the file was not there",
            "call_index": missing.index,
            "tool": missing.tool,
        }
    for call in calls:
        if script.lower() in call.observation.lower():
            return {
                "score": ACCEPTABLE_ALTERNATE_SCORE,
                "passed": True,
                "message": f"{script} appears only in a tool output",
                "call_index": call.index,
                "tool": call.tool,
            }
    if not exec_calls:
        return {"score": 0.0, "passed": False, "message": "No execute/run_code call found"}
    return {"score": 0.0, "passed": False, "message": f"No exec call ran {script}"}


def _workflow_event_stream(calls: list[ToolCallRecord], preloaded: bool = False) -> Iterator[tuple[str, int]]:
    """Yields workflow_events' items one by one, so a long trajectory can be judged without storing them all.

    `preloaded`: the harness loaded a skill into the conversation, so its instructions were read before any call
    (call index -1).
    """
    if preloaded:
        yield "read_skill", -1
    first_skill_call = next((c for c in calls if is_skill_tool(c.tool) and skill_tool_name(c.arguments)), None)
    if first_skill_call is not None:
        yield "read_skill", first_skill_call.index
    for call in calls:
        exec_call = is_exec_tool(call.tool)
        command = shell_text(call.arguments) if exec_call else ""
        if has_read_evidence_args(call) or (exec_call and shell_skill_reads(command)):
            yield "read_skill", call.index
        elif exec_call and command.strip() and "--help" not in command and "which " not in command:
            yield "execution", call.index


def workflow_events(calls: list[ToolCallRecord]) -> list[tuple[str, int]]:
    """The (event, call index) sequence: read_skill for a SKILL.md read or Skill tool, execution for real commands."""
    return list(_workflow_event_stream(calls))


_SEQUENCE_SHOWN = 50


def check_workflow_order(calls: list[ToolCallRecord], expected: str, preloaded: bool = False) -> dict[str, Any]:
    """Was SKILL.md read before the agent started running commands? Which skill was read is not checked here;
    `preloaded` says the harness loaded a skill before the first call."""
    shown: list[dict[str, Any]] = []
    any_event = read_seen = executed = executed_after_read = False
    for kind, index in _workflow_event_stream(calls, preloaded):
        any_event = True
        if len(shown) < _SEQUENCE_SHOWN:
            shown.append({"event": kind, "call_index": index})
        if kind == "read_skill":
            read_seen = True
        elif kind == "execution":
            executed = True
            executed_after_read = executed_after_read or read_seen
    base = {"sequence": shown}
    if not any_event:
        return {"score": 0.0, "passed": False, "message": "No skill read or execution observed", **base}
    if executed_after_read:
        return {"score": 1.0, "passed": True, "message": "Read SKILL.md before executing", **base}
    if not expected and executed:
        return {"score": 1.0, "passed": True, "message": "No expected_skill; execution observed", **base}
    if read_seen and not executed:
        return {"score": 1.0, "passed": True, "message": "Skill activated (no execution needed)", **base}
    return {"score": 0.0, "passed": False, "message": "Executed commands before reading SKILL.md", **base}


ERROR_KEYWORDS = (
    "error",
    "traceback",
    "exception",
    "exit code 1",
    "exit code 2",
    "not found",
    "command not found",
    "permission denied",
    "no such file",
    "filenotfounderror",
    "modulenotfounderror",
)
SKILL_FAULT_KEYWORDS = (
    "no such file",
    "filenotfounderror",
    "not found",
    "command not found",
    "config",
    "missing",
    "invalid path",
    "modulenotfounderror",
)
# Rebuilt agent logs mark a failed command structurally (`status=failed exit_code=1`); count those too.
_STRUCTURED_FAILURE = re.compile(r"\bstatus=(?:failed|error)\b|\bexit_code=-?[1-9]\d*\b")
CORRECTION_WINDOW = 5


def _failed(call: ToolCallRecord) -> bool:
    """Whether an exec call failed. A read of SKILL.md failed only when the read did: the skill's own text may well
    say "error" or "config" (most do)."""
    lowered = call.observation.lower()
    if not (any(keyword in lowered for keyword in ERROR_KEYWORDS) or _STRUCTURED_FAILURE.search(lowered)):
        return False
    reads = shell_skill_reads(shell_text(call.arguments))
    return not reads or any(read_failed(call.observation, path) for path in reads)


def _similar(first: str, second: str) -> bool:
    a, b = first.split(), second.split()
    if not a or not b:
        return False
    return a[0] == b[0] or a[0] in second or b[0] in first


def check_error_recovery(calls: list[ToolCallRecord]) -> dict[str, Any]:
    """Failed commands the agent then fixed; a fix the skill forced (missing file, bad config) costs more."""
    if not calls:
        return {"score": 1.0, "passed": True, "message": "No tool calls", "first_attempt_clean": True}
    # Parallel lists rather than a tuple per call: a long trajectory then allocates (and garbage-collects) far less.
    runs = [c for c in calls if is_exec_tool(c.tool)]
    failed = [_failed(c) for c in runs]
    corrections: list[dict[str, Any]] = []
    failures = 0
    for position, call in enumerate(runs):
        if not failed[position]:
            continue
        failures += 1
        command = shell_text(call.arguments)
        for offset in range(1, CORRECTION_WINDOW + 1):
            if position + offset >= len(runs):
                break
            retry = runs[position + offset]
            if not failed[position + offset] and _similar(command, retry_command := shell_text(retry.arguments)):
                lowered = call.observation.lower()
                fault = "skill" if any(k in lowered for k in SKILL_FAULT_KEYWORDS) else "agent"
                corrections.append(
                    {
                        "failed_cmd": command[:200],
                        "retry_cmd": retry_command[:200],
                        "error": call.observation[:300],
                        "fault": fault,
                        "steps_to_fix": offset,
                        "failed_call_index": call.index,
                        "retry_call_index": retry.index,
                    }
                )
                break
    skill_faults = sum(1 for c in corrections if c["fault"] == "skill")
    agent_faults = len(corrections) - skill_faults
    if not corrections:
        score = 1.0
    elif skill_faults:
        score = max(0.0, 1.0 - 0.25 * skill_faults)
    else:
        score = max(0.5, 1.0 - 0.1 * agent_faults)
    return {
        "score": round(score, 4),
        "passed": score >= 0.5,
        "first_attempt_clean": failures == 0,
        "failures": failures,
        "corrections": corrections,
        "skill_faults": skill_faults,
        "agent_faults": agent_faults,
    }
