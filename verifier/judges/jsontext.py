"""Finding the one JSON document in a judge's reply, strictly, and salvaging a truncated behavior reply.

Why strict: a judge reply is untrusted text. Prose and code fences around exactly one object are tolerated;
two documents, duplicate keys, NaN/Infinity or runaway nesting are not, so an ambiguous reply is retried rather
than scored.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_REPLY_CHARS = 100_000
MAX_DEPTH = 128
_OPEN = {"{": "}", "[": "]"}


class _Reject(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Reject(f"duplicate key {key!r}")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise _Reject(f"{name} is not JSON")


def loads_strict(text: str) -> Any:
    """json.loads that rejects duplicate keys and NaN/Infinity."""
    return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)


class _Malformed(Exception):
    """A closer that does not match, or nesting past the allowed depth."""


def _walk(
    text: str, start: int = 0, *, stop_when_closed: bool = False, max_depth: int | None = None
) -> tuple[list[str], bool, int | None]:
    """Walk JSON text from `start`, outside and inside strings: (closers still owed, whether it ends inside a string,
    and with `stop_when_closed` the index just past the first container to close). Raises _Malformed."""
    stack: list[str] = []
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in _OPEN:
            stack.append(_OPEN[char])
            if max_depth is not None and len(stack) > max_depth:
                raise _Malformed
        elif char in "]}":
            if not stack or stack.pop() != char:
                raise _Malformed
            if stop_when_closed and not stack:
                return stack, False, index + 1
    return stack, in_string, None


def _container_end(text: str, start: int) -> int | None:
    """Index just past the container opened at `start`, or None when it never closes (or nests too deep)."""
    try:
        return _walk(text, start, stop_when_closed=True, max_depth=MAX_DEPTH)[2]
    except _Malformed:
        return None


def extract_json(text: str) -> Any | None:
    """The single JSON container in `text`, or None (none, several, unfinished first, too long, or invalid)."""
    if not text or len(text) > MAX_REPLY_CHARS:
        return None
    documents: list[Any] = []
    index = 0
    while index < len(text):
        if text[index] not in _OPEN:
            index += 1
            continue
        end = _container_end(text, index)
        if end is None:
            break
        try:
            documents.append(loads_strict(text[index:end]))
        except (ValueError, RecursionError):
            index += 1
            continue
        index = end
    return documents[0] if len(documents) == 1 else None


# ---- salvage ---------------------------------------------------------------------------------------------------

_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant)


def _skip_ws(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _open_stack(text: str) -> tuple[list[str], bool]:
    """Closers still owed by a JSON prefix, and whether it ends inside a string."""
    try:
        stack, in_string, _ = _walk(text)
    except _Malformed:
        return [], False
    return stack, in_string


def is_json_prefix(text: str) -> bool:
    """True when `text` can be extended into a valid JSON value (tested by trying the few possible completions)."""
    stack, in_string = _open_stack(text)
    closers = "".join(reversed(stack))
    stem = text.rstrip()
    heads = ['"'] if in_string else [""]
    if not in_string:
        tail = stem[len(stem.rstrip("abcdefghijklmnopqrstuvwxyz")) :]
        heads += [word[len(tail) :] for word in ("true", "false", "null") if tail and word.startswith(tail)]
        heads += ["0", "null", '"":null', ":null"]
    candidates = [head + mid + closers for head in heads for mid in ("", ":null", "0", '":null')]
    if in_string:
        candidates += ['":null' + closers, '":""' + closers]
    for candidate in candidates:
        try:
            loads_strict(stem + candidate)
        except (ValueError, RecursionError):
            continue
        return True
    return False


def salvage_results(text: str, expected: int) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """(fields before `results`, complete result entries) from a reply cut off inside its `results` array.

    Nothing is salvaged when the array was closed (that reply was simply invalid), when a field before `results`
    is incomplete or a non-finite score, when structural brackets precede the object, or when the trailing entry
    is not a valid JSON prefix. Needs 1 <= recovered <= expected.
    """
    start = text.find("{")
    if start < 0 or any(c in "[]{}" for c in text[:start]) or len(text) > MAX_REPLY_CHARS:
        return None
    fields: dict[str, Any] = {}
    index = _skip_ws(text, start + 1)
    try:
        while True:
            key, index = _DECODER.raw_decode(text, index)
            index = _skip_ws(text, index)
            if not isinstance(key, str) or text[index : index + 1] != ":":
                return None
            index = _skip_ws(text, index + 1)
            if key == "results":
                break
            value, index = _DECODER.raw_decode(text, index)
            if key == "score" and (
                isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            ):
                return None
            fields[key] = value
            index = _skip_ws(text, index)
            if text[index : index + 1] != ",":
                return None
            index = _skip_ws(text, index + 1)
    except (ValueError, IndexError):
        return None
    if text[index : index + 1] != "[":
        return None
    results: list[dict[str, Any]] = []
    index = _skip_ws(text, index + 1)
    while index < len(text):
        if text[index] == "]":
            return None
        try:
            item, after = _DECODER.raw_decode(text, index)
        except ValueError:
            if not is_json_prefix(text[index:]):
                return None
            break
        if not isinstance(item, dict):
            return None
        results.append(item)
        index = _skip_ws(text, after)
        if index >= len(text):
            break
        if text[index] == "]":
            return None
        if text[index] != ",":
            return None
        index = _skip_ws(text, index + 1)
    if not 1 <= len(results) <= expected:
        return None
    return fields, results
