"""The one place the pytest shell reaches into pytest's and pytest-xdist's private modules (`_pytest.*`,
`xdist.<submodule>`); everything else uses their public API. When a release moves one of these, this module is
the only edit, and each helper here degrades to "not available" rather than failing the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

_coerce_node_id: Callable[[str], Any] | None
try:
    from _pytest.nodeid import coerce_node_id as _coerce_node_id
except ImportError:  # pytest before 9.2: node ids are plain strings
    _coerce_node_id = None


def structured_node_id(nodeid: str) -> Any | None:
    """pytest 9.2's parsed form of a node id (path, names, params); None before structured node ids."""
    return _coerce_node_id(nodeid) if _coerce_node_id is not None else None


def junit_xml(config: pytest.Config) -> Any | None:
    """The junitxml plugin's report object, to add testsuite properties to; None when no JUnit report is asked for."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        return None
    return config.stash.get(xml_key, None)
