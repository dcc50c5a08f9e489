"""A trajectory made acceptable to Harbor's strict ATIF model, so it can be replayed: what real agents write that
the model refuses, repaired, and each repair named.

The grader reads trajectories leniently (`verifier.trajectory`), but the `replay` agent loads its file with Harbor's
`Trajectory` model, which refuses what several agents really write: codex leaves out `agent.version` and writes tool
arguments as a JSON string; others renumber steps, point an output at a call id the step does not hold, or add keys
of their own. Each of those is repaired the one way that keeps what the agent did; anything else is left for the
model to refuse, with its own message.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

MAX_PASSES = 64


def repaired(document: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(a copy Harbor's `Trajectory` accepts, the repairs made); ValueError with the model's first complaint when
    no repair applies."""
    from harbor.models.trajectories import Trajectory

    data = copy.deepcopy(dict(document))
    notes: list[str] = []
    _repair_agent(data, notes)
    steps = data.get("steps")
    if isinstance(steps, list):
        for position, step in enumerate(steps):
            if isinstance(step, dict):
                _repair_step(step, position, notes)
        if [s.get("step_id") for s in steps if isinstance(s, dict)] != list(range(1, len(steps) + 1)):
            for number, step in enumerate(steps, start=1):
                if isinstance(step, dict):
                    step["step_id"] = number
            notes.append("steps renumbered from 1")
    for _ in range(MAX_PASSES):
        try:
            Trajectory.model_validate(data)
        except ValidationError as error:
            extras = [e["loc"] for e in error.errors() if e["type"] == "extra_forbidden"]
            if not extras:
                first = error.errors()[0]
                where = ".".join(str(piece) for piece in first["loc"]) or "trajectory"
                raise ValueError(f"not a replayable ATIF trajectory: {where}: {first['msg']}") from None
            for loc in extras:
                _drop(data, loc)
                notes.append(f"unknown key {'.'.join(str(piece) for piece in loc)} dropped")
        else:
            return data, notes
    raise ValueError("not a replayable ATIF trajectory: too many unknown keys")


def _repair_agent(data: dict[str, Any], notes: list[str]) -> None:
    agent = data.get("agent")
    if isinstance(agent, dict) and not agent.get("version"):
        agent["version"] = "unknown"
        notes.append("agent.version set to 'unknown'")


def _arguments(value: Any) -> tuple[dict[str, Any], bool]:
    """Arguments as an object: a JSON object string decoded, any other value kept under `raw` (as the grader reads
    them); True when changed."""
    if isinstance(value, dict):
        return value, False
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            return decoded, True
    return ({} if value is None else {"raw": value}), True


def _repair_step(step: dict[str, Any], position: int, notes: list[str]) -> None:
    calls = step.get("tool_calls")
    ids: set[str] = set()
    if isinstance(calls, list):
        for number, call in enumerate(calls):
            if not isinstance(call, dict):
                continue
            if "arguments" in call:
                call["arguments"], changed = _arguments(call["arguments"])
                if changed:
                    notes.append(f"steps[{position}].tool_calls[{number}].arguments read as an object")
            if not call.get("tool_call_id"):
                call["tool_call_id"] = f"call_{position}_{number}"
                notes.append(f"steps[{position}].tool_calls[{number}] given the id {call['tool_call_id']}")
            ids.add(str(call["tool_call_id"]))
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    for result in results if isinstance(results, list) else []:
        if isinstance(result, dict) and result.get("source_call_id") not in (None, *ids):
            notes.append(f"steps[{position}] output of unknown call {str(result['source_call_id'])[:40]!r} unlinked")
            result["source_call_id"] = None


def _drop(data: Any, loc: tuple[Any, ...]) -> None:
    for piece in loc[:-1]:
        data = data[piece]
    if isinstance(data, dict):
        data.pop(loc[-1], None)
