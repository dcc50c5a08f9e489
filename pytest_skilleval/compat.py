"""The one place the pytest shell reaches into pytest's and pytest-xdist's private modules (`_pytest.*`,
`xdist.<submodule>`); everything else uses their public API. When a release moves one of these, this module is
the only edit, and each helper here degrades to "not available" rather than failing the run.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
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


def chosen_config_file(args: list[str]) -> Path | None:
    """The config file pytest will choose for these arguments (PYTEST_ADDOPTS' first, as pytest orders them), found
    with pytest's own parser (its built-in options only, as at that point of its start-up) and its own search, before
    pytest itself reads the file. Raises pytest.UsageError for arguments pytest would reject."""
    import copy
    import inspect

    from _pytest.config import get_config
    from _pytest.config.findpaths import determine_setup

    config = get_config(list(args))
    namespace, unknown = config._parser.parse_known_and_unknown_args(list(args), namespace=copy.copy(config.option))
    common: dict[str, Any] = {
        "inifile": namespace.inifilename,
        "rootdir_cmd_arg": namespace.rootdir or None,
        "invocation_dir": config.invocation_params.dir,
    }
    if "override_ini" in inspect.signature(determine_setup).parameters:  # pytest 9: the paths given, as parsed
        found = determine_setup(override_ini=namespace.override_ini, args=namespace.file_or_dir, **common)
    else:  # pytest 8: unknown flags count as paths too
        found = determine_setup(args=namespace.file_or_dir + unknown, **common)
    inipath: Path | None = found[1]
    return inipath


def terminal_width(config: pytest.Config) -> int:
    """pytest's own terminal width (its terminal writer's, the one its separators use), so our lines line up with
    them."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    writer = getattr(reporter, "_tw", None)
    width = getattr(writer, "fullwidth", None)
    return width if isinstance(width, int) and width > 0 else shutil.get_terminal_size().columns
