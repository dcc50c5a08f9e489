"""What the `replay` agent does for calls that are not one shell command: terminus-2's keystrokes and OpenHands'
`str_replace_editor` edits, each done inside the sandbox the way the agent's own harness did it.

- Keystrokes (`bash_command` with `keystrokes`, or the plan of a raw_content reply) are typed into one tmux session
  through Harbor's own `TmuxSession`, started on first use, exactly as terminus-2 sends them (not blocking, then
  waiting the recorded `duration`, capped at `MAX_WAIT_SEC`); the step's observation becomes the terminal's new
  output, as terminus-2 records it.
- `str_replace_editor` `create`, `str_replace`, `insert` and `undo_edit` are file edits with OpenHands' rules (create
  refuses an existing file; `old_str` must occur exactly once; `insert_line` counts lines from 0), made by shell
  commands inside the sandbox (`cat`, and the new text written in base64 chunks), never by a host-side write that
  could follow a link the agent planted. `view` changes nothing and is not replayed.
"""

from __future__ import annotations

import base64
import math
import posixpath
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harbor.environments.base import BaseEnvironment
from harbor.models.trial.paths import EnvironmentPaths

# A replay waits at most this long after a command's keystrokes (terminus-2 itself waits up to 60 s).
MAX_WAIT_SEC = 10.0
SESSION_NAME = "terminus-2"
EDITOR_TOOLS = frozenset({"str_replace_editor"})
EDITS = frozenset({"create", "str_replace", "insert", "undo_edit"})
_CHUNK = 65_536  # base64 characters per write command, far below a single argument's limit

if TYPE_CHECKING:
    from harbor.agents.terminus_2.tmux_session import TmuxSession


def keystrokes_of(arguments: Mapping[str, Any]) -> tuple[str, float] | None:
    """(keystrokes, wait) of a terminus-2 terminal call, or None; a wait that is not a finite non-negative number
    is 0."""
    keys = arguments.get("keystrokes")
    if not isinstance(keys, str):
        return None
    duration = arguments.get("duration", 1.0)
    ok = isinstance(duration, (int, float)) and not isinstance(duration, bool) and math.isfinite(duration)
    return keys, min(float(duration), MAX_WAIT_SEC) if ok and duration >= 0 else 0.0


def is_edit(tool: str, arguments: Mapping[str, Any]) -> bool:
    return tool in EDITOR_TOOLS and arguments.get("command") in EDITS


class Terminal:
    """terminus-2's tmux session inside the sandbox, started when the first keystrokes arrive."""

    def __init__(self, environment: BaseEnvironment) -> None:
        self.environment = environment
        self.session: TmuxSession | None = None

    async def type(self, keystrokes: str, wait: float) -> None:
        if self.session is None:
            # Imported here: its package imports terminus-2 and so litellm, seconds of start-up that a replay of
            # shell calls alone never needs.
            from harbor.agents.terminus_2.tmux_session import TmuxSession

            self.session = TmuxSession(
                session_name=SESSION_NAME,
                environment=self.environment,
                logging_path=EnvironmentPaths.agent_dir / "replay.pane",
                local_asciinema_recording_path=None,
                remote_asciinema_recording_path=None,
                user=self.environment.default_user,
            )
            await self.session.start()
            await self.session.get_incremental_output()  # the screen before the first command, as terminus-2 reads
        await self.session.send_keys(keystrokes, block=False, min_timeout_sec=wait)

    async def output(self) -> str:
        """The terminal's new output since the last read, in terminus-2's words."""
        assert self.session is not None
        return await self.session.get_incremental_output()


class Editor:
    """OpenHands' file edits, made inside the sandbox; the previous text of each edited file kept for undo_edit."""

    def __init__(self, environment: BaseEnvironment) -> None:
        self.environment = environment
        self.history: dict[str, list[str]] = {}

    async def apply(self, arguments: Mapping[str, Any]) -> tuple[str, int]:
        """(the tool's answer, 0 or 1) for one edit call."""
        command = arguments.get("command")
        path = arguments.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            return f"ERROR: Invalid `path` parameter: {path}. The path should be an absolute path.", 1
        if command == "create":
            return await self._create(path, text_argument(arguments.get("file_text")))
        if command == "undo_edit":
            if not self.history.get(path):
                return f"ERROR: No edit history found for {path}.", 1
            error = await self.write(path, self.history[path].pop())
            return (error, 1) if error else (f"Last edit to {path} undone successfully.", 0)
        found, text = await self.read(path)
        if not found:
            return f"ERROR: Invalid `path` parameter: {path}. The path {path} does not exist.", 1
        if command == "str_replace":
            old, new = text_argument(arguments.get("old_str")), text_argument(arguments.get("new_str"))
            count = text.count(old) if old else 0
            if count != 1:
                why = "did not appear verbatim" if count == 0 else f"appears {count} times"
                return f"ERROR: No replacement was performed, old_str `{old}` {why} in {path}.", 1
            return await self._edit(path, text, text.replace(old, new, 1))
        try:
            line = int(arguments.get("insert_line"))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return "ERROR: Parameter `insert_line` is required for command: insert.", 1
        lines = text.split("\n")
        if not 0 <= line <= len(lines):
            return f"ERROR: Invalid `insert_line` parameter: {line}. It should be within [0, {len(lines)}].", 1
        new_lines = text_argument(arguments.get("new_str")).split("\n")
        return await self._edit(path, text, "\n".join(lines[:line] + new_lines + lines[line:]))

    async def delete(self, path: str) -> str:
        """Remove the file `path` in the sandbox; "" when done, else the error to answer with."""
        result = await self.environment.exec(f"test -f {shlex.quote(path)} && rm -f -- {shlex.quote(path)}")
        return "" if result.return_code == 0 else f"Failed to delete file {path}"

    async def _create(self, path: str, text: str) -> tuple[str, int]:
        exists = await self.environment.exec(f"test -e {shlex.quote(path)}")
        if exists.return_code == 0:
            return (
                f"ERROR: Invalid `path` parameter: {path}. File already exists at: {path}. "
                "Cannot overwrite files using command `create`."
            ), 1
        error = await self.write(path, text)
        if error:
            return error, 1
        self.history.setdefault(path, []).append("")
        return f"File created successfully at: {path}", 0

    async def _edit(self, path: str, before: str, after: str) -> tuple[str, int]:
        error = await self.write(path, after)
        if error:
            return error, 1
        self.history.setdefault(path, []).append(before)
        return f"The file {path} has been edited.", 0

    async def read(self, path: str) -> tuple[bool, str]:
        """(whether `path` is a file, its text) as the sandbox sees it."""
        result = await self.environment.exec(f"test -f {shlex.quote(path)} && cat -- {shlex.quote(path)}")
        return result.return_code == 0, result.stdout or ""

    async def write(self, path: str, text: str) -> str:
        """Write `text` to `path` in the sandbox (its folder made); "" when done, else the error to answer with."""
        quoted = shlex.quote(path)
        encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
        commands = [f"mkdir -p -- {shlex.quote(posixpath.dirname(path) or '/')} && : > {quoted}"]
        commands += [
            f"printf %s {encoded[start : start + _CHUNK]} | base64 -d >> {quoted}"
            for start in range(0, len(encoded), _CHUNK)
        ]
        for command in commands:
            result = await self.environment.exec(command)
            if result.return_code != 0:
                return f"ERROR: could not write {path}: {(result.stderr or '').strip()[:200]}"
        return ""


def text_argument(value: Any) -> str:
    """A tool argument as the tool reads text: None as empty, anything else as its string."""
    return value if isinstance(value, str) else "" if value is None else str(value)
