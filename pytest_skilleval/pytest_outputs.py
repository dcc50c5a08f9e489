"""What pytest itself and its report plugins write during this session (a JUnit file, a log file, its cache...):
paths a skill's copy for the agent and its digest leave out when they lie inside the skill folder, so a
`--junitxml` or a cache written into the skill never reaches the agent nor reads as a change of the skill."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Options naming a file or folder pytest or a report plugin writes, by their `dest`: pytest's JUnit XML, debug trace
# and base temporary folder (its log file, `--log-file` or the ini key, below); pytest-reportlog's, pytest-html's and pytest-json-report's reports. An
# option no plugin declared reads as not given.
_OUTPUT_OPTIONS = ("xmlpath", "debug", "basetemp", "report_log", "htmlpath")


def pytest_outputs(config: pytest.Config) -> tuple[Path, ...]:
    """Every output path this session's pytest writes (real paths, relative ones from where pytest started), the
    cache folder from `cache_dir` as pytest resolves it (from the rootdir)."""
    start = config.invocation_params.dir
    named: list[tuple[str, Path]] = []
    for dest in _OUTPUT_OPTIONS:
        named.append((_text(config.getoption(dest, default=None)), start))
    named.append((_text(config.getoption("log_file", default=None)) or _ini(config, "log_file"), start))
    if config.getoption("json_report", default=None):
        named.append((_text(config.getoption("json_report_file", default=None)), start))
    if config.pluginmanager.has_plugin("cacheprovider"):
        named.append((_ini(config, "cache_dir"), config.rootpath))
    paths = (_real(text, base) for text, base in named if text)
    return tuple(dict.fromkeys(paths))


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _ini(config: pytest.Config, name: str) -> str:
    try:
        return _text(config.getini(name))
    except ValueError:  # the plugin declaring it is not loaded
        return ""


def _real(text: str, base: Path) -> Path:
    path = Path(os.path.expanduser(os.path.expandvars(text)))
    return Path(os.path.realpath(path if path.is_absolute() else base / path))
