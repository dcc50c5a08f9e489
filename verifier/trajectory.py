"""Reading what the agent did: ATIF `trajectory.json`, else the agent's own log, into `TrajectoryEvidence`.

Real agents write trajectories that do not always pass Harbor's strict models (missing agent version, renumbered
steps, unknown keys), so the file is validated with Harbor's `Trajectory` only to record problems, and always read
leniently from the raw JSON. Only a missing file or one without steps sends us to the agent logs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verifier import safe_io
from verifier.agent_logs import MAX_EVIDENCE_BYTES, rebuild_steps
from verifier.evidence import NO_TRAJECTORY, ToolCallRecord, TrajectoryEvidence
from verifier.message_text import content_text

TRAJECTORY_FILE = "trajectory.json"
_MAX_PROBLEMS = 10


def _arguments(value: Any) -> dict[str, Any]:
    """Tool arguments as a dict; OpenAI-style JSON strings are decoded, anything else kept under `raw`."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return {"raw": value} if value.strip() else {}
        return dict(decoded) if isinstance(decoded, Mapping) else {"raw": value}
    if value is None:
        return {}
    return {"raw": value}


def _validation_problems(data: Mapping[str, Any]) -> list[str]:
    from harbor.models.trajectories import Trajectory

    try:
        Trajectory.model_validate(dict(data))
    except ValidationError as error:
        problems = []
        for issue in error.errors()[:_MAX_PROBLEMS]:
            where = ".".join(str(piece) for piece in issue.get("loc", ()))
            problems.append(f"ATIF validation: {where}: {issue.get('msg', '')}".strip())
        if error.error_count() > _MAX_PROBLEMS:
            problems.append(f"ATIF validation: {error.error_count() - _MAX_PROBLEMS} more problem(s)")
        return problems
    return []


def evidence_from_steps(
    steps: list[Any], source: str, problems: list[str] | None = None, agent_name: str | None = None
) -> TrajectoryEvidence:
    """Evidence from ATIF-shaped step dicts: agent tool calls with their matched observations, and messages."""
    problems = list(problems or [])
    calls: list[ToolCallRecord] = []
    agent_messages: list[str] = []
    user_messages: list[str] = []
    system_messages: list[str] = []
    for position, step in enumerate(steps):
        if not isinstance(step, Mapping):
            problems.append(f"steps[{position}] is not an object; skipped")
            continue
        source_kind = step.get("source")
        text = content_text(step.get("message"))
        if source_kind in ("user", "system"):
            if text.strip():
                (user_messages if source_kind == "user" else system_messages).append(text)
            continue
        if source_kind != "agent":
            continue
        if text.strip():
            agent_messages.append(text)
        results = (step.get("observation") or {}).get("results") if isinstance(step.get("observation"), Mapping) else []
        results = [r for r in results or [] if isinstance(r, Mapping)]
        step_id = step.get("step_id") if isinstance(step.get("step_id"), int) else None
        for raw_call in step.get("tool_calls") or []:
            if not isinstance(raw_call, Mapping):
                problems.append(f"steps[{position}] has a tool call that is not an object; skipped")
                continue
            call_id = raw_call.get("tool_call_id") or raw_call.get("id")
            call_id = str(call_id) if call_id not in (None, "") else None
            observation = "\n".join(
                content_text(result.get("content"))
                for result in results
                if result.get("source_call_id") in (None, "") or (call_id and result.get("source_call_id") == call_id)
            )
            calls.append(
                ToolCallRecord(
                    index=len(calls),
                    step_id=step_id,
                    tool=str(raw_call.get("function_name") or raw_call.get("name") or ""),
                    arguments=_arguments(raw_call.get("arguments", raw_call.get("input"))),
                    observation=observation,
                    call_id=call_id,
                )
            )
    return TrajectoryEvidence(
        source=source,
        tool_calls=calls,
        agent_messages=agent_messages,
        user_messages=user_messages,
        system_messages=system_messages,
        agent_name=agent_name,
        problems=problems,
    )


def _steps_of(data: Any) -> tuple[list[Any], list[str]]:
    """The raw step list and any structural problem that made it unusable."""
    if not isinstance(data, Mapping):
        return [], [f"{TRAJECTORY_FILE} is not a JSON object"]
    steps = data.get("steps")
    if not isinstance(steps, list):
        return [], [f"{TRAJECTORY_FILE} has no steps list"]
    if not steps:
        return [], [f"{TRAJECTORY_FILE} has no steps"]
    return steps, []


def _agent_name(data: Any) -> str | None:
    agent = data.get("agent") if isinstance(data, Mapping) else None
    name = agent.get("name") if isinstance(agent, Mapping) else None
    return name if isinstance(name, str) and name.strip() else None


def _none(problems: list[str], detail: str = NO_TRAJECTORY) -> TrajectoryEvidence:
    return TrajectoryEvidence(source="none", problems=problems, detail=detail)


def evidence_from_atif(data: Mapping[str, Any] | str, source: str = TRAJECTORY_FILE) -> TrajectoryEvidence:
    """Evidence from an ATIF document (dict or JSON text); one without steps gives unusable ('none') evidence."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as error:
            return _none([f"{source} is not valid JSON: {error}"])
    steps, problems = _steps_of(data)
    if not steps:
        return _none(problems)
    problems = _validation_problems(data)  # type: ignore[arg-type]
    return evidence_from_steps(steps, source, problems, _agent_name(data))


def _with_log_outcomes(evidence: TrajectoryEvidence, agent_logs_dir: Path) -> TrajectoryEvidence:
    """Calls the trajectory left without any output get the agent log's record of them (same call id).

    Harbor's opencode converter drops the result of a tool call that failed (`status: error`, "File not found"),
    so a failed read of SKILL.md would look like a read; the agent's own log still says how each call ended.
    """
    wanting = {call.call_id for call in evidence.tool_calls if call.call_id and not call.observation.strip()}
    if not wanting:
        return evidence
    source, steps, _ = rebuild_steps(agent_logs_dir)
    if source is None:
        return evidence
    outcomes = {
        call.call_id: call.observation
        for call in evidence_from_steps(steps, source).tool_calls
        if call.call_id in wanting and call.observation.strip()
    }
    if not outcomes:
        return evidence
    calls = [
        call.model_copy(update={"observation": outcomes[call.call_id]}) if call.call_id in outcomes else call
        for call in evidence.tool_calls
    ]
    return evidence.model_copy(update={"tool_calls": calls})


def load_evidence(agent_logs_dir: Path, trajectory_path: Path | None = None) -> TrajectoryEvidence:
    """What to grade for one trial: trajectory.json if it has steps, else the first agent log that rebuilds any."""
    agent_logs_dir = Path(agent_logs_dir)
    path = Path(trajectory_path) if trajectory_path is not None else agent_logs_dir / TRAJECTORY_FILE
    problems: list[str] = []
    try:
        # A link here is never followed (it could point at any host file): UnsafePathError ends the grading.
        text = safe_io.read_text(
            path.parent, path.name, max_bytes=MAX_EVIDENCE_BYTES, errors="replace", label=str(path.parent)
        )
    except FileNotFoundError:
        problems.append(f"{path.name} not found")
    except safe_io.UnsafePathError:
        raise
    except (OSError, safe_io.FileTooLargeError) as error:
        problems.append(f"{path.name} unreadable: {error}")
    else:
        evidence = evidence_from_atif(text, source=path.name)
        if evidence.usable:
            return _with_log_outcomes(evidence, agent_logs_dir)
        problems.extend(evidence.problems)
    source, steps, log_problems = rebuild_steps(agent_logs_dir)
    problems.extend(log_problems)
    if source is None:
        return _none(problems, NO_TRAJECTORY)
    # An agent log is named after its agent (`codex.txt`, `claude-code.txt`, ...).
    return evidence_from_steps(steps, source, problems, agent_name=Path(source).stem)
