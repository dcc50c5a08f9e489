"""Reading what the agent did: ATIF `trajectory.json`, else the agent's own log, into `TrajectoryEvidence`.

Real agents write trajectories that do not always pass Harbor's strict models (missing agent version, renumbered
steps, unknown keys), so the file is validated with Harbor's `Trajectory` only to record problems, and always read
leniently from the raw JSON. Only a missing file or one without steps sends us to the agent logs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from verifier import safe_io
from verifier.agent_logs import MAX_EVIDENCE_BYTES, rebuild_steps
from verifier.evidence import NO_TRAJECTORY, ToolCallRecord, TrajectoryEvidence
from verifier.message_calls import acts_in_text, agent_shape, text_calls
from verifier.message_text import content_text
from verifier.skill_folders import with_skills_dir

TRAJECTORY_FILE = "trajectory.json"
_MAX_PROBLEMS = 10
# Harbor names a linear-history segment `trajectory.cont-<N>.json`; nothing else is followed.
_SEGMENT_NAME = re.compile(r"trajectory\.cont-[1-9][0-9]{0,5}\.json")
MAX_SEGMENTS = 256
Continuation = Callable[[str], str]


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
    steps: list[Any],
    source: str,
    problems: list[str] | None = None,
    agent: tuple[str, str] = ("", "json"),
    agent_name: str | None = None,
) -> TrajectoryEvidence:
    """Evidence from ATIF-shaped step dicts: agent tool calls with their matched observations, and messages.

    `agent` is (name, terminus-2 parser) from the document's root (`message_calls.agent_shape`): a step of an agent
    that acts through text gets the calls its message carries (`verifier.message_calls`); the name, or `agent_name`
    for a trajectory rebuilt from a log, says where that agent keeps its own skills. A step copied from an
    earlier segment (`is_copied_context`) adds its messages but no calls: its actions were recorded where they ran.
    """
    problems = list(problems or [])
    agent_name = agent_name or agent[0] or None
    in_text = acts_in_text(agent[0], steps)
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
        raw_calls = step.get("tool_calls") or []
        carried = text_calls(agent[0], agent[1], step, f"text_{position}") if in_text else None
        if carried is not None:
            text, raw_calls = carried
        elif step.get("is_copied_context") is True:
            raw_calls = []
        if text.strip():
            agent_messages.append(text)
        results = (step.get("observation") or {}).get("results") if isinstance(step.get("observation"), Mapping) else []
        results = [r for r in results or [] if isinstance(r, Mapping)]
        step_id = step.get("step_id") if isinstance(step.get("step_id"), int) else None
        for raw_call in raw_calls:
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


def _none(problems: list[str], detail: str = NO_TRAJECTORY) -> TrajectoryEvidence:
    return TrajectoryEvidence(source="none", problems=problems, detail=detail)


def evidence_from_atif(
    data: Mapping[str, Any] | str, source: str = TRAJECTORY_FILE, continuation: Continuation | None = None
) -> TrajectoryEvidence:
    """Evidence from an ATIF document (dict or JSON text); one without steps gives unusable ('none') evidence.

    `continuation` reads a segment the document continues in (`continued_trajectory_ref`: Harbor's terminus-2 with
    `linear_history` splits its trajectory at each context summarization into `trajectory.cont-N.json`); the
    segments' steps are read in order, as one trajectory.
    """
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as error:
            return _none([f"{source} is not valid JSON: {error}"])
    steps, problems = _steps_of(data)
    if not steps:
        return _none(problems)
    problems = _validation_problems(data)  # type: ignore[arg-type]
    segments = [source]
    steps = list(steps)
    if continuation is not None:
        for name, segment in _continuations(data, continuation, problems):  # type: ignore[arg-type]
            segments.append(name)
            problems.extend(_validation_problems(segment))
            steps.extend(segment["steps"])
    evidence = evidence_from_steps(steps, source, problems, agent_shape(data))  # type: ignore[arg-type]
    if len(segments) > 1:
        evidence.segments = segments
    return evidence


def _continuations(
    data: Mapping[str, Any], read: Continuation, problems: list[str]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each segment the document continues in, in order; a bad reference ends the chain with a problem."""
    seen: set[str] = set()
    while len(seen) < MAX_SEGMENTS:
        ref = data.get("continued_trajectory_ref")
        if ref is None:
            return
        if not isinstance(ref, str) or not _SEGMENT_NAME.fullmatch(ref) or ref in seen:
            problems.append(
                f"continued_trajectory_ref {str(ref)[:80]!r} not followed: only a trajectory.cont-N.json beside it, once"
            )
            return
        seen.add(ref)
        try:
            text = read(ref)
        except FileNotFoundError:
            problems.append(f"{ref} (continued_trajectory_ref) not found")
            return
        except safe_io.UnsafePathError:
            raise  # a link the sandbox planted ends the grading, as for trajectory.json itself
        except (OSError, safe_io.FileTooLargeError) as error:
            problems.append(f"{ref} unreadable: {error}")
            return
        try:
            data = json.loads(text)
        except ValueError as error:
            problems.append(f"{ref} is not valid JSON: {error}")
            return
        if not isinstance(data, Mapping) or not isinstance(data.get("steps"), list):
            problems.append(f"{ref} has no steps list")
            return
        yield ref, data
    problems.append(f"more than {MAX_SEGMENTS} continued trajectory segments; the rest were not read")


def merged_trajectory(data: Mapping[str, Any], read: Continuation) -> tuple[dict[str, Any], list[str]]:
    """A linear-history trajectory as one document: every segment's steps in order, numbered from 1, without
    `continued_trajectory_ref`, the files read named in `extra.segments`; the document itself when it continues
    nowhere. Also the problems met following the chain (`_continuations`)."""
    problems: list[str] = []
    steps = list(data.get("steps") or [])
    names = []
    for name, segment in _continuations(data, read, problems):
        names.append(name)
        steps.extend(segment["steps"])
    if not names:
        return dict(data), problems
    merged = {key: value for key, value in data.items() if key != "continued_trajectory_ref"}
    merged["steps"] = [
        {**step, "step_id": number} if isinstance(step, Mapping) else step for number, step in enumerate(steps, 1)
    ]
    extra = data.get("extra")
    merged["extra"] = {**(extra if isinstance(extra, Mapping) else {}), "segments": [TRAJECTORY_FILE, *names]}
    return merged, problems


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


def load_evidence(
    agent_logs_dir: Path, trajectory_path: Path | None = None, skills_dir: str | None = None
) -> TrajectoryEvidence:
    """What to grade for one trial: trajectory.json (and the segments it continues in) if it has steps, else the
    first agent log that rebuilds any. With `skills_dir` (offline grading of a replay file), its `{skills_dir}`
    placeholder is written out as that folder, as the replay agent does in a run."""
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
        budget = [MAX_EVIDENCE_BYTES - len(text)]

        def continuation(name: str) -> str:
            # The same no-link read; all segments together stay within one trajectory's size limit.
            segment = safe_io.read_text(
                path.parent, name, max_bytes=max(budget[0], 0), errors="replace", label=str(path.parent)
            )
            budget[0] -= len(segment)
            return segment if skills_dir is None else with_skills_dir(segment, skills_dir)

        if skills_dir is not None:
            text = with_skills_dir(text, skills_dir)
        evidence = evidence_from_atif(text, source=path.name, continuation=continuation)
        if evidence.usable:
            return _with_log_outcomes(evidence, agent_logs_dir)
        problems.extend(evidence.problems)
    source, steps, log_problems = rebuild_steps(agent_logs_dir)
    problems.extend(log_problems)
    if source is None:
        return _none(problems, NO_TRAJECTORY)
    # An agent log is named after its agent (`codex.txt`, `claude-code.txt`, ...).
    return evidence_from_steps(steps, source, problems, agent_name=Path(source).stem)
