"""What happens once per session around the trials: the preflight before any of them, the clean-up after.

The preflight runs on the controller (or the only process) before workers start: a problem stops the run with one
line each (pytest's usage error), before any image is built or trial started. At the end, each trial's own
and Harbor's folders are deleted once the results tree has copied what it keeps, unless --harbor-keep-jobs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from contextlib import nullcontext

import pytest

from pytest_skilleval.options import merge_settings
from pytest_skilleval.session import SkillEvalSession
from pytest_skilleval.skill.settings import RunSettings


def run_preflight(state: SkillEvalSession) -> None:
    """Raise pytest.UsageError listing every problem found, one per line; nothing is started before this."""
    if state.config.getoption("collectonly", False):
        return  # nothing will run
    from pytest_skilleval.harbor.preflight import session_problems

    session_settings = merge_settings(state.sources)
    unwritable = results_problems(state, session_settings)
    if unwritable or session_settings.regrade:  # --regrade grades stored trials on the host: no sandbox, no agent
        if unwritable:
            raise pytest.UsageError("skilleval preflight failed (nothing was started):\n  " + "\n  ".join(unwritable))
        return
    skills = {}
    for skill_dir in sorted(state.case_plans):
        try:
            skills[skill_dir] = state.skill(skill_dir).settings
        except Exception:  # noqa: BLE001 - a bad evals/config.yml: collection reports it for this skill
            continue
    problems = session_problems(session_settings, skills, pass_env=session_settings.pass_env)
    if problems:
        raise pytest.UsageError("skilleval preflight failed (nothing was started):\n  " + "\n  ".join(problems))
    check_credentials(state, session_settings, list(skills.values()))
    if session_settings.agent_runtime_preflight or any(s.agent_runtime_preflight for s in skills.values()):
        runtime_preflight(state, session_settings)


def results_problems(state: SkillEvalSession, settings: RunSettings) -> list[str]:
    """One line per results folder the run could not write, naming where it came from (flag, ini key, variable or
    the default) and the fix: found now, not after every trial has run and been paid for."""
    from pytest_skilleval.results.run_paths import resolve_results_root, results_root_problem, results_root_source

    given, fix = results_root_source(state.sources.cli.get("results_dir"), settings.results_dir, os.environ)
    found = []
    for skill_dir in sorted(state.case_plans):
        root = resolve_results_root(skill_dir, settings.results_dir, os.environ)
        problem = results_root_problem(root)
        if problem is not None:
            found.append(f"{given}: {problem}; {fix}")
    return list(dict.fromkeys(found))


def runtime_preflight(state: SkillEvalSession, settings: RunSettings) -> None:
    """--agent-runtime-preflight: one agent-only trial per agent; a failure stops the run with the agent's own
    error, and the run folder keeps it in run_config.json -> credential_validation.runtime_preflight."""
    from pytest_skilleval.harbor.runtime_preflight import run_runtime_preflight

    skills = {path: state.skill(path) for path, plan in state.case_plans.items() if plan.cases}
    outcomes = run_runtime_preflight(skills, settings.agents, state.run_id)
    record = state.credential_validation or {"status": "skipped", "targets": []}
    record["runtime_preflight"] = [o.model_dump() for o in outcomes]
    state.credential_validation = record
    failed = [o.line() for o in outcomes if o.status == "failed"]
    if failed:
        record["status"] = "failed"
        state.early.open_runs(sorted(skills))  # the run folder's run_config.json keeps why it stopped
        raise pytest.UsageError(
            "skilleval agent runtime preflight failed (no evaluation trial was started):\n  " + "\n  ".join(failed)
        )


def check_credentials(state: SkillEvalSession, settings: RunSettings, skills: list[RunSettings]) -> None:
    """One bounded catalog request per agent route and the judge route; a definitive failure stops the run before
    anything is built or staged, the rest is said in the header and kept in run_config.credential_validation."""
    from pytest_skilleval.harbor.credential_check import check_routes, session_routes, validation_record

    if settings.no_credential_check:
        state.credential_validation = {"status": "skipped", "reason": "--no-credential-check", "targets": []}
        return
    outcomes = check_routes(session_routes(settings, skills, os.environ))
    state.credential_validation = validation_record(outcomes)
    failed = [o.line() for o in outcomes if o.status == "failed"]
    if failed:
        raise pytest.UsageError("skilleval credential check failed (nothing was started):\n  " + "\n  ".join(failed))
    state.credential_lines = [f"skilleval credentials: {o.line()}" for o in outcomes if o.status != "verified"]


def remove_job_folders(state: SkillEvalSession) -> None:
    """Delete each trial's own and Harbor folders (and images built for this run only), after results.

    First waits for the `rm` of the folders handed over as items finished: waited for last, it deletes them while
    the results are written."""
    state.early.finish()
    if state.keep_jobs():
        return
    from pytest_skilleval.results.early_results import remove_job_folder

    settings = merge_settings(state.sources)
    for record in state.records.values():
        if not state.early.removed(record):  # those of trials whose file was written early are gone already
            remove_job_folder(record)
    for trigger in state.trigger_records():
        remove_job_folder(trigger)  # its file in the run folder holds its trajectory and verdict
    if settings.env_mode != "docker":
        return
    for skill in list(state.skills.values()):
        try:
            disabled = skill.settings.base_image_mode == "disabled"
        except Exception:  # noqa: BLE001 - a bad config: nothing was built for it
            continue
        if disabled:  # reuse and rebuild keep the image for later runs
            _remove_run_images(state.run_id, skill.name)


def _remove_run_images(run_id: str, skill_name: str) -> None:
    docker = shutil.which("docker")
    if docker is None:
        return
    filters = ["--filter", f"label=org.skilleval.run={run_id}", "--filter", f"label=org.skilleval.skill={skill_name}"]
    listed = subprocess.run([docker, "image", "ls", "-q", *filters], capture_output=True, text=True, timeout=60)
    ids = sorted(set(listed.stdout.split()))
    if ids:
        subprocess.run([docker, "image", "rm", "-f", *ids], capture_output=True, timeout=300)


def say(config: pytest.Config, line: str) -> None:
    """A line on the terminal now, past output capture (used while a run is being interrupted)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")
    with capture.global_and_fixture_disabled() if capture is not None else nullcontext():
        if reporter is not None:
            reporter.write_line(line, yellow=True)
        else:
            sys.stderr.write(line + "\n")
