"""What runs when a Python process of this environment starts (the `.pth` line the wheel installs): a `pytest
--skill-eval` run whose pytest config file lies in a skill folder stops before pytest reads that file.

pytest applies its chosen config file's `addopts` (`-p` plugins are imported), `pythonpath` and `filterwarnings`
before it loads any installed plugin, so no hook of this plugin runs early enough (docs/security.md). The `.pth`
line only compares `sys.argv` with a string; everything else happens here, in a pytest process given
`--skill-eval`.
"""

from __future__ import annotations

import os
import shlex
import sys

SKILL_EVAL = "--skill-eval"
USAGE_ERROR = 4  # pytest.ExitCode.USAGE_ERROR, without importing pytest for a process that is not pytest
_done: list[bool] = []


def _module_run(orig_argv: list[str]) -> str | None:
    """The module `python -m MODULE` runs, from the interpreter's own arguments."""
    for index, item in enumerate(orig_argv[1:], start=1):
        if item == "-m" or (item.startswith("-") and not item.startswith("--") and item.endswith("m")):
            return orig_argv[index + 1] if index + 1 < len(orig_argv) else None
        if item.startswith("-m"):
            return item[2:]
    return None


def pytest_arguments(argv: list[str], orig_argv: list[str]) -> list[str] | None:
    """The arguments pytest will parse when this process is pytest (its console script, or `python -m pytest`);
    None for any other process."""
    if not argv:
        return None
    script = os.path.basename(argv[0]).removesuffix(".exe").removesuffix("-script.py")
    if script in ("pytest", "py.test") or (argv[0] == "-m" and _module_run(orig_argv) == "pytest"):
        return argv[1:]
    return None


def _stop(line: str) -> None:
    """pytest's usage-error line and status; the interpreter is still starting, so nothing else needs ending."""
    sys.stderr.write(f"ERROR: {line}\n")
    sys.stderr.flush()
    os._exit(USAGE_ERROR)


def check() -> None:
    """Stop this process when it is `pytest --skill-eval` (given on the command line or in PYTEST_ADDOPTS),
    without `--trust-skill-code` on the command line, and pytest's config file for it lies in a skill folder."""
    if _done:  # a site-packages folder reached twice (lib64 -> lib) runs the .pth line twice
        return
    _done.append(True)
    args = pytest_arguments(sys.argv, getattr(sys, "orig_argv", sys.argv))
    if args is None:
        return
    from pytest_skilleval.trust import TRUST_FLAG, config_file_refusal

    if TRUST_FLAG in args:
        return
    try:
        given = shlex.split(os.environ.get("PYTEST_ADDOPTS", "")) + args
    except ValueError:
        return  # pytest refuses this PYTEST_ADDOPTS itself, before reading any file
    if SKILL_EVAL not in given:
        return
    import pytest

    from pytest_skilleval.compat import chosen_config_file

    try:
        inipath = chosen_config_file(given)
    except (pytest.UsageError, SystemExit):
        return  # pytest stops on the same arguments before it reads a config file
    except Exception as error:  # noqa: BLE001 - unknown means unsafe: say why and stop
        _stop(
            f"skilleval: could not tell which pytest config file this run reads ({type(error).__name__}: {error}), "
            f"so whether it lies in a skill folder; pass {TRUST_FLAG} (runs the skill's code on this machine)"
        )
        return
    refusal = config_file_refusal(inipath)
    if refusal is not None:
        _stop(refusal)
