"""A trajectory too large for a trial file, kept in a capped form that says what was cut and why.

Why: a trial file holds the agent's trajectory so a reviewer (report.html, `skilleval view`, `skilleval trajectory`)
and `--regrade` can read it. One long command output makes the trajectory pass the trial file's per-artifact cap,
and dropping it whole leaves "no trajectory" where the agent's every step is still worth seeing. So every long
string in it (an observation, a message, a tool call's argument) is cut to a length that makes the whole fit, and
the document's `extra.skilleval_cut` says so; only a file past the read limit, or not JSON, is not kept.

Pure; imports neither pytest nor Harbor.
"""

from __future__ import annotations

import json
from typing import Any

# Read no more than this from the sandbox's trajectory file, whatever it holds.
MAX_TRAJECTORY_READ_BYTES = 64 * 1024 * 1024
CUT_KEY = "skilleval_cut"
_LONGEST = 64 * 1024  # the first length every long string is cut to; halved until the document fits
_SHORTEST = 256
_NOTE_ROOM = 1024  # bytes kept free for the note saying what was cut


def _strings(document: Any) -> list[tuple[Any, Any, str]]:
    """Every string in the document with where it sits (container, key), walked without recursion."""
    found: list[tuple[Any, Any, str]] = []
    todo = [document]
    while todo:
        node = todo.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, str):
                found.append((node, key, value))
            elif isinstance(value, dict | list):
                todo.append(value)
    return found


def _size(document: Any) -> int:
    return len(json.dumps(document, ensure_ascii=False).encode("utf-8"))


def _cut(text: str, keep: int) -> str:
    return f"{text[:keep]}\n[cut by pytest-skilleval: {len(text)} characters, the first {keep} kept]"


def capped_trajectory(data: bytes, limit: int) -> Any:
    """The trajectory in `data` (its JSON), cut to fit in `limit` bytes when it does not, with the reason in
    `extra.skilleval_cut`; a document that cannot be kept is one that says so and has no steps."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return _not_kept(f"the trajectory file ({len(data)} bytes) is not JSON this plugin can read")
    if len(data) <= limit or not isinstance(document, dict):
        return document
    try:
        return _fitted(document, len(data), limit)
    except RecursionError:
        return _not_kept(f"the trajectory file ({len(data)} bytes) is nested too deep to cut")


def _fitted(document: dict[str, Any], size: int, limit: int) -> dict[str, Any]:
    room = limit - _NOTE_ROOM  # what the document may take before its note is added
    strings = _strings(document)
    keep = _LONGEST
    while True:
        for node, key, text in strings:
            if len(text) > keep:
                node[key] = _cut(text, keep)
        if _size(document) <= room or keep <= _SHORTEST:
            break
        keep //= 2
    steps = document.get("steps")
    dropped = 0
    while _size(document) > room and isinstance(steps, list) and steps:
        steps.pop()
        dropped += 1
    if _size(document) > room:
        return _not_kept(f"the trajectory ({size} bytes) does not fit in {limit} bytes even cut")
    why = (
        f"the trajectory was {size} bytes, over the trial file's limit of {limit} bytes: every text longer "
        f"than {keep} characters was cut to its first {keep}"
    )
    if dropped:
        why += f", and its last {dropped} step(s) were left out"
    extra = document.get("extra")
    document["extra"] = {**(extra if isinstance(extra, dict) else {}), CUT_KEY: why}
    return document


def _not_kept(why: str) -> dict[str, Any]:
    return {"steps": [], "extra": {CUT_KEY: why}}


def too_large_to_read(size: int) -> dict[str, Any]:
    """What a trial file keeps of a trajectory file past MAX_TRAJECTORY_READ_BYTES: nothing but the reason."""
    return _not_kept(f"the trajectory file is {size} bytes, over the read limit of {MAX_TRAJECTORY_READ_BYTES}")
