"""The version is written once, in pyproject.toml; the package and result.json report the installed one."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest_skilleval
from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.models import RunPlan

REPO = Path(__file__).resolve().parents[2]


def test_the_package_reports_pyprojects_version() -> None:
    written = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert pytest_skilleval.__version__ == metadata.version("pytest-skilleval") == written


def test_no_module_writes_a_version_of_its_own() -> None:
    written = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    found = [
        str(path.relative_to(REPO))
        for package in ("pytest_skilleval", "verifier")
        for path in (REPO / package).rglob("*.py")
        if f'"{written}"' in path.read_text(encoding="utf-8")
    ]
    assert found == []


def test_result_json_names_the_installed_version() -> None:
    plan = RunPlan(skill="demo", cases=[], agents=[], arms=["with_skill"], n_attempts=1)
    assert aggregate([], plan).evaluator_version == pytest_skilleval.__version__
