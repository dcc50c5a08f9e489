"""Durations in a native task.toml (every `*_sec`): finite and positive, checked when the task is read.

Harbor accepts `timeout_sec = -5`, `0` or `nan`; the trial then times out at once (a 0.0 score that looks like the
agent's fault) or fails late in setup. Refusing them at collection names the field instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

# Durations where zero is meaningful (no grace period); every other `*_sec` must be greater than zero.
_ZERO_ALLOWED = frozenset({"start_period_sec"})


def _durations(model: BaseModel, prefix: str) -> Iterator[tuple[str, str, Any]]:
    """(dotted field, field name, value) for every `*_sec` value set in the model tree."""
    for name in type(model).model_fields:
        value = getattr(model, name, None)
        if name.endswith("_sec") and value is not None:
            yield f"{prefix}{name}", name, value
        elif isinstance(value, BaseModel):
            yield from _durations(value, f"{prefix}{name}.")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, BaseModel):
                    label = getattr(item, "name", None)
                    where = f"{name}[{index}]" + (f" ('{label}')" if isinstance(label, str) else "")
                    yield from _durations(item, f"{prefix}{where}.")


def duration_problems(config: BaseModel) -> list[str]:
    """`field: what is wrong` for every duration that is not a finite number above zero (or zero where allowed)."""
    problems: list[str] = []
    for field, name, value in _durations(config, ""):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # Harbor's own model has already refused non-numbers
        floor = "0 or more" if name in _ZERO_ALLOWED else "greater than 0"
        if not math.isfinite(value):
            problems.append(f"{field}: must be a finite number of seconds {floor} (got {value})")
        elif value < 0 or (value == 0 and name not in _ZERO_ALLOWED):
            problems.append(f"{field}: must be a number of seconds {floor} (got {value:g})")
    return problems
