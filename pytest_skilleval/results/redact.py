"""Untrusted text on its way into a file a person reads: secrets masked, length capped.

Trajectories, grader output and grader details are written by the agent and the skill author's code; any of them
may echo a key. Every string the report or the trial folder shows from them goes through `redact_text` first (the
one redaction pass, `verifier.redact`, with its token shapes and credential-named keys), and long text is cut with
a note saying how much was left out. HTML escaping is the template's job (autoescape), not ours.
"""

from __future__ import annotations

from typing import Any

from verifier.redact import REDACTED, Redactor

MARK = REDACTED
# Pattern-only: what this process knows of secret values was removed when the run's files were written.
_PASS = Redactor()

__all__ = ["MARK", "cap_text", "redact_text", "redact_value"]


def redact_text(text: str) -> str:
    """`text` with every secret-looking value replaced by [REDACTED]."""
    return _PASS.text(text)


def cap_text(text: str, limit: int, *, keep: str = "tail") -> str:
    """At most about `limit` characters; the cut is said in the text (the tail is kept by default: errors end there)."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    if keep == "head":
        return f"{text[:limit]}\n[... {cut:,} more characters not shown ...]"
    return f"[... {cut:,} earlier characters not shown ...]\n{text[-limit:]}"


def redact_value(value: Any, limit: int = 4000) -> Any:
    """A JSON-like value with every string redacted and capped, and values under credential-like keys masked.

    A value with nothing to redact or cap is returned as it is (the results tree passes every trial's reward here).
    """
    scrubbed = _PASS.scrub(value)
    return _capped(scrubbed, limit)


def _capped(value: Any, limit: int) -> Any:
    """`value` itself when no string in it is over `limit`, else a copy with the long strings cut."""
    if isinstance(value, str):
        return cap_text(value, limit, keep="head")
    if isinstance(value, dict):
        items = {key: _capped(val, limit) for key, val in value.items()}
        return value if all(items[key] is val for key, val in value.items()) else items
    if isinstance(value, list | tuple):
        capped = [_capped(item, limit) for item in value]
        return value if all(a is b for a, b in zip(capped, value, strict=True)) else capped
    return value
