"""The start-up check (`pytest_skilleval_startup.pth` -> pytest_skilleval/startup.py): installed with the package,
acting only in a pytest process given --skill-eval, cheap everywhere else."""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilleval.startup import pytest_arguments
from tests.support import REPO

PTH = "pytest_skilleval_startup.pth"


@pytest.mark.parametrize(
    ("argv", "orig_argv", "expected"),
    [
        (
            ["/venv/bin/pytest", "--skill-eval", "s"],
            ["/venv/bin/python", "/venv/bin/pytest", "--skill-eval", "s"],
            ["--skill-eval", "s"],
        ),
        (["-m", "--skill-eval"], ["python", "-m", "pytest", "--skill-eval"], ["--skill-eval"]),
        (["-m", "--skill-eval"], ["python", "-mpytest", "--skill-eval"], ["--skill-eval"]),
        (["-m", "--skill-eval"], ["python", "-I", "-W", "error", "-Im", "pytest", "--skill-eval"], ["--skill-eval"]),
        (["-m", "--skill-eval"], ["python", "-m", "pip", "--skill-eval"], None),
        (["-c", "--skill-eval"], ["python", "-c", "pass", "--skill-eval"], None),
        (["/venv/bin/skilleval", "--skill-eval"], ["python", "/venv/bin/skilleval", "--skill-eval"], None),
        ([], [], None),
    ],
)
def test_which_processes_are_pytest(argv: list[str], orig_argv: list[str], expected: list[str] | None) -> None:
    assert pytest_arguments(argv, orig_argv) == expected


def test_the_environment_carries_the_start_up_line() -> None:
    """`make setup`'s editable install put the line in site-packages, after the editable install's own .pth."""
    installed = [Path(folder) / PTH for folder in site.getsitepackages() if (Path(folder) / PTH).is_file()]
    assert installed, f"{PTH} is in none of {site.getsitepackages()}"
    assert installed[0].read_text() == (REPO / PTH).read_text()
    names = sorted(path.name for path in installed[0].parent.glob("*.pth"))
    assert all(name < PTH for name in names if name.startswith("__editable__"))


def loaded_modules(*args: str) -> set[str]:
    code = "import sys; print(' '.join(m for m in sys.modules if m.split('.')[0] in ('pytest_skilleval', '_pytest')))"
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_other_processes_import_nothing_of_ours_or_pytests() -> None:
    """Without --skill-eval the line is a string comparison; with it, a process that is not pytest stops at the
    question "is this pytest?" and imports neither pytest nor the rest of the plugin."""
    assert loaded_modules() == set()
    assert loaded_modules("--skill-eval") == {"pytest_skilleval", "pytest_skilleval.startup"}
