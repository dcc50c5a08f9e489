"""A small, forgiving shell lexer for the skill checks.

The skill checks only need to know which simple commands a command line runs and with which words, so this lexer
splits on the shell's control operators, removes quotes, keeps `$(...)`/backtick/`<(...)` substitutions aside for the
caller to inspect, skips here-document bodies, and remembers which characters were quoted (for `$VAR` expansion and
glob detection). It never executes anything and raises `ShellSyntaxError` instead of guessing on malformed input.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from verifier.tools import command_text

# Part modes: how a piece of a word was written, which decides whether `$` expands and globs apply.
PLAIN, DOUBLE, SINGLE = "plain", "double", "single"

SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", ";;", "(", ")", "\n"})
REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<", "<>", ">&", "<&", "<<", "<<-", "<<<"})
_OPERATOR_CHARS = set(";&|()<>")
_VAR_RE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_PLAIN_RUN = re.compile(r"[^\s\\'\"`$;&|()<>]+")
_DOUBLE_RUN = re.compile(r'[^"\\`$]+')
_DESCRIPTOR_RE = re.compile(r"-|\d+")  # the `1` of `2>&1`, matched in place rather than on a copied tail
SUBST_MARK = "\x00"  # stands in for a command substitution's output inside a word


class ShellSyntaxError(ValueError):
    """The text is not a command line this lexer can split safely (unterminated quote or substitution)."""


@dataclass
class Word:
    """One shell word as a list of (text, mode) parts; quotes already removed."""

    parts: list[tuple[str, str]] = field(default_factory=list)

    def add(self, text: str, mode: str) -> None:
        if self.parts and self.parts[-1][1] == mode:
            self.parts[-1] = (self.parts[-1][0] + text, mode)
        else:
            self.parts.append((text, mode))

    @property
    def raw(self) -> str:
        return "".join(text for text, _ in self.parts)

    def expand(self, variables: Mapping[str, str]) -> str:
        """The word with known `$VAR`/`${VAR}` replaced outside single quotes; unknown variables stay literal."""
        out: list[str] = []
        for text, mode in self.parts:
            if mode == SINGLE or "$" not in text:  # nothing to expand: skip the substitution pass
                out.append(text)
                continue
            out.append(_VAR_RE.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), text))
        return "".join(out)

    def has_unquoted_glob(self) -> bool:
        return any(mode == PLAIN and any(ch in text for ch in "*?[") for text, mode in self.parts)


@dataclass
class Token:
    """A lexed token: a word, or an operator (`op` set)."""

    word: Word | None = None
    op: str | None = None


@dataclass
class Lexed:
    tokens: list[Token]
    substitutions: list[str]  # inner text of every $(...), `...`, <(...), >(...) found outside single quotes


def _matching_paren(text: str, start: int) -> int:
    """Index of the `)` closing the `(` just before `start`, honouring quotes and nesting."""
    depth = 1
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("unterminated single quote in substitution")
            i = end + 1
            continue
        if ch == '"':
            i = _closing_double_quote(text, i + 1) + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ShellSyntaxError("unterminated substitution")


def _closing_double_quote(text: str, start: int) -> int:
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i
        if ch == "$" and text.startswith("$(", i):
            i = _matching_paren(text, i + 2) + 1
            continue
        i += 1
    raise ShellSyntaxError("unterminated double quote")


def _closing_backtick(text: str, start: int) -> int:
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            return i
        i += 1
    raise ShellSyntaxError("unterminated backtick substitution")


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.tokens: list[Token] = []
        self.substitutions: list[str] = []
        self.word: Word | None = None
        self.pending_heredocs: list[tuple[str, bool]] = []  # (delimiter, strip_tabs)
        self.expect_heredoc_word: str | None = None

    def _word(self) -> Word:
        if self.word is None:
            self.word = Word()
        return self.word

    def _end_word(self) -> None:
        if self.word is None:
            return
        if self.expect_heredoc_word is not None:
            self.pending_heredocs.append((self.word.raw, self.expect_heredoc_word == "<<-"))
            self.expect_heredoc_word = None
        self.tokens.append(Token(word=self.word))
        self.word = None

    def _substitution(self, inner: str, mode: str) -> None:
        self.substitutions.append(inner)
        self._word().add(SUBST_MARK, mode)

    def _dollar(self, mode: str) -> bool:
        """Handle `$(`, `$((`; returns True when consumed."""
        text, i = self.text, self.i
        if text.startswith("$((", i):
            end = text.find("))", i + 3)
            if end < 0:
                raise ShellSyntaxError("unterminated arithmetic expansion")
            self._word().add("0", mode)
            self.i = end + 2
            return True
        if text.startswith("$(", i):
            end = _matching_paren(text, i + 2)
            self._substitution(text[i + 2 : end], mode)
            self.i = end + 1
            return True
        return False

    def _skip_heredoc_bodies(self) -> None:
        """After a newline: drop the lines of every pending here-document up to its delimiter line."""
        for delimiter, strip_tabs in self.pending_heredocs:
            while self.i < len(self.text):
                end = self.text.find("\n", self.i)
                line = self.text[self.i : end if end >= 0 else len(self.text)]
                self.i = end + 1 if end >= 0 else len(self.text)
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
        self.pending_heredocs = []

    def run(self) -> Lexed:
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch == "\\":
                if self.i + 1 < len(text) and text[self.i + 1] == "\n":
                    self.i += 2
                    continue
                self._word().add(text[self.i + 1 : self.i + 2], SINGLE)
                self.i += 2
            elif ch == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("unterminated single quote")
                self._word().add(text[self.i + 1 : end], SINGLE)
                self.i = end + 1
            elif ch == '"':
                self._double_quoted()
            elif ch == "`":
                end = _closing_backtick(text, self.i + 1)
                self._substitution(text[self.i + 1 : end], PLAIN)
                self.i = end + 1
            elif ch == "$" and self._dollar(PLAIN):
                continue
            elif ch in "<>" and text.startswith("(", self.i + 1):
                end = _matching_paren(text, self.i + 2)
                self._substitution(text[self.i + 2 : end], PLAIN)
                self.i = end + 1
            elif ch == "#" and self.word is None:
                end = text.find("\n", self.i)
                self.i = end if end >= 0 else len(text)
            elif ch == "\n":
                self._end_word()
                self.tokens.append(Token(op="\n"))
                self.i += 1
                self._skip_heredoc_bodies()
            elif ch in " \t\r":
                self._end_word()
                self.i += 1
            elif ch in _OPERATOR_CHARS:
                self._operator()
            else:
                run = _PLAIN_RUN.match(text, self.i)
                chunk = run.group(0) if run else ch
                self._word().add(chunk, PLAIN)
                self.i += len(chunk)
        self._end_word()
        return Lexed(tokens=self.tokens, substitutions=self.substitutions)

    def _double_quoted(self) -> None:
        text = self.text
        self.i += 1
        word = self._word()
        word.add("", DOUBLE)
        while True:
            if self.i >= len(text):
                raise ShellSyntaxError("unterminated double quote")
            ch = text[self.i]
            if ch == '"':
                self.i += 1
                return
            if ch == "\\" and self.i + 1 < len(text) and text[self.i + 1] in '$`"\\\n':
                word.add(text[self.i + 1], SINGLE if text[self.i + 1] == "$" else DOUBLE)
                self.i += 2
            elif ch == "`":
                end = _closing_backtick(text, self.i + 1)
                self._substitution(text[self.i + 1 : end], DOUBLE)
                self.i = end + 1
            elif ch == "$" and self._dollar(DOUBLE):
                continue
            else:
                run = _DOUBLE_RUN.match(text, self.i)
                chunk = run.group(0) if run else ch
                word.add(chunk, DOUBLE)
                self.i += len(chunk)

    def _operator(self) -> None:
        text = self.text
        # A run of digits right before a redirection is its file descriptor, not a word.
        if text[self.i] in "<>" and self.word is not None and self.word.raw.isdigit():
            self.word = None
        for candidate in ("&>>", "<<<", "<<-", "&&", "||", "|&", ";;", ">>", ">|", "&>", "<>", ">&", "<&", "<<"):
            if text.startswith(candidate, self.i):
                op = candidate
                break
        else:
            op = text[self.i]
        self._end_word()
        self.i += len(op)
        if op in (">&", "<&"):
            # `2>&1`: the descriptor after it is part of the redirection.
            match = _DESCRIPTOR_RE.match(text, self.i)
            if match:
                self.i = match.end()
                self.tokens.append(Token(op=op))
                return
        if op in ("<<", "<<-"):
            self.expect_heredoc_word = op
        self.tokens.append(Token(op=op))


def lex(text: str) -> Lexed:
    """Split a command line into words and operators; raises ShellSyntaxError when it cannot."""
    return _Lexer(text).run()


@dataclass
class SimpleCommand:
    """The words of one simple command plus its redirections, as (operator, target word) pairs."""

    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word]] = field(default_factory=list)


def simple_commands(tokens: list[Token]) -> list[SimpleCommand]:
    """Group tokens into simple commands at control operators; a redirection consumes the word after it."""
    commands: list[SimpleCommand] = []
    current = SimpleCommand()
    pending_redirect: str | None = None
    for token in tokens:
        if token.op is not None and token.op in SEPARATORS:
            if current.words or current.redirects:
                commands.append(current)
            current = SimpleCommand()
            pending_redirect = None
        elif token.op is not None:
            if token.op in (">&", "<&"):
                continue
            pending_redirect = token.op
        elif token.word is not None:
            if pending_redirect is not None:
                current.redirects.append((pending_redirect, token.word))
                pending_redirect = None
            else:
                current.words.append(token.word)
    if current.words or current.redirects:
        commands.append(current)
    return commands


ASSIGNMENT_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def shell_text(arguments: Mapping[str, Any]) -> str:
    """The command an exec call ran, keeping argv lists (Codex `shell`) correctly quoted."""
    command = arguments.get("command")
    if isinstance(command, str) and command.strip() and not isinstance(arguments.get("cmd"), list):
        return command  # the common case, and what the general path below returns for it
    for key in ("command", "cmd"):
        value = arguments.get(key)
        if isinstance(value, list) and value:
            return shlex.join(str(item) for item in value)
    return command_text(arguments)


def basename(word: str) -> str:
    return word.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
