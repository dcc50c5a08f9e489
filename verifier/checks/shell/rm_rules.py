"""The destructive-`rm` rule on already-resolved targets: option parsing and the verdict."""

from __future__ import annotations

from verifier.checks.shell.ast import Word
from verifier.checks.shell.paths import is_protected, is_under_tmp

# Unambiguous prefixes of GNU rm long options that matter here (getopt accepts any unique prefix).
_LONG_RECURSIVE = "recursive"
_LONG_FORCE = "force"
_LONG_OTHERS = (
    "interactive",
    "one-file-system",
    "no-preserve-root",
    "preserve-root",
    "dir",
    "verbose",
    "help",
    "version",
)

SPENT = "spent"  # resolution result once the trace's work budget is gone


class RmCall:
    __slots__ = ("recursive", "force", "operands")

    def __init__(self, recursive: bool, force: bool, operands: list[Word]) -> None:
        self.recursive = recursive
        self.force = force
        self.operands = operands


def _long_is(name: str, full: str) -> bool:
    if not name or not full.startswith(name):
        return False
    return not any(o.startswith(name) for o in (_LONG_RECURSIVE, _LONG_FORCE) + _LONG_OTHERS if o != full)


def parse_rm(args: list[Word]) -> RmCall:
    """GNU rm option parsing: clusters, long-option prefixes, options after operands, `--`."""
    recursive = force = False
    operands: list[Word] = []
    end = False
    for w in args:
        lit = w.lit
        if end or lit is None or lit == "-" or not lit.startswith("-"):
            operands.append(w)
        elif lit == "--":
            end = True
        elif lit.startswith("--"):
            name = lit[2:].split("=", 1)[0]
            if _long_is(name, _LONG_RECURSIVE):
                recursive = True
            elif _long_is(name, _LONG_FORCE):
                force = True
        else:
            flags = lit[1:]
            if "r" in flags or "R" in flags:
                recursive = True
            if "f" in flags:
                force = True
    return RmCall(recursive, force, operands)


def verdict(call: RmCall, operand: Word, candidates: list[str] | str | None) -> str | None:
    """Why removing `operand` (resolved to `candidates`) is destructive, or None."""
    shown = operand.text()
    if call.recursive:
        if candidates is None or candidates == SPENT:
            return f"recursive rm of {shown!r} whose target cannot be resolved"
        outside = [c for c in candidates if not is_under_tmp(c)]
        if outside:
            return f"recursive rm outside /tmp: {shown!r} -> {outside[0]}"
        return None
    if candidates == SPENT:
        return f"force rm of {shown!r} after the resolution work budget was spent (counts as protected)"
    if candidates is None:
        return f"force rm of {shown!r} whose target cannot be resolved"
    for c in candidates:
        if is_protected(c):
            return f"force rm under a protected root: {shown!r} -> {c}"
    return None
