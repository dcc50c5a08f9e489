"""Parsing author files (datasets, config.yml) with limits a real file never meets, and YAML errors located well.

A YAML alias bomb is a few hundred bytes that expand to billions of nodes once something walks the result; a
200,000-deep JSON array raises a raw `RecursionError`; a huge entry list costs gigabytes before the first trial. So
nesting depth and YAML's expanded size are bounded while parsing, and every refusal is a `ParseLimitError` whose
message names the limit, which the dataset and config loaders turn into their own located errors.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.resolver import Resolver

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


def _mark_line(mark: Any) -> int | None:
    return mark.line + 1 if mark is not None else None


def max_int_digits() -> int:
    """The digits an integer may have: Python's current limit (0, no limit, counts as the default)."""
    return sys.get_int_max_str_digits() or DEFAULT_INT_DIGITS


class _LongInteger:
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
        if isinstance(value, _LongInteger):
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


try:
    from yaml._yaml import CParser
except ImportError:  # pragma: no cover - PyYAML wheels ship LibYAML
    CParser = None  # type: ignore[assignment,misc]

if CParser is not None:

    class _EventLoader(CParser, Composer, SafeConstructor, Resolver):
        """LibYAML scans and parses (several times faster); the Python composer below builds the nodes, so its
        limits apply (CParser would compose in C, out of reach)."""

        def __init__(self, stream: Any) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        check_node = Composer.check_node
        get_node = Composer.get_node
        get_single_node = Composer.get_single_node

else:  # pragma: no cover
    _EventLoader = yaml.SafeLoader  # type: ignore[misc,assignment]


class BoundedSafeLoader(_EventLoader):
    """SafeLoader that refuses nesting deeper than MAX_DEPTH and documents that expand beyond MAX_YAML_NODES.

    The expanded size is counted while composing: every node counts one, and every alias counts the expanded size
    of the node it repeats (known by then, since an anchor's node is complete before it can be referenced; an alias
    to a node still being composed is a recursive structure and is refused). Nothing is ever expanded.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._expanded = 0
        self._sizes: dict[int, int] = {}
        self.long_integers = False

    def construct_long_safe_int(self, node: Any) -> Any:
        """An integer; one too long for Python to convert becomes a marker `refuse_long_integers` names."""
        digits = sum(char.isdigit() for char in str(node.value))
        if digits > max_int_digits():
            self.long_integers = True
            return _LongInteger(digits, _mark_line(node.start_mark))
        return self.construct_yaml_int(node)

    def _count(self, amount: int, mark: Any) -> None:
        self._expanded += amount
        if self._expanded > MAX_YAML_NODES:
            raise ParseLimitError(
                f"the YAML has more than {MAX_YAML_NODES:,} nodes (keys, values and list items, with every "
                "alias expanded)",
                _mark_line(mark),
            )

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None:
                size = self._sizes.get(id(target))
                if size is None:
                    raise ParseLimitError(
                        f"alias *{event.anchor} refers to the node that contains it (a recursive structure)",
                        _mark_line(event.start_mark),
                    )
                self._count(size, event.start_mark)
            return super().compose_node(parent, index)
        container = isinstance(event, (SequenceStartEvent, MappingStartEvent))
        start = event.start_mark if event is not None else None
        if container:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise ParseLimitError(f"nested deeper than {MAX_DEPTH} levels", _mark_line(start))
        before = self._expanded
        self._count(1, start)
        try:
            node = super().compose_node(parent, index)
        finally:
            if container:
                self._depth -= 1
        self._sizes[id(node)] = self._expanded - before
        return node


# What `add_constructor` does (a copy of the inherited table with one entry replaced), without its Loader-only typing.
BoundedSafeLoader.yaml_constructors = {
    **BoundedSafeLoader.yaml_constructors,
    "tag:yaml.org,2002:int": BoundedSafeLoader.construct_long_safe_int,
}


def yaml_error_message(error: yaml.YAMLError) -> str:
    """`invalid YAML at line L column C: what`, where L is the line the problem starts on.

    An unterminated quoted scalar is reported where the quote opens (its context mark), not at the end of the file
    where the scanner gave up; every other error at its problem mark, the offending token (a context mark there is
    merely the start of the enclosing block or scalar).
    """
    if not isinstance(error, yaml.MarkedYAMLError):
        return f"invalid YAML: {error}"
    context_mark, problem_mark = error.context_mark, error.problem_mark
    use_context = context_mark is not None and "quoted scalar" in (error.context or "")
    starts_at = context_mark if use_context else problem_mark
    where = f" at line {starts_at.line + 1} column {starts_at.column + 1}" if starts_at is not None else ""
    what = ", ".join(part for part in (error.context, error.problem) if part) or "not valid YAML"
    if use_context and context_mark is not None and problem_mark is not None and problem_mark.line != context_mark.line:
        what += f" (noticed at line {problem_mark.line + 1})"
    return f"invalid YAML{where}: {what}"


def load_yaml(text: str, loader: type[BoundedSafeLoader] = BoundedSafeLoader) -> Any:
    """One YAML document through a bounded loader; raises yaml.YAMLError or ParseLimitError."""
    instance = loader(text)
    try:
        data = instance.get_single_data()
        if instance.long_integers:
            refuse_long_integers(data)
        return data
    except yaml.MarkedYAMLError as error:
        if "maximum nesting depth" in (error.problem or ""):  # LibYAML's own guard, further ahead than ours
            raise ParseLimitError(f"nested deeper than {MAX_DEPTH} levels", _mark_line(error.problem_mark)) from None
        raise
    finally:
        instance.dispose()


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
            return _LongInteger(len(digits.lstrip("-")))
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
