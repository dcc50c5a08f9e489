"""Clear words for mistakes that otherwise end in pytest's bare "no tests ran".

With `--skill-eval`, a command-line path that yields nothing (no SKILL.md, no evals/, an empty evals/) becomes one
collection error saying what was expected. Without the flag the plugin collects nothing and changes nothing; only
when pytest found no tests and a path is a skill folder does the summary add one line suggesting the flag.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from pytest_skilleval.skill.folder import arg_path, find_skill_root, no_skill_reason


def _is_under(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def missing_skill_reports(
    config: pytest.Config, items: Iterable[pytest.Item], error_paths: Iterable[Path]
) -> list[pytest.CollectReport]:
    """One failed collection report per command-line path under which nothing was collected nor failed."""
    # items of one file share its path: resolve each path once, not once per item (20,000 items, one dataset)
    covered = [path.resolve() for path in {*(item.path for item in items), *error_paths}]
    reports = []
    for arg in config.args:
        target = arg_path(arg, config.invocation_params.dir).resolve()
        if not target.exists() or any(_is_under(path, target) for path in covered):
            continue
        nodeid = arg.split("::", 1)[0]
        reports.append(pytest.CollectReport(nodeid, "failed", no_skill_reason(target), []))
    return reports


def _skill_folder_given(path: Path) -> bool:
    """The path is a skill, inside one, or a folder whose direct subfolders are skills (a cheap look, no walk)."""
    if path.is_file():
        return find_skill_root(path) is not None
    if not path.is_dir():
        return False
    if (path / "SKILL.md").is_file() or find_skill_root(path / "_") is not None:
        return True
    try:
        return any((child / "SKILL.md").is_file() for child in path.iterdir() if child.is_dir())
    except OSError:
        return False


def no_flag_hint(config: pytest.Config, exitstatus: int) -> str | None:
    """The line to add when pytest collected nothing from a skill folder because `--skill-eval` was not given."""
    if exitstatus != pytest.ExitCode.NO_TESTS_COLLECTED:
        return None
    skills = [arg for arg in config.args if _skill_folder_given(arg_path(arg, config.invocation_params.dir))]
    if not skills:
        return None
    shown = " ".join(skills)
    return f"skilleval: {shown}: skill evals run only with --skill-eval (try: pytest --skill-eval {shown})"
