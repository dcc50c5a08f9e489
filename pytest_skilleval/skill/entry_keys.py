"""Extra keys in an eval entry that look like a misspelt known field (`expected_skil`, `expected_scirpt`).

Extra keys are legal (they travel to the grader in entry.json), so a typo in an optional field silently changes a
case: a negative control without its `expected_skill: null` becomes a positive one. A key within one or two edits
of a known field is therefore reported (a pytest warning at collection, an error under `validate --strict`).
Also the one `(did you mean 'x'?)` hint that an unknown key of config.yml, a check or a trigger entry gets.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

# Every name an entry field may be authored under (runtime names and their aliases).
KNOWN_FIELDS: tuple[str, ...] = (
    "id",
    "prompt",
    "question",
    "query",
    "expected_output",
    "ground_truth",
    "assertions",
    "expected_behavior",
    "expectations",
    "files",
    "expected_skill",
    "should_trigger",
    "expected_script",
    "acceptable_skills",
    "acceptable_alternates",
    "force_skill_invocation",
)
_SKIP_SHORTER_THAN = 4  # `id` is one or two edits from almost every short word


class KeyTypo(BaseModel):
    """One unknown key, the field it resembles and the entries (labels) that carry it."""

    key: str
    resembles: str
    entries: list[str]

    def message(self) -> str:
        shown = ", ".join(self.entries[:5]) + (f" and {len(self.entries) - 5} more" if len(self.entries) > 5 else "")
        return (
            f"key '{self.key}' ({shown}) is not a known field but resembles '{self.resembles}'; "
            "a typo would silently change the case (rename it, or ignore this if it is your own grader's key)"
        )


def did_you_mean(key: str, known: Sequence[str]) -> str:
    """` (did you mean 'x'?)` naming the known name nearest `key`, or "" when none is near: the fix for a typo."""
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def edit_distance(a: str, b: str, limit: int = 2) -> int:
    """Optimal-string-alignment distance (an adjacent swap is one edit), capped at `limit + 1`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, char_b in enumerate(b, start=1):
            cost = 0 if char_a == char_b else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return min(previous[-1], limit + 1)


def resembled_field(key: str) -> str | None:
    """The known field `key` is a near miss of (same letters in another case, or one or two edits away)."""
    if key in KNOWN_FIELDS:
        return None
    folded = key.casefold().replace("-", "_")
    best: tuple[int, str] | None = None
    for known in KNOWN_FIELDS:
        if len(known) < _SKIP_SHORTER_THAN:
            continue
        allowed = 1 if len(known) <= 6 else 2
        distance = edit_distance(folded, known, allowed)
        if distance <= allowed and (best is None or distance < best[0]):
            best = (distance, known)
    return best[1] if best else None


def near_miss_keys(labelled_entries: Iterable[tuple[str, Any]]) -> list[KeyTypo]:
    """Every near-miss key across the entries, grouped by key, in first-seen order."""
    checked: dict[str, str | None] = {}
    found: dict[str, KeyTypo] = {}
    for label, raw in labelled_entries:
        if not isinstance(raw, Mapping):
            continue
        for key in raw:
            if not isinstance(key, str):
                continue
            if key not in checked:
                checked[key] = resembled_field(key)
            resembles = checked[key]
            if resembles is None:
                continue
            found.setdefault(key, KeyTypo(key=key, resembles=resembles, entries=[])).entries.append(label)
    return list(found.values())
