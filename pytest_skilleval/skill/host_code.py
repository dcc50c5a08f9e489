"""What of a skill folder pytest itself would run on the host: its `conftest.py` files and a pytest config file.

A skill is untrusted input (docs/security.md): pytest imports the `conftest.py` of every folder it enters and
applies the config file it chooses (its `addopts`, `pythonpath`, plugins and `skilleval_*` keys). This module only
finds them; the pytest side refuses the run.
"""

from __future__ import annotations

import configparser
import os
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

CONFTEST = "conftest.py"
# The names pytest looks for in each folder, in its order.
PYTEST_CONFIG_NAMES = (
    "pytest.toml",
    ".pytest.toml",
    "pytest.ini",
    ".pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
)
INI_SECTIONS = {"tox.ini": "pytest", "setup.cfg": "tool:pytest"}
REFUSED = "a run refuses it unless given --trust-skill-code"
CONFIG_APPLIES = (
    "pytest applies this config file (addopts, pythonpath, plugins, skilleval_* keys) when the command-line path is "
    "the skill folder; a run then refuses it unless given --trust-skill-code"
)
# A config file bigger than this is taken to configure pytest without being read.
MAX_CONFIG_BYTES = 1 << 20


def enclosing_skill(path: Path) -> Path | None:
    """The skill folder `path` is or lies in: the nearest folder, itself included, holding SKILL.md and evals/."""
    for folder in [path, *path.parents] if path.is_dir() else list(path.parents):
        if (folder / "SKILL.md").is_file() and (folder / "evals").is_dir():
            return folder
    return None


def skills_reached(paths: Iterable[Path]) -> list[Path]:
    """Every skill folder a run over `paths` enters: the one each path lies in, else the skills below it."""
    # Imported here: the rest of this module is read at interpreter start-up (pytest_skilleval/startup.py), where
    # the dataset models are not needed.
    from pytest_skilleval.skill.folder import skill_roots_under

    found: dict[Path, None] = {}
    for path in paths:
        path = path.resolve()
        inside = enclosing_skill(path)
        for root in [inside] if inside is not None else skill_roots_under(path):
            found.setdefault(root, None)
    return list(found)


def conftest_files(skill: Path) -> list[Path]:
    """Every `conftest.py` in the skill folder: anywhere below it (a command-line path can point into any folder,
    and pytest imports the conftest of each folder on the way), plus the folders collection enters, through a link
    too (a linked evals/harbor/<case>)."""
    found: dict[Path, None] = {}
    for current, dirs, files in os.walk(skill):
        dirs.sort()
        for name in sorted(files):
            if name == CONFTEST:
                found.setdefault(Path(current, name), None)
    harbor = skill / "evals" / "harbor"
    entered = [skill, skill / "evals", harbor, *(sorted(harbor.iterdir()) if harbor.is_dir() else [])]
    for folder in entered:
        if (folder / CONFTEST).exists() or (folder / CONFTEST).is_symlink():
            found.setdefault(folder / CONFTEST, None)
    return list(found)


def configures_pytest(config_file: Path) -> bool:
    """Whether a config file sets anything for pytest: a pyproject.toml needs a `[tool.pytest...]` table (without
    one it only marks the root folder), a tox.ini a `[pytest]` section, a setup.cfg a `[tool:pytest]` one; pytest
    takes a pytest.ini or pytest.toml even when empty. A file too big or unreadable counts as configuring."""
    section = INI_SECTIONS.get(config_file.name)
    if config_file.name != "pyproject.toml" and section is None:
        return True
    try:
        if config_file.stat().st_size > MAX_CONFIG_BYTES:
            return True
        text = config_file.read_text(encoding="utf-8")
        if section is not None:
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            parser.read_string(text)
            return parser.has_section(section)
        tool = tomllib.loads(text).get("tool")
    except (OSError, ValueError, configparser.Error):
        return True
    return isinstance(tool, dict) and "pytest" in tool


def pytest_config_files(skill: Path) -> list[Path]:
    """The pytest config files of the skill folder and its evals/ that set something: pytest chooses one of them
    when the command-line path is the skill folder or lies in it."""
    return [
        folder / name
        for folder in (skill, skill / "evals")
        for name in PYTEST_CONFIG_NAMES
        if (folder / name).is_file() and configures_pytest(folder / name)
    ]


Severity = Literal["error", "warning", "info"]


def skill_code_findings(skill: Path) -> list[tuple[str, Severity, str, Path]]:
    """(rule, severity, message, path) for `skilleval validate`: what a run refuses unless given --trust-skill-code
    (a conftest.py always; a config file when the command-line path is the skill folder or lies in it)."""
    conftests: list[tuple[str, Severity, str, Path]] = [
        ("skill-conftest", "error", "pytest would import this conftest.py on the host; " + REFUSED, path)
        for path in conftest_files(skill)
    ]
    configs: list[tuple[str, Severity, str, Path]] = [
        ("skill-pytest-config", "warning", CONFIG_APPLIES, path) for path in pytest_config_files(skill)
    ]
    return conftests + configs
