"""The layout's rules, checked on the source: the ones docs/architecture.md lists under "What the architecture test
checks". Each rule is a function of the parsed modules (and the doc), so the same function is run on the repository
and on a small planted tree that breaks it: a rule that stops reporting anything fails here too."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("pytest_skilleval", "verifier")
DOC = REPO / "docs" / "architecture.md"
MAX_LINES = 600
# Over MAX_LINES on purpose, each one job: the shell parser and walker follow bash's grammar case by case; the keeper runs as one standalone file
# (`python -I -S keeper.py`, standard library only: the sandbox sees nothing of our package), so it cannot be split.
SIZE_EXEMPT = frozenset(
    {"verifier.checks.shell.parser", "verifier.checks.shell.walker", "pytest_skilleval.harbor.sandbox.keeper"}
)
HARBOR_DATA_MODELS = "harbor.models"
LAYERS = [
    "pytest_skilleval.testing",
    "verifier",
    "pytest_skilleval.results",
    "pytest_skilleval.skill",
    "pytest_skilleval.harbor",
    "pytest_skilleval.authoring",
]
PYTEST_FIXTURE_MODULE = "pytest_skilleval.testing.fixtures"
# Where each family's private parts may be imported (harbor/ cannot import the shell, so Harbor's has its own).
COMPAT = {
    "pytest": "pytest_skilleval.compat",
    "xdist": "pytest_skilleval.compat",
    "harbor": "pytest_skilleval.harbor.compat",
}


@dataclass(frozen=True)
class Import:
    module: str
    name: str | None = None  # `from module import name`


@dataclass(frozen=True)
class Module:
    name: str
    path: str  # relative to the repository, POSIX
    imports: tuple[Import, ...]
    lines: int

    @property
    def targets(self) -> set[str]:
        """Every dotted name an import names: the module, and module.name for `from` imports."""
        return {i.module for i in self.imports} | {f"{i.module}.{i.name}" for i in self.imports if i.name}


def _module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(source: str, name: str, is_package: bool) -> tuple[Import, ...]:
    """Every import statement anywhere in the file (function bodies and TYPE_CHECKING too), relative ones resolved."""
    found: list[Import] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            found += [Import(module, alias.name) for alias in node.names]
    return tuple(found)


def load_modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Module]:
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            name = _module_name(rel)
            text = path.read_text(encoding="utf-8")
            imports = _imports(text, name, path.name == "__init__.py")
            modules[name] = Module(name, rel.as_posix(), imports, len(text.splitlines()))
    return modules


def internal_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    return {
        name: {target for target in module.targets if target in modules and target != name}
        for name, module in modules.items()
    }


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _offending(modules: dict[str, Module], prefix: str, rule: Callable[[str], bool]) -> list[str]:
    return sorted(
        f"{name} imports {target}"
        for name, module in modules.items()
        if _within(name, prefix)
        for target in module.targets
        if rule(target)
    )


def _is_pytest(target: str) -> bool:
    return any(_within(target, root) for root in ("pytest", "_pytest", "xdist"))


def _is_harbor(target: str) -> bool:
    return _within(target, "harbor")


# ---- the rules: each returns what breaks it, one line each (empty when the rule holds) ----------------------------


def import_cycle(modules: dict[str, Module]) -> list[str]:
    graph = internal_graph(modules)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return stack[stack.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return ["import cycle: " + " -> ".join(found)]
    return []


def _layer(name: str) -> int | None:
    return next((index for index, prefix in enumerate(LAYERS) if _within(name, prefix)), None)


def upward_imports(modules: dict[str, Module]) -> list[str]:
    """testing, verifier <- results <- skill <- harbor <- authoring <- the pytest-facing modules: never upwards."""
    return sorted(
        f"{name} -> {target}"
        for name, targets in internal_graph(modules).items()
        for target in targets
        if (layer := _layer(name)) is not None
        and ((target_layer := _layer(target)) is None or target_layer > layer)
        and target != "pytest_skilleval"
    )


def verifier_boundary(modules: dict[str, Module]) -> list[str]:
    """The grading engine stands alone: nothing of ours, and of Harbor only its data models."""
    return _offending(modules, "verifier", lambda t: _within(t, "pytest_skilleval")) + _offending(
        modules, "verifier", lambda t: _is_harbor(t) and not _within(t, HARBOR_DATA_MODELS)
    )


def results_boundary(modules: dict[str, Module]) -> list[str]:
    """results/ reads records and writes files: no Harbor, and nothing of ours outside it but the version."""
    package = "pytest_skilleval.results"
    ours = lambda t: _within(t, "pytest_skilleval") and not _within(t, package)  # noqa: E731
    return _offending(modules, package, _is_harbor) + _offending(
        modules, package, lambda t: ours(t) and t not in ("pytest_skilleval", "pytest_skilleval.__version__")
    )


def _is_shell(name: str) -> bool:
    return name == "pytest_skilleval" or (name.startswith("pytest_skilleval.") and name.count(".") == 1)


def pytest_outside_shell(modules: dict[str, Module]) -> list[str]:
    """pytest (and _pytest, xdist) only in the shell and the test kit's fixture module."""
    return sorted(
        f"{name} imports {target}"
        for name, module in modules.items()
        if not _is_shell(name) and name != PYTEST_FIXTURE_MODULE
        for target in {i.module for i in module.imports}
        if _is_pytest(target)
    )


def _private(component: str) -> bool:
    return component.startswith("_") and not component.startswith("__")


def private_family(item: Import) -> str | None:
    """The family ("pytest", "xdist", "harbor") whose private part this import reaches, or None.

    Private: any `_pytest` module; any xdist submodule (its public API is the top-level package); any module or
    name of pytest or Harbor with a component that starts with one underscore."""
    root = item.module.split(".")[0]
    parts = [*item.module.split("."), *([item.name] if item.name else [])]
    if root == "_pytest":
        return "pytest"
    if root == "xdist":
        return "xdist" if "." in item.module or _private(item.name or "") else None
    if root in ("pytest", "harbor") and any(_private(part) for part in parts):
        return root
    return None


def private_imports_outside_compat(modules: dict[str, Module]) -> list[str]:
    return sorted(
        f"{name} imports {item.module}{'.' + item.name if item.name else ''} (private {family}: use {COMPAT[family]})"
        for name, module in modules.items()
        for item in module.imports
        if (family := private_family(item)) is not None and COMPAT[family] != name
    )


def unnamed_modules(modules: dict[str, Module], doc: str) -> list[str]:
    """Each module's path in backticks in the doc; a package by its folder (`pytest_skilleval/harbor/`)."""
    missing = []
    for module in modules.values():
        path = module.path[: -len("__init__.py")] if module.path.endswith("/__init__.py") else module.path
        if f"`{path}`" not in doc:
            missing.append(f"{path} is not named in docs/architecture.md")
    return sorted(missing)


def oversized(modules: dict[str, Module], limit: int, exempt: frozenset[str]) -> list[str]:
    """Modules over the limit, and exemptions that no longer exempt anything (the list stays true)."""
    found = [
        f"{name}: {module.lines} lines (limit {limit})"
        for name, module in modules.items()
        if module.lines > limit and name not in exempt
    ]
    for name in exempt:
        if name not in modules:
            found.append(f"exempt {name}: no such module; remove it from the exemption list")
        elif modules[name].lines <= limit:
            found.append(f"exempt {name}: {modules[name].lines} lines, under the limit; remove it from the list")
    return sorted(found)


# ---- the repository keeps them ----------------------------------------------------------------------------------

MODULES = load_modules(REPO)


def test_the_graph_sees_deferred_imports() -> None:
    """collect.py imports the runner inside functions only; the walker must still see that edge."""
    assert "pytest_skilleval.harbor.runner" in internal_graph(MODULES)["pytest_skilleval.collect"]


@pytest.mark.parametrize(
    "rule",
    [
        import_cycle,
        upward_imports,
        verifier_boundary,
        results_boundary,
        pytest_outside_shell,
        private_imports_outside_compat,
    ],
)
def test_the_repository_keeps_the_rule(rule: Callable[[dict[str, Module]], list[str]]) -> None:
    assert rule(MODULES) == []


def test_every_module_is_named_in_the_doc() -> None:
    assert unnamed_modules(MODULES, DOC.read_text(encoding="utf-8")) == []


def test_no_module_is_oversized_and_every_exemption_is_needed() -> None:
    assert oversized(MODULES, MAX_LINES, SIZE_EXEMPT) == []


def test_every_subpackage_says_what_it_owns() -> None:
    for init in (REPO / "pytest_skilleval").glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.splitlines()) == 1, f"{init} needs a one-line docstring"


# ---- each rule reports a planted violation ----------------------------------------------------------------------


def _plant(root: Path, files: dict[str, str]) -> dict[str, Module]:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return load_modules(root)


PLANTED_BASE = {
    "pytest_skilleval/__init__.py": "",
    "pytest_skilleval/compat.py": "from _pytest.nodeid import coerce_node_id\n",
    "pytest_skilleval/plugin.py": "import pytest\nfrom xdist import is_xdist_worker\n",
    "pytest_skilleval/results/__init__.py": "",
    "pytest_skilleval/skill/__init__.py": "",
    "pytest_skilleval/harbor/__init__.py": "",
    "pytest_skilleval/harbor/compat.py": "from harbor.environments.factory import _load_environment_class\n",
    "pytest_skilleval/testing/__init__.py": "",
    "pytest_skilleval/testing/fixtures.py": "import pytest\n",
    "verifier/__init__.py": "",
}


def test_a_planted_cycle_is_reported(tmp_path: Path) -> None:
    modules = _plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "pytest_skilleval/skill/a.py": "def f():\n    from pytest_skilleval.skill import b\n",
            "pytest_skilleval/skill/b.py": "from pytest_skilleval.skill.a import f\n",
        },
    )
    assert import_cycle(modules) == [
        "import cycle: pytest_skilleval.skill.a -> pytest_skilleval.skill.b -> pytest_skilleval.skill.a"
    ]


def test_a_planted_upward_import_is_reported(tmp_path: Path) -> None:
    modules = _plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "pytest_skilleval/harbor/runner.py": "",
            "pytest_skilleval/results/tree.py": "from pytest_skilleval.harbor.runner import x\n",
        },
    )
    assert upward_imports(modules) == ["pytest_skilleval.results.tree -> pytest_skilleval.harbor.runner"]
    assert results_boundary(modules) == [
        "pytest_skilleval.results.tree imports pytest_skilleval.harbor.runner",
        "pytest_skilleval.results.tree imports pytest_skilleval.harbor.runner.x",
    ]


def test_a_planted_runtime_import_in_the_verifier_is_reported(tmp_path: Path) -> None:
    modules = _plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "verifier/grade.py": "from harbor.models.task.config import TaskConfig\nimport harbor.trial\n",
        },
    )
    assert verifier_boundary(modules) == ["verifier.grade imports harbor.trial"]


def test_a_planted_pytest_import_below_the_shell_is_reported(tmp_path: Path) -> None:
    modules = _plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "pytest_skilleval/skill/folder.py": "def f():\n    import pytest\n",
            "pytest_skilleval/harbor/runner.py": "from _pytest.outcomes import fail\n",
            "pytest_skilleval/testing/http.py": "from pytest import UsageError\n",
            "verifier/grade.py": "import xdist\n",
        },
    )
    assert pytest_outside_shell(modules) == [
        "pytest_skilleval.harbor.runner imports _pytest.outcomes",
        "pytest_skilleval.skill.folder imports pytest",
        "pytest_skilleval.testing.http imports pytest",
        "verifier.grade imports xdist",
    ]


def test_a_planted_private_import_outside_compat_is_reported(tmp_path: Path) -> None:
    modules = _plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "pytest_skilleval/collect.py": "from _pytest.nodeid import coerce_node_id\n",
            "pytest_skilleval/dispatch.py": "from xdist.dsession import DSession\nimport xdist\n",
            "pytest_skilleval/harbor/environments.py": (
                "from harbor.environments.factory import _load_environment_class\n"
                "from harbor.models.trial.config import TrialConfig\n"
            ),
            "pytest_skilleval/harbor/docker_cleanup.py": "import harbor._internal.names\n",
        },
    )
    assert private_imports_outside_compat(modules) == [
        "pytest_skilleval.collect imports _pytest.nodeid.coerce_node_id (private pytest: use pytest_skilleval.compat)",
        "pytest_skilleval.dispatch imports xdist.dsession.DSession (private xdist: use pytest_skilleval.compat)",
        "pytest_skilleval.harbor.docker_cleanup imports harbor._internal.names "
        "(private harbor: use pytest_skilleval.harbor.compat)",
        "pytest_skilleval.harbor.environments imports harbor.environments.factory._load_environment_class "
        "(private harbor: use pytest_skilleval.harbor.compat)",
    ]


def test_a_planted_unnamed_module_is_reported(tmp_path: Path) -> None:
    modules = _plant(tmp_path, {**PLANTED_BASE, "verifier/scoring.py": ""})
    named = "".join(
        f"`{m.path.removesuffix('__init__.py')}`\n" for m in modules.values() if m.name != "verifier.scoring"
    )
    assert unnamed_modules(modules, named) == ["verifier/scoring.py is not named in docs/architecture.md"]
    assert unnamed_modules(modules, named.replace("`verifier/`", "")) == [
        "verifier/ is not named in docs/architecture.md",
        "verifier/scoring.py is not named in docs/architecture.md",
    ]


def test_a_planted_oversized_module_and_a_dead_exemption_are_reported(tmp_path: Path) -> None:
    modules = _plant(
        tmp_path,
        {
            **PLANTED_BASE,
            "verifier/safe_io.py": "x = 1\n" * (MAX_LINES + 1),
            "verifier/checks/__init__.py": "",
            "verifier/checks/shell/__init__.py": "",
            "verifier/checks/shell/parser.py": "x = 1\n" * 10,
        },
    )
    exempt = frozenset({"verifier.checks.shell.parser", "verifier.checks.shell.walker"})
    assert oversized(modules, MAX_LINES, exempt) == [
        "exempt verifier.checks.shell.parser: 10 lines, under the limit; remove it from the list",
        "exempt verifier.checks.shell.walker: no such module; remove it from the exemption list",
        "verifier.safe_io: 601 lines (limit 600)",
    ]
