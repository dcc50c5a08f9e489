"""Terminal summary of an `AggregateResult`: plain lines that fit pytest's terminal width (80 columns and up).

Only renders; every number and verdict comes from the aggregate. Unscored cells read NO SCORE, unavailable
comparisons N/A, arms that were not run SKIPPED, so nothing missing is ever shown as 0. Rows that cannot score
in the run's grading mode (the standard evaluators and dimensions under custom_only, the judge evaluators without
a judge model) fold into one line saying why. It ends with where the results are and one suggested next step.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pytest_skilleval.results.correctness import unmeasured_line
from pytest_skilleval.results.guidance import gate_line, next_step
from pytest_skilleval.results.models import (
    DIMENSIONS,
    AgentResult,
    AggregateResult,
    ArmResources,
    ArmSummary,
    LiftSection,
    LiftStat,
    ResourceDelta,
    TrialEntry,
)
from pytest_skilleval.results.natural_order import natural_key
from pytest_skilleval.results.passk import estimators_text
from pytest_skilleval.results.summary_text import NA, SKIPPED, Columns, na, score, signed, wrap
from pytest_skilleval.results.trials import CUSTOM_ONLY
from pytest_skilleval.results.verdict import incomplete_why
from verifier.evidence import CHECKS_METRIC, JUDGE_METRICS, STANDARD_METRICS

__all__ = ["render_summary"]

MIN_WIDTH = 80  # the tables are laid out for 80 columns; prose wraps at the terminal's width when it is wider


def _arm_cell(arm: ArmSummary, value: float | None, band: str | None = None) -> str:
    if arm.execution_status == "skipped":
        return SKIPPED
    text = score(value)
    return f"{text} {band}" if band and value is not None else text


def _lift_band(stat: LiftStat | None) -> str:
    if stat is None or stat.delta is None:
        return NA
    return f"{signed(stat.delta)} {stat.band or ''}".rstrip()


def _unscored_why(res: AggregateResult, names: Sequence[str]) -> str:
    if res.grading_mode == CUSTOM_ONLY:
        return "custom_only grading runs only your grader"
    judge = res.run_config.get("judge")
    if isinstance(judge, dict) and judge.get("enabled") is False and set(names) <= set(JUDGE_METRICS):
        return "LLM judge not configured"
    return "no trial scored them"


def _evaluators(res: AggregateResult, agent: AgentResult, width: int) -> list[str]:
    ws, wos = agent.with_skill, agent.without_skill
    ran = [arm for arm in (ws, wos) if arm.execution_status != "skipped"]
    customs = sorted(set(ws.custom_metrics) | set(wos.custom_metrics))
    shown = [m for m in STANDARD_METRICS if any(arm.metrics.get(m) is not None for arm in ran) or not ran]
    hidden = [m for m in STANDARD_METRICS if m not in shown]
    if any(arm.metrics.get(CHECKS_METRIC) is not None for arm in ran):
        shown.append(CHECKS_METRIC)
    cols = Columns(width, (14, 15, 15), [*shown, *(f"custom: {c}" for c in customs)])
    lines = ["Results by Evaluator", *cols.row("evaluator", "with skill", "without skill", "lift")]
    lift = agent.lift
    for metric in shown:
        stat = lift.metrics.get(metric) if lift else None
        lines += cols.row(
            metric, _arm_cell(ws, ws.metrics.get(metric)), _arm_cell(wos, wos.metrics.get(metric)), _lift_band(stat)
        )
    for name in customs:
        stat = agent.custom_lift.get(name) if agent.custom_lift else None
        lines += cols.row(
            f"custom: {name}",
            _arm_cell(ws, ws.custom_metrics.get(name)),
            _arm_cell(wos, wos.custom_metrics.get(name)),
            _lift_band(stat),
        )
    if hidden:
        lines += wrap(f"NO SCORE ({_unscored_why(res, hidden)}): {', '.join(hidden)}", width, "  ")
    return lines


def _partial_overall(arm: ArmSummary, width: int) -> list[str]:
    """A note when the overall averages fewer than five dimensions (e.g. judges not configured)."""
    if arm.overall is None:
        return []
    scored = [d for d in DIMENSIONS if getattr(arm.dimensions, d) is not None]
    missing = [d for d in DIMENSIONS if d not in scored]
    if not missing or not scored:
        return []
    return wrap(
        f"Overall is partial: mean of {len(scored)} of 5 dimensions (NO SCORE: {', '.join(missing)})", width, "  "
    )


def _dimensions(res: AggregateResult, agent: AgentResult, width: int) -> list[str]:
    ws, wos = agent.with_skill, agent.without_skill
    cols = Columns(width, (16, 16), [], minimum=18)
    lines = ["Results by Dimension", *cols.row("dimension", "with skill", "without skill")]
    if res.grading_mode == CUSTOM_ONLY:
        lines += cols.row("Overall", _arm_cell(ws, ws.overall), _arm_cell(wos, wos.overall))
        lines += wrap(
            "The five dimensions read NO SCORE under custom_only grading: Overall is your grader's overall.",
            width,
            "  ",
        )
        return lines
    for dim in DIMENSIONS:
        lines += cols.row(
            dim.capitalize(),
            _arm_cell(ws, getattr(ws.dimensions, dim), getattr(ws.dimension_bands, dim)),
            _arm_cell(wos, getattr(wos.dimensions, dim), getattr(wos.dimension_bands, dim)),
        )
    lines += cols.row("Overall", _arm_cell(ws, ws.overall), _arm_cell(wos, wos.overall))
    lines += _checks_row(agent, cols)
    return lines + _partial_overall(ws if ws.execution_status != "skipped" else wos, width)


def _checks_row(agent: AgentResult, cols: Columns) -> list[str]:
    """The case's own checks, the correctness an author stated (their own row: they are not a dimension)."""
    ws, wos = agent.with_skill, agent.without_skill
    if ws.metrics.get(CHECKS_METRIC) is None and wos.metrics.get(CHECKS_METRIC) is None:
        return []
    return cols.row(
        "Checks", _arm_cell(ws, ws.metrics.get(CHECKS_METRIC)), _arm_cell(wos, wos.metrics.get(CHECKS_METRIC))
    )


def _lift_cells(stat: LiftStat | None) -> tuple[str, ...]:
    if stat is None or stat.delta is None:
        return (NA,)
    ci = f"[{stat.ci95[0]:+.4f}, {stat.ci95[1]:+.4f}]" if stat.ci95 else "no CI"
    return signed(stat.delta), ci, f"{stat.n_pairs}{'!' if stat.insufficient else ''}", stat.band or ""


def _lift(res: AggregateResult, agent: AgentResult, width: int) -> list[str]:
    head = "Skill Lift (with skill - without skill, paired by case)"
    return _lift_table(res, agent.lift, head, agent.lift_omitted_reason, width)


def _power(agent: AgentResult, width: int) -> list[str]:
    """How many attempts would detect the lift (observed, or --min-lift) at 80% power, from this run's spread; when
    no number of attempts can, how many cases would (the line then starts "Cases for", not "Attempts for")."""
    p = agent.power
    if p is None or p.target_lift is None:
        return []
    target = f"80% power to detect a lift of {p.target_lift:.4f} ({p.target_source.replace('_', '-')})"
    if p.suggested_attempts is not None:
        text = (
            f"Attempts for {target} over {p.n_cases} cases: {p.suggested_attempts} attempts per case and arm "
            f"(now {p.attempts_now})"
        )
    elif p.cases_needed is not None:  # attempts cannot get there (or their spread is unknown): a count of cases
        text = f"Cases for {target}: about {p.cases_needed} cases (now {p.n_cases})"
    else:
        text = f"Attempts for {target}: not estimable"
    return wrap(text + (f"; {p.note}" if p.note else ""), width, "  ")


def _edit_lift(res: AggregateResult, agent: AgentResult, width: int) -> list[str]:
    """with skill minus the previous version (--baseline-skill), as Skill Lift is shown, with the edit's verdict."""
    if agent.baseline_skill is None:
        return []
    version = (res.baseline_version or {}).get("label") or "baseline skill"
    head = f"Edit lift (with skill - baseline skill {version}, paired by case)"
    lines = ["", *_lift_table(res, agent.edit_lift, head, agent.edit_lift_omitted_reason, width)]
    if agent.edit_lift is not None:
        mc, overall = agent.edit_lift.mcnemar, agent.edit_lift.overall
        p = "N/A" if mc.p_value is None else f"{mc.p_value:.4f}"
        lines += wrap(
            f"Overall over the paired cases: with skill {score(overall.with_skill)}, baseline skill "
            f"{score(overall.without_skill)}",
            width,
            "  ",
        )
        lines += wrap(
            f"McNemar: passes only with skill {mc.only_with_skill}, only baseline {mc.only_without_skill}, p={p}",
            width,
            "  ",
        )
        lines += wrap(f"Edit verdict: {agent.edit_verdict} (from the overall lift's 95% interval)", width, "  ")
    return lines


def _lift_table(
    res: AggregateResult, lift: LiftSection | None, head: str, omitted: str | None, width: int
) -> list[str]:
    if lift is None:
        why = omitted or "no paired cases"
        return wrap(f"{head}: omitted, {why}", width)
    cols = Columns(width, (10, 20, 7, 8), [], minimum=18)
    lines = [head, *cols.row("dimension", "lift", "95% CI", "pairs", "band")]
    custom_only = res.grading_mode == CUSTOM_ONLY
    for dim in () if custom_only else DIMENSIONS:
        lines += cols.row(dim.capitalize(), *_lift_cells(lift.dimensions.get(dim)))
    lines += cols.row("Overall", *_lift_cells(lift.overall))
    checks = lift.metrics.get(CHECKS_METRIC)
    if checks is not None and checks.delta is not None:
        lines += cols.row("Checks", *_lift_cells(checks))
    if not custom_only:
        lines += cols.row("Outcome*", *_lift_cells(lift.outcome))
        lines.append(f"  * {lift.outcome_label}")
    shown = (lift.overall, lift.outcome, *lift.dimensions.values())
    if any(st.insufficient and st.delta is not None for st in shown):
        lines.append("  ! fewer than 5 paired cases: insufficient for a firm conclusion")
    mixed = lift.judge_mixed_cases.get("any", 0)
    if mixed:
        lines += wrap(f"{mixed} case(s) judged by more than one model; left out of judge-metric lifts", width, "  ")
    return lines


def condition_pass_at_k(agent: AgentResult, width: int) -> list[str]:
    ws, wos = agent.with_skill, agent.without_skill
    pk = ws.pass_at_k or wos.pass_at_k
    if pk is None:
        return ["pass@k: N/A"]
    cols = Columns(width, (17, 30), [], minimum=18)
    lines = [f"pass@k (k={pk.k}, threshold {pk.pass_threshold:.2f})"]
    for label, arm in (("with skill", ws), ("without skill", wos)):
        p = arm.pass_at_k
        if p is None:
            lines += cols.row(label, SKIPPED)
            continue
        ci = f"95% [{p.wilson95[0]:.4f}, {p.wilson95[1]:.4f}]" if p.wilson95 else ""
        rate = score(p.rate) if p.rate is not None else NA
        lines += cols.row(label, f"{rate} ({p.passed_cases}/{p.total_cases})", ci)
        estimators = estimators_text(p)
        if estimators:
            lines += wrap(estimators, width, "    ")
    for label, arm in (("checks, with", ws), ("checks, without", wos)):
        c = arm.checks_pass_at_k
        if c is not None:
            ci = f"95% [{c.wilson95[0]:.4f}, {c.wilson95[1]:.4f}]" if c.wilson95 else ""
            lines += cols.row(label, f"{na(c.rate)} ({c.passed_cases}/{c.total_cases})", ci)
    if agent.lift is not None:
        pl = agent.lift.pass_at_k
        p_text = NA if pl.mcnemar_p is None else f"{pl.mcnemar_p:.4f}"
        lines += cols.row("lift", signed(pl.delta), f"McNemar exact p = {p_text}")
    return lines


def _int(value: int | None, signed_: bool = False) -> str:
    if value is None:
        return NA
    return f"{int(value):+,}" if signed_ else f"{int(value):,}"


def _seconds(value: float | None, signed_: bool = False) -> str:
    if value is None:
        return NA
    return f"{value:+,.1f}" if signed_ else f"{value:,.1f}"


def _resources(res: AggregateResult, agent: AgentResult, width: int) -> list[str]:
    """Resources per arm with the delta against without skill, and against the previous version when it ran."""
    r = agent.resources
    ws_skipped = agent.with_skill.execution_status == "skipped"
    lines = _resource_table(
        "Resources (observed; cache tokens are inside prompt)",
        ("without skill", r.without_skill, agent.without_skill.execution_status == "skipped"),
        (r.with_skill, ws_skipped),
        r.delta,
        width,
    )
    if r.baseline_skill is not None and r.edit_delta is not None and agent.baseline_skill is not None:
        version = (res.baseline_version or {}).get("label") or "baseline skill"
        other = ("baseline skill", r.baseline_skill, agent.baseline_skill.execution_status == "skipped")
        head = f"Resources against the baseline skill {version}"
        lines += ["", *_resource_table(head, other, (r.with_skill, ws_skipped), r.edit_delta, width)]
    return lines


def _resource_table(
    head: str,
    other: tuple[str, ArmResources, bool],
    with_skill: tuple[ArmResources, bool],
    d: ResourceDelta,
    width: int,
) -> list[str]:
    """One table: with skill, another arm (label, totals, skipped) and with skill minus that arm."""
    (w, ws_skipped), (label, o, o_skipped) = with_skill, other
    cols = Columns(width, (14, 15, 15), [])
    lines = [head, *cols.row("measure", "with skill", label, "delta")]
    lines += cols.row(
        "tokens (prompt+output)",
        SKIPPED if ws_skipped else _int(w.total_tokens),
        SKIPPED if o_skipped else _int(o.total_tokens),
        _int(d.total_tokens, signed_=True) if d.available else NA,
    )
    lines += cols.row(
        "agent seconds",
        SKIPPED if ws_skipped else _seconds(w.agent_seconds),
        SKIPPED if o_skipped else _seconds(o.agent_seconds),
        _seconds(d.agent_seconds, signed_=True) if d.available else NA,
    )
    lines += cols.row(
        "cost (USD)",
        SKIPPED if ws_skipped else na(w.cost_usd),
        SKIPPED if o_skipped else na(o.cost_usd),
        _cost_delta_cell(d),
    )
    if w.judge_cost_usd is not None or o.judge_cost_usd is not None:
        lines += cols.row(
            "judges' cost (USD)",
            SKIPPED if ws_skipped else na(w.judge_cost_usd),
            SKIPPED if o_skipped else na(o.judge_cost_usd),
            "",
        )
    if not d.available and d.reason:
        lines += wrap(f"delta N/A: {d.reason}", width, "  ")
    return lines


def _cost_delta_cell(d: ResourceDelta) -> str:
    if not d.available or d.cost_usd is None:
        return NA
    ci = f" [{d.cost_usd_ci95[0]:+.4f}, {d.cost_usd_ci95[1]:+.4f}]" if d.cost_usd_ci95 else ""
    return f"{d.cost_usd:+.4f}{ci}"


def _agent_block(res: AggregateResult, agent: AgentResult, width: int) -> list[str]:
    model = f" ({agent.model})" if agent.model else ""
    lines = ["", f" {agent.name}{model}: {agent.verdict.upper()} ".center(width, "-")[:width]]
    lines += wrap(f"verdict {agent.verdict.upper()}: {agent.verdict_reason}; execution {agent.execution_status}", width)
    for err in agent.execution_errors:
        lines += wrap(f"! {err}", width, "  ")
    lines += ["", *_evaluators(res, agent, width), "", *_dimensions(res, agent, width)]
    lines += ["", *_lift(res, agent, width), *_power(agent, width), *_edit_lift(res, agent, width)]
    lines += ["", *condition_pass_at_k(agent, width)]
    return lines + ["", *_resources(res, agent, width)]


def _pytest_outcome(trial: TrialEntry) -> str:
    """The word pytest printed for this trial's item: a baseline item passes whatever it scores."""
    if trial.status != "scored":
        return "error"
    if trial.arm in ("without_skill", "baseline_skill"):
        return "passed"
    return "passed" if trial.passed else "failed"


def _outcomes(trials: Sequence[TrialEntry]) -> str:
    counts = Counter(_pytest_outcome(t) for t in trials)
    return ", ".join(f"{counts[word]} {word}" for word in ("failed", "passed", "error") if counts[word])


def _case_rows(res: AggregateResult, width: int) -> list[str]:
    """Per case x agent x arm: mean overall, attempts that met the pass rule (a mean at the threshold can still
    count 0 when the case's checks failed), and the outcome words pytest printed."""
    groups: dict[tuple[str, str, str], list[TrialEntry]] = {}
    for trial in res.trials:
        if trial.counted and trial.status != "skipped":
            groups.setdefault(trial.key.condition, []).append(trial)
    if not groups:
        return []
    threshold = f"{res.attempt_policy.pass_threshold:.2f}"
    agents = sorted({agent for _, agent, _ in groups})
    agent_col = (max(len(a) for a in agents) + 2,) if len(agents) > 1 else ()
    outcome_col = max(len(_outcomes(trials)) for trials in groups.values())  # the words are never cut either
    cols = Columns(width, (*agent_col, 15, 9, 8, max(outcome_col, 8)), [case for case, _, _ in groups], minimum=14)
    lines = ["", "Results by Case"]
    lines += cols.row("case", *(("agent",) if agent_col else ()), "arm", "mean", "passed", "pytest")
    baseline_below = False
    for (case, agent, arm), trials in sorted(groups.items(), key=lambda kv: (natural_key(kv[0][0]), kv[0][1:])):
        scored = [t.overall for t in trials if t.overall is not None]
        mean = score(math.fsum(scored) / len(scored)) if scored else score(None)
        reached = sum(1 for t in trials if t.passed)
        baseline_below |= arm == "without_skill" and reached < len(trials)
        lines += cols.row(
            case,
            *((agent,) if agent_col else ()),
            arm.replace("_", " "),
            mean,
            f"{reached}/{len(trials)}",
            _outcomes(trials),
        )
    legend = (
        f"mean: mean overall; passed: attempts that met the pass rule (overall and every correctness gate, "
        f"such as the case's checks, at or above {threshold}); pytest: the outcome pytest printed for those items"
    )
    if len(agents) == 1:
        legend += f"; agent: {agents[0]}"
    lines += wrap(legend, width, "  ")
    negatives = sorted({case for (case, _, _), trials in groups.items() if trials[0].negative_control}, key=natural_key)
    if negatives:  # a pass there means the skill was left unused, which the row alone does not say
        noun = "control" if len(negatives) == 1 else "controls"
        lines += wrap(
            f"Negative {noun} (passes when the agent leaves the skill unused): {', '.join(negatives)}", width, "  "
        )
    if baseline_below:
        lines += wrap(
            "A without-skill (baseline) item passes in pytest whatever it scores: the baseline is "
            "measured, never gated.",
            width,
            "  ",
        )
    return lines


def _header(res: AggregateResult, width: int) -> list[str]:
    cov = res.coverage
    lines = [f" skilleval: {res.skill_name} ".center(width, "=")[:width]]
    lines += wrap(f"Verdict: {res.verdict.upper()} -- {res.verdict_reason}", width)
    lines += wrap(
        f"Execution: {res.execution_status}; {cov.run_trials}/{cov.expected_trials} trials run, "
        f"{cov.scored_trials} scored",
        width,
    )
    lines += wrap(f"Grading: {res.grading_mode}; score policy {res.score_policy}", width)
    if res.run_config.get("sandbox") == "none":
        lines += wrap(
            "Sandbox: NONE (--ek sandbox=none): agent and grader commands ran on this host without isolation", width
        )
    if res.baseline_calibration:
        lines += wrap("Baseline calibration (--skip-with-skill): with-skill scores and Skill Lift are N/A", width)
    if not cov.publication_complete:
        what = f"cases not run: {', '.join(cov.skipped_cases)}" if cov.skipped_cases else incomplete_why(cov)
        lines += wrap(f"PUBLICATION-INCOMPLETE: {what}", width)
    for warning in res.warnings[:5]:
        lines += wrap(f"warning: {warning}", width)
    if len(res.warnings) > 5:
        lines.append(f"warning: ... and {len(res.warnings) - 5} more (see result.json)")
    return lines


def _footer(
    res: AggregateResult,
    width: int,
    results_path: str | None,
    report_path: str | None,
    card_path: str | None,
    report_error: str | None,
    gate: str | None,
    jobs_path: str | None = None,
) -> list[str]:
    lines = [""]
    if res.best_agent and res.overall_score is None and res.execution_status != "succeeded":
        # result.json gives no run-level score unless execution succeeded; the tables above still show the agent's.
        lines += wrap(
            f"Best agent: {res.best_agent}, of the trials that ran; no run-level overall or lift: execution "
            f"{res.execution_status}",
            width,
        )
    elif res.best_agent:
        lines += wrap(
            f"Best agent: {res.best_agent}; overall {score(res.overall_score)}; lift {signed(res.overall_lift)}", width
        )
    if res.correctness_unmeasured:
        lines += wrap(unmeasured_line(res.correctness_unmeasured), width)
    lines.append(f"Overall verdict: {res.verdict.upper()}")
    if gate:
        lines += wrap(gate, width)
    lines.append(f"Results: {results_path}" if results_path else "Results: not written")
    if report_error:
        lines += wrap(f"Report: not written ({report_error})", width)
    if report_path:
        lines.append(f"Report: {report_path}")
    if card_path:
        lines.append(f"Card:   {card_path}")
    if jobs_path:
        lines.append(f"Jobs:   {jobs_path}")
        lines += wrap(
            f"  Harbor's trial folders, kept (--harbor-keep-jobs); browse them: skilleval harbor-view {jobs_path}",
            width,
        )
    run_id = Path(results_path).parent.name if results_path else None
    return lines + wrap(f"Next: {next_step(res, report_path, run_id)}", width)


def render_summary(
    aggregate: AggregateResult,
    results_path: str | None,
    width: int = MIN_WIDTH,
    *,
    report_path: str | None = None,
    card_path: str | None = None,
    report_error: str | None = None,
    block_on_agent_eval: bool = False,
    pytest_status: int | None = None,
    jobs_path: str | None = None,
) -> list[str]:
    """The session summary as lines (no trailing newlines).

    `width` is the terminal's (pytest's terminalreporter); below 80 the tables still take 80. Every line fits
    `max(width, 80)` except one holding a path. It ends with the results, the report's path and one next step.
    """
    width = max(width, MIN_WIDTH)
    res = aggregate
    lines = _header(res, width) + _case_rows(res, width)
    for agent in res.agents.values():
        lines += _agent_block(res, agent, width)
    gate = gate_line(res, block_on_agent_eval, pytest_status)
    lines += _footer(res, width, results_path, report_path, card_path, report_error, gate, jobs_path)
    return [line.rstrip() for line in lines]
