"""What the session prints before the first trial, one line each: the trials each skill plans (and whether models
are called, and what they may cost), the run a `--regrade` grades again, how much of a `--resume`d run is reused,
and the skills below a folder on the command line that have no evals/ (passed over).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilleval.harbor.credentials import OFFLINE_AGENTS
from pytest_skilleval.results.keys import TrialKey
from pytest_skilleval.results.summary_text import counted
from pytest_skilleval.skill.folder import arg_path, skills_without_evals
from pytest_skilleval.skill.plan import case_trials, trial_label, trigger_trials

if TYPE_CHECKING:
    from pytest_skilleval.session import SkillEvalSession

# How many of the trials a resumed run still has to run are named in its start line.
RESUME_LISTED = 5
# How many skills without evals/ a folder's start line names.
BARE_LISTED = 10


def _no_trials(skill_name: str, why: object) -> str:
    """A skill the session runs nothing of, and why; its collection error (printed below the start) says more."""
    return f"skilleval: {skill_name}: no trials: {why} (its collection error below)"


def _bare_skill_lines(state: SkillEvalSession) -> list[str]:
    """One line per folder on the command line whose skills partly have no evals/: a run of the folder passes over
    them, and says so rather than leaving them out in silence."""
    lines = []
    for arg in state.config.args:
        bare = skills_without_evals(arg_path(arg, state.config.invocation_params.dir))
        if bare:
            names = ", ".join(root.name for root in bare[:BARE_LISTED])
            more = f" and {len(bare) - BARE_LISTED} more" if len(bare) > BARE_LISTED else ""
            lines.append(
                f"skilleval: {arg.split('::', 1)[0]}: {counted(len(bare), 'skill')} {'has' if len(bare) == 1 else 'have'}"
                f" no evals/ and {'is' if len(bare) == 1 else 'are'} not run: {names}{more}; draft cases with "
                "`skilleval create-eval-dataset SKILL_DIR` (review them), or run with --autopilot"
            )
    return lines


def planned_lines(state: SkillEvalSession) -> list[str]:
    """One line per skill, before the first trial: how many trials the plan holds and whether models are called."""
    from pytest_skilleval.results.estimate import cost_estimate

    changed = state.changed_since_line()
    lines = [changed] if changed else []
    lines += _bare_skill_lines(state)
    for skill_dir, plan in sorted(state.case_plans.items()):
        refusal = state.resume_refusal(skill_dir)
        if refusal:
            lines.append(_no_trials(skill_dir.name, refusal))
            continue
        try:
            settings = state.skill(skill_dir).settings
        except Exception as error:  # noqa: BLE001 - a bad config.yml is reported by collection
            from pytest_skilleval.regrade_plan import NotInRegradedRun

            if isinstance(error, NotInRegradedRun):  # a --regrade run this skill has no part in
                lines.append(_no_trials(skill_dir.name, error))
            continue
        cases = len(plan.cases) if settings.max_cases is None else min(len(plan.cases), settings.max_cases)
        variants = settings.variants
        total = cases * len(variants) * len(settings.arms) * settings.n_attempts
        real = [v.name for v in variants if v.agent not in OFFLINE_AGENTS]
        models = f"; calls models through {', '.join(real)}" if real else ""
        estimate = cost_estimate(state.results_root(skill_dir), {v.name for v in variants}, total)
        models += f"; {estimate}" if estimate else ""
        case_line = bool(cases or not plan.triggers)  # a trigger-only skill has only the trigger trials' line
        if plan.unreadable and not cases:  # not "0 trials planned": the dataset is there and broken
            lines.append(_no_trials(skill_dir.name, f"evals/{plan.unreadable} cannot be read"))
        elif case_line:
            lines.append(
                f"skilleval: {skill_dir.name}: {counted(total, 'trial')} planned ({counted(cases, 'case')} x "
                f"{counted(len(variants), 'agent')} x {counted(len(settings.arms), 'arm')} x "
                f"{counted(settings.n_attempts, 'attempt')}){models}"
            )
        if plan.triggers:
            calls = "" if case_line or not real else f"; calls models through {', '.join(real)}"
            triggers = len(plan.triggers) * len(variants) * settings.n_attempts
            queries = f"{len(plan.triggers)} quer{'y' if len(plan.triggers) == 1 else 'ies'}"
            lines.append(
                f"skilleval: {skill_dir.name}: {counted(triggers, 'trigger trial')} planned ({queries} x "
                f"{counted(len(variants), 'agent')} x {counted(settings.n_attempts, 'attempt')}){calls}"
            )
        source = state.regrade_source(skill_dir)
        if source is not None:
            from pytest_skilleval.regrade_plan import plan_line

            lines.append(plan_line(skill_dir.name, settings, source))
        resume = _resume_line(state, skill_dir, plan.cases[:cases])
        if resume:
            lines.append(resume)
        resume = _resume_trigger_line(state, skill_dir, [str(query["id"]) for query in plan.triggers])
        if resume:
            lines.append(resume)
        joined = state.joined_run(skill_dir)
        if joined and (plan.cases or plan.triggers):
            lines.append(
                f"skilleval: {skill_dir.name}: --resume: run {joined} holds no trial of this skill (the session that "
                "made it collected or selected none); all its planned trials run in it now"
            )
    return lines


def _resume_trigger_line(state: SkillEvalSession, skill_dir: Path, queries: list[str]) -> str | None:
    """Under --resume, for a skill with a trigger set: how many planned trigger trials the run folder holds."""
    run_dir = state.resumed_run_dir(skill_dir)
    if run_dir is None or not queries:
        return None
    stored = state.stored_triggers_in(skill_dir)
    planned = [
        (query, agent, attempt) for query in queries for agent, attempt in trigger_trials(state.skill(skill_dir))
    ]
    kept = sum(1 for key in planned if key in stored)
    return (
        f"skilleval: {skill_dir.name}: --resume {run_dir.name}: reuses {kept} of {len(planned)} planned trigger "
        f"trials, runs {len(planned) - kept}"
    )


def _resume_line(state: SkillEvalSession, skill_dir: Path, cases: list[str]) -> str | None:
    """Under --resume: how many planned trials the run folder already holds and which ones this session runs."""
    run_dir = state.resumed_run_dir(skill_dir)
    if run_dir is None:
        return None
    trials = list(case_trials(state.skill(skill_dir)))
    planned = [TrialKey(case, agent, arm, attempt) for case in cases for agent, arm, attempt in trials]
    if not planned:  # a trigger-only skill: its own line counts the trigger trials
        return None
    stored = state.stored_in(skill_dir)
    missing = [key for key in planned if key not in stored]
    shown = ", ".join(f"{k.case}[{trial_label(k.agent, k.arm, k.attempt)}]" for k in missing[:RESUME_LISTED])
    more = f", and {len(missing) - RESUME_LISTED} more" if len(missing) > RESUME_LISTED else ""
    runs = f"runs {len(missing)}: {shown}{more}" if missing else "runs none"
    return (
        f"skilleval: {skill_dir.name}: --resume {run_dir.name}: reuses {len(planned) - len(missing)} of "
        f"{len(planned)} planned trials, {runs}"
    )
