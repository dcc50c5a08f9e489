"""What the `replay` agent does for claude-code's and codex's file edits: each made inside the sandbox with the rules of
the tool that made it, through `replay_actions.Editor` (shell commands in the sandbox, never a host-side write).

- claude-code `Write` (`file_path`, `content`) writes the file, creating its folder; `Edit` (`file_path`,
  `old_string`, `new_string`, `replace_all`) needs `old_string` once (every occurrence with `replace_all`), and an
  empty `old_string` creates a file that does not exist. claude-code 2.1.332 has no `MultiEdit` (it answers "No such
  tool available"), so a recorded `MultiEdit` is not replayed.
- codex `apply_patch`, as codex runs it: an `exec_command`/`shell` whose command is `apply_patch <<'EOF' ... EOF`
  (optionally after `cd DIR &&`) or the argv `["apply_patch", PATCH]`, or the `apply_patch` tool with `input`. The
  patch (`*** Begin Patch` ... `*** End Patch`: `Add File`, `Delete File`, `Update File` with `Move to` and `@@`
  chunks) is applied the way codex's `apply-patch` crate applies it: each chunk's lines found from where the last one
  ended, exactly, then ignoring trailing, then surrounding whitespace; a relative path is under the call's workdir.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_skilleval.harbor.replay_actions import Editor, text_argument

CLAUDE_EDIT_TOOLS = frozenset({"Write", "Edit"})
PATCH_TOOLS = frozenset({"apply_patch"})
_PATCH_COMMANDS = ("apply_patch", "applypatch")
_HEREDOC = re.compile(
    r"\A\s*(?:cd\s+(?P<cd>\S+)\s+&&\s+)?(?:apply_patch|applypatch)\s+<<\s*(?P<q>['\"]?)(?P<tag>\w+)(?P=q)[ \t]*\n"
    r"(?P<body>.*?)\n(?P=tag)\s*\Z",
    re.DOTALL,
)


class PatchError(ValueError):
    """A patch codex would refuse (its message is the tool's answer)."""


@dataclass
class Chunk:
    context: str | None = None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    end_of_file: bool = False


@dataclass
class Hunk:
    kind: str  # "add", "delete", "update"
    path: str
    contents: str = ""
    move_to: str | None = None
    chunks: list[Chunk] = field(default_factory=list)


@dataclass(frozen=True)
class PatchCall:
    patch: str
    workdir: str


def patch_call(tool: str, arguments: Mapping[str, Any], default_cwd: str) -> PatchCall | None:
    """The codex patch a call applies, or None when the call is not one."""
    workdir = str(arguments.get("workdir") or arguments.get("cwd") or default_cwd)
    if tool in PATCH_TOOLS:
        patch = arguments.get("input", arguments.get("patch"))
        return PatchCall(patch, workdir) if isinstance(patch, str) else None
    raw = arguments.get("command", arguments.get("cmd"))
    if isinstance(raw, list) and len(raw) == 2 and raw[0] in _PATCH_COMMANDS and isinstance(raw[1], str):
        return PatchCall(raw[1], workdir)
    if isinstance(raw, list) and len(raw) == 3 and raw[0] in ("bash", "sh") and raw[1] in ("-lc", "-c"):
        raw = raw[2]
    if isinstance(raw, str) and (match := _HEREDOC.match(raw)):
        cd = match["cd"]
        if cd:
            cd = shlex.split(cd)[0] if cd[0] in "'\"" else cd
            workdir = cd if cd.startswith("/") else f"{workdir.rstrip('/')}/{cd}"
        return PatchCall(match["body"], workdir)
    return None


def is_claude_edit(tool: str, arguments: Mapping[str, Any]) -> bool:
    return tool in CLAUDE_EDIT_TOOLS and isinstance(arguments.get("file_path"), str)


async def claude_edit(editor: Editor, tool: str, arguments: Mapping[str, Any]) -> tuple[str, int]:
    """(claude-code's answer, 0 or 1) for one `Write` or `Edit`."""
    path = str(arguments["file_path"])
    if not path.startswith("/"):
        return f"<tool_use_error>File path must be absolute: {path}</tool_use_error>", 1
    if tool == "Write":
        existed, _ = await editor.read(path)
        error = await editor.write(path, text_argument(arguments.get("content")))
        if error:
            return error, 1
        return (f"The file {path} has been updated." if existed else f"File created successfully at: {path}"), 0
    old, new = text_argument(arguments.get("old_string")), text_argument(arguments.get("new_string"))
    found, text = await editor.read(path)
    if not found:
        if old:
            return f"<tool_use_error>File does not exist. {path}</tool_use_error>", 1
        error = await editor.write(path, new)
        return (error, 1) if error else (f"File created successfully at: {path}", 0)
    if old == new:
        return "<tool_use_error>No changes to make: old_string and new_string are exactly the same.</tool_use_error>", 1
    count = text.count(old) if old else 0
    if count == 0:
        return f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>", 1
    replace_all = arguments.get("replace_all") in (True, "true")
    if count > 1 and not replace_all:
        return (
            f"<tool_use_error>Found {count} matches of the string to replace, but replace_all is false.</tool_use_error>"
        ), 1
    error = await editor.write(path, text.replace(old, new) if replace_all else text.replace(old, new, 1))
    return (error, 1) if error else (f"The file {path} has been updated successfully.", 0)


async def apply_patch(editor: Editor, call: PatchCall) -> tuple[str, int]:
    """(codex's answer, 0 or 1) for one patch; hunks are applied in order, as codex does."""
    try:
        hunks = parse_patch(call.patch)
    except PatchError as refused:
        return f"Invalid patch: {refused}", 1
    if not hunks:
        return "No files were modified.", 1
    done: list[str] = []
    error = ""
    for hunk in hunks:
        path = _absolute(hunk.path, call.workdir)
        if hunk.kind == "add":
            error = await editor.write(path, hunk.contents)
            done.append(f"A {hunk.path}")
        elif hunk.kind == "delete":
            error = await editor.delete(path)
            done.append(f"D {hunk.path}")
        else:
            found, text = await editor.read(path)
            if not found:
                return f"Failed to read file to update {path}", 1
            try:
                updated = updated_text(text, hunk.chunks, path)
            except PatchError as failure:
                return str(failure), 1
            target = _absolute(hunk.move_to, call.workdir) if hunk.move_to else path
            error = await editor.write(target, updated)
            if not error and target != path:
                error = await editor.delete(path)
            done.append(f"M {hunk.move_to or hunk.path}")
        if error:
            return error, 1
    return "Success. Updated the following files:\n" + "\n".join(done) + "\n", 0


def parse_patch(patch: str) -> list[Hunk]:
    """The hunks of a patch, read as codex's parser reads them."""
    lines = patch.strip().split("\n")
    if not lines or lines[0].strip() != "*** Begin Patch":
        raise PatchError("The first line of the patch must be '*** Begin Patch'")
    if lines[-1].strip() != "*** End Patch":
        raise PatchError("The last line of the patch must be '*** End Patch'")
    body, hunks, index = lines[1:-1], [], 0
    while index < len(body):
        header = body[index].strip()
        index += 1
        if header.startswith("*** Add File: "):
            contents = []
            while index < len(body) and body[index].startswith("+"):
                contents.append(body[index][1:] + "\n")
                index += 1
            hunks.append(Hunk("add", header.removeprefix("*** Add File: "), contents="".join(contents)))
        elif header.startswith("*** Delete File: "):
            hunks.append(Hunk("delete", header.removeprefix("*** Delete File: ")))
        elif header.startswith("*** Update File: "):
            hunk = Hunk("update", header.removeprefix("*** Update File: "))
            if index < len(body) and body[index].strip().startswith("*** Move to: "):
                hunk.move_to = body[index].strip().removeprefix("*** Move to: ")
                index += 1
            index = _chunks(body, index, hunk)
            hunks.append(hunk)
        else:
            raise PatchError(f"'{header}' is not a valid hunk header")
    return hunks


def _chunks(body: list[str], index: int, hunk: Hunk) -> int:
    """Read an Update File hunk's chunks from `body[index:]`; the index after them."""
    while index < len(body) and not (body[index].startswith("*** ") and body[index].strip() != "*** End of File"):
        line = body[index]
        if line.strip() == "":
            if not hunk.chunks:
                hunk.chunks.append(Chunk())
            hunk.chunks[-1].old.append("")
            hunk.chunks[-1].new.append("")
        elif line.startswith("@@"):
            context = line[2:].strip()
            hunk.chunks.append(Chunk(context=context or None))
        elif line.strip() == "*** End of File":
            if not hunk.chunks:
                raise PatchError(f"Update file hunk for path '{hunk.path}' is empty")
            hunk.chunks[-1].end_of_file = True
        elif line[0] in " +-":
            if not hunk.chunks:
                hunk.chunks.append(Chunk())
            chunk = hunk.chunks[-1]
            if line[0] in " -":
                chunk.old.append(line[1:])
            if line[0] in " +":
                chunk.new.append(line[1:])
        else:
            raise PatchError(f"Unexpected line found in update hunk: '{line}'")
        index += 1
    if not hunk.chunks:
        raise PatchError(f"Update file hunk for path '{hunk.path}' is empty")
    return index


def updated_text(text: str, chunks: list[Chunk], path: str) -> str:
    """`text` with the chunks applied, ending in a newline (codex's `derive_new_contents_from_chunks`)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    replacements: list[tuple[int, int, list[str]]] = []
    start = 0
    for chunk in chunks:
        if chunk.context is not None:
            found = _seek(lines, [chunk.context], start, False)
            if found is None:
                raise PatchError(f"Failed to find context '{chunk.context}' in {path}")
            start = found + 1
        if not chunk.old:
            replacements.append((len(lines), 0, chunk.new))
            continue
        old, new = chunk.old, chunk.new
        found = _seek(lines, old, start, chunk.end_of_file)
        if found is None and old[-1] == "":
            old, new = old[:-1], new[:-1] if new and new[-1] == "" else new
            found = _seek(lines, old, start, chunk.end_of_file)
        if found is None:
            raise PatchError(f"Failed to find expected lines in {path}:\n" + "\n".join(chunk.old))
        replacements.append((found, len(old), new))
        start = found + len(old)
    for at, length, new in sorted(replacements, reverse=True):
        lines[at : at + length] = new
    return "\n".join([*lines, ""])


def _seek(lines: list[str], pattern: list[str], start: int, end_of_file: bool) -> int | None:
    """Where `pattern` starts in `lines` at or after `start` (from the end first for an end-of-file chunk): exact,
    then ignoring trailing whitespace, then surrounding whitespace."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    first = len(lines) - len(pattern) if end_of_file else start
    for same in (str.__eq__, lambda a, b: a.rstrip() == b.rstrip(), lambda a, b: a.strip() == b.strip()):
        for at in range(first, len(lines) - len(pattern) + 1):
            if all(same(lines[at + k], pattern[k]) for k in range(len(pattern))):
                return at
    return None


def _absolute(path: str, workdir: str) -> str:
    return path if path.startswith("/") else f"{workdir.rstrip('/')}/{path}"
