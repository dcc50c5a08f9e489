"""End of session, on the controller: per skill, plan -> aggregate -> results tree -> summary lines and exit code.

The plan is the one read when the session started (the controller collects nothing under xdist), compared with
the records that arrived, so a `-k` selection or an interrupted run is marked incomplete rather than passed off
as a full evaluation.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilleval.compat import junit_xml, terminal_width
from pytest_skilleval.results.aggregate import aggregate, exit_code_for
from pytest_skilleval.results.models import AggregateResult, RunPlan
from pytest_skilleval.results.records import TrialKey, TrialRecord
from pytest_skilleval.results.retention import prune_runs
from pytest_skilleval.results.summary import render_summary
from pytest_skilleval.results.tree import UnsafeResultsPath, write_results_tree
from pytest_skilleval.results.trigger_files import write_trigger_files
from pytest_skilleval.results.triggering import (
    junit_trigger_properties,
    trigger_only_line,
    triggering_lines,
    triggering_section,
)
from pytest_skilleval.session import SkillEvalSession
from pytest_skilleval.skill.baseline import BaselineError
from pytest_skilleval.skill.folder import SkillFolder
from pytest_skilleval.skill.plan import CasePlan, baseline_version, case_trials
from pytest_skilleval.skill.skill_copy import left_out_note
from verifier.custom import check_condition_metric_names

if TYPE_CHECKING:
    from pytest_skilleval.results.html_report import TrialDrillDown


def build_plan(
    skill: SkillFolder,
    planned: CasePlan,
    records: Sequence[TrialRecord],
    interrupted: bool,
    run_config: dict[str, Any],
    duration_seconds: float | None = None,
) -> RunPlan:
    """The expected grid comes from the case plan read at session start, never from the files as they are now."""
    settings = skill.settings
    cases, negatives = planned.cases, planned.negative_cases
    summary = dict(planned.summary)
    if settings.max_cases is not None:
        summary["max_cases"] = settings.max_cases
    ran = {r.key for r in records}
    expected = {TrialKey(case, agent, arm, attempt) for case in cases for agent, arm, attempt in case_trials(skill)}
    seen_cases = {r.case for r in records}
    return RunPlan(
        skill=skill.name,
        skill_dir=str(skill.path),
        cases=cases,
        negative_cases=negatives,
        agents=[variant.name for variant in settings.variants],
        arms=list(settings.arms),
        n_attempts=settings.n_attempts,
        pass_threshold=settings.pass_threshold,
        stop_on_pass=settings.stop_on_pass,
        grading_mode=settings.grading_mode,
        selection_complete=expected <= ran,
        skipped_cases=[case for case in cases if case not in seen_cases],
        interrupted=interrupted,
        run_config=run_config,
        agent_models={variant.name: variant.model for variant in settings.variants},
        baseline_version=_baseline_json(skill),
        min_lift=settings.min_lift,
        dataset_summary=summary,
        dataset_digest=planned.digest,
        dataset_digest_algorithm="sha256" if planned.digest else None,
        dataset_snapshot=planned.snapshot,
        duration_seconds=duration_seconds,
    )


def _baseline_json(skill: SkillFolder) -> dict[str, Any] | None:
    """The baseline_skill arm's version as result.json records it (None without that arm or when unresolvable:
    collection and the preflight said why)."""
    try:
        version = baseline_version(skill)
    except BaselineError:
        return None
    return version.as_json() if version is not None else None


@dataclass(frozen=True)
class ConditionProblem:
    """One agent and arm whose trials break a per-condition limit, and why."""

    agent: str
    arm: str
    problem: str

    def __str__(self) -> str:
        return f"{self.agent} {self.arm}: {self.problem}"


def _condition_name_problems(records: Sequence[TrialRecord]) -> list[ConditionProblem]:
    """The per-condition limit on distinct custom metric names, checked before anything is aggregated."""
    problems = []
    conditions: dict[tuple[str, str], list[Iterable[str]]] = {}
    for record in records:
        conditions.setdefault((record.agent, record.arm), []).append(record.custom_metrics)
    for (agent, arm), names in sorted(conditions.items()):
        problem = check_condition_metric_names(names)
        if problem:
            problems.append(ConditionProblem(agent, arm, problem))
    return problems


def _drop_failed_conditions(records: list[TrialRecord], problems: list[ConditionProblem]) -> list[TrialRecord]:
    failed = {(problem.agent, problem.arm) for problem in problems}
    kept = []
    for record in records:
        if (record.agent, record.arm) in failed:
            record = record.model_copy(
                update={
                    "status": "error",
                    "overall": None,
                    "custom_metrics": {},
                    "error": "condition exceeded the custom metric name limit",
                }
            )
        kept.append(record)
    return kept


def junit_properties(config: pytest.Config, skill: str, result: AggregateResult) -> None:
    """Run-level verdict and lift as testsuite properties, where the junitxml plugin is active."""
    xml = junit_xml(config)
    if xml is None:
        return
    xml.add_global_property(f"skilleval.{skill}.verdict", str(result.verdict))
    for name, agent in result.agents.items():
        xml.add_global_property(f"skilleval.{skill}.{name}.verdict", str(agent.verdict))
        overall = agent.lift.overall if agent.lift is not None else None
        xml.add_global_property(f"skilleval.{skill}.{name}.lift", "null" if overall is None else f"{overall.delta}")
    for key, value in junit_trigger_properties(skill, result.triggering):
        xml.add_global_property(key, value)


def _write_reports(run_dir: Path, known: Mapping[TrialKey, TrialDrillDown]) -> dict[str, str]:
    """report.html and BENCHMARK.md from the run folder (with the drill-downs of the trial files this session wrote
    into it); a rendering bug costs the report, never the run."""
    from pytest_skilleval.results.publish import write_run_reports

    try:
        report, card = write_run_reports(run_dir, known)
    except Exception as error:  # noqa: BLE001 - result.json is already safe; say what went wrong and go on
        return {"report_error": f"{type(error).__name__}: {error}"}
    return {"report_path": str(report), "card_path": str(card)}


def _unwritten(skill: str, error: UnsafeResultsPath | OSError) -> str:
    """The one line for a skill whose results tree cannot be written (through a link, or the file system said no);
    the run's end goes on to the next skill."""
    if isinstance(error, UnsafeResultsPath):
        why, fix = str(error), "replace that link with a folder"
    else:
        where = f" at {error.filename}" if error.filename else ""
        why, fix = f"{error.strerror or type(error).__name__}{where}", "make it a writable folder"
    return (
        f"skilleval: {skill}: no results written: {why}; {fix}, or pass --results-dir DIR "
        "(the trials' verdicts are in the test outcomes above)"
    )


def kept_jobs_folder(records: Sequence[TrialRecord]) -> str | None:
    """The folder holding this skill's kept Harbor trial folders (`<...>/skilleval<N>/<skill>`; under xdist the
    workers' folders have a common parent), for `skilleval harbor-view`; None when none is left."""
    skill_folders = {
        str(Path(record.trial_dir).parents[3])
        for record in records
        if record.trial_dir and len(Path(record.trial_dir).parents) > 3 and Path(record.trial_dir).is_dir()
    }
    return os.path.commonpath(sorted(skill_folders)) if skill_folders else None


def finish_session(state: SkillEvalSession, session: pytest.Session, exitstatus: int) -> None:
    # The guard remembers an interrupt even when a second Ctrl+C cut pytest's own bookkeeping short.
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or bool(session.shouldstop) or state.signals.interrupted
    blocking_codes: list[int] = []
    width = terminal_width(session.config)
    # Under xdist the controller collects nothing: the skills to report come from the records themselves.
    for skill_dir in [Path(path) for path in state.skill_dirs_to_report(interrupted)]:
        skill = state.skill(skill_dir)
        records = state.records_for(str(skill_dir))
        problems = _condition_name_problems(records)
        altered: set[TrialKey] = set()
        if problems:
            kept = _drop_failed_conditions(records, problems)
            altered = {new.key for old, new in zip(records, kept, strict=True) if new is not old}
            records = kept
        plan = build_plan(
            skill,
            state.case_plan(skill_dir),
            records,
            interrupted,
            state.run_config(skill_dir),
            round(time.monotonic() - state.started, 3),
        )
        budget = state.budget(skill_dir)
        if budget is not None and not plan.selection_complete and budget.reached():
            plan = plan.model_copy(
                update={"budget_stopped": f"${budget.spent():.4f} of --max-cost ${budget.limit:.4f}"}
            )
        if budget is not None:
            shutil.rmtree(budget.folder, ignore_errors=True)  # this session's ledger: a resume keeps its own
        result = aggregate(records, plan)
        # Trigger items: their own section, computed from their own records, never part of the dimensions or lift.
        triggers = state.trigger_records_for(str(skill_dir))
        result.triggering = triggering_section(triggers, state.case_plan(skill_dir).triggers)
        try:
            if triggers:  # each trigger trial's file (trajectory, verdict), before result.json lists them
                write_trigger_files(
                    state.results_root(skill_dir), state.run_id_for(skill_dir), triggers, state.redactor
                )
            run_dir = write_results_tree(
                result,
                records,
                state.results_root(skill_dir),
                state.run_id_for(skill_dir),
                dataset_snapshot=plan.dataset_snapshot,
                redactor=state.redactor,
                early=state.early.writer(str(skill_dir)),
                altered=altered,
            )
        except (UnsafeResultsPath, OSError) as error:  # the preflight found it writable: it changed since
            state.summary_lines.append(_unwritten(skill.name, error))
            blocking_codes.append(int(pytest.ExitCode.USAGE_ERROR))
            continue
        state.results_paths.append(run_dir)
        if skill.settings.keep_runs is not None:
            removed = prune_runs(run_dir.parent, skill.settings.keep_runs, run_dir)
            if removed:
                state.summary_lines.append(
                    f"{skill.name}: --keep-runs {skill.settings.keep_runs}: removed {len(removed)} older run "
                    f"folder(s) ({', '.join(run.name for run in removed)})"
                )
        block = skill.settings.block_on_agent_eval
        state.summary_lines.extend(f"  {problem}" for problem in problems)
        reports = _write_reports(run_dir, state.early.evidence(str(skill_dir), run_dir))
        if records or (plan.cases and (interrupted or not triggers)):
            state.summary_lines.extend(
                render_summary(
                    result,
                    str(run_dir / "result.json"),
                    width,
                    **reports,
                    block_on_agent_eval=block,
                    pytest_status=int(session.exitstatus),
                    jobs_path=kept_jobs_folder(records) if state.keep_jobs() else None,
                )
            )
        else:  # a trigger set alone (or the only part selected, `-m skilleval_trigger`): its lines are the story
            state.summary_lines.append(trigger_only_line(skill.name, bool(plan.cases), str(run_dir / "result.json")))
            state.summary_lines.extend(f"{name}: {path}" for name, path in reports.items())
        if state.regrade_source(skill_dir) is not None:
            from pytest_skilleval.harbor.regrade import stored_results_note

            kept_note = stored_results_note(skill.name, records)
            if kept_note:
                state.summary_lines.append(kept_note)
        state.summary_lines.extend(triggering_lines(skill.name, result.triggering))
        note = left_out_note(skill)
        if note:
            state.summary_lines.append(note)
        junit_properties(session.config, skill.name, result)
        session.config.hook.pytest_skilleval_aggregate(
            config=session.config, skill=skill.name, result=result, run_dir=run_dir
        )
        code = exit_code_for(result, block)
        if code is not None:
            blocking_codes.append(code)
    if blocking_codes and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = max(blocking_codes)
