"""Recognizing a read of a skill's SKILL.md, natively (a read tool) or through the shell.

Skills can live anywhere (Harbor's skills dir, `/workspace/skills`, `~/.claude/skills`, ...), so a SKILL.md is
identified by its file name and the skill by the folder holding it, never by a root.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from verifier.checks._shell_words import (
    ASSIGNMENT_RE,
    ShellSyntaxError,
    basename,
    lex,
    shell_text,
    simple_commands,
)
from verifier.evidence import ToolCallRecord
from verifier.tools import is_exec_tool, is_skill_tool, path_argument, skill_tool_name

SKILL_FILE = "SKILL.md"
READ_VERBS = frozenset({"cat", "sed", "head", "tail", "awk", "less", "more", "nl", "bat"})
# swe-agent's own file commands, which its `swe_agent_action` carries like shell text: `open FILE` and
# `str_replace_editor view FILE` read a file.
SWE_AGENT_READS = {"open": None, "str_replace_editor": "view"}


def read_arguments(verb: str, args: list[str]) -> list[str] | None:
    """The words a read verb reads from (None: not a read): shell read verbs, and swe-agent's file commands."""
    if verb in READ_VERBS:
        return args
    if verb in SWE_AGENT_READS:
        sub = SWE_AGENT_READS[verb]
        if sub is None:
            return args
        return args[1:] if args[:1] == [sub] else None
    return None


SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_OUTPUT_REDIRECTS = (">", ">>", ">|", "&>", "&>>")
_MAX_SHELL_DEPTH = 3
# Bounded: at most this many distinct commands, none longer than this, are remembered.
_READ_CACHE_SIZE = 4096
_CACHED_COMMAND_LENGTH = 4096


def path_components(path: str) -> list[str]:
    return [part for part in path.replace("\\", "/").split("/") if part]


def skill_name_from_path(path: str) -> str:
    """The folder name just before a component that is exactly `SKILL.md`, or '' when there is none."""
    parts = path_components(path)
    for position in range(len(parts) - 1, 0, -1):
        if parts[position] == SKILL_FILE:
            return parts[position - 1]
    return ""


def is_native_skill_read(call: ToolCallRecord) -> bool:
    """A read tool (name contains 'read') whose path argument mentions SKILL.md (case-sensitive)."""
    return "read" in call.tool.lower() and SKILL_FILE in path_argument(call.arguments)


def has_read_evidence_args(call: ToolCallRecord) -> bool:
    """A read tool whose arguments, as text, mention SKILL.md anywhere (used by workflow order and observations)."""
    if "read" not in call.tool.lower():
        return False
    return SKILL_FILE in json.dumps(call.arguments, ensure_ascii=False, default=str)


def _payload_after_c(words: list[str]) -> str | None:
    """For `bash -lc 'X'`-style words (after the shell itself): X, else None."""
    for position, word in enumerate(words):
        if word == "--":
            continue
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            rest = [w for w in words[position + 1 :]]
            while rest and rest[0] == "--":
                rest = rest[1:]
            return rest[0] if rest else None
        if not word.startswith("-"):
            return None
    return None


def shell_skill_reads(command: str, _depth: int = 0) -> list[str]:
    """The SKILL.md paths a command line reads with a read verb (cat, sed, head, ...); empty when none.

    grep-like tools do not count (they search, they do not read the instructions). Output-redirect targets are
    written, not read; here-document data is not a file. `bash -c 'cat .../SKILL.md'` payloads are followed, since
    Codex wraps every command that way. Malformed quoting means no read.
    """
    if not command or SKILL_FILE.lower() not in command.lower() or _depth >= _MAX_SHELL_DEPTH:
        return []
    if len(command) <= _CACHED_COMMAND_LENGTH:
        return list(_cached_reads(command, _depth))
    return _lexed_skill_reads(command, _depth)


def _lexed_skill_reads(command: str, depth: int) -> list[str]:
    """shell_skill_reads past its cheap filter: lex the command and walk its simple commands."""
    try:
        lexed = lex(command)
    except ShellSyntaxError:
        return []
    found: list[str] = []
    variables: dict[str, str] = {}
    for inner in lexed.substitutions:
        found.extend(shell_skill_reads(inner, depth + 1))
    for simple in simple_commands(lexed.tokens):
        words = [word.expand(variables) for word in simple.words]
        while words and ASSIGNMENT_RE.match(words[0]):
            name, value = ASSIGNMENT_RE.match(words[0]).groups()  # type: ignore[union-attr]
            variables[name] = value
            words = words[1:]
        if not words:
            continue
        verb = basename(words[0])
        if verb in SHELLS:
            payload = _payload_after_c(words[1:])
            if payload:
                found.extend(shell_skill_reads(payload, depth + 1))
            continue
        read_args = read_arguments(verb, words[1:])
        if read_args is None:
            continue
        for op, target in simple.redirects:
            if op == "<":
                text = target.expand(variables)
                if _names_skill_file(text):
                    found.append(text)
        for argument in read_args:
            if _names_skill_file(argument):
                found.append(argument)
    return found


@lru_cache(maxsize=_READ_CACHE_SIZE)
def _cached_reads(command: str, depth: int) -> tuple[str, ...]:
    """Activation, workflow order and routing each ask about the same commands; lex each one once."""
    return tuple(_lexed_skill_reads(command, depth))


def _names_skill_file(argument: str) -> bool:
    lowered = argument.replace("\\", "/").lower()
    return lowered == "skill.md" or lowered.endswith("/skill.md")


@dataclass(frozen=True)
class SkillRead:
    """One observed use of a skill's instructions: how, by which call, and which path or name."""

    kind: str  # "skill_tool" | "native_read" | "shell_read"
    call_index: int
    tool: str
    path: str = ""
    name: str = ""  # skill name taken from the path or the Skill tool argument, '' when none could be taken


def iter_skill_reads(calls: Iterable[ToolCallRecord]) -> Iterator[SkillRead]:
    """Every SKILL.md read and Skill-tool use in call order, one at a time (a caller may stop early)."""
    for call in calls:
        if is_skill_tool(call.tool):
            yield SkillRead("skill_tool", call.index, call.tool, name=skill_tool_name(call.arguments))
        elif is_native_skill_read(call):
            path = path_argument(call.arguments)
            yield SkillRead("native_read", call.index, call.tool, path=path, name=skill_name_from_path(path))
        elif is_exec_tool(call.tool):
            for path in shell_skill_reads(shell_text(call.arguments)):
                yield SkillRead("shell_read", call.index, call.tool, path=path, name=skill_name_from_path(path))


def skill_reads(calls: list[ToolCallRecord]) -> list[SkillRead]:
    """Every SKILL.md read and Skill-tool use in call order."""
    return list(iter_skill_reads(calls))
