"""Session aggregate: trial scores -> dimensions, arm summaries, pass@k, Skill Lift, verdicts (pure).

Input is the `TrialRecord`s that ran plus the `RunPlan` (what should have run); output is an `AggregateResult`
that the results writer and the terminal summary only *render*. Nothing here imports pytest or Harbor.

Rules that shape every function below:
- Missing is not zero: an unscored metric is None, averages skip it, a lift with no comparable case is None.
- A trial's overall is recomputed here from its metrics (one policy, enforced in one place): the equal-weight mean
  of the dimensions that are scored (all five once LLM judges exist); in custom_only it is the grader's overall.
- Every published number is rounded to 4 places; comparisons against thresholds use the rounded value so float
  noise (0.1 + 0.2 style) never moves a band.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime

from pytest_skilleval import __version__
from pytest_skilleval.results.arms import agent_activation, arm_summary, edit_resources, resource_delta
from pytest_skilleval.results.assertion_rates import case_assertion_rates
from pytest_skilleval.results.correctness import (
    errored_checks_warnings,
    planned_cases_with_checks,
    unmeasured_cases,
)
from pytest_skilleval.results.lift import agent_lift, edit_lift
from pytest_skilleval.results.models import (
    AgentResources,
    AgentResult,
    AggregateResult,
    AttemptPolicy,
    Coverage,
    RunPlan,
    VerdictPolicy,
)
from pytest_skilleval.results.natural_order import natural_key
from pytest_skilleval.results.power import suggest_attempts
from pytest_skilleval.results.records import ALL_ARMS, ARMS, TrialKey, TrialRecord
from pytest_skilleval.results.trials import (
    CUSTOM_ONLY,
    ScoredTrial,
    build_condition,
    dimension_band,
    lift_band,
    r4,
    required_attempts,
    score_trial,
    trial_entry,
)
from pytest_skilleval.results.verdict import (
    EXIT_BASELINE_ONLY,
    EXIT_INCOMPLETE,
    EXIT_VERDICT_FAIL,
    EXIT_VERDICT_INCONCLUSIVE,
    EXIT_VERDICT_NEUTRAL,
    agent_comparison,
    agent_verdict,
    exit_code_for,
    gate_failure_reason,
    incomplete_why,
    pick_best_agent,
    top_verdict,
)
from verifier.scoring import (
    CUSTOM_SCORE_POLICY,
    DIMENSION_SOURCES,
    SCORE_POLICY,
    clean_score,
    dimension_scores,
    overall_from_dimensions,
)

__all__ = [
    "DIMENSION_SOURCES",
    "EXIT_BASELINE_ONLY",
    "EXIT_INCOMPLETE",
    "EXIT_VERDICT_FAIL",
    "EXIT_VERDICT_INCONCLUSIVE",
    "EXIT_VERDICT_NEUTRAL",
    "aggregate",
    "clean_score",
    "dimension_band",
    "dimension_scores",
    "exit_code_for",
    "gate_failure_reason",
    "lift_band",
    "overall_from_dimensions",
    "r4",
]

# --------------------------------------------------------------------------------------------- coverage


def _prepare(records: Sequence[TrialRecord], plan: RunPlan) -> tuple[list[ScoredTrial], list[str]]:
    """Score every record and mark the ones that must not count (extra, duplicate, out of grid)."""
    warnings: list[str] = []
    cases, agents = set(plan.cases), set(plan.agents)
    trials = [score_trial(r, plan) for r in records]
    last: dict[TrialKey, ScoredTrial] = {}
    for t in trials:
        rec = t.record
        why = None
        if rec.agent not in agents:
            why = f"agent {rec.agent!r} not in the plan"
        elif rec.case not in cases:
            why = f"case {rec.case!r} not in the dataset"
        elif rec.arm not in plan.arms:
            why = f"arm {rec.arm} was not part of this run"
        elif not 1 <= rec.attempt <= plan.n_attempts:
            why = f"attempt {rec.attempt} outside 1..{plan.n_attempts}"
        if why:
            t.counted = False
            t.notes.append(why)
            warnings.append(f"ignored {rec.agent}/{rec.arm}/{rec.case}/{rec.attempt}: {why}")
            continue
        key = rec.key
        if key in last:
            last[key].counted = False
            last[key].notes.append("duplicate; superseded by a later record")
            warnings.append(f"duplicate record for {rec.agent}/{rec.arm}/{rec.case}/{rec.attempt}; the last one counts")
        last[key] = t
    return trials, warnings


def _coverage(ran: Sequence[ScoredTrial], plan: RunPlan) -> Coverage:
    """The expected grid (stop_on_pass-aware) against what ran: missing trials and the cases they belong to."""
    by_key: dict[tuple[str, str], dict[str, list[ScoredTrial]]] = defaultdict(lambda: defaultdict(list))
    for t in ran:
        by_key[(t.record.agent, t.record.arm)][t.record.case].append(t)
    missing: list[str] = []
    missing_cases: set[str] = set()
    expected = 0
    for agent in plan.agents:
        for arm in plan.arms:
            for case in plan.cases:
                items = sorted(by_key[(agent, arm)].get(case, []), key=lambda t: t.record.attempt)
                need = required_attempts(items, plan)
                # Attempts that ran past a pass (xdist workers overlap) count as expected too: run <= expected.
                expected += max(need, len(items))
                have = {t.record.attempt for t in items}
                absent = [a for a in range(1, need + 1) if a not in have]
                missing += [f"{agent}/{arm}/{case}/{a}" for a in absent]
                if absent:
                    missing_cases.add(case)
    touched = {t.record.case for t in ran}
    planned_skips = set(plan.skipped_cases)
    skipped = [c for c in plan.cases if c not in touched or c in planned_skips]
    partial = [c for c in plan.cases if c in missing_cases and c not in skipped]
    complete = plan.selection_complete and not plan.interrupted and not missing and not plan.skipped_cases
    return Coverage(
        budget_stopped=plan.budget_stopped,
        publication_complete=complete,
        selection_complete=plan.selection_complete,
        interrupted=plan.interrupted,
        expected_trials=expected,
        run_trials=len(ran),
        scored_trials=sum(1 for t in ran if t.scored),
        missing_trials=missing,
        skipped_cases=skipped,
        partial_cases=partial,
        extra_cases=[],
    )


def _scope(agent: str, ran: Sequence[ScoredTrial], plan: RunPlan) -> list[str]:
    """Cases this agent is judged on: all of them, or under a partial selection the selected ones that ran."""
    if plan.selection_complete:
        return list(plan.cases)
    skipped = set(plan.skipped_cases)
    touched = {t.record.case for t in ran if t.record.agent == agent}
    return [c for c in plan.cases if c not in skipped and c in touched]


# ----------------------------------------------------------------------------------------------- public


def aggregate(records: Sequence[TrialRecord], plan: RunPlan) -> AggregateResult:
    """Everything the session reports, computed once from the records that ran and the plan that was expected."""
    trials, warnings = _prepare(records, plan)
    ran = [t for t in trials if t.ran]
    warnings += errored_checks_warnings((t.record.case, t.record.checks) for t in ran if t.counted)
    planned = set(plan.cases)  # once, not per trial: this loop runs over every record
    extra_cases = sorted({t.record.case for t in trials if t.record.case not in planned}, key=natural_key)
    calibration = "with_skill" not in plan.arms and "without_skill" in plan.arms

    agents: dict[str, AgentResult] = {}
    for agent in plan.agents:
        scope = _scope(agent, ran, plan)
        conds = {arm: build_condition(agent, arm, ran, scope, plan) for arm in ALL_ARMS}
        summaries = {arm: arm_summary(conds[arm], plan) for arm in ALL_ARMS}
        (ws, pass_w), (wos, pass_wo) = summaries["with_skill"], summaries["without_skill"]
        statuses = [c.status for c in conds.values()]
        if all(s == "skipped" for s in statuses):
            status = "skipped"
        elif "failed" in statuses:
            status = "failed"
        else:
            status = "succeeded"
        activation = agent_activation(agent, ran, plan)
        modes = {arm: {t.record.grading_mode for t in conds[arm].trials} for arm in ARMS}
        if modes["with_skill"] and modes["without_skill"] and modes["with_skill"] != modes["without_skill"]:
            warnings.append(f"{agent}: arms were graded differently ({modes})")

        lift = custom_lift = None
        omitted = None
        if activation.never_activated:
            omitted = "skill never activated (INCONCLUSIVE)"
        elif "skipped" in (conds["with_skill"].status, conds["without_skill"].status):
            omitted = "an arm was not run"
        elif conds["with_skill"].withheld or conds["without_skill"].withheld:
            omitted = "an LLM judge failed: that arm publishes no scores"
        else:
            lift, custom_lift = agent_lift(conds["with_skill"], conds["without_skill"], pass_w, pass_wo, ws, wos, plan)
        verdict, reason = agent_verdict(status, ws, activation.never_activated, plan)
        errors = [f"{arm}: {e}" for arm in ALL_ARMS for e in conds[arm].errors if conds[arm].status == "failed"]
        assertion_rates = case_assertion_rates(agent, trials, plan)
        edit = edit_lift(conds["with_skill"], conds["baseline_skill"], summaries, plan)
        if lift is not None or (
            plan.min_lift is not None and "skipped" not in (ws.execution_status, wos.execution_status)
        ):
            observed = lift.overall.delta if lift is not None else None
            edit["power"] = suggest_attempts(conds["with_skill"], conds["without_skill"], observed, plan.min_lift)
        agents[agent] = AgentResult(
            name=agent,
            model=plan.agent_models.get(agent),
            execution_status=status,  # type: ignore[arg-type]
            execution_errors=errors,
            expected_attempts=sum(c.expected_attempts for c in conds.values()),
            scored_attempts=sum(summary.scored_attempts for summary, _ in summaries.values()),
            verdict=verdict,
            verdict_reason=reason,
            inconclusive=activation.never_activated,
            inconclusive_reason="skill never activated" if activation.never_activated else None,
            activation=activation,
            with_skill=ws,
            without_skill=wos,
            lift=lift,
            custom_lift=custom_lift,
            lift_omitted_reason=omitted,
            resources=AgentResources(
                with_skill=ws.resources,
                without_skill=wos.resources,
                delta=resource_delta(conds["with_skill"], conds["without_skill"], ws.resources, wos.resources),
                **edit_resources(conds, summaries, plan),
            ),
            assertions=assertion_rates,
            **edit,
        )

    coverage = _coverage(ran, plan).model_copy(update={"extra_cases": extra_cases})
    agent_statuses = [a.execution_status for a in agents.values()]
    execution_errors = [f"{a.name}: {e}" for a in agents.values() for e in a.execution_errors]
    if plan.interrupted:
        execution_status = "interrupted"
    elif "failed" in agent_statuses or "succeeded" not in agent_statuses:
        execution_status = "failed"
        if "succeeded" not in agent_statuses and "failed" not in agent_statuses:
            execution_errors.append("no trials ran")
    else:
        execution_status = "succeeded"
    verdict, reason = top_verdict(execution_status, calibration, agents, plan.grading_mode)
    incomplete = incomplete_why(coverage)
    if incomplete == "interrupted" and execution_status == "interrupted":
        reason = f"publication-incomplete: {reason}"  # the reason already says the run was interrupted
    elif incomplete:
        reason = f"publication-incomplete ({incomplete}); {reason}"
    best = pick_best_agent(agents, calibration)
    overall_score = overall_lift = None
    if best is not None and execution_status == "succeeded":
        best_res = agents[best]
        overall_score = (best_res.without_skill if calibration else best_res.with_skill).overall
        overall_lift = best_res.lift.overall.delta if best_res.lift else None

    custom_only = plan.grading_mode == CUSTOM_ONLY
    return AggregateResult(
        skill_name=plan.skill,
        execution_status=execution_status,  # type: ignore[arg-type]
        execution_errors=execution_errors,
        verdict=verdict,
        verdict_reason=reason,
        baseline_calibration=calibration,
        grading_mode=plan.grading_mode,
        score_policy=CUSTOM_SCORE_POLICY if custom_only else SCORE_POLICY,
        verdict_policy=VerdictPolicy(attempt_pass_threshold=plan.pass_threshold),
        attempt_policy=AttemptPolicy(
            max_attempts=plan.n_attempts,
            pass_threshold=plan.pass_threshold,
            stop_on_pass=plan.stop_on_pass,
            score_definition=(
                "overall = user-provided reward overall"
                if custom_only
                else "overall = mean(security, correctness, discoverability, effectiveness, efficiency) over the "
                "scored dimensions; effectiveness = (goal_accuracy + behavior_check) / 2"
            ),
        ),
        evaluated_at=plan.evaluated_at or datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        evaluator_version=__version__,
        dataset_summary=plan.dataset_summary,
        dataset_digest=plan.dataset_digest,
        dataset_digest_algorithm=plan.dataset_digest_algorithm,
        run_config=plan.run_config,
        duration_seconds=r4(plan.duration_seconds),
        coverage=coverage,
        expected_attempts=sum(a.expected_attempts for a in agents.values()),
        scored_attempts=sum(a.scored_attempts for a in agents.values()),
        agents_run=[a for a, r in agents.items() if r.execution_status != "skipped"],
        best_agent=best,
        overall_score=overall_score,
        overall_lift=overall_lift,
        agents=agents,
        baseline_version=plan.baseline_version,
        comparison=agent_comparison(agents)
        if sum(a.execution_status != "skipped" for a in agents.values()) > 1
        else None,
        trials=[trial_entry(t) for t in trials],
        warnings=warnings,
        correctness_unmeasured=sorted(
            unmeasured_cases(
                [(t.record.case, t.record.grading_mode, t.metrics, t.custom, t.scored) for t in ran],
                judge_enabled=_judge_enabled(plan),
                cases_with_checks={t.record.case for t in ran if t.record.checks is not None}
                | planned_cases_with_checks(plan.dataset_snapshot),
            ),
            key=natural_key,
        ),
    )


def _judge_enabled(plan: RunPlan) -> bool:
    judge = plan.run_config.get("judge")
    return isinstance(judge, dict) and judge.get("enabled") is True
