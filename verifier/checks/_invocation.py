"""Did the agent use a given skill? Triggered, not triggered, or undeterminable.

A negative control passes only when the trajectory proves the skill was not used: reading `<skill>/SKILL.md`, running
anything under `<skill>/scripts/`, or invoking the Skill tool for it counts as use, and a command that names the skill's
files in a way this reader cannot follow counts as undeterminable, which a negative control also fails.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from verifier.checks._harness_skills import HarnessLoad, load_evidence, loads_of
from verifier.checks._shell_words import (
    ASSIGNMENT_RE,
    ShellSyntaxError,
    SimpleCommand,
    Word,
    basename,
    lex,
    shell_text,
    simple_commands,
)
from verifier.checks._skill_dirs import (
    folder_prefixes,
    installed_skill,
    normalize,
    read_failed,
    skill_tool_failed,
)
from verifier.checks._skill_reads import read_arguments
from verifier.evidence import ToolCallRecord
from verifier.tools import is_exec_tool, is_skill_tool, path_argument, skill_tool_name, workdir_argument

MAX_TEXT = 32_768
MAX_TOKENS = 256
MAX_DEPTH = 3
MAX_WRAPPERS = 8
DEFAULT_CWD = "/workspace"

INERT_VERBS = frozenset({"echo", "printf"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
INTERPRETER_RE = re.compile(r"^(bash|dash|node|perl|python|python3|python\d+(\.\d+)?|ruby|sh|zsh)$")
_READ_ACTION_SUFFIXES = ("open", "open_file", "grep", "egrep", "fgrep")
_KEYWORDS = frozenset({"!", "{", "}", "do", "then", "else", "elif", "if", "while", "until", "time", "coproc"})
_READ_ACTION_ENDINGS = tuple(sep + suffix for suffix in _READ_ACTION_SUFFIXES for sep in ("__", ".", "/", ":"))
_DRIVE_RE = re.compile(r"^[A-Za-z]:/")
_COMPONENT_SPLIT_RE = re.compile(r"[/\\'\"=()\s]+")
# Trajectories repeat the same commands many times; reading one is pure in (command, target, cwd), so cache it,
# bounded in entries and, so the cache never pins large texts, in command length.
_READ_CACHE_SIZE = 4096
_CACHED_COMMAND_LENGTH = 4096


class Undeterminable(Exception):
    """The command cannot be followed safely; carries the reason."""


@dataclass
class InvocationResult:
    """passed: True not triggered, False triggered, None undeterminable (scored like triggered)."""

    passed: bool | None
    reason: str
    evidence: list[dict[str, Any]] = field(default_factory=list)

    @property
    def triggered(self) -> bool | None:
        return None if self.passed is None else not self.passed


def is_file_read_action(tool: str) -> bool:
    lowered = (tool or "").lower()
    return "read" in lowered or lowered in _READ_ACTION_SUFFIXES or lowered.endswith(_READ_ACTION_ENDINGS)


def _normalize(path: str) -> str:
    cleaned = path.strip().strip("'\"<>").replace("\\", "/")
    return posixpath.normpath(cleaned) if cleaned else ""


def _is_target_skill_file(path: str, target: str) -> bool:
    parts = [p for p in _normalize(path).split("/") if p]
    return len(parts) >= 2 and parts[-1].casefold() == "skill.md" and parts[-2].casefold() == target.casefold()


def _under_target_scripts(path: str, target: str) -> bool:
    parts = [p.casefold() for p in _normalize(path).split("/") if p]
    wanted = target.casefold()
    return any(parts[i] == wanted and parts[i + 1] == "scripts" for i in range(len(parts) - 2))


@lru_cache(maxsize=256)
def _artifact_pattern(target: str) -> re.Pattern[str]:
    """Compiled once per target rather than per checked word."""
    return re.compile(r"(?:^|[^a-z0-9_.-])" + re.escape(target.casefold()) + r"/(?:skill\.md|scripts/)")


def _mentions_artifact(text: str, target: str) -> bool:
    return _artifact_pattern(target).search(text.replace("\\", "/").casefold()) is not None


def _has_component(text: str, target: str) -> bool:
    return target.casefold() in {p.casefold() for p in _COMPONENT_SPLIT_RE.split(text) if p}


def _installed_script_skill(path: str, skills_dirs: tuple[str, ...]) -> str:
    """The skill whose `scripts/` folder holds `path`, when that skill is in one of `skills_dirs`, else ''."""
    parts = path.split("/")
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] == "scripts":
            return installed_skill("/".join([*parts[:i], "SKILL.md"]), skills_dirs)
    return ""


class _ShellReader:
    """Walks one command line's simple commands, tracking variables and the working directory; `hits` are the
    skill files it read (`read`) or ran (`run`), each in a skills folder of the trial."""

    def __init__(self, target: str, cwd: str, skills_dirs: tuple[str, ...] | None = None) -> None:
        self.target = target
        self.cwd = cwd
        self.skills_dirs = skills_dirs
        self.variables: dict[str, str] = {}
        self.tokens_seen = 0
        self.hits: list[tuple[str, str]] = []

    def _child(self) -> _ShellReader:
        child = _ShellReader(self.target, self.cwd, self.skills_dirs)
        child.hits = self.hits
        return child

    def _placed(self, path: str) -> str:
        """`path` (one naming the target's files) absolute, or Undeterminable when it cannot be placed."""
        resolved = normalize(self._resolve(path), self.cwd)
        if not resolved:
            raise Undeterminable(f"{path} lies under a folder this reader cannot place")
        return resolved

    def _any_installed(self, paths: list[str], kind: str) -> bool:
        """True when one of `paths` is the target's file in a skills folder; False when all are another skill's."""
        if self.skills_dirs is None:
            self.hits.extend((kind, self._resolve(path)) for path in paths)
            return True
        found = False
        for path in paths:
            resolved = self._placed(path)
            name = (
                installed_skill(resolved, self.skills_dirs)
                if kind == "read"
                else _installed_script_skill(resolved, self.skills_dirs)
            )
            if name.casefold() == self.target.casefold():
                self.hits.append((kind, resolved))
                found = True
        return found

    def _outside(self, text: str) -> bool:
        """A word that is a placeable path outside every skills folder (a bundled skill of the same name, ...)."""
        if self.skills_dirs is None or "/" not in text:
            return False
        resolved = normalize(self._resolve(text), self.cwd)
        if not resolved:
            return False
        return not resolved.startswith(folder_prefixes(self.skills_dirs))

    def _resolve(self, path: str) -> str:
        cleaned = path.replace("\\", "/")
        if cleaned.startswith(("/", "~", "$")) or _DRIVE_RE.match(cleaned):
            return cleaned
        return posixpath.join(self.cwd, cleaned)

    def read(self, text: str, depth: int) -> bool:
        if depth >= MAX_DEPTH:
            raise Undeterminable("shell payloads nested too deeply")
        if len(text) > MAX_TEXT:
            raise Undeterminable("command longer than 32768 characters")
        try:
            lexed = lex(text)
        except ShellSyntaxError as error:
            raise Undeterminable(str(error)) from error
        self.tokens_seen += len(lexed.tokens)
        if self.tokens_seen > MAX_TOKENS:
            raise Undeterminable("command has more than 256 tokens")
        triggered = False
        for inner in lexed.substitutions:
            triggered = self._child().read(inner, depth + 1) or triggered
        for simple in simple_commands(lexed.tokens):
            triggered = self._simple(simple, depth) or triggered
        return triggered

    def _simple(self, simple: SimpleCommand, depth: int) -> bool:
        words = [word.expand(self.variables) for word in simple.words]
        redirect_inputs = [target.expand(self.variables) for op, target in simple.redirects if op in ("<", "<>")]
        while words and words[0] in _KEYWORDS:
            words = words[1:]
        while words and ASSIGNMENT_RE.match(words[0]):
            name, value = ASSIGNMENT_RE.match(words[0]).groups()  # type: ignore[union-attr]
            self.variables[name] = value
            words = words[1:]
        if not words:
            return False
        words = self._unwrap(words)
        if not words:
            return False
        verb = basename(words[0])
        args = words[1:]
        if verb in INERT_VERBS:
            return False
        if verb in ("cd", "pushd") and args:
            self.cwd = posixpath.normpath(self._resolve(args[-1]))
            return False
        if verb in SHELLS:
            payload = _shell_payload(args)
            if payload is not None:
                nested = self._child()
                nested.variables = dict(self.variables)
                nested.tokens_seen = self.tokens_seen
                return nested.read(payload, depth + 1)
        read_args = read_arguments(verb, args)
        if read_args is not None:
            read = [a for a in [*read_args, *redirect_inputs] if _is_target_skill_file(self._resolve(a), self.target)]
            if read:
                return self._any_installed(read, "read")
        if "/" in words[0] and _under_target_scripts(self._resolve(words[0]), self.target):
            return self._any_installed([words[0]], "run")
        if INTERPRETER_RE.match(verb) or verb in ("source", "."):
            run = [a for a in args if not a.startswith("-") and _under_target_scripts(self._resolve(a), self.target)]
            if run:
                return self._any_installed(run, "run")
        read = [p for p in redirect_inputs if _is_target_skill_file(self._resolve(p), self.target)]
        if read:
            return self._any_installed(read, "read")
        self._check_unknown(words, simple.words, redirect_inputs)
        return False

    def _unwrap(self, words: list[str]) -> list[str]:
        for _ in range(MAX_WRAPPERS + 1):
            if not words:
                return words
            verb = basename(words[0])
            skip = _wrapper_prefix(verb, words)
            if skip is None:
                return words
            if skip < 0:  # `command -v`: nothing runs
                return []
            words = words[skip:]
        raise Undeterminable("more than 8 command wrappers")

    def _check_unknown(self, words: list[str], source: list[Word], inputs: list[str]) -> None:
        """`words` is a suffix of the expanded `source` words (only leading words are ever dropped); a word that is a
        path outside every skills folder names another skill's files, not the target's."""
        texts = [*words, *inputs]
        if not any(_names_skill_file(text) for text in texts):
            return  # the common case, decided before any path is placed
        texts = [text for text in texts if not self._outside(text)]
        if any(_mentions_artifact(text, self.target) for text in texts):
            raise Undeterminable(f"command names {self.target}'s files without a recognized read or run")
        if not any(_names_skill_file(text) for text in texts):
            return
        if any(_has_component(text, self.target) for text in texts):
            raise Undeterminable(f"command names {self.target}'s folder and a skill file it may read")
        # Glob flags are only needed here, so they are computed here, for the words still in play.
        globbed = [word.has_unquoted_glob() for word in source[len(source) - len(words) :]]
        for text, is_glob in zip(words, globbed, strict=False):
            if (
                is_glob
                and not self._outside(text)
                and any(
                    any(ch in part for ch in "*?[") and fnmatch.fnmatch(self.target.casefold(), part.casefold())
                    for part in text.replace("\\", "/").split("/")
                )
            ):
                raise Undeterminable(f"a glob that may match {self.target} reaches a skill file")


def _names_skill_file(text: str) -> bool:
    """A word that names a SKILL.md or something under a `scripts/` folder (what a skill's files look like)."""
    return "skill.md" in text.lower() or "/scripts/" in text.replace("\\", "/").lower()


def _shell_payload(args: list[str]) -> str | None:
    for position, word in enumerate(args):
        if word == "--":
            continue
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            rest = args[position + 1 :]
            while rest and rest[0] == "--":
                rest = rest[1:]
            return rest[0] if rest else ""
        if not word.startswith("-"):
            return None
    return None


def _wrapper_prefix(verb: str, words: list[str]) -> int | None:
    """How many words a wrapper (env, command, exec, timeout, nice) takes before the real command; None if not one.

    -1 means the wrapper only looks the command up (`command -v`), so nothing runs.
    """
    position = 1
    if verb == "env":
        while position < len(words):
            word = words[position]
            if word in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                position += 2
            elif word == "--":
                position += 1
                break
            elif word.startswith("-") or ASSIGNMENT_RE.match(word):
                position += 1
            else:
                break
        return position
    if verb == "command":
        while position < len(words) and words[position].startswith("-"):
            if words[position] in ("-v", "-V"):
                return -1
            position += 1
            if words[position - 1] == "--":
                break
        return position
    if verb == "exec":
        while position < len(words) and words[position].startswith("-"):
            position += 2 if words[position] == "-a" else 1
        return position
    if verb == "timeout":
        while position < len(words) and words[position].startswith("-"):
            position += 2 if words[position] in ("-s", "-k", "--signal", "--kill-after") else 1
        return position + 1
    if verb == "nice":
        while position < len(words) and words[position].startswith("-"):
            position += 2 if words[position] == "-n" else 1
        return position
    return None


class _CommandOutcome(NamedTuple):
    """What reading one command line found, and the working directory it left behind."""

    triggered: bool
    undeterminable: str | None  # the reason, when the command could not be followed
    cwd: str
    hits: tuple[tuple[str, str], ...] = ()  # ("read" | "run", path) of the target's files it used


def _read_command(command: str, target: str, cwd: str, skills_dirs: tuple[str, ...] | None) -> _CommandOutcome:
    """Read one command line from `cwd`, from the cache when the command is short enough to be kept."""
    if len(command) <= _CACHED_COMMAND_LENGTH:
        return _read_command_cached(command, target, cwd, skills_dirs)
    return _read_command_fresh(command, target, cwd, skills_dirs)


def _read_command_fresh(command: str, target: str, cwd: str, skills_dirs: tuple[str, ...] | None) -> _CommandOutcome:
    """A fresh reader depends on nothing but these arguments, which is what makes the outcome cacheable."""
    reader = _ShellReader(target, cwd, skills_dirs)
    try:
        triggered = reader.read(command, 0)
    except Undeterminable as why:
        return _CommandOutcome(False, str(why), reader.cwd)
    return _CommandOutcome(triggered, None, reader.cwd, tuple(reader.hits))


def _succeeded(outcome: _CommandOutcome, observation: str) -> bool:
    """A use counts when one of its reads or runs worked: a read that found no file (or exited non-zero) and a run
    of a script that was not there are no use."""
    return any(not read_failed(observation, path, exit_codes=kind == "read") for kind, path in outcome.hits)


_read_command_cached = lru_cache(maxsize=_READ_CACHE_SIZE)(_read_command_fresh)


def _call_evidence(call: ToolCallRecord, why: str, text: str) -> dict[str, Any]:
    return {"call_index": call.index, "tool": call.tool, "why": why, "evidence": text[:300]}


def check_invocation(
    calls: list[ToolCallRecord],
    target: str,
    loads: list[HarnessLoad] | None = None,
    skills_dirs: tuple[str, ...] | None = None,
) -> InvocationResult:
    """Whether the calls used skill `target` (in this order: Skill tool, file reads, shell commands); a skill the
    harness loaded (`loads`) counts as used too. A load that failed is no use.

    With `skills_dirs`, only the target's files in those folders are the target; without, a file of a folder named
    like the target anywhere is, which is what a negative control needs: it passes only when the trajectory proves
    the skill unused, and a same-named folder may be a copy of it."""
    wanted = target.strip().casefold()
    if not wanted:
        return InvocationResult(None, "no skill to look for")
    triggered: list[dict[str, Any]] = [load_evidence(load) for load in loads_of(list(loads or []), target)]
    unknown: list[dict[str, Any]] = []
    cwd = DEFAULT_CWD
    for call in calls:
        if is_skill_tool(call.tool):
            name = skill_tool_name(call.arguments)
            if name.strip().casefold() == wanted and not skill_tool_failed(call.observation):
                triggered.append(_call_evidence(call, "Skill tool invoked the skill", name))
            continue
        if is_file_read_action(call.tool):
            path = path_argument(call.arguments)
            if not path.strip():
                unknown.append(_call_evidence(call, "read call without a path argument", ""))
            elif _is_target_skill_file(path, target):
                where = workdir_argument(call.arguments) or cwd
                if skills_dirs is not None and not normalize(path, where):
                    unknown.append(_call_evidence(call, "read a SKILL.md this reader cannot place", path))
                elif read_failed(call.observation, path):
                    continue
                elif skills_dirs is None or installed_skill(path, skills_dirs, where).casefold() == wanted:
                    triggered.append(_call_evidence(call, "read the skill's SKILL.md", path))
            continue
        if is_exec_tool(call.tool):
            command = shell_text(call.arguments)
            dirs = tuple(skills_dirs) if skills_dirs is not None else None
            outcome = _read_command(command, target, workdir_argument(call.arguments) or cwd, dirs)
            if outcome.undeterminable is not None:
                unknown.append(_call_evidence(call, outcome.undeterminable, command))
            elif outcome.triggered and _succeeded(outcome, call.observation):
                triggered.append(_call_evidence(call, "command read or ran the skill's files", command))
            cwd = outcome.cwd
    if triggered:
        return InvocationResult(False, f"Skill '{target}' was triggered", triggered)
    if unknown:
        return InvocationResult(None, f"Could not determine safely whether skill '{target}' was triggered", unknown)
    return InvocationResult(True, f"Skill '{target}' was not triggered")
