"""YAML author files (a dataset, config.yml, a check's file) read within `bounded_parse`'s limits, with errors
located where the problem starts.

Apart from `bounded_parse` so that reading a JSON dataset, a plain `pytest --co` included, never imports PyYAML.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.resolver import Resolver

from pytest_skilleval.skill.bounded_parse import (
    MAX_DEPTH,
    MAX_YAML_NODES,
    LongInteger,
    ParseLimitError,
    max_int_digits,
    refuse_long_integers,
)


def _mark_line(mark: Any) -> int | None:
    return mark.line + 1 if mark is not None else None


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
            return LongInteger(digits, _mark_line(node.start_mark))
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


class UniqueKeyLoader(BoundedSafeLoader):
    """PyYAML keeps the last of two equal keys; a duplicated key in a config is a mistake, so refuse it."""


def _construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


# The stubs bound the loader to PyYAML's own classes; ours composes LibYAML's parser with SafeConstructor.
UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)  # type: ignore[type-var]
