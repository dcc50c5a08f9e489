"""Character facts: where a field holds non-ASCII whitespace or Unicode format (Cf) characters.

Why: a literal U+00A0 in code looks like a space to a reader (and to a judge reading rendered text). The facts are
appended after the evidence, never replacing it, and only when SKILL_EVAL_JUDGE_CHARACTER_FACTS=1.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

MAX_PER_FIELD = 20
CONTEXT = 20


def _notable(char: str) -> bool:
    if ord(char) < 128:
        return False
    return char.isspace() or unicodedata.category(char) in {"Zs", "Zl", "Zp", "Cf"}


def _escaped(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii").replace("\n", "\\n").replace("\t", "\\t")


def field_facts(name: str, text: str) -> list[str]:
    """One line per occurrence (up to 20): code point, name, one-based line:column, ASCII-escaped context."""
    lines: list[str] = []
    total = 0
    line, column = 1, 0
    for index, char in enumerate(text):
        if char == "\n":
            line, column = line + 1, 0
            continue
        column += 1
        if not _notable(char):
            continue
        total += 1
        if total > MAX_PER_FIELD:
            continue
        label = unicodedata.name(char, "UNNAMED")
        context = _escaped(text[max(0, index - CONTEXT) : index + CONTEXT + 1])
        lines.append(f"- {name}: U+{ord(char):04X} {label} at line {line}, column {column}; context: {context}")
    if total > MAX_PER_FIELD:
        lines.append(f"- {name}: {total - MAX_PER_FIELD} more occurrence(s) not listed")
    return lines


def character_facts(fields: Mapping[str, str]) -> str:
    """The facts block for a prompt's fields, or '' when none holds a notable character."""
    lines = [line for name, text in fields.items() for line in field_facts(name, text)]
    if not lines:
        return ""
    return (
        "\n\nCHARACTER FACTS (metadata; presence alone is not an error, the task decides which characters are "
        "allowed):\n" + "\n".join(lines)
    )
