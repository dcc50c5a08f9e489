"""Render one scripted reply in the wire format each client parses: OpenAI chat, OpenAI Responses, Anthropic messages.

Each dialect has a plain JSON body and a streamed form (a list of SSE frames) with the event shapes the official SDKs
and the agent CLIs (codex: Responses; claude-code: messages) read. Rendering is pure: no sockets here.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

from pytest_skilleval.testing.script import ToolCall

Dialect = Literal["chat", "responses", "messages"]
# An SSE frame: optional event name and its data (a JSON object, or a literal string such as "[DONE]").
Frame = tuple[str | None, dict[str, Any] | str]

_LENGTH_REASONS = {"length", "max_tokens", "max_output_tokens"}


class RenderError(ValueError):
    """A reply that this dialect cannot carry (e.g. non-object tool arguments for Anthropic)."""


@dataclass(frozen=True)
class Turn:
    """A content reply, resolved for one request: what to say, token counts, and a sequence number for ids."""

    model: str
    seq: int
    text: str | None
    tool_calls: list[ToolCall]
    refusal: str | None
    stop_reason: str | None
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    created: int = 0

    def __post_init__(self) -> None:
        if not self.created:
            object.__setattr__(self, "created", int(time.time()))


def pieces(text: str) -> list[str]:
    """Split text into word-sized deltas (whitespace kept), so a stream has several chunks like a real one."""
    return re.findall(r"\s*\S+\s*", text) or [text]


def arguments_text(call: ToolCall) -> str:
    return call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)


def _call_id(turn: Turn, index: int, call: ToolCall, prefix: str) -> str:
    return call.id or f"{prefix}_scripted_{turn.seq}_{index}"


# ---------------------------------------------------------------- OpenAI chat completions


def _chat_finish(turn: Turn) -> str:
    if turn.stop_reason is not None:
        return "length" if turn.stop_reason in _LENGTH_REASONS else turn.stop_reason
    return "tool_calls" if turn.tool_calls else "stop"


def _chat_usage(turn: Turn) -> dict[str, Any]:
    return {
        "prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens,
        "prompt_tokens_details": {"cached_tokens": turn.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _chat_tool_calls(turn: Turn) -> list[dict[str, Any]]:
    return [
        {
            "id": _call_id(turn, index, call, "call"),
            "type": "function",
            "function": {"name": call.name, "arguments": arguments_text(call)},
        }
        for index, call in enumerate(turn.tool_calls)
    ]


def chat_body(turn: Turn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": turn.refusal}
    if turn.tool_calls:
        message["tool_calls"] = _chat_tool_calls(turn)
    return {
        "id": f"chatcmpl-scripted-{turn.seq}",
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [{"index": 0, "message": message, "finish_reason": _chat_finish(turn), "logprobs": None}],
        "usage": _chat_usage(turn),
        "system_fingerprint": None,
    }


def chat_frames(turn: Turn, include_usage: bool) -> list[Frame]:
    base = {
        "id": f"chatcmpl-scripted-{turn.seq}",
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
        "system_fingerprint": None,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Frame:
        data = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
        if include_usage:
            data["usage"] = None
        return (None, data)

    frames = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for piece in pieces(turn.text) if turn.text else []:
        frames.append(chunk({"content": piece}))
    for piece in pieces(turn.refusal) if turn.refusal else []:
        frames.append(chunk({"refusal": piece}))
    for index, call in enumerate(_chat_tool_calls(turn)):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        frames.append(chunk({"tool_calls": [head]}))
        for piece in _split(call["function"]["arguments"]):
            frames.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    frames.append(chunk({}, _chat_finish(turn)))
    if include_usage:
        frames.append((None, {**base, "choices": [], "usage": _chat_usage(turn)}))
    frames.append((None, "[DONE]"))
    return frames


def _split(text: str, size: int = 24) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


# ---------------------------------------------------------------- OpenAI Responses API


def _responses_items(turn: Turn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.text is not None or turn.refusal is not None:
        part: dict[str, Any] = (
            {"type": "refusal", "refusal": turn.refusal}
            if turn.refusal is not None
            else {"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}
        )
        items.append(
            {
                "id": f"msg_scripted_{turn.seq}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        )
    for index, call in enumerate(turn.tool_calls):
        call_id = _call_id(turn, index, call, "call")
        if call.custom:
            items.append(
                {
                    "id": f"ctc_scripted_{turn.seq}_{index}",
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": call.name,
                    "input": arguments_text(call),
                }
            )
        else:
            items.append(
                {
                    "id": f"fc_scripted_{turn.seq}_{index}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": call.name,
                    "arguments": arguments_text(call),
                }
            )
    return items


def _responses_envelope(turn: Turn, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    incomplete = status == "incomplete"
    body: dict[str, Any] = {
        "id": f"resp_scripted_{turn.seq}",
        "object": "response",
        "created_at": turn.created,
        "status": status,
        "model": turn.model,
        "output": output,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "usage": None,
    }
    if status in {"completed", "incomplete"}:
        body["usage"] = {
            "input_tokens": turn.input_tokens,
            "input_tokens_details": {"cached_tokens": turn.cached_tokens},
            "output_tokens": turn.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.input_tokens + turn.output_tokens,
        }
    return body


def _responses_status(turn: Turn) -> str:
    return "incomplete" if turn.stop_reason in _LENGTH_REASONS else "completed"


def responses_body(turn: Turn) -> dict[str, Any]:
    return _responses_envelope(turn, _responses_status(turn), _responses_items(turn))


def _item_frames(index: int, item: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The events one output item streams as, between its output_item.added and output_item.done."""
    at = {"item_id": item["id"], "output_index": index}
    if item["type"] == "function_call":
        events = [
            ("response.function_call_arguments.delta", {**at, "delta": piece}) for piece in _split(item["arguments"])
        ]
        return events + [
            ("response.function_call_arguments.done", {**at, "name": item["name"], "arguments": item["arguments"]})
        ]
    if item["type"] == "custom_tool_call":
        events = [("response.custom_tool_call_input.delta", {**at, "delta": piece}) for piece in _split(item["input"])]
        return events + [("response.custom_tool_call_input.done", {**at, "input": item["input"]})]
    part = item["content"][0]
    at = {**at, "content_index": 0}
    empty: dict[str, Any]
    if part["type"] == "refusal":
        empty = {"type": "refusal", "refusal": ""}
        deltas = [("response.refusal.delta", {**at, "delta": piece}) for piece in pieces(part["refusal"])]
        done = [("response.refusal.done", {**at, "refusal": part["refusal"]})]
    else:
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        deltas = [
            ("response.output_text.delta", {**at, "delta": piece, "logprobs": []}) for piece in pieces(part["text"])
        ]
        done = [("response.output_text.done", {**at, "text": part["text"], "logprobs": []})]
    return [
        ("response.content_part.added", {**at, "part": empty}),
        *deltas,
        *done,
        ("response.content_part.done", {**at, "part": part}),
    ]


def responses_frames(turn: Turn) -> list[Frame]:
    status = _responses_status(turn)
    items = _responses_items(turn)
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": _responses_envelope(turn, "in_progress", [])}),
        ("response.in_progress", {"response": _responses_envelope(turn, "in_progress", [])}),
    ]
    for index, item in enumerate(items):
        added = {**item, "status": "in_progress"}
        if item["type"] == "message":
            added["content"] = []
        elif item["type"] == "function_call":
            added["arguments"] = ""
        else:
            added["input"] = ""
        events.append(("response.output_item.added", {"output_index": index, "item": added}))
        events.extend(_item_frames(index, item))
        events.append(("response.output_item.done", {"output_index": index, "item": item}))
    final = "response.incomplete" if status == "incomplete" else "response.completed"
    events.append((final, {"response": _responses_envelope(turn, status, items)}))
    return [(name, {"type": name, "sequence_number": number, **data}) for number, (name, data) in enumerate(events)]


# ---------------------------------------------------------------- Anthropic messages


def _anthropic_stop(turn: Turn) -> str:
    if turn.stop_reason is not None:
        return "max_tokens" if turn.stop_reason in _LENGTH_REASONS else turn.stop_reason
    if turn.refusal is not None:
        return "refusal"
    return "tool_use" if turn.tool_calls else "end_turn"


def _tool_input(call: ToolCall) -> dict[str, Any]:
    if call.custom and isinstance(call.arguments, str):
        return {"input": call.arguments}
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        value = json.loads(call.arguments)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise RenderError(f"tool call {call.name!r}: Anthropic tool_use input must be a JSON object")
    return value


def _anthropic_blocks(turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    said = turn.refusal if turn.refusal is not None else turn.text
    if said is not None:
        blocks.append({"type": "text", "text": said})
    for index, call in enumerate(turn.tool_calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": _call_id(turn, index, call, "toolu"),
                "name": call.name,
                "input": _tool_input(call),
            }
        )
    return blocks


def _anthropic_usage(turn: Turn, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": turn.input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": turn.cached_tokens,
    }


def messages_body(turn: Turn) -> dict[str, Any]:
    return {
        "id": f"msg_scripted_{turn.seq}",
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": _anthropic_blocks(turn),
        "stop_reason": _anthropic_stop(turn),
        "stop_sequence": None,
        "usage": _anthropic_usage(turn, turn.output_tokens),
    }


def messages_frames(turn: Turn) -> list[Frame]:
    blocks = _anthropic_blocks(turn)
    start = {**messages_body(turn), "content": [], "stop_reason": None, "usage": _anthropic_usage(turn, 1)}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": start}), ("ping", {})]
    for index, block in enumerate(blocks):
        opening: dict[str, Any]
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
        else:
            opening = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece} for piece in _split(json.dumps(block["input"]))
            ]
        events.append(("content_block_start", {"index": index, "content_block": opening}))
        events.extend(("content_block_delta", {"index": index, "delta": delta}) for delta in deltas)
        events.append(("content_block_stop", {"index": index}))
    events.append(
        (
            "message_delta",
            {
                "delta": {"stop_reason": _anthropic_stop(turn), "stop_sequence": None},
                "usage": {"output_tokens": turn.output_tokens},
            },
        )
    )
    events.append(("message_stop", {}))
    return [(name, {"type": name, **data}) for name, data in events]


# ---------------------------------------------------------------- shared


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(dialect: Dialect | None, status: int, message: str, kind: str | None = None) -> dict[str, Any]:
    """An error in the shape the dialect's SDK reads its message from."""
    kind = kind or _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    if dialect == "messages":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def body_for(dialect: Dialect, turn: Turn) -> dict[str, Any]:
    return {"chat": chat_body, "responses": responses_body, "messages": messages_body}[dialect](turn)


def frames_for(dialect: Dialect, turn: Turn, request: dict[str, Any]) -> list[Frame]:
    if dialect == "chat":
        options = request.get("stream_options")
        return chat_frames(turn, isinstance(options, dict) and bool(options.get("include_usage")))
    return responses_frames(turn) if dialect == "responses" else messages_frames(turn)


def sse(frame: Frame) -> bytes:
    name, data = frame
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {payload}\n\n".encode()
