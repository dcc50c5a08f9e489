"""Parsing author files (datasets, config.yml) with limits a real file never meets: the limits, JSON, and what a
YAML loader shares with it (its YAML side is `bounded_yaml`, imported only when a YAML file is read).

A YAML alias bomb is a few hundred bytes that expand to billions of nodes once something walks the result; a
200,000-deep JSON array raises a raw `RecursionError`; a huge entry list costs gigabytes before the first trial. So
nesting depth and YAML's expanded size are bounded while parsing, and every refusal is a `ParseLimitError` whose
message names the limit, which the dataset and config loaders turn into their own located errors.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

MAX_DEPTH = 64
# Python's own limit on decimal digits in an int read from text (`sys.set_int_max_str_digits`); a longer integer
# raises a bare ValueError deep in the parser.
DEFAULT_INT_DIGITS = 4300
# After expanding aliases; every key, value and list item counts. 10,000 entries with a dozen fields fit.
MAX_YAML_NODES = 250_000


class ParseLimitError(ValueError):
    """Input refused for its size or shape (not a syntax error); `line` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.message = message
        self.line = line
        super().__init__(message + (f" (at line {line})" if line is not None else ""))


def max_int_digits() -> int:
    """The digits an integer may have: Python's current limit (0, no limit, counts as the default)."""
    return sys.get_int_max_str_digits() or DEFAULT_INT_DIGITS


class LongInteger:
    """Stands where an integer too long to convert was, so the refusal can name the field it sits in."""

    def __init__(self, digits: int, line: int | None = None) -> None:
        self.digits = digits
        self.line = line


def _field_path(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))


def refuse_long_integers(data: Any) -> None:
    """Raise ParseLimitError naming the first field (`evals[0].max_turns`) that holds a too-long integer."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, LongInteger):
            raise ParseLimitError(
                f"field '{path or '(top level)'}' is an integer of {value.digits:,} digits; the limit is "
                f"{max_int_digits():,} digits (write a smaller number, or a string)",
                value.line,
            )
        if isinstance(value, dict):
            items = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            continue
        stack.extend((child, _field_path(path, key)) for key, child in reversed(items))


def nesting_depth_exceeds(data: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists/dicts nest deeper than `limit` (iterative, so any depth is safe to ask about)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def load_json(text: str) -> Any:
    """JSON with bounded nesting and integers Python can convert; raises json.JSONDecodeError or ParseLimitError."""
    long_integers = False

    def parse_int(digits: str) -> Any:
        nonlocal long_integers
        if len(digits) - digits.startswith("-") > max_int_digits():
            long_integers = True
            return LongInteger(len(digits.lstrip("-")))
        return int(digits)

    try:
        data = json.loads(text, parse_int=parse_int)
    except RecursionError:
        raise ParseLimitError(f"nested deeper than {MAX_DEPTH} levels") from None
    if nesting_depth_exceeds(data):
        raise ParseLimitError(f"nested deeper than {MAX_DEPTH} levels")
    if long_integers:
        refuse_long_integers(data)
    return data


def read_author_file(path: Path, limit: int) -> bytes:
    """An author file's bytes (a dataset, trigger set or config.yml), read without following a link and never past
    `limit`; raises ParseLimitError saying what is wrong: a link (`evals.json -> /etc/passwd` was read, and a link
    into /proc passed the size check with its size of 0), a FIFO or device (never opened long enough to block), or
    a file over the limit."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise ParseLimitError(
            f"is a symbolic link to {os.readlink(path)}; links in a skill are never followed: copy the file here "
            "in its place"
        )
    if not stat.S_ISREG(info.st_mode):
        raise ParseLimitError("is not a regular file (a folder, FIFO, socket or device); make it an ordinary file")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ParseLimitError("is not a regular file (it was replaced while being read)")
        parts: list[bytes] = []
        left = limit + 1  # one byte past the limit tells a file over it; its stated size is only the first guess
        while left > 0 and (part := handle.read(min(left, max(info.st_size + 1, 1 << 16)))):
            parts.append(part)
            left -= len(part)
        data = b"".join(parts)
    if len(data) > limit:
        raise ParseLimitError(f"is larger than {limit:,} bytes")
    return data
