"""Untrusted text on its way into a file a person reads: secrets masked, length capped.

Trajectories, grader output and grader details are written by the agent and the skill author's code; any of them
may echo a key. Every string the report or the trial folder shows from them goes through `redact_text` first (the
token patterns of the security evaluator plus the credential-value patterns of the reward sanitizer), and long
text is cut with a note saying how much was left out. HTML escaping is the template's job (autoescape), not ours.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from verifier.checks.security_patterns import redact as redact_tokens
from verifier.custom import credential_spans, looks_like_credential

MARK = "[REDACTED]"

__all__ = ["MARK", "cap_text", "redact_text", "redact_value"]


def redact_text(text: str) -> str:
    """`text` with every secret-looking value replaced by [REDACTED]."""
    spans = sorted(credential_spans(text))
    if not spans:
        return redact_tokens(text)
    pieces, cursor = [], 0
    for start, end in spans:
        if end <= cursor:
            continue
        start = max(start, cursor)
        pieces += [text[cursor:start], MARK]
        cursor = end
    pieces.append(text[cursor:])
    return redact_tokens("".join(pieces))


def cap_text(text: str, limit: int, *, keep: str = "tail") -> str:
    """At most about `limit` characters; the cut is said in the text (the tail is kept by default: errors end there)."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    if keep == "head":
        return f"{text[:limit]}\n[... {cut:,} more characters not shown ...]"
    return f"[... {cut:,} earlier characters not shown ...]\n{text[-limit:]}"


@lru_cache(maxsize=4096)
def _credential_key(name: str) -> bool:
    """Keys repeat across thousands of trials (`reason`, `passed`, ...): decide each once."""
    return looks_like_credential(name)


def redact_value(value: Any, limit: int = 4000) -> Any:
    """A JSON-like value with every string redacted and capped, and values under credential-like keys masked.

    A value with nothing to redact or cap is returned as it is: its strings are gathered and scanned once, joined,
    instead of one by one (the results tree passes every trial's reward through here).
    """
    strings: list[str] = []
    if _gather(value, strings, limit):
        joined = "\x00".join(strings)
        if not credential_spans(joined) and redact_tokens(joined) == joined:
            return value
    return _redact_value(value, limit)


def _gather(value: Any, strings: list[str], limit: int) -> bool:
    """Collect the strings of `value`; False when one is over `limit` or sits under a credential-like key."""
    if isinstance(value, str):
        strings.append(value)
        return len(value) <= limit
    if isinstance(value, dict):
        for key, val in value.items():
            if not isinstance(key, str) or (isinstance(val, str) and _credential_key(key)):
                return False
            if not _gather(val, strings, limit):
                return False
        return True
    if isinstance(value, list | tuple):
        return all(_gather(item, strings, limit) for item in value)
    return True


def _redact_value(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return cap_text(redact_text(value), limit, keep="head")
    if isinstance(value, dict):
        return {
            str(key): MARK if isinstance(val, str) and _credential_key(str(key)) else _redact_value(val, limit)
            for key, val in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redact_value(item, limit) for item in value]
    return value
