"""How a tool call's name and arguments are read: tool kinds, command text, path argument.

Tool kinds are case-insensitive substring tests on the tool name, so `TaskRunner` counts as an exec tool. Every check uses these helpers, never its own reading of the arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

# Surveyed from Harbor 0.25's agents (harbor/agents/*): terminus-2 `bash_command`, codex `exec_command`/`shell`,
# claude-code and opencode `Bash`/`bash`, mini-swe-agent and trae `bash`, openhands `execute_bash`, gemini and qwen
# `run_shell_command`, goose `developer.shell`, cursor `shellToolCall`, cline `execute_command`, ACP `execute`,
# kimi `Shell`, hermes, junie and the OpenHands SDK `terminal`, swe-agent `swe_agent_action` (its one action).
EXEC_MARKERS = (
    "bash",
    "execute",
    "exec_command",
    "run_code",
    "run",
    "shell",
    "command",
    "terminal",
    "swe_agent_action",
)
READ_MARKERS = ("read", "read_file", "grep", "glob")
WRITE_MARKERS = ("write", "edit", "write_file", "edit_file", "notebookedit")

# The argument carrying the command, per agent: `command` (most), `cmd` (codex, a string or an argv list), `code`,
# `raw` (unparsable JSON), `keystrokes` (terminus-2 types into tmux), `raw_action` (swe-agent), `input` (goose when
# its argument text is one bare line), `value` (codex, eve and ACP wrap non-object arguments so).
COMMAND_KEYS = ("command", "cmd", "code", "raw", "keystrokes", "raw_action", "input", "value")
# `filePath` is how OpenCode's read/write/edit tools name the file.
PATH_KEYS = ("file_path", "path", "filename", "target_file", "filePath", "raw")
SECURITY_TEXT_KEYS = (*COMMAND_KEYS, "path", "file_path")
WORKDIR_KEYS = ("workdir", "cwd")


def _marker_in(tool: str, markers: tuple[str, ...]) -> bool:
    lowered = (tool or "").lower()
    return any(marker in lowered for marker in markers)


# A trajectory uses a handful of tool names over and over, so each (name, kind) is tested once.
_marker_in_cached = lru_cache(maxsize=1024)(_marker_in)


def _has_marker(tool: str, markers: tuple[str, ...]) -> bool:
    if isinstance(tool, str):
        return _marker_in_cached(tool, markers)
    return _marker_in(tool, markers)


def is_exec_tool(tool: str) -> bool:
    return _has_marker(tool, EXEC_MARKERS)


def is_read_tool(tool: str) -> bool:
    return _has_marker(tool, READ_MARKERS)


def is_write_tool(tool: str) -> bool:
    return _has_marker(tool, WRITE_MARKERS)


def is_skill_tool(tool: str) -> bool:
    return (tool or "").lower() == "skill"


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        # Codex-style argv lists: ["bash", "-lc", "ls"].
        return " ".join(_as_text(item) for item in value)
    return str(value)


def _first_non_empty(arguments: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        text = _as_text(arguments.get(key))
        if text.strip():
            return text
    return ""


def command_text(arguments: Mapping[str, Any]) -> str:
    """The shell text an exec tool ran: the first non-empty of COMMAND_KEYS."""
    return _first_non_empty(arguments, COMMAND_KEYS)


def path_argument(arguments: Mapping[str, Any]) -> str:
    """The file a read/write tool touched: first non-empty of file_path, path, filename, target_file, filePath, raw."""
    return _first_non_empty(arguments, PATH_KEYS)


def security_action_text(arguments: Mapping[str, Any]) -> str:
    """All of a call's command and path arguments joined with spaces, as the pattern rules scan them."""
    parts = (_as_text(arguments.get(key)) for key in SECURITY_TEXT_KEYS)
    return " ".join(part for part in parts if part)


def workdir_argument(arguments: Mapping[str, Any]) -> str:
    """The directory a call asked to run in (workdir or cwd), or empty."""
    return _first_non_empty(arguments, WORKDIR_KEYS)


def skill_tool_name(arguments: Mapping[str, Any]) -> str:
    """The skill a `Skill` tool call invoked: argument `skill`, else `name`, else `command` (older Claude Code)."""
    return _first_non_empty(arguments, ("skill", "name", "command"))
