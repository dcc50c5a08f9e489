"""No skill code on the host: a run refuses, before pytest imports a conftest.py, when pytest would load code or
configuration a skill folder ships, unless `--trust-skill-code` is on the command line (docs/security.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.skill.host_code import configures_pytest, conftest_files, enclosing_skill, skills_reached

TRUST_FLAG = "--trust-skill-code"
WAY_OUT = f"pass {TRUST_FLAG} (runs the skill's code on this machine)"


def trusted(config: pytest.Config) -> bool:
    """The flag counts only when typed on the command line: an ini file's `addopts` (perhaps the skill's own) and
    PYTEST_ADDOPTS cannot give it."""
    return TRUST_FLAG in config.invocation_params.args


def _command_line_paths(config: pytest.Config) -> list[Path]:
    """The paths this run collects, as pytest will decide them: the command line's, else the ini's testpaths, else
    the folder pytest was started in."""
    invocation = config.invocation_params.dir
    given = [arg.split("::", 1)[0] for arg in config.known_args_namespace.file_or_dir or []]
    paths = [path if path.is_absolute() else invocation / path for path in map(Path, given)]
    if not given:
        paths = [match for pattern in config.getini("testpaths") for match in sorted(config.rootpath.glob(pattern))]
    return [path for path in paths if path.exists()] or ([] if given else [invocation])


def config_file_refusal(inipath: Path | None) -> str | None:
    """The one line refusing pytest's chosen config file when it lies in a skill folder and sets something for
    pytest; None when it may be read. The start-up check (startup.py) and `refuse_skill_code` both say it."""
    owner = enclosing_skill(inipath.parent) if inipath is not None else None
    if inipath is None or owner is None or not configures_pytest(inipath):
        return None
    return (
        f"skilleval: {inipath} is pytest's config file for this run and lies in the skill folder {owner}: pytest "
        f"would apply its settings and load the plugins it names on this machine; run pytest with -c and a "
        f"config file of your own, or {WAY_OUT}"
    )


def refuse_skill_code(config: pytest.Config) -> None:
    """Raise pytest's UsageError (one line naming the file and the way out) when the config file pytest chose lies
    in a skill folder, or a skill folder this run enters holds a conftest.py. Called before any conftest is imported
    and before any `skilleval_*` ini value is read."""
    namespace = config.known_args_namespace
    if not getattr(namespace, "skill_eval", False) or trusted(config):
        return
    refusal = config_file_refusal(config.inipath)
    if refusal is not None:
        raise pytest.UsageError(refusal)
    if getattr(namespace, "noconftest", False):
        return
    for skill in skills_reached(_command_line_paths(config)):
        found = conftest_files(skill)
        if found:
            more = f" (and {len(found) - 1} more there)" if len(found) > 1 else ""
            raise pytest.UsageError(
                f"skilleval: {found[0]} lies in the skill folder {skill}{more}: pytest would import it on this "
                f"machine; remove it, or {WAY_OUT}"
            )
