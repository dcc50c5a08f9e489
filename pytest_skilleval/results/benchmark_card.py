"""BENCHMARK.md: the run as a card a skill's README can link to.

The card's rules: the verdict comes first, each result column is labelled `Baseline → Skill (Uplift)`, the
three tier states are shown, and the methodology sits in a collapsible `<details>` block. pytest-skilleval runs
Tier 3 (live agent evaluation) only, so Tiers 1 and 2 are stated as not run rather than left out. A card whose run
is not publication-complete says INCOMPLETE next to the verdict (the card-level verdict).

Rendered from result.json alone, so `skilleval view --render` can rebuild it. Case ids and agent names come from
the skill author: they are escaped for Markdown tables and inline HTML.
"""

from __future__ import annotations

import re

from pytest_skilleval.results.correctness import unmeasured_line
from pytest_skilleval.results.html_report import NA, interval, score, signed, verdict_headline
from pytest_skilleval.results.models import (
    DIMENSIONS,
    AgentResult,
    ArmResources,
    LiftStat,
    ResourceDelta,
    ResultDocument,
)
from pytest_skilleval.results.run_folder import REPORT_FILE, RunFolder
from pytest_skilleval.results.trials import total_of
from verifier.evidence import CHECKS_METRIC

__all__ = ["render_card"]

ARROW = "→"
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#])")


def md(text: str) -> str:
    """Text safe inside a Markdown table cell: no pipes, no HTML, no emphasis, one line."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def code(text: str) -> str:
    """An inline code span (backslash escapes do not work inside one, so backticks are dropped instead)."""
    return "`" + " ".join(str(text).replace("`", "'").split()) + "`"


def _cell(without: float | None, with_skill: float | None, lift: LiftStat | None) -> str:
    uplift = signed(lift.delta) if lift is not None and lift.delta is not None else NA
    return f"{score(without)} {ARROW} {score(with_skill)} ({uplift})"


def _tier3_state(doc: ResultDocument) -> str:
    if doc.execution_status != "succeeded":
        return f"{doc.execution_status.upper()}: {md(doc.verdict_reason)}"
    if not doc.coverage.publication_complete:
        return "INCOMPLETE: partial selection or missing attempts"
    return f"COMPLETED: verdict {doc.verdict.upper()}"


def _rows(agents: list[AgentResult]) -> list[str]:
    header = "| measure | " + " | ".join(f"{md(a.name)}: Baseline {ARROW} Skill (Uplift)" for a in agents) + " |"
    lines = [header, "| --- |" + " --- |" * len(agents)]
    for dim in DIMENSIONS:
        cells = [
            _cell(
                getattr(a.without_skill.dimensions, dim),
                getattr(a.with_skill.dimensions, dim),
                a.lift.dimensions.get(dim) if a.lift else None,
            )
            for a in agents
        ]
        lines.append(f"| {dim.capitalize()} | " + " | ".join(cells) + " |")
    cells = [_cell(a.without_skill.overall, a.with_skill.overall, a.lift.overall if a.lift else None) for a in agents]
    lines.append("| **Overall** | " + " | ".join(cells) + " |")
    pass_cells = []
    for a in agents:
        ws, wos = a.with_skill.pass_at_k, a.without_skill.pass_at_k
        lift = a.lift.pass_at_k.delta if a.lift else None
        pass_cells.append(
            f"{score(wos.rate if wos else None)} {ARROW} {score(ws.rate if ws else None)} ({signed(lift)})"
        )
    lines.append("| pass@k | " + " | ".join(pass_cells) + " |")
    lines += _checks_rows(agents)
    for name in sorted({n for a in agents for n in (*a.with_skill.custom_metrics, *a.without_skill.custom_metrics)}):
        cells = [
            _cell(
                a.without_skill.custom_metrics.get(name),
                a.with_skill.custom_metrics.get(name),
                (a.custom_lift or {}).get(name),
            )
            for a in agents
        ]
        lines.append(f"| custom: {md(name)} | " + " | ".join(cells) + " |")
    return lines


def _checks_rows(agents: list[AgentResult]) -> list[str]:
    """The case's own checks (correctness the author stated) and their pass@k, when any case has checks."""
    if all(
        a.with_skill.metrics.get(CHECKS_METRIC) is None and a.without_skill.metrics.get(CHECKS_METRIC) is None
        for a in agents
    ):
        return []
    cells = [
        _cell(
            a.without_skill.metrics.get(CHECKS_METRIC),
            a.with_skill.metrics.get(CHECKS_METRIC),
            a.lift.metrics.get(CHECKS_METRIC) if a.lift else None,
        )
        for a in agents
    ]
    rates = []
    for a in agents:
        ws, wos = a.with_skill.checks_pass_at_k, a.without_skill.checks_pass_at_k
        rates.append(f"{score(wos.rate if wos else None)} {ARROW} {score(ws.rate if ws else None)}")
    return ["| Checks | " + " | ".join(cells) + " |", "| Checks pass@k | " + " | ".join(rates) + " |"]


def _paired(n: int) -> str:
    return f"{n} paired case" + ("" if n == 1 else "s")


def _intervals(agents: list[AgentResult]) -> list[str]:
    lines = []
    for a in agents:
        if a.lift is None:
            lines.append(f"- {md(a.name)}: Skill Lift omitted ({md(a.lift_omitted_reason or 'not available')})")
            continue
        o = a.lift.overall
        ci = f"95% [{o.ci95[0]:+.4f}, {o.ci95[1]:+.4f}]" if o.ci95 else "no interval"
        few = " (fewer than 5 paired cases: insufficient)" if o.insufficient else ""
        lines.append(
            f"- {md(a.name)}: overall lift {signed(o.delta)}, {ci}, {_paired(o.n_pairs)}{few}; "
            f"verdict {a.verdict.upper()} ({md(a.verdict_reason)})"
        )
        checks = a.lift.metrics.get(CHECKS_METRIC)
        if checks is not None and checks.delta is not None:
            cci = f"95% [{checks.ci95[0]:+.4f}, {checks.ci95[1]:+.4f}]" if checks.ci95 else "no interval"
            lines.append(f"- {md(a.name)}: checks lift {signed(checks.delta)}, {cci}, {_paired(checks.n_pairs)}")
    return lines


def _triggering(doc: ResultDocument) -> list[str]:
    """The trigger set's metrics per agent (never part of the results table above)."""
    if not doc.triggering:
        return []

    def cell(value: float | None, interval: tuple[float, float] | None) -> str:
        if value is None:
            return "N/A"
        return f"{value:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")

    lines = ["## Triggering (evals/triggers.json)", "", "| agent | queries | precision | recall | F1 | accuracy |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for agent, m in doc.triggering.items():
        cells = [cell(getattr(m, name), m.intervals.get(name)) for name in ("precision", "recall", "f1", "accuracy")]
        scored = sum(1 for query in m.queries if query.trigger_rate is not None)
        lines.append(f"| {md(agent)} | {scored} | " + " | ".join(cells) + " |")
    for agent, m in doc.triggering.items():
        if m.missed:
            lines.append(f"- {md(agent)} missed: {', '.join(code(query) for query in m.missed)}")
        if m.false_triggers:
            lines.append(f"- {md(agent)} false triggers: {', '.join(code(query) for query in m.false_triggers)}")
    return [*lines, ""]


def _cost_lines(doc: ResultDocument, agents: list[AgentResult]) -> list[str]:
    """Each agent's cost per arm (USD), with the difference and its paired interval when both arms have one: the
    baseline (no skill) against the skill, then the previous version against the skill when that arm ran; the
    judges' cost on a line of its own."""
    version = md((doc.baseline_version or {}).get("label") or "the previous version")
    lines = []
    for a in agents:
        res = a.resources
        if not res.without_skill.n_trials and res.with_skill.cost_usd is not None:
            lines.append(f"- {md(a.name)}: cost USD {score(res.with_skill.cost_usd)} with the skill")
        elif res.with_skill.cost_usd is not None or res.without_skill.cost_usd is not None:
            lines.append(f"- {md(a.name)}: cost USD {_cost_pair(res.without_skill, res.with_skill, res.delta)}")
        if res.baseline_skill is not None and res.edit_delta is not None:
            if res.with_skill.cost_usd is not None or res.baseline_skill.cost_usd is not None:
                pair = _cost_pair(res.baseline_skill, res.with_skill, res.edit_delta)
                lines.append(f"- {md(a.name)}: cost USD against {version} {pair}")
        arms = [res.with_skill, res.without_skill, *([res.baseline_skill] if res.baseline_skill else [])]
        judged = [r.judge_cost_usd for r in arms if r.n_trials]
        if any(v is not None for v in judged):
            lines.append(f"- {md(a.name)}: judges' cost USD {score(total_of(judged))} (apart from the agents')")
    return lines


def _cost_pair(before: ArmResources, after: ArmResources, d: ResourceDelta) -> str:
    extra = f" ({signed(d.cost_usd)}, 95% {interval(d.cost_usd_ci95)})" if d.cost_usd is not None else ""
    return f"{score(before.cost_usd)} {ARROW} {score(after.cost_usd)}{extra}"


def _edit_lines(doc: ResultDocument, agents: list[AgentResult]) -> list[str]:
    """The edit under test against its previous version (--baseline-skill): one line per agent."""
    if not any(a.baseline_skill is not None for a in agents):
        return []
    version = md((doc.baseline_version or {}).get("label") or "the previous version")
    return [f"## Edit: this version against {version}", "", *(f"- {md(a.name)}: {_edit_text(a)}" for a in agents), ""]


def _edit_text(agent: AgentResult) -> str:
    if agent.edit_lift is None:
        return f"edit lift omitted ({md(agent.edit_lift_omitted_reason or 'not available')})"
    o, p = agent.edit_lift.overall, agent.edit_lift.mcnemar.p_value
    return (
        f"{score(o.without_skill)} {ARROW} {score(o.with_skill)} ({signed(o.delta)}), 95% {interval(o.ci95)}, "
        f"{o.n_pairs} paired cases, McNemar p={NA if p is None else f'{p:.4f}'}: **{agent.edit_verdict}**"
    )


def render_card(run: RunFolder) -> str:
    doc = run.document
    agents = list(doc.agents.values())
    cov = doc.coverage
    if run.trigger_only:  # no case trial: the trigger set's figures are the card
        alone = " (no case selected)" if run.cases_planned else ""
        head = [f"# {md(doc.skill_name)}: skill benchmark", "", f"**Trigger set only{alone}**: no case trial ran."]
        return "\n".join(
            [
                *head,
                "",
                *_triggering(doc),
                f"Run {code(doc.run_id)} on {md(doc.evaluated_at)}. Full report: [{REPORT_FILE}]({REPORT_FILE}).",
                "",
            ]
        )
    lines = [
        f"# {md(doc.skill_name)}: skill benchmark",
        "",
        f"**Verdict: {verdict_headline(doc)}**: {md(doc.verdict_reason)}",
        "",
        "| tier | state |",
        "| --- | --- |",
        "| Tier 1: static analysis | NOT RUN (outside pytest-skilleval) |",
        "| Tier 2: skill review | NOT RUN (outside pytest-skilleval) |",
        f"| Tier 3: live agent evaluation | {_tier3_state(doc)} |",
        "",
        f"## Results (Baseline {ARROW} Skill, Uplift in brackets)",
        "",
        *_rows(agents),
        "",
        "NO SCORE means not scored (never zero); N/A means the comparison could not be made.",
        "",
        *([f"**{md(unmeasured_line(doc.correctness_unmeasured))}**", ""] if doc.correctness_unmeasured else []),
        *_intervals(agents),
        *_cost_lines(doc, agents),
        "",
        *_triggering(doc),
        *_edit_lines(doc, agents),
        f"Run {code(doc.run_id)} on {md(doc.evaluated_at)}: {cov.run_trials}/{cov.expected_trials} trials run, "
        f"{cov.scored_trials} scored, {doc.attempt_policy.max_attempts} attempt(s) per case and arm, grading "
        f"{code(doc.grading_mode)}. Full report: [{REPORT_FILE}]({REPORT_FILE}).",
        "",
        "<details>",
        "<summary>Methodology</summary>",
        "",
        "- Every case runs with the skill installed and without it (the baseline), in an isolated sandbox per trial.",
        "- Each trial is graded on the host (security, skill execution, skill efficiency; LLM judges for correctness "
        "and effectiveness) and by the skill's own grader when the grading mode uses one.",
        f"- Trial overall: {md(doc.attempt_policy.score_definition)} (score policy {code(doc.score_policy)}).",
        "- Dimension bands: PASS >= 0.50, NEUTRAL >= 0.40, FAIL below. An agent passes only when every dimension "
        "passes; lift is diagnostic and never overrides the dimension gate.",
        "- Uplift: mean over paired cases of (with-skill case mean - baseline case mean); 95% interval by an expanded "
        "percentile paired bootstrap over cases (2000 resamples, fixed seed).",
        f"- pass@k: a case passes when one of its attempts passes: its overall, and the case's checks when it has "
        f"them, reach {doc.attempt_policy.pass_threshold:.2f}; a case with no scored attempt has not passed; pass@k "
        "uplift is the difference of the two arms' rates.",
        f"- Dataset {code(str(doc.dataset_summary.get('dataset') or 'none'))}"
        + (f", {md(doc.dataset_digest_algorithm or '')} {code(doc.dataset_digest)}." if doc.dataset_digest else "."),
        f"- pytest-skilleval {md(doc.plugin_version)}"
        + (f", Harbor {md(doc.harbor_version)}" if doc.harbor_version else "")
        + ".",
        "",
        "</details>",
        "",
    ]
    return "\n".join(lines)
