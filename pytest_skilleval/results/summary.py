"""Terminal summary of an `AggregateResult`: plain lines, readable at 100 columns, no colour codes.

Only renders; every number and verdict comes from the aggregate. Unscored cells read NO SCORE, unavailable
comparisons N/A, arms that were not run SKIPPED, so nothing missing is ever shown as 0.
"""

from __future__ import annotations

import math
import textwrap

from verifier.evidence import STANDARD_METRICS

from pytest_skilleval.results.models import DIMENSIONS, AgentResult, AggregateResult, ArmSummary, LiftStat

__all__ = ["render_summary"]

NO_SCORE = "NO SCORE"
NA = "N/A"
SKIPPED = "SKIPPED"

_LABEL = 26
_CELL = 17


def _score(value: float | None) -> str:
    return NO_SCORE if value is None else f"{value:.4f}"


def _na(value: float | None) -> str:
    return NA if value is None else f"{value:.4f}"


def _signed(value: float | None) -> str:
    return NA if value is None else f"{value:+.4f}"


def _int(value: int | None, signed: bool = False) -> str:
    if value is None:
        return NA
    return f"{int(value):+,}" if signed else f"{int(value):,}"


def _seconds(value: float | None, signed: bool = False) -> str:
    if value is None:
        return NA
    return f"{value:+,.1f}" if signed else f"{value:,.1f}"


def _arm_cell(arm: ArmSummary, value: float | None, band: str | None = None) -> str:
    if arm.execution_status == "skipped":
        return SKIPPED
    text = _score(value)
    return f"{text} {band}" if band and value is not None else text


def _lift_cell(stat: LiftStat | None, with_ci: bool) -> str:
    if stat is None or stat.delta is None:
        return NA
    text = _signed(stat.delta)
    if with_ci:
        ci = f"[{stat.ci95[0]:+.4f}, {stat.ci95[1]:+.4f}]" if stat.ci95 else "[no CI]"
        text = f"{text} {ci}"
    return text


def _lift_tail(stat: LiftStat | None) -> str:
    """`n=<pairs>[!] <BAND>`; the `!` marks fewer than 5 paired cases (insufficient)."""
    if stat is None or stat.delta is None:
        return ""
    flag = "!" if stat.insufficient else ""
    return f"n={stat.n_pairs}{flag} {stat.band or ''}".rstrip()


def _row(label: str, *cells: str, widths: tuple[int, ...] | None = None) -> str:
    widths = widths or (_CELL,) * len(cells)
    parts = [f"  {label:<{_LABEL - 2}}"] + [f"{c:<{w}}" for c, w in zip(cells, widths, strict=False)]
    return "".join(parts).rstrip()


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + "  ") or [indent]


def _evaluators(agent: AgentResult) -> list[str]:
    ws, wos, lift = agent.with_skill, agent.without_skill, agent.lift
    lines = ["Results by Evaluator", _row("evaluator", "with skill", "without skill", "lift")]
    for metric in STANDARD_METRICS:
        stat = lift.metrics.get(metric) if lift else None
        lines.append(
            _row(
                metric,
                _arm_cell(ws, ws.metrics.get(metric)),
                _arm_cell(wos, wos.metrics.get(metric)),
                f"{_lift_cell(stat, False)} {stat.band if stat and stat.band else ''}".rstrip(),
            )
        )
    customs = sorted(set(ws.custom_metrics) | set(wos.custom_metrics))
    for name in customs:
        stat = agent.custom_lift.get(name) if agent.custom_lift else None
        lines.append(
            _row(
                f"custom: {name}"[: _LABEL - 3],
                _arm_cell(ws, ws.custom_metrics.get(name)),
                _arm_cell(wos, wos.custom_metrics.get(name)),
                f"{_lift_cell(stat, False)} {stat.band if stat and stat.band else ''}".rstrip(),
            )
        )
    return lines


def _partial_overall(arm: ArmSummary) -> list[str]:
    """A note when the overall averages fewer than five dimensions (e.g. judges not configured)."""
    if arm.overall is None:
        return []
    scored = [d for d in DIMENSIONS if getattr(arm.dimensions, d) is not None]
    missing = [d for d in DIMENSIONS if d not in scored]
    if not missing or not scored:
        return []
    return [f"  Overall is partial: mean of {len(scored)} of 5 dimensions (NO SCORE: {', '.join(missing)})"]


def _dimensions(agent: AgentResult) -> list[str]:
    ws, wos, lift = agent.with_skill, agent.without_skill, agent.lift
    widths = (_CELL, _CELL, 27, 13)
    header = _row("dimension", "with skill", "without skill", "lift [95% CI]", "n, band", widths=widths)
    lines = ["Results by Dimension", header]
    for dim in DIMENSIONS:
        stat = lift.dimensions.get(dim) if lift else None
        lines.append(
            _row(
                dim.capitalize(),
                _arm_cell(ws, getattr(ws.dimensions, dim), getattr(ws.dimension_bands, dim)),
                _arm_cell(wos, getattr(wos.dimensions, dim), getattr(wos.dimension_bands, dim)),
                _lift_cell(stat, True),
                _lift_tail(stat),
                widths=widths,
            )
        )
    overall = lift.overall if lift else None
    lines.append(
        _row("Overall", _arm_cell(ws, ws.overall), _arm_cell(wos, wos.overall), _lift_cell(overall, True),
             _lift_tail(overall), widths=widths)
    )
    lines.extend(_partial_overall(ws if ws.execution_status != "skipped" else wos))
    if lift is not None:
        lines.append(
            _row("Outcome lift*", "", "", _lift_cell(lift.outcome, True), _lift_tail(lift.outcome), widths=widths)
        )
        lines.append(f"  * {lift.outcome_label}")
        shown = (lift.overall, lift.outcome, *lift.dimensions.values())
        if any(st.insufficient and st.delta is not None for st in shown):
            lines.append("  ! fewer than 5 paired cases: insufficient for a firm conclusion")
        mixed = lift.judge_mixed_cases.get("any", 0)
        if mixed:
            lines.append(f"  {mixed} case(s) judged by more than one model; left out of judge-metric lifts")
    elif agent.lift_omitted_reason:
        lines.append(f"  Skill Lift omitted: {agent.lift_omitted_reason}")
    return lines


def condition_pass_at_k(agent: AgentResult, width: int) -> list[str]:
    ws, wos = agent.with_skill, agent.without_skill
    pk = ws.pass_at_k or wos.pass_at_k
    if pk is None:
        return ["pass@k: N/A"]
    lines = [f"pass@k (k={pk.k}, threshold {pk.pass_threshold:.2f})"]
    for label, arm in (("with skill", ws), ("without skill", wos)):
        p = arm.pass_at_k
        if p is None:
            lines.append(_row(label, SKIPPED))
            continue
        ci = f"95% [{p.wilson95[0]:.4f}, {p.wilson95[1]:.4f}]" if p.wilson95 else ""
        rate = _score(p.rate) if p.rate is not None else NA
        lines.append(_row(label, f"{rate} ({p.passed_cases}/{p.total_cases})", ci, widths=(_CELL, 30)))
        if p.unbiased and any(v is not None for v in p.unbiased.values()):
            est = "  ".join(f"@{k} {_na(v)}/{_na(p.pass_hat_k.get(k))}" for k, v in p.unbiased.items())
            lines += _wrap(f"unbiased pass@k / pass^k: {est}", width, "    ")
        elif p.estimator_note:
            lines += _wrap(p.estimator_note, width, "    ")
    if agent.lift is not None:
        pl = agent.lift.pass_at_k
        p_text = NA if pl.mcnemar_p is None else f"{pl.mcnemar_p:.4f}"
        lines.append(_row("lift", _signed(pl.delta), f"McNemar exact p = {p_text}", widths=(_CELL, 30)))
    return lines


def _resources(agent: AgentResult) -> list[str]:
    res = agent.resources
    w, wo, d = res.with_skill, res.without_skill, res.delta
    ws_skipped = agent.with_skill.execution_status == "skipped"
    wos_skipped = agent.without_skill.execution_status == "skipped"

    def cell(value: int | None, skipped: bool) -> str:
        return SKIPPED if skipped else _int(value)

    delta_tokens = _int(d.total_tokens, signed=True) if d.available else NA
    delta_seconds = _seconds(d.agent_seconds, signed=True) if d.available else NA
    lines = [
        "Resources (observed; cache tokens are inside prompt)",
        _row("measure", "with skill", "without skill", "delta"),
        _row("tokens (prompt+output)", cell(w.total_tokens, ws_skipped), cell(wo.total_tokens, wos_skipped),
             delta_tokens),
        _row(
            "agent seconds",
            SKIPPED if ws_skipped else _seconds(w.agent_seconds),
            SKIPPED if wos_skipped else _seconds(wo.agent_seconds),
            delta_seconds,
        ),
    ]
    if not d.available and d.reason:
        lines.append(f"  delta N/A: {d.reason}")
    return lines


def _agent_block(agent: AgentResult, width: int) -> list[str]:
    model = f" ({agent.model})" if agent.model else ""
    head = f" {agent.name}{model}: {agent.verdict.upper()} "
    lines = ["", head.center(width, "-")[:width]]
    verdict = f"verdict {agent.verdict.upper()}: {agent.verdict_reason}; execution {agent.execution_status}"
    lines += _wrap(verdict, width)
    for err in agent.execution_errors:
        lines += _wrap(f"! {err}", width, "  ")
    lines += [""] + _evaluators(agent) + [""] + _dimensions(agent) + [""] + condition_pass_at_k(agent, width)
    lines += [""] + _resources(agent)
    return lines


def _case_rows(res: AggregateResult) -> list[str]:
    """One row per case x agent x arm: mean scored overall and passed attempts, as the author scans them first."""
    groups: dict[tuple[str, str, str], list] = {}
    for trial in res.trials:
        if trial.counted and trial.status != "skipped":
            groups.setdefault((trial.case, trial.agent, trial.arm), []).append(trial)
    if not groups:
        return []
    def row(*cells: str) -> str:
        return f"  {cells[0]:<36}{cells[1]:<18}{cells[2]:<16}{cells[3]:<10}{cells[4]}".rstrip()

    lines = ["", "Results by Case", row("case", "agent", "arm", "mean", "passed")]
    for (case, agent, arm), trials in sorted(groups.items()):
        scored = [t.overall for t in trials if t.overall is not None]
        mean = _score(math.fsum(scored) / len(scored)) if scored else NO_SCORE
        passed = f"{sum(1 for t in trials if t.passed)}/{len(trials)}"
        lines.append(row(case[:35], agent[:17], arm, mean, passed))
    return lines


def render_summary(aggregate: AggregateResult, results_path: str | None, width: int = 100) -> list[str]:
    """The session summary as lines (no trailing newlines), each at most `width` columns except a long path."""
    res = aggregate
    lines = [f" skilleval: {res.skill_name} ".center(width, "=")[:width]]
    lines += _wrap(f"Verdict: {res.verdict.upper()} ({res.verdict_reason})", width)
    cov = res.coverage
    lines += _wrap(
        f"Execution: {res.execution_status}; {cov.run_trials}/{cov.expected_trials} trials run, "
        f"{cov.scored_trials} scored; grading {res.grading_mode}; score policy {res.score_policy}",
        width,
    )
    if res.run_config.get("sandbox") == "none":
        lines += _wrap("Sandbox: NONE (--ek sandbox=none): agent and grader commands ran on this host without "
                       "isolation", width)
    if res.baseline_calibration:
        lines += _wrap("Baseline calibration (--skip-with-skill): with-skill scores and Skill Lift are N/A", width)
    if not cov.publication_complete:
        skipped = ", ".join(cov.skipped_cases) if cov.skipped_cases else "none listed"
        note = f"PUBLICATION-INCOMPLETE: partial selection or missing attempts; skipped cases: {skipped}"
        lines += _wrap(note, width)
    for warning in res.warnings[:5]:
        lines += _wrap(f"warning: {warning}", width)
    if len(res.warnings) > 5:
        lines.append(f"warning: ... and {len(res.warnings) - 5} more (see result.json)")
    lines += _case_rows(res)
    for agent in res.agents.values():
        lines += _agent_block(agent, width)
    lines.append("")
    if res.best_agent:
        best = f"Best agent: {res.best_agent}; overall {_score(res.overall_score)}; lift {_signed(res.overall_lift)}"
        lines += _wrap(best, width)
    lines.append(f"Overall verdict: {res.verdict.upper()}")
    if results_path:
        lines.append("Results:")
        lines.append(f"  {results_path}")
    else:
        lines.append("Results: not written")
    return [line.rstrip() for line in lines]
