"""`skilleval doctor`: the session's preflight checks, each printed with PASS or FAIL, without running anything."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pydantic import ValidationError

from pytest_skilleval.harbor.credential_check import check_routes, session_routes
from pytest_skilleval.harbor.preflight import (
    Check,
    agent_checks,
    default_base_checks,
    environment_checks,
    local_cli_checks,
    model_checks,
    open_file_checks,
    process_checks,
)
from pytest_skilleval.results.run_paths import (
    ENV_RESULTS_DIR,
    resolve_results_root,
    results_root_problem,
    results_root_source,
)
from pytest_skilleval.skill.folder import no_skill_reason, skill_roots_under
from pytest_skilleval.skill.setting_specs import pairs
from pytest_skilleval.skill.settings import RunSettings


def _pairs(values: list[str]) -> dict[str, str]:
    """`--ek` values as pytest's `--ek` reads them."""
    try:
        return {key: item for value in values for key, item in pairs("--ek")(value).items()}
    except ValueError as error:
        raise SystemExit(f"skilleval doctor: {error}") from None


def credential_checks(settings: RunSettings) -> list[Check]:
    """The run's credential check, one line per target: FAIL only where the run would stop."""
    checks = []
    for outcome in check_routes(session_routes(settings, [], os.environ)):
        where = f"{outcome.provider} at {outcome.endpoint}" + (f" model {outcome.model}" if outcome.model else "")
        name = f"credentials {outcome.target}"
        if outcome.status == "failed":
            checks.append(Check(name, f"{where}: {outcome.detail}"))
        else:
            checks.append(Check(name, detail=f"{outcome.status}: {where}: {outcome.detail}"))
    return checks


def results_checks(paths: list[str], results_dir: str | None) -> list[Check]:
    """Whether each given skill's results folder can be written, found as the session finds it (`--results-dir`,
    else SKILLEVAL_RESULTS_DIR, else `<skill>/evals/results`) and worded as its preflight words it. With no skill
    given, the folder `--results-dir` or the variable names (each skill's results go in a folder below it)."""
    given, fix = results_root_source(results_dir, results_dir, os.environ)
    base = results_dir if results_dir and results_dir.strip() else os.environ.get(ENV_RESULTS_DIR, "").strip()
    where = given if base else "the default"
    roots: list[Path] = []
    checks = []
    for arg in paths:
        found = skill_roots_under(Path(arg))
        if not found:
            checks.append(Check(f"skill {arg}", no_skill_reason(Path(arg))))
        roots += [resolve_results_root(skill, results_dir, os.environ) for skill in found]
    if not paths and base:  # what the session would make each skill's folder in (a link to a folder is followed)
        roots.append(Path(os.path.realpath(os.path.abspath(os.path.expanduser(base)))))
    for root in dict.fromkeys(roots):
        problem = results_root_problem(root)
        failed = f"{given}: {problem}; {fix}" if problem is not None else None
        checks.append(Check("results folder", failed, detail=f"{where}: {root}"))
    return checks


def run_doctor(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="skilleval doctor", description=__doc__)
    parser.add_argument(
        "skills",
        nargs="*",
        metavar="SKILL_DIR",
        help="skill folders (or folders of skills) whose results folder to check",
    )
    parser.add_argument(
        "--results-dir", default=None, help=f"results folder as pytest's --results-dir (default: ${ENV_RESULTS_DIR})"
    )
    parser.add_argument("--env-mode", default="docker", help="environment to check (default docker)")
    parser.add_argument("--agents", default="codex", help="comma-separated agents whose credentials to check")
    parser.add_argument("--ek", action="append", default=[], metavar="KEY=VALUE", help="environment kwarg")
    parser.add_argument("--base-image", default=None, help="image --base-image would use (checked under docker)")
    parser.add_argument("--agent-model", action="append", default=[], metavar="AGENT=MODEL", help="model per agent")
    parser.add_argument("--judge-model", default=None, help="judge model (default: the judge/LLM settings)")
    parser.add_argument(
        "--no-credential-check", action="store_true", help="skip the model-catalog requests that prove credentials"
    )
    args = parser.parse_args(argv)
    try:
        settings = RunSettings(
            env_mode=args.env_mode,
            agents=[a for a in args.agents.split(",") if a.strip()],
            env_kwargs=_pairs(args.ek),
            base_image=args.base_image,
            agent_models=_models(args.agent_model),
            judge_model=args.judge_model,
        )
    except ValidationError as error:
        print(f"FAIL  settings: {error.errors()[0]['msg']}")
        return 1
    checks = environment_checks(settings) + agent_checks(settings, os.environ) + model_checks(settings)
    checks += local_cli_checks(settings)
    checks += open_file_checks(settings) + process_checks(settings)
    if all(check.ok for check in checks if check.name.startswith("docker")):
        checks += default_base_checks(settings, None)
    if not args.no_credential_check:
        checks += credential_checks(settings)
    checks += results_checks(args.skills, args.results_dir)
    for check in checks:
        print(check.line())
    failed = sum(not check.ok for check in checks)
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


def _models(given: list[str]) -> dict[str, list[str]]:
    """`--agent-model AGENT=MODEL` values, repeatable: each agent's models in order (several make variants)."""
    models: dict[str, list[str]] = {}
    for value in given:
        for agent, model in pairs("--agent-model")(value).items():
            models.setdefault(agent, []).append(model)
    return models
