"""A trajectory as a person reads it in the report: steps, tool calls and their outputs, redacted and capped.

The trajectory is the agent's own record, so every string in it is untrusted: it is redacted here and HTML-escaped
by the template. Steps beyond `MAX_STEPS` and text beyond `MAX_TEXT` are cut with a note, so one runaway trial
cannot make the report unreadable (or quadratic). An agent that acted through its message text (terminus-2 with
`raw_content`, OpenHands without function calling) is shown the way the grader reads it (`verifier.message_calls`):
the plan's analysis and plan as the message, each command typed as a call, not the raw reply.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_skilleval.results.redact import cap_text, redact_text
from verifier.message_calls import acts_in_text, agent_shape, text_calls
from verifier.message_text import content_text

MAX_STEPS = 200
MAX_TEXT = 4000

__all__ = ["StepView", "ToolCallView", "trajectory_steps"]


@dataclass
class ToolCallView:
    name: str
    arguments: str
    output: str | None = None


@dataclass
class StepView:
    step_id: str
    source: str
    message: str
    tool_calls: list[ToolCallView] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)


def _clean(text: str) -> str:
    return cap_text(redact_text(text), MAX_TEXT, keep="head")


def _arguments(value: Any) -> str:
    if isinstance(value, Mapping) and set(value) == {"command"} and isinstance(value["command"], str):
        return _clean(value["command"])
    if isinstance(value, str):
        return _clean(value)
    if value is None or value == {}:
        return ""  # a call without arguments (terminus-2's mark_task_complete)
    if isinstance(value, Mapping) and "keystrokes" in value and set(value) <= {"keystrokes", "duration"}:
        return _clean(str(value["keystrokes"]))  # terminus-2's bash_command: the keys it typed
    return _clean(json.dumps(value, indent=1, ensure_ascii=False, default=str))


def _step(raw: Mapping[str, Any], index: int, shape: tuple[str, str] | None = None) -> StepView:
    """One step; `shape` (agent, terminus-2 parser) when the trajectory's calls are in its messages."""
    carried = text_calls(shape[0], shape[1], raw, f"text_{index}") if shape else None
    message: Any = carried[0] if carried else raw.get("message")
    raw_calls = carried[1] if carried else raw.get("tool_calls")
    results = (raw.get("observation") or {}).get("results") if isinstance(raw.get("observation"), Mapping) else None
    outputs: dict[str, str] = {}
    loose: list[str] = []
    for result in results if isinstance(results, list) else []:
        if not isinstance(result, Mapping):
            continue
        text = _clean(content_text(result.get("content")))
        call_id = result.get("source_call_id")
        if isinstance(call_id, str) and call_id not in outputs:
            outputs[call_id] = text
        else:
            loose.append(text)
    calls = []
    for call in raw_calls or []:
        if not isinstance(call, Mapping):
            continue
        call_id = call.get("tool_call_id")
        calls.append(
            ToolCallView(
                name=_clean(str(call.get("function_name") or "tool")),
                arguments=_arguments(call.get("arguments")),
                output=outputs.pop(call_id, None) if isinstance(call_id, str) else None,
            )
        )
    return StepView(
        step_id=str(raw.get("step_id", index + 1)),
        source=_clean(str(raw.get("source") or "?")),
        message=_clean(content_text(message)),
        tool_calls=calls,
        observations=loose + list(outputs.values()),
    )


def trajectory_steps(trajectory: Mapping[str, Any] | None) -> tuple[list[StepView], int]:
    """(the steps to show, how many more were left out)."""
    steps = trajectory.get("steps") if isinstance(trajectory, Mapping) else None
    if not isinstance(steps, list):
        return [], 0
    shape = agent_shape(trajectory) if isinstance(trajectory, Mapping) else ("", "json")
    in_text = shape if acts_in_text(shape[0], steps) else None
    shown = [_step(step, i, in_text) for i, step in enumerate(steps[:MAX_STEPS]) if isinstance(step, Mapping)]
    return shown, max(0, len(steps) - MAX_STEPS)
