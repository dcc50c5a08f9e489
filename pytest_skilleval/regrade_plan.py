"""`--regrade`: the run graded again decides what is graded (its agents, attempts, arms and case limit) and, unless
the command line says otherwise, where (its environment mode and base image), so the command the docs give
(`--regrade latest`, without repeating the first run's options) grades every stored trial.

A setting given on the command line that contradicts the source run is refused with one line; the same setting from
the ini file or `evals/config.yml` gives way to the source run, and the session's start says which plan it took.
A run no skill of the session has is refused at the start; a skill of a session with several that has no part in the
run (the session that made it could not collect it) is one collection error, and the others are graded again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from pytest_skilleval.options import refuse_unselected
from pytest_skilleval.results.resume import ResumeError, latest_finished_run, resolve_run_dir, run_absent
from pytest_skilleval.results.run_paths import resolve_results_root
from pytest_skilleval.results.run_seal import RunSeal
from pytest_skilleval.results.summary_text import counted
from pytest_skilleval.results.tree import MAX_TRIAL_BYTES, RUN_CONFIG_FILE
from pytest_skilleval.skill.settings import RunSettings
from pytest_skilleval.skill.stored_config import as_current

# What a regrade takes from the run it grades again: the trials that run holds.
PLAN_FIELDS = (
    "agents",
    "agent_models",
    "n_attempts",
    "skip_baseline",
    "skip_with_skill",
    "selected_arms",
    "baseline_skill",
    "max_cases",
)
# What a regrade takes from that run unless the command line gives it: where a kept trial's recorded workspace is
# graded again (Harbor's regrade starts a fresh sandbox of that kind). Not `--ek`: `sandbox=none` counts only when
# typed on the command line, never read back from a file.
ENV_FIELDS = ("env_mode", "base_image")
FLAGS = {
    "agents": "--agents",
    "agent_models": "--agent-model",
    "n_attempts": "--n-attempts",
    "skip_baseline": "--skip-baseline",
    "skip_with_skill": "--skip-with-skill",
    "max_cases": "--max-cases",
    "selected_arms": "--arms",
    "baseline_skill": "--baseline-skill",
}


class NotInRegradedRun(Exception):
    """This skill cannot be graded again from the run `--regrade` names, which another skill of the session holds:
    not a usage error (the session goes on), but the skill's settings error, which collection reports once."""


def regrade_source(results_root: Path, requested: str, seal: RunSeal | None = None) -> Path:
    """The run folder `--regrade` names: `latest` is the newest finished run this machine wrote whose execution
    succeeded (a regrade or resume that failed is never taken for it). Raises ResumeError."""
    seal = seal or RunSeal.of_this_machine()
    if requested == "latest":
        return latest_finished_run(results_root, seal)
    run_dir = resolve_run_dir(results_root, requested, seal)
    if not (run_dir / "result.json").is_file():
        raise ResumeError(
            f"{run_dir} has no result.json; only a finished run can be regraded (finish it with --resume)"
        )
    return run_dir


def _source_plan(run_dir: Path) -> dict[str, Any]:
    data = RunSeal.of_this_machine().read(run_dir, run_dir / RUN_CONFIG_FILE, MAX_TRIAL_BYTES)
    config = json.loads(data) if data is not None else None
    if not isinstance(config, dict):
        raise ResumeError(f"{run_dir} has no readable {RUN_CONFIG_FILE}")
    shaped = as_current(config, {})  # a run an earlier release wrote: models stored as one string per agent
    return {field: shaped[field] for field in (*PLAN_FIELDS, *ENV_FIELDS) if field in config}


def with_source_plan(
    settings: RunSettings, cli: Mapping[str, Any], skill_dir: Path, elsewhere: Callable[[str], str | None]
) -> RunSettings:
    """`settings` with the source run's plan; a command-line value that contradicts it is a usage error, and so is a
    source run this skill lacks, unless `elsewhere` (the requested run -> its id in another skill of the session, or
    None) finds it: then NotInRegradedRun."""
    if settings.regrade is None:
        return settings
    results_root = resolve_results_root(skill_dir, settings.results_dir, os.environ)
    try:
        source = regrade_source(results_root, settings.regrade)
        plan = _source_plan(source)
    except ResumeError as error:
        raise _unresolved(skill_dir.name, settings.regrade, error, results_root, elsewhere) from None
    plan = {field: value for field, value in plan.items() if field not in ENV_FIELDS or field not in cli}
    for field, value in plan.items():
        if field in cli and getattr(settings, field) != value:
            raise pytest.UsageError(
                f"--regrade {source.name}: {FLAGS[field]} {_shown(getattr(settings, field))} contradicts that run's "
                f"{_shown(value)}; drop {FLAGS[field]} (a regrade grades the trials that run holds)"
            )
    try:
        merged = RunSettings.model_validate({**settings.model_dump(), **plan})
    except ValidationError as error:
        raise pytest.UsageError(
            f"--regrade {source.name}: its run_config.json does not read as settings: {error}"
        ) from None
    refuse_unselected(cli, merged)  # --agent-model and --agent-kwarg against the agents that run used
    return merged


def _unresolved(
    skill: str, requested: str, error: ResumeError, results_root: Path, elsewhere: Callable[[str], str | None]
) -> Exception:
    """Why `--regrade` cannot grade this skill: a usage error when no other skill of the session has the run (a
    mistyped id starts nothing); else this skill's own error, naming the fix."""
    held = elsewhere(requested)
    if held is None:
        return pytest.UsageError(f"--regrade {requested}: {error}")
    if run_absent(results_root, requested):
        return NotInRegradedRun(
            f"--regrade {requested}: {skill} has no part in run {held} (the session that made it collected or "
            f"selected none of its trials): run its trials into it with --resume {held}, then regrade; or leave "
            f"{skill} out of the command line"
        )
    return NotInRegradedRun(f"--regrade {requested}: {skill}: {error}")


def plan_line(skill_name: str, settings: RunSettings, source: Path) -> str:
    """What the session's start says of a regrade: which run, and the plan taken from it."""
    arms = " and ".join(settings.arms)
    cases = f", the first {settings.max_cases} cases" if settings.max_cases else ""
    return (
        f"skilleval: {skill_name}: --regrade {source.name}: grades that run's trials again with its plan: agents "
        f"{', '.join(v.name for v in settings.variants)}, {counted(settings.n_attempts, 'attempt')}, {arms}{cases}; "
        f"env mode {settings.env_mode}"
    )


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return ",".join(f"{k}={_shown(v)}" for k, v in value.items()) or "(none)"
    return str(value)
