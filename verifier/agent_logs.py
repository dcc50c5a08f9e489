"""Rebuilding a trajectory from an agent's own log when `trajectory.json` is missing or empty.

Each converter turns one agent's JSON-lines log into ATIF-shaped step dicts, the same shape `trajectory.json` has, so
the evidence reader treats both alike. Failed tool runs keep their status, exit code and error text in the
observation (`status=failed exit_code=1`), so the error-recovery check still sees them. Lines that are not JSON are
skipped: a log is evidence only where its structure says what happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from verifier import safe_io
from verifier.message_text import content_text

Step = dict[str, Any]
# A trajectory or agent log larger than this is refused before it is read: evidence, not a memory bomb.
MAX_EVIDENCE_BYTES = 256 * 1024 * 1024
Converter = Callable[[str], list[Step]]


def json_lines(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _text(value: Any) -> str:
    """A log block's content as text (nested tool-result content read too, an unknown block kept as JSON)."""
    return content_text(value, raw_log=True)


def _status_header(status: Any = None, exit_code: Any = None) -> str:
    fields = []
    if status not in (None, ""):
        fields.append(f"status={status}")
    if isinstance(exit_code, (int, float)) and not isinstance(exit_code, bool):
        fields.append(f"exit_code={int(exit_code)}")
    return " ".join(fields)


def _observation(*pieces: str) -> str:
    return "\n".join(piece for piece in pieces if piece)


def _as_args(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return {"raw": value} if value else {}
        return dict(decoded) if isinstance(decoded, Mapping) else {"raw": value}
    return {} if value is None else {"raw": value}


class _Steps:
    """Accumulates ATIF-shaped steps and lets later events attach outputs to earlier calls by id."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.by_call_id: dict[str, Step] = {}

    def user(self, text: str) -> None:
        if text.strip():
            self.steps.append({"source": "user", "message": text})

    def agent(self, text: str = "") -> Step:
        step: Step = {"source": "agent", "message": text, "tool_calls": [], "observation": {"results": []}}
        self.steps.append(step)
        return step

    def call(self, step: Step | None, call_id: str, tool: str, arguments: dict[str, Any], output: str | None) -> Step:
        step = step if step is not None else self.agent()
        call_id = call_id or f"call_{sum(len(s.get('tool_calls') or []) for s in self.steps)}"
        step["tool_calls"].append({"tool_call_id": call_id, "function_name": tool, "arguments": arguments})
        self.by_call_id[call_id] = step
        if output is not None:
            self.result(call_id, output)
        return step

    def result(self, call_id: str, output: str) -> bool:
        step = self.by_call_id.get(call_id)
        if step is None:
            return False
        step["observation"]["results"].append({"source_call_id": call_id, "content": output})
        return True

    def last_agent_text(self) -> str:
        for step in reversed(self.steps):
            if step["source"] == "agent" and step["message"]:
                return step["message"]
        return ""

    def final(self, text: str) -> None:
        if text.strip() and text.strip() != self.last_agent_text().strip():
            self.agent(text)

    def done(self) -> list[Step]:
        for number, step in enumerate(self.steps, start=1):
            step["step_id"] = number
            if step["source"] == "agent" and not step["tool_calls"]:
                step.pop("tool_calls")
                step.pop("observation")
        return self.steps


def _anthropic_message(steps: _Steps, role: str, content: Any) -> None:
    """One Claude-style message: assistant text and tool_use blocks, or user text and tool_result blocks."""
    if isinstance(content, str):
        (steps.agent if role == "assistant" else steps.user)(content)
        return
    if not isinstance(content, list):
        return
    if role == "assistant":
        texts = [b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
        step = steps.agent("\n".join(t for t in texts if t))
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                steps.call(
                    step, str(block.get("id") or ""), str(block.get("name") or ""), _as_args(block.get("input")), None
                )
        return
    user_texts = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "tool_result":
            header = _status_header("error") if block.get("is_error") else ""
            steps.result(str(block.get("tool_use_id") or ""), _observation(header, _text(block.get("content"))))
        elif block.get("type") == "text":
            user_texts.append(str(block.get("text") or ""))
    steps.user("\n".join(user_texts))


def convert_claude_code(text: str) -> list[Step]:
    """Claude Code `--output-format stream-json`: assistant/user messages and the final `result`."""
    steps = _Steps()
    for event in json_lines(text):
        kind = event.get("type")
        message = event.get("message")
        if kind in ("assistant", "user") and isinstance(message, Mapping):
            _anthropic_message(steps, kind, message.get("content"))
        elif kind == "result" and isinstance(event.get("result"), str):
            steps.final(event["result"])
    return steps.done()


def _cursor_output(result: Any) -> str:
    if isinstance(result, Mapping) and len(result) == 1:
        ((outcome, body),) = result.items()
        status = "completed" if outcome == "success" else "failed" if outcome in ("failure", "error") else outcome
        exit_code = body.get("exitCode") if isinstance(body, Mapping) else None
        return _observation(
            _status_header(status, exit_code),
            _text(body) if not isinstance(body, Mapping) else json.dumps(body, ensure_ascii=False, default=str),
        )
    return _text(result)


def convert_cursor_cli(text: str) -> list[Step]:
    """Cursor `--output-format stream-json`: user/assistant messages and completed tool_call events."""
    steps = _Steps()
    turn_steps: dict[str, Step] = {}
    step: Step | None
    for event in json_lines(text):
        kind = event.get("type")
        message = event.get("message")
        if kind == "user" and isinstance(message, Mapping):
            steps.user(_text(message.get("content")))
        elif kind == "assistant" and isinstance(message, Mapping):
            step = steps.agent(_text(message.get("content")))
            if event.get("model_call_id"):
                turn_steps[str(event["model_call_id"])] = step
        elif kind == "tool_call" and event.get("subtype") == "completed":
            calls = event.get("tool_call")
            if not isinstance(calls, Mapping):
                continue
            key = str(event.get("model_call_id") or "")
            step = turn_steps.get(key) if key else None
            for tool, body in calls.items():
                body = body if isinstance(body, Mapping) else {}
                step = steps.call(
                    step,
                    str(event.get("call_id") or ""),
                    str(tool),
                    _as_args(body.get("args")),
                    _cursor_output(body.get("result")),
                )
                if key:
                    turn_steps[key] = step
        elif kind == "result" and isinstance(event.get("result"), str):
            steps.final(event["result"])
    return steps.done()


_CLINE_AGENT_SAYS = frozenset({"text", "completion_result"})
_CLINE_USER_SAYS = frozenset({"task", "user_feedback"})


def convert_cline(text: str) -> list[Step]:
    """Cline `--json`: say/ask messages (text, tool, command + command_output, MCP use); Claude-style lines too."""
    steps = _Steps()
    last_call: str | None = None
    for event in json_lines(text):
        if event.get("role") in ("assistant", "user"):
            _anthropic_message(steps, str(event["role"]), event.get("content"))
            continue
        if event.get("partial"):
            continue
        kind = event.get("say") if event.get("type") == "say" else event.get("ask")
        body = said if isinstance(said := event.get("text"), str) else ""
        if kind in _CLINE_AGENT_SAYS:
            if kind == "completion_result":
                steps.final(body)
            elif body.strip():
                steps.agent(body)
        elif kind in _CLINE_USER_SAYS:
            steps.user(body)
        elif kind == "command":
            step = steps.call(None, "", "execute_command", {"command": body}, None)
            last_call = step["tool_calls"][-1]["tool_call_id"]
        elif kind == "tool":
            payload = _as_args(body)
            tool = str(payload.pop("tool", "") or "tool")
            step = steps.call(None, "", tool, payload, None)
            last_call = step["tool_calls"][-1]["tool_call_id"]
        elif kind == "use_mcp_server":
            payload = _as_args(body)
            tool = f"mcp__{payload.get('serverName', '')}__{payload.get('toolName', '')}"
            step = steps.call(None, "", tool, _as_args(payload.get("arguments")), None)
            last_call = step["tool_calls"][-1]["tool_call_id"]
        elif kind in ("command_output", "mcp_server_response", "error") and last_call is not None:
            steps.result(last_call, _observation(_status_header("error") if kind == "error" else "", body))
    return steps.done()


_OPENCODE_FINISHED = frozenset({"completed", "error"})


def convert_opencode(text: str) -> list[Step]:
    """OpenCode `run --format=json`: text parts become agent messages, finished tool parts become tool calls."""
    steps = _Steps()
    turn: Step | None = None
    for event in json_lines(text):
        kind = event.get("type")
        part = found if isinstance(found := event.get("part"), Mapping) else {}
        if kind == "user":
            steps.user(_text(event.get("parts")))
        elif kind == "step_start":
            turn = steps.agent()
        elif kind == "step_finish":
            turn = None
        elif kind == "text" or part.get("type") == "text":
            text_part = str(part.get("text") or "")
            if text_part:
                turn = turn if turn is not None else steps.agent()
                turn["message"] = _observation(turn["message"], text_part)
        elif kind == "tool_use" or part.get("type") == "tool":
            state = found if isinstance(found := part.get("state"), Mapping) else {}
            status = state.get("status")
            if status not in _OPENCODE_FINISHED:
                continue
            metadata = found if isinstance(found := state.get("metadata"), Mapping) else {}
            exit_code = metadata.get("exit", metadata.get("exitCode"))
            output = _observation(
                _status_header(status, exit_code),
                _text(state.get("output")),
                f"error: {_text(state.get('error'))}" if state.get("error") else "",
            )
            turn = steps.call(
                turn,
                str(part.get("callID") or part.get("id") or ""),
                str(part.get("tool") or ""),
                _as_args(state.get("input")),
                output,
            )
    return steps.done()


def _codex_item(steps: _Steps, item: Mapping[str, Any]) -> None:
    kind = item.get("type") or item.get("item_type")
    item_id = str(item.get("id") or "")
    status = item.get("status")
    if kind in ("agent_message", "assistant_message"):
        steps.agent(_text(item.get("text")))
    elif kind == "command_execution":
        output = _observation(_status_header(status, item.get("exit_code")), _text(item.get("aggregated_output")))
        steps.call(None, item_id, "exec_command", {"command": item.get("command") or ""}, output)
    elif kind == "file_change":
        changes = found if isinstance(found := item.get("changes"), list) else []
        paths = [c.get("path") for c in changes if isinstance(c, Mapping) and c.get("path")]
        arguments: dict[str, Any] = {"changes": changes}
        if paths:
            arguments["path"] = paths[0]
        steps.call(None, item_id, "apply_patch", arguments, _status_header(status))
    elif kind == "mcp_tool_call":
        error = item.get("error")
        output = _observation(
            _status_header(status),
            _text(item["result"].get("content"))
            if isinstance(item.get("result"), Mapping)
            else _text(item.get("result")),
            f"error: {_text(error.get('message') if isinstance(error, Mapping) else error)}" if error else "",
        )
        tool = f"mcp__{item.get('server', '')}__{item.get('tool', '')}"
        steps.call(None, item_id, tool, _as_args(item.get("arguments")), output)
    elif kind == "web_search":
        payload = {k: v for k, v in item.items() if k not in ("id", "type", "item_type")}
        steps.call(None, item_id, "web_search", payload, "")
    elif kind == "collab_tool_call":
        payload = {k: v for k, v in item.items() if k not in ("id", "type", "item_type", "status")}
        steps.call(None, item_id, str(item.get("tool") or "collab_tool_call"), payload, _status_header(status))


def convert_codex(text: str) -> list[Step]:
    """Codex `exec --json`: completed items (messages, commands, file changes, MCP, web search, collab tools)."""
    steps = _Steps()
    for event in json_lines(text):
        if event.get("type") == "item.completed" and isinstance(event.get("item"), Mapping):
            _codex_item(steps, event["item"])
    return steps.done()


# Tried in this order; the first that yields any step is graded.
AGENT_LOGS: tuple[tuple[str, Converter], ...] = (
    ("claude-code.txt", convert_claude_code),
    ("cursor-cli.txt", convert_cursor_cli),
    ("cline.txt", convert_cline),
    ("opencode.txt", convert_opencode),
    ("codex.txt", convert_codex),
)


def rebuild_steps(agent_logs_dir: Path) -> tuple[str | None, list[Step], list[str]]:
    """(log name, steps, problems) from the first agent log in the folder that rebuilds any step; None if none."""
    problems: list[str] = []
    for name, convert in AGENT_LOGS:
        try:
            # Never follows a link: UnsafePathError (a link the sandbox planted) ends the grading.
            text = safe_io.read_text(Path(agent_logs_dir), name, max_bytes=MAX_EVIDENCE_BYTES, errors="replace")
        except FileNotFoundError:
            continue
        except safe_io.UnsafePathError:
            raise
        except (OSError, safe_io.FileTooLargeError) as error:
            problems.append(f"{name} unreadable: {error}")
            continue
        steps = convert(text)
        if steps:
            return name, steps, problems
        problems.append(f"{name} has no reconstructible steps")
    return None, [], problems
