"""Case ids in the order a person counts them: `case-2` before `case-10` (digits compare as numbers)."""

from __future__ import annotations

import re

_RUNS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    """A sort key where each run of digits compares by value and the rest by text (casefolded); ties, as written."""
    parts = tuple((0, int(part)) if part.isdigit() else (1, part.casefold()) for part in _RUNS.split(text) if part)
    return parts, text
