"""What a case says about skills: should it trigger, which skills are accepted, which skill is under test.

Both skill checks and the invocation evidence read the entry through these helpers, so a case is interpreted the same
way everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

ACCEPTABLE_ALTERNATE_SCORE = 0.75

_FALSE_WORDS = frozenset({"false", "no", "0", "off", ""})
_TRUE_WORDS = frozenset({"true", "yes", "1", "on"})


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _FALSE_WORDS:
            return False
        if lowered in _TRUE_WORDS:
            return True
    return bool(value)


def should_trigger(entry: Mapping[str, Any]) -> bool | None:
    """Tri-state: an explicit should_trigger wins, else whether expected_skill is set, else None (unlabeled).

    A `should_trigger` key holding null is treated as absent, so an entry serialized with every field still means
    what its author wrote.
    """
    if entry.get("should_trigger") is not None:
        return _truthy(entry["should_trigger"])
    if "expected_skill" in entry:
        return bool(str(entry.get("expected_skill") or "").strip())
    return None


def _text(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    return "" if value is None else str(value).strip()


def expected_skill(entry: Mapping[str, Any]) -> str:
    return _text(entry, "expected_skill")


def expected_script(entry: Mapping[str, Any]) -> str:
    return _text(entry, "expected_script")


def evaluated_skill(entry: Mapping[str, Any]) -> str:
    """The trusted skill identity the plugin wrote (the skill folder's name); never authored by the case."""
    return _text(entry, "evaluated_skill")


def skill_under_test(entry: Mapping[str, Any]) -> str:
    """The skill whose use counts as invocation: the trusted evaluated_skill, else the authored expected_skill."""
    return evaluated_skill(entry) or expected_skill(entry)


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [piece for piece in re.split(r"[,\n]", value)]
    if isinstance(value, Mapping):
        value = [value]
    names: list[str] = []
    if isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, Mapping):
                for key in ("name", "skill", "expected_skill"):
                    if item.get(key):
                        names.append(str(item[key]))
                        break
            elif item is not None:
                names.append(str(item))
    return names


def _dedupe(names: list[str]) -> list[str]:
    seen: set[str] = set()
    result: list[str] = []
    for name in names:
        cleaned = name.strip()
        if cleaned and cleaned.casefold() not in seen:
            seen.add(cleaned.casefold())
            result.append(cleaned)
    return result


def acceptable_skills(entry: Mapping[str, Any]) -> list[str]:
    """Expected skill first, then the authored alternates (acceptable_skills, else acceptable_alternates)."""
    alternates = entry.get("acceptable_skills") or entry.get("acceptable_alternates")
    return _dedupe([expected_skill(entry), *_names(alternates)])


def workspace_mode(entry: Mapping[str, Any]) -> str:
    return _text(entry, "skill_workspace_mode").lower() or "isolated"


def workspace_skill_names(entry: Mapping[str, Any]) -> list[str]:
    return _dedupe(_names(entry.get("workspace_skill_names")))


def match_accepted(text: str, accepted: list[str], *, exact: bool) -> tuple[str, float] | None:
    """The first accepted name found in `text` and its score (1.0 for the expected skill, 0.75 for an alternate).

    Fuzzy means the name is a case-insensitive substring of the text; exact means equal ignoring case.
    """
    folded = (text or "").casefold()
    if not folded:
        return None
    for position, name in enumerate(accepted):
        wanted = name.casefold()
        if (folded == wanted) if exact else (wanted in folded):
            return name, 1.0 if position == 0 else ACCEPTABLE_ALTERNATE_SCORE
    return None


def match_type(score: float) -> str:
    return "expected" if score >= 1.0 else "acceptable_alternate"
