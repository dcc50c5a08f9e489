"""The layout's rules, checked on the source: no import cycles (deferred imports included) and the boundaries
docs/architecture.md states (the verifier engine and the results pipeline stay free of pytest and Harbor's runtime)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("pytest_skilleval", "verifier")
HARBOR_DATA_MODELS = "harbor.models"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for package in PACKAGES for p in (REPO / package).rglob("*.py")}


def _imports(path: Path, name: str) -> set[str]:
    """Every module an import statement anywhere in the file names (function bodies and TYPE_CHECKING too)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


MODULES = _modules()
GRAPH = {
    name: {target for target in _imports(path, name) if target in MODULES and target != name}
    for name, path in MODULES.items()
}
ALL_IMPORTS = {name: _imports(path, name) for name, path in MODULES.items()}


def _cycle() -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(GRAPH[node]):
            if state.get(target) == 1:
                return stack[stack.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(GRAPH):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_graph_sees_deferred_imports() -> None:
    """collect.py imports the runner inside functions only; the walker must still see that edge."""
    assert "pytest_skilleval.harbor.runner" in GRAPH["pytest_skilleval.collect"]


def test_no_import_cycles() -> None:
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _offending(prefix: str, rule) -> list[str]:
    return sorted(
        f"{name} imports {target}"
        for name, targets in ALL_IMPORTS.items()
        if name == prefix or name.startswith(prefix + ".")
        for target in targets
        if rule(target)
    )


def _is_pytest(target: str) -> bool:
    return target in ("pytest", "_pytest") or target.startswith(("pytest.", "_pytest.", "xdist"))


def _is_harbor(target: str) -> bool:
    return target == "harbor" or target.startswith("harbor.")


def test_verifier_is_a_standalone_engine() -> None:
    assert _offending("verifier", lambda t: t.startswith("pytest_skilleval")) == []
    assert _offending("verifier", _is_pytest) == []
    runtime = lambda t: _is_harbor(t) and not t.startswith(HARBOR_DATA_MODELS)  # noqa: E731
    assert _offending("verifier", runtime) == []


@pytest.mark.parametrize("package", ["pytest_skilleval.results"])
def test_results_import_neither_pytest_nor_harbor(package: str) -> None:
    assert _offending(package, _is_pytest) == []
    assert _offending(package, _is_harbor) == []
    # nor through another part of ours that might (the package root holds only its version)
    ours = lambda t: t.startswith("pytest_skilleval.") and not t.startswith(package)  # noqa: E731
    assert _offending(package, lambda t: ours(t) and t != "pytest_skilleval.__version__") == []


LAYERS = [
    "pytest_skilleval.testing",
    "verifier",
    "pytest_skilleval.results",
    "pytest_skilleval.skill",
    "pytest_skilleval.harbor",
    "pytest_skilleval.authoring",
]


def _layer(name: str) -> int | None:
    for index, prefix in enumerate(LAYERS):
        if name == prefix or name.startswith(prefix + "."):
            return index
    return None


def test_imports_point_down_the_layers() -> None:
    """testing, verifier <- results <- skill <- harbor <- authoring <- the pytest-facing modules: never upwards."""
    upward = sorted(
        f"{name} -> {target}"
        for name, targets in GRAPH.items()
        for target in targets
        if _layer(name) is not None
        and (_layer(target) is None or _layer(target) > _layer(name))
        and target not in ("pytest_skilleval",)
    )
    assert upward == []


def test_no_module_is_oversized() -> None:
    exempt = {"verifier.checks.shell.parser", "verifier.checks.shell.walker"}
    big = {name: len(path.read_text().splitlines()) for name, path in MODULES.items() if name not in exempt}
    assert {name: n for name, n in big.items() if n > 600 and name.startswith("pytest_skilleval")} == {}


def test_every_subpackage_says_what_it_owns() -> None:
    for init in (REPO / "pytest_skilleval").glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.splitlines()) == 1, f"{init} needs a one-line docstring"
