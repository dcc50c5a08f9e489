"""skill_efficiency (the Efficiency dimension): did the agent go straight to the right skill and spend its calls on
the task? Mean of `routing` and `tool_efficiency`; negative, unlabeled and skill-less cases are skipped at 1.0, so a
control stays scoreable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifier.checks._harness_skills import HarnessLoad, harness_loads, installed_loads
from verifier.checks._skill_dirs import (
    DEFAULT_CWD,
    installed_skill,
    read_failed,
    skill_tool_failed,
    skills_dirs_for,
)
from verifier.checks._skill_reads import SkillRead, skill_reads
from verifier.checks.skill_entry import (
    ACCEPTABLE_ALTERNATE_SCORE,
    acceptable_skills,
    expected_script,
    expected_skill,
    match_accepted,
    should_trigger,
    workspace_mode,
    workspace_skill_names,
)
from verifier.evidence import NO_TRAJECTORY, MetricResult, ToolCallRecord, TrajectoryEvidence
from verifier.skill_folders import DEFAULT_SKILLS_DIRS
from verifier.tools import is_exec_tool, is_write_tool, workdir_argument

# The harness's own "the task is done" calls: terminus-2 `mark_task_complete`, openhands `finish`, cline
# `attempt_completion`.
COMPLETION_TOOLS = frozenset({"mark_task_complete", "finish", "attempt_completion"})
WASTED_MARKERS = ("--help", "--version", "which ", "apt ", "pip install", "apt-get", "brew ", "npm install")
_EFFICIENCY_TEXT_KEYS = ("command", "cmd", "code", "file_path", "path", "raw")


def _read_target(read: SkillRead, call: ToolCallRecord, skills_dirs: tuple[str, ...]) -> str | None:
    """The installed skill a read loaded; '' for a SKILL.md from elsewhere (another skill); None for no load
    (a Skill tool call that was refused, a read that found no file)."""
    if read.kind == "skill_tool":
        return None if skill_tool_failed(call.observation) else read.name
    if read_failed(call.observation, read.path):
        return None
    return installed_skill(read.path, skills_dirs, workdir_argument(call.arguments) or DEFAULT_CWD)


def check_routing(
    calls: list[ToolCallRecord],
    entry: Mapping[str, Any],
    loads: list[HarnessLoad] | None = None,
    skills_dirs: tuple[str, ...] = DEFAULT_SKILLS_DIRS,
) -> dict[str, Any]:
    """Did every skill load go to an allowed skill, and was the expected one among them? A load is a SKILL.md read
    or Skill-tool use that worked, or the harness's own load (`loads`, those of the trial's skills folders), as
    activation counts them; a SKILL.md from outside the skills folders is another skill, recorded, not routed."""
    accepted = acceptable_skills(entry)
    mode = workspace_mode(entry)
    allowed = set(accepted)
    if mode == "group":
        allowed.update(workspace_skill_names(entry))
    observed: list[dict[str, Any]] = []
    elsewhere: list[dict[str, Any]] = []
    wrong: list[dict[str, Any]] = []
    matched_scores: list[float] = []
    by_index = {call.index: call for call in calls}
    found: list[tuple[dict[str, Any], str]] = [
        ({"via": "harness", "skill": load.skill, "how": load.how}, load.skill) for load in loads or []
    ]
    for read in skill_reads(calls):
        record: dict[str, Any] = {"call_index": read.call_index, "tool": read.tool, "via": read.kind}
        if read.path:
            record["path"] = read.path
        if read.name:
            record["skill"] = read.name
        target = _read_target(read, by_index[read.call_index], skills_dirs)
        if target is None:
            continue
        if not target:
            elsewhere.append(record)
            continue
        found.append((record, target))
    for record, target in found:
        # The Skill tool's argument may carry a plugin prefix (`plugin:name`): matched as a substring, as before.
        matched = match_accepted(target, accepted, exact=record["via"] != "skill_tool")
        if matched:
            record["matched_skill"], record["match_score"] = matched
            matched_scores.append(matched[1])
        elif target not in allowed:
            wrong.append(record)
        observed.append(record)
    base = {"allowed_skills": sorted(allowed), "workspace_mode": mode, "reads": observed[:20]}
    if elsewhere:
        base["other_skill_reads"] = elsewhere[:10]
    if not observed:
        return {
            "score": 0.0,
            "passed": False,
            "message": "Agent did not read any SKILL.md (and no skill was loaded)",
            **base,
        }
    if wrong:
        names = ", ".join(sorted({w.get("skill") or w.get("path", "?") for w in wrong}))
        return {"score": 0.0, "passed": False, "message": f"Read wrong skill(s): {names}", "wrong_reads": wrong, **base}
    if matched_scores and max(matched_scores) < 1.0:
        return {
            "score": ACCEPTABLE_ALTERNATE_SCORE,
            "passed": True,
            "message": "Routed to an acceptable alternate, never the expected skill",
            **base,
        }
    if mode == "group" and not matched_scores:
        return {"score": 1.0, "passed": True, "message": "Read only allowed workspace skills", **base}
    return {"score": 1.0, "passed": True, "message": "Agent correctly routed to the expected skill", **base}


def _efficiency_text(arguments: Mapping[str, Any]) -> str:
    for key in _EFFICIENCY_TEXT_KEYS:
        value = arguments.get(key)
        if isinstance(value, list):
            value = " ".join(str(item) for item in value)
        if value is not None and str(value).strip():
            return str(value)
    return ""


def classify_call(call: ToolCallRecord, skill: str, script: str) -> str:
    """'productive' or 'wasted' (tested in this order: skill/script use, setup noise, read/exec/skill/write/edit and
    the harness's completion calls, anything else). Writing and editing files is the work itself; `finish` and
    `mark_task_complete` are how terminus-2 and openhands end a task."""
    tool = call.tool.lower()
    text = _efficiency_text(call.arguments)
    exec_call = is_exec_tool(call.tool)
    if ("read" in tool and skill and skill in text) or (exec_call and script and script in text):
        return "productive"
    if any(marker in f"{tool} {text}".lower() for marker in WASTED_MARKERS):
        return "wasted"
    if tool in COMPLETION_TOOLS:
        return "productive"
    if "read" in tool or exec_call or tool == "skill" or (is_write_tool(call.tool) and "todo" not in tool):
        return "productive"
    return "wasted"


def check_tool_efficiency(calls: list[ToolCallRecord], entry: Mapping[str, Any]) -> dict[str, Any]:
    """Share of calls that were productive; installs, --help probes and non-read/exec tools are wasted."""
    if not calls:
        return {"score": 1.0, "passed": True, "productive": 0, "wasted": 0, "total": 0, "wasted_calls": []}
    skill, script = expected_skill(entry), expected_script(entry)
    wasted = [c for c in calls if classify_call(c, skill, script) == "wasted"]
    score = round((len(calls) - len(wasted)) / len(calls), 4)
    return {
        "score": score,
        "passed": score >= 0.5,
        "productive": len(calls) - len(wasted),
        "wasted": len(wasted),
        "total": len(calls),
        "wasted_calls": [
            {"call_index": c.index, "tool": c.tool, "text": _efficiency_text(c.arguments)[:200]} for c in wasted[:5]
        ],
    }


def check_skill_efficiency(evidence: TrajectoryEvidence, entry: Mapping[str, Any]) -> MetricResult:
    """round(mean(routing, tool_efficiency), 4) for positive cases with an expected skill."""
    trigger = should_trigger(entry)
    if not evidence.usable:
        return MetricResult(score=0.0, details={"error": NO_TRAJECTORY, "trajectory_detail": evidence.detail})
    if not trigger or not expected_skill(entry):
        return MetricResult(
            score=1.0,
            details={"skipped": True, "should_trigger": trigger, "message": "Skipped (negative or no expected_skill)"},
        )
    calls = evidence.tool_calls
    if not calls:
        return MetricResult(score=0.0, details={"message": "No tool calls"})
    skills_dirs = skills_dirs_for(evidence.agent_name, entry)
    routing = check_routing(calls, entry, installed_loads(harness_loads(evidence), skills_dirs), skills_dirs)
    tool_efficiency = check_tool_efficiency(calls, entry)
    score = round((routing["score"] + tool_efficiency["score"]) / 2, 4)
    return MetricResult(
        score=score,
        details={
            "routing": routing,
            "tool_efficiency": tool_efficiency,
            "message": f"routing={routing['score']}, tool_efficiency={tool_efficiency['score']}",
        },
    )
