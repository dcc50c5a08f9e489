"""pytest-skilleval: agent-skill evals as pytest items, run through Harbor.

PYTEST_DONT_REWRITE: a `pytest --skill-eval` process imports this package while it starts (startup.py), before
pytest's assertion rewriting would mark it; the marker keeps pytest from warning that it came too late.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def _version() -> str:
    """The installed distribution's version: pyproject.toml's `version` is the one place it is written."""
    from importlib import metadata

    try:
        return metadata.version("pytest-skilleval")
    except metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    """`__version__` is looked up when first asked for, not on every import of the plugin."""
    if name == "__version__":
        return _version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
