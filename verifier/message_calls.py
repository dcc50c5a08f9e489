"""Tool calls an agent carried in its message text, read the way its harness read them; never guessed from prose.

Some agents act through text, not structured tool calls, and some trajectories keep only that text:

- terminus-2 with `trajectory_config={"raw_content": true}`: each agent step's message is the model's raw reply (a
  JSON or XML plan, `agent.extra.parser`) and the step has no tool calls. The plan's commands become the
  `bash_command` calls (`keystrokes`, `duration`) and `mark_task_complete` Harbor records in its default mode, and the
  message becomes its default-mode `Analysis: ...` / `Plan: ...` text, so one run grades the same in both modes.
  A reply Harbor refused (its observation begins "Previous response had parsing errors") typed nothing.
- OpenHands without function calling (`disable_tool_calls`, Harbor's `raw_content`): the reply ends in one
  `<function=NAME><parameter=KEY>VALUE</parameter>...</function>` block, parsed with OpenHands' own patterns
  (`openhands/llm/fn_call_converter.py`: the first block only, a missing `</function>` stop word restored, values
  stripped). The block becomes a call of that tool, and the message the text before it.

Harbor records either way for a whole run: every action as a tool call, or none. So a trajectory's messages are read
only when it is one of those agents' and none of its agent steps has tool calls; never a step copied from an earlier
segment (`is_copied_context`): its actions were taken, and graded, where it first appeared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from verifier.message_text import content_text
from verifier.tag_scan import tagged_spans
from verifier.terminus_plan import parse_plan

TERMINUS_AGENTS = frozenset({"terminus-2"})
OPENHANDS_AGENTS = frozenset({"openhands"})
PARSE_ERROR_PREFIX = "Previous response had parsing errors:"


def agent_shape(document: Mapping[str, Any]) -> tuple[str, str]:
    """(agent name, terminus-2 parser) from a trajectory's root `agent` object."""
    agent = document.get("agent")
    agent = agent if isinstance(agent, Mapping) else {}
    extra = agent.get("extra")
    extra = extra if isinstance(extra, Mapping) else {}
    parser = "xml" if extra.get("parser") == "xml" else "json"
    return str(agent.get("name") or ""), parser


def acts_in_text(agent: str, steps: Iterable[Any]) -> bool:
    """Whether a trajectory's calls are in its messages: an agent that acts through text, and no agent step with
    tool calls (with them, Harbor recorded every action it ran as one, and a message-only step ran nothing)."""
    if agent not in TERMINUS_AGENTS and agent not in OPENHANDS_AGENTS:
        return False
    return not any(isinstance(s, Mapping) and s.get("source") == "agent" and s.get("tool_calls") for s in steps)


def _reads_text(step: Mapping[str, Any]) -> bool:
    return step.get("source") == "agent" and not step.get("tool_calls") and step.get("is_copied_context") is not True


def _observation_text(step: Mapping[str, Any]) -> str:
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, Mapping) else None
    return "\n".join(content_text(r.get("content")) for r in results or [] if isinstance(r, Mapping))


def text_calls(agent: str, parser: str, step: Mapping[str, Any], call_prefix: str) -> tuple[str, list[dict]] | None:
    """(message, ATIF tool-call dicts) a step of a text-acting trajectory (`acts_in_text`) carries, or None when the
    step is read as it is."""
    if not _reads_text(step):
        return None
    message = content_text(step.get("message"))
    if agent in TERMINUS_AGENTS:
        if _observation_text(step).startswith(PARSE_ERROR_PREFIX):
            return None
        return _terminus(message, parser, call_prefix)
    if agent in OPENHANDS_AGENTS:
        return _openhands(message, call_prefix)
    return None


def _terminus(message: str, parser: str, call_prefix: str) -> tuple[str, list[dict]] | None:
    plan = parse_plan(message, parser)
    if plan.error:
        return None
    calls = [
        {
            "tool_call_id": f"{call_prefix}_{number}",
            "function_name": "bash_command",
            "arguments": {"keystrokes": command.keystrokes, "duration": command.duration},
        }
        for number, command in enumerate(plan.commands, start=1)
    ]
    if plan.task_complete:
        calls.append({"tool_call_id": f"{call_prefix}_task_complete", "function_name": "mark_task_complete"})
    parts = [f"{label}: {value}" for label, value in (("Analysis", plan.analysis), ("Plan", plan.plan)) if value]
    return "\n".join(parts), calls


def _fix_stopword(content: str) -> str:
    """OpenHands stops the model at `</function`; a reply with one call gets its closing tag back."""
    if content.count("<function=") == 1:
        return content.rstrip() + "function>" if content.endswith("</") else content + "\n</function>"
    return content


def _openhands(message: str, call_prefix: str) -> tuple[str, list[dict]] | None:
    content = _fix_stopword(message)
    match = tagged_spans(content, "<function=", "</function>", name_then_newline=True, first_only=True)
    if not match:
        return None
    ((name, body),) = match
    arguments = {key: value.strip() for key, value in tagged_spans(body, "<parameter=", "</parameter>")}
    call = {"tool_call_id": call_prefix, "function_name": name, "arguments": arguments}
    return content.split("<function=")[0].strip(), [call]
