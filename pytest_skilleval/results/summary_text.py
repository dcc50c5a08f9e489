"""Cell formats and column layout shared by the terminal summary's tables.

Missing values have words, never zeros: NO SCORE (unscored), N/A (no comparison), SKIPPED (arm not run). A label
wider than its column is never cut: it gets a line of its own and the values follow on the next line.
"""

from __future__ import annotations

import textwrap

__all__ = ["NA", "NO_SCORE", "SKIPPED", "Columns", "counted", "na", "score", "signed", "wrap"]

NO_SCORE = "NO SCORE"
NA = "N/A"
SKIPPED = "SKIPPED"
INDENT = "  "


def counted(amount: int, noun: str) -> str:
    """`1 case`, `2 cases`: a count with its noun in the number it takes (for nouns whose plural adds an s)."""
    return f"{amount} {noun}" if amount == 1 else f"{amount} {noun}s"


def score(value: float | None) -> str:
    return NO_SCORE if value is None else f"{value:.4f}"


def na(value: float | None) -> str:
    return NA if value is None else f"{value:.4f}"


def signed(value: float | None) -> str:
    return NA if value is None else f"{value:+.4f}"


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """Wrap prose at spaces only: a hyphenated name (a score policy, a path) is never split inside."""
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_on_hyphens=False,
        break_long_words=False,
    ) or [indent]


class Columns:
    """A table layout: a label column then fixed-width cells, indented two spaces.

    The label column grows to fit the longest label, as far as `width` allows; a longer label wraps onto lines of
    its own (at any character when it has no spaces) and the row's cells follow, aligned, on the next line.
    """

    def __init__(self, width: int, cells: tuple[int, ...], labels: list[str], minimum: int = 24) -> None:
        self.width, self.cells = width, cells
        room = width - len(INDENT) - sum(cells)
        self.label = max(min(max([len(x) + 2 for x in labels] + [minimum]), room), 12)

    def row(self, label: str, *cells: str) -> list[str]:
        body = "".join(f"{c:<{w}}" for c, w in zip(cells, self.cells, strict=False))
        if len(label) <= self.label - 2:
            return [f"{INDENT}{label:<{self.label}}{body}".rstrip()]
        pieces = textwrap.wrap(label, width=max(self.width - len(INDENT), 12), break_on_hyphens=False)
        lines = [f"{INDENT}{piece}" for piece in pieces]
        return lines + ([f"{INDENT}{'':<{self.label}}{body}".rstrip()] if body.strip() else [])
