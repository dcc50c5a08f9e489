"""Case-id rules shared by dataset entries and native task folders.

An id becomes part of a pytest node id, a folder name in the results tree and a Harbor task name, so it must be
safe in all three on every platform.
"""

from __future__ import annotations

import re

MAX_CASE_ID_LENGTH = 128
_CASE_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_WINDOWS_DEVICES = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


class CaseIdError(ValueError):
    """An id that breaks the rules; the message says which rule."""


def canonical_case_id(value: object) -> str:
    """Return the id as a string (ints become decimal strings) or raise CaseIdError naming the rule broken."""
    if isinstance(value, bool):
        raise CaseIdError("must be a string or an integer, not a boolean")
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str):
        raise CaseIdError(f"must be a string or an integer, not {type(value).__name__}")
    if not value:
        raise CaseIdError("must not be empty")
    if len(value) > MAX_CASE_ID_LENGTH:
        raise CaseIdError(f"must be at most {MAX_CASE_ID_LENGTH} characters (got {len(value)})")
    if not _CASE_ID_PATTERN.fullmatch(value):
        raise CaseIdError(
            f"{value!r} must start with a letter or digit and use only ASCII letters, digits, '.', '_' and '-'"
        )
    if value.endswith("."):
        raise CaseIdError(f"{value!r} must not end with '.'")
    if value.split(".", 1)[0].lower() in _WINDOWS_DEVICES:
        raise CaseIdError(f"{value!r} starts with a reserved Windows device name")
    return value


def duplicate_key(case_id: str) -> str:
    """Ids that differ only in case collide on case-insensitive file systems, so duplicates compare casefolded."""
    return case_id.casefold()
