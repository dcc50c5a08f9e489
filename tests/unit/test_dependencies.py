"""Every third-party package the shipped code imports is declared in pyproject.toml's dependencies.

An undeclared import works here only because something else installed it (Harbor, say): a user whose resolver picks
other versions gets an ImportError. Imports inside `try: ... except ImportError` are optional by construction and
may stay undeclared; the shipped agent skills under `authoring/skills/` are package data, not our modules.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support import REPO

PACKAGES = ("pytest_skilleval", "verifier")
NOT_MODULES = REPO / "pytest_skilleval" / "authoring" / "skills"


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names)


def _required_imports(tree: ast.AST) -> Iterator[str]:
    """Top-level names of the absolute imports outside an ImportError guard."""
    optional: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            optional.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def imported_modules(roots: list[Path]) -> dict[str, list[str]]:
    """Third-party top-level module -> the files importing it (stdlib and our own packages left out)."""
    found: dict[str, list[str]] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.is_relative_to(NOT_MODULES):
                continue
            for module in _required_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if module not in sys.stdlib_module_names and module not in PACKAGES:
                    found.setdefault(module, []).append(str(path.relative_to(root.parent)))
    return found


def declared_distributions(pyproject: Path) -> set[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return {canonicalize_name(Requirement(line).name) for line in project["dependencies"]}


def undeclared(imports: dict[str, list[str]], declared: set[str]) -> list[str]:
    """One line per imported module no declared distribution provides, naming the files and what to declare."""
    providers = importlib.metadata.packages_distributions()
    problems = []
    for module, files in sorted(imports.items()):
        dists = sorted({canonicalize_name(d) for d in providers.get(module, [])})
        if not dists:
            problems.append(f"{module} (imported by {files[0]}) is not installed at all")
        elif not declared.intersection(dists):
            problems.append(f"{module} (imported by {files[0]}): add {' or '.join(dists)} to [project] dependencies")
    return problems


def test_every_imported_third_party_package_is_declared() -> None:
    imports = imported_modules([REPO / package for package in PACKAGES])
    assert {"pydantic", "harbor", "yaml"} <= imports.keys()  # the walk reaches the code
    assert undeclared(imports, declared_distributions(REPO / "pyproject.toml")) == []


def test_an_undeclared_import_is_named_and_an_optional_one_is_not(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "mod.py").write_text(
        "import json\n"
        "import yaml.constructor\n"
        "from pydantic import BaseModel\n"
        "from . import sibling\n"
        "try:\n"
        "    import jinja2\n"
        "except (ImportError, OSError):\n"
        "    jinja2 = None\n"
        "def later():\n"
        "    import toml\n"
    )
    imports = imported_modules([package])
    assert sorted(imports) == ["pydantic", "toml", "yaml"]
    problems = undeclared(imports, {"pydantic", "pyyaml"})
    assert problems == ["toml (imported by pkg/mod.py): add toml to [project] dependencies"]
