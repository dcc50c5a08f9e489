"""report.html: one self-contained page per run, rendered from the run folder alone.

Verdict first, then per agent: dimensions with bands, a with-vs-without chart per case, a forest plot of the lift
with its 95% interval, pass@k and pass^k over k, resources per arm, custom metrics, and per trial a drill-down with
its trajectory, the grader's details and the security findings.

Self-contained on purpose: no script, no font, no stylesheet or image from anywhere, and a Content-Security-Policy
that forbids the page from fetching anything, so opening a report never touches the network. Every string that came
from an agent or a grader is redacted (`redact`) and HTML-escaped (Jinja autoescape). The work is one pass over the
trials, reading each trial's files once, so rendering stays linear in the number of trials.
"""

from __future__ import annotations

import dataclasses
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from pytest_skilleval.results import charts
from pytest_skilleval.results.correctness import unmeasured_line
from pytest_skilleval.results.models import (
    DIMENSIONS,
    AgentResult,
    ArmSummary,
    LiftStat,
    ResultDocument,
    TrialEntry,
)
from pytest_skilleval.results.natural_order import natural_key
from pytest_skilleval.results.passk import estimators_text
from pytest_skilleval.results.records import TrialKey
from pytest_skilleval.results.redact import redact_text
from pytest_skilleval.results.run_folder import RunFolder, TrialContent, TrialFiles, read_trial
from pytest_skilleval.results.trajectory_view import trajectory_steps
from pytest_skilleval.results.trial_evidence import TrialEvidence, trial_evidence
from pytest_skilleval.results.trial_file import trial_file_name, trials_folder
from pytest_skilleval.results.triggering import trigger_file_name
from verifier.evidence import CHECKS_METRIC, REPORTED_METRICS
from verifier.scoring import passes

__all__ = ["TrialDrillDown", "drill_down", "render_report", "write_report"]

NO_SCORE, NA, SKIPPED = "NO SCORE", "N/A", "SKIPPED"


# ------------------------------------------------------------------------------------------- formatting


def score(value: float | None) -> str:
    return NO_SCORE if value is None else f"{value:.4f}"


def signed(value: float | None) -> str:
    return NA if value is None else f"{value:+.4f}"


def interval(ci: Sequence[float] | None) -> str:
    return "no interval (fewer than 2 pairs)" if not ci else f"[{ci[0]:+.4f}, {ci[1]:+.4f}]"


def rate_interval(ci: Sequence[float] | None) -> str:
    """A rate's interval (a trigger rate, precision, recall): unsigned, unlike a lift's; N/A with nothing scored."""
    return NA if not ci else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def count(value: int | float | None, sign: bool = False) -> str:
    if value is None:
        return NA
    plus = "+" if sign else ""
    return f"{value:{plus},.1f}" if isinstance(value, float) else f"{value:{plus},}"


def usd(value: float | None) -> str:
    return NA if value is None else f"${value:,.4f}"


def not_passed(entry: TrialEntry, threshold: float) -> str:
    """Why a scored attempt did not pass: its overall below the threshold, or a correctness gate beside it (the
    case's checks, the custom grader's overall) below it while the overall reached it."""
    if passes(entry.overall, threshold) is False:
        return "below threshold"
    checks = entry.metrics.get(CHECKS_METRIC)
    if checks is not None and passes(checks, threshold) is False:
        return f"not passed: checks {checks:.4f} below threshold {threshold:.2f}"
    return f"not passed: a correctness gate below threshold {threshold:.2f}"


# ------------------------------------------------------------------------------------------- view models


@dataclass
class Row:
    """One table row: a label, the two arms (score, band) and the lift."""

    label: str
    with_skill: str
    with_band: str | None
    without_skill: str
    without_band: str | None
    lift: LiftStat | None


@dataclass
class CaseRow:
    case: str
    negative: bool
    without_mean: float | None
    with_mean: float | None
    without_passed: str
    with_passed: str

    @property
    def delta(self) -> float | None:
        if self.with_mean is None or self.without_mean is None:
            return None
        return self.with_mean - self.without_mean


@dataclass(frozen=True)
class TrialDrillDown:
    """The parts of one trial's drill-down that come from its trial file, rendered (`drill_down`): the number of
    security findings its summary line counts, the judged assertions, and the rest (workspace changes, findings,
    trajectory, grader details)."""

    findings: int
    assertions: Markup
    evidence: Markup
    # The trial's whole block, rendered ahead (`with_block`) for the entry, file and threshold in `block_for`; the
    # report uses it only when its own entry, file and threshold are the same. Set, the two parts above are empty.
    block: Markup | None = None
    block_for: tuple[Any, str, float] | None = None


@dataclass
class TrialView:
    entry: Any
    block: Markup


@dataclass
class AgentView:
    agent: AgentResult
    rows: list[Row]
    evaluator_rows: list[Row]
    custom_rows: list[Row]
    case_rows: list[CaseRow]
    case_svg: Markup
    chart_each_case: bool  # else the chart counts cases per band of mean overall
    forest_svg: Markup | None
    pass_k_svg: Markup | None
    trials_by_case: dict[str, list[TrialView]] = field(default_factory=dict)
    checks_by_case: dict[str, list[CheckTally]] = field(default_factory=dict)


@dataclass
class CheckTally:
    """One check of one case: passed / scored attempts per arm, over the agent's counted trials."""

    name: str
    with_skill: str
    without_skill: str


def _check_tallies(doc: ResultDocument, agent: str) -> dict[str, list[CheckTally]]:
    counts: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: [0, 0]))
    )
    for trial in doc.trials:
        if trial.agent != agent or not trial.counted or not trial.checks:
            continue
        for check in trial.checks:
            tally = counts[trial.case][check.name][trial.arm]
            if check.status != "error":
                tally[0] += check.status == "passed"
                tally[1] += 1

    def cell(found: dict[str, list[int]], arm: str) -> str:
        passed, scored = found.get(arm, [0, 0])
        return f"{passed}/{scored}" if scored else NA

    return {
        case: [CheckTally(name, cell(arms, "with_skill"), cell(arms, "without_skill")) for name, arms in checks.items()]
        for case, checks in counts.items()
    }


def _cell(arm: ArmSummary, value: float | None) -> str:
    return SKIPPED if arm.execution_status == "skipped" else score(value)


def _dimension_rows(agent: AgentResult) -> list[Row]:
    ws, wos, lift = agent.with_skill, agent.without_skill, agent.lift
    rows = [
        Row(
            dim.capitalize(),
            _cell(ws, getattr(ws.dimensions, dim)),
            getattr(ws.dimension_bands, dim),
            _cell(wos, getattr(wos.dimensions, dim)),
            getattr(wos.dimension_bands, dim),
            lift.dimensions.get(dim) if lift else None,
        )
        for dim in DIMENSIONS
    ]
    rows.append(
        Row("Overall", _cell(ws, ws.overall), None, _cell(wos, wos.overall), None, lift.overall if lift else None)
    )
    return rows


def _metric_rows(agent: AgentResult) -> tuple[list[Row], list[Row]]:
    ws, wos, lift = agent.with_skill, agent.without_skill, agent.lift
    standard = [
        Row(
            name,
            _cell(ws, ws.metrics.get(name)),
            None,
            _cell(wos, wos.metrics.get(name)),
            None,
            lift.metrics.get(name) if lift else None,
        )
        for name in REPORTED_METRICS
        if name != CHECKS_METRIC or ws.metrics.get(name) is not None or wos.metrics.get(name) is not None
    ]
    custom_lift = agent.custom_lift or {}
    custom = [
        Row(
            name,
            _cell(ws, ws.custom_metrics.get(name)),
            None,
            _cell(wos, wos.custom_metrics.get(name)),
            None,
            custom_lift.get(name),
        )
        for name in sorted(set(ws.custom_metrics) | set(wos.custom_metrics))
    ]
    return standard, custom


def _case_rows(doc: ResultDocument, agent: str) -> list[CaseRow]:
    sums: dict[tuple[str, str], list[float]] = defaultdict(list)
    passed: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    negative: dict[str, bool] = {}
    order: dict[str, None] = {}
    for trial in doc.trials:
        if trial.agent != agent or not trial.counted or trial.status == "skipped":
            continue
        order.setdefault(trial.case)
        negative[trial.case] = negative.get(trial.case, False) or trial.negative_control
        if trial.overall is not None:
            sums[(trial.case, trial.arm)].append(trial.overall)
        tally = passed[(trial.case, trial.arm)]
        tally[0] += 1 if trial.passed else 0
        tally[1] += 1

    def mean(case: str, arm: str) -> float | None:
        values = sums.get((case, arm))
        return sum(values) / len(values) if values else None  # unrounded: the difference rounds once, as the lift

    def passes(case: str, arm: str) -> str:
        tally = passed.get((case, arm))
        return f"{tally[0]}/{tally[1]}" if tally else NA

    return [
        CaseRow(
            case,
            negative.get(case, False),
            mean(case, "without_skill"),
            mean(case, "with_skill"),
            passes(case, "without_skill"),
            passes(case, "with_skill"),
        )
        for case in sorted(order, key=natural_key)
    ]


def _forest(agent: AgentResult, chart_id: str) -> Markup | None:
    lift = agent.lift
    if lift is None:
        return None
    candidates: list[tuple[str, LiftStat]] = [("Overall", lift.overall), ("Outcome", lift.outcome)]
    candidates += [(dim.capitalize(), lift.dimensions[dim]) for dim in DIMENSIONS if dim in lift.dimensions]
    candidates += [(f"custom: {name}", stat) for name, stat in sorted((agent.custom_lift or {}).items())]
    rows = []
    for label, stat in candidates:
        if stat.delta is not None:
            low, high = stat.ci95 or (stat.delta, stat.delta)
            rows.append(charts.ForestRow(label, stat.delta, low, high, band=stat.band))
    if not rows:
        return None
    return Markup(charts.forest_chart(f"{chart_id}-lift", rows))


def _pass_k(agent: AgentResult, chart_id: str) -> Markup | None:
    arms = [
        (label, arm.pass_at_k)
        for label, arm in (("with skill", agent.with_skill), ("without skill", agent.without_skill))
        if arm.pass_at_k
    ]
    if not arms:
        return None
    ks = sorted({int(k) for _, pk in arms for k in pk.unbiased}, key=int)
    if not ks:
        return None
    series = []
    for label, pk in arms:
        series.append((f"{label} pass@k", [pk.unbiased.get(str(k)) for k in ks]))
        series.append((f"{label} pass^k", [pk.pass_hat_k.get(str(k)) for k in ks]))
    return Markup(charts.pass_k_chart(f"{chart_id}-passk", ks, series))


def _inside(path: Path, run_dir: Path) -> str:
    """`path` relative to the run folder when it is inside it, else as it is (pathlib's relative_to compares part
    by part: 0.04 s of a 1,000-trial report's 0.14 s)."""
    text, prefix = str(path), os.path.join(str(run_dir), "")
    return text[len(prefix) :] if text.startswith(prefix) else text


def drill_down(evidence: TrialEvidence) -> TrialDrillDown:
    """One trial's drill-down parts rendered (the same macros whoever renders them: the session as the trial ends,
    or the report from the run folder)."""
    macros = _drill_down_macros()
    return TrialDrillDown(
        len(evidence.findings),
        macros.assertions(evidence),
        macros.evidence(evidence),
    )


def trial_file_text(run_dir: Path, entry: TrialEntry) -> str:
    """Where a trial's file is, as the report prints it (`RunFolder.trials`' path, relative to the run folder)."""
    return _inside(trials_folder(run_dir, entry.agent, entry.arm) / trial_file_name(entry.case, entry.attempt), run_dir)


def trial_block(entry: TrialEntry, folder: str, drill: TrialDrillDown, threshold: float) -> Markup:
    """One trial's block of the report (its summary line, metrics, checks and drill-down)."""
    return Markup(_drill_down_macros().trial(entry, folder, drill, threshold))


def with_block(drill: TrialDrillDown, entry: TrialEntry, folder: str, threshold: float) -> TrialDrillDown:
    """`drill` as the trial's whole block rendered ahead, as the session does when the trial ends: at 1,000
    trials these blocks are half of the report's rendering, otherwise done after the last trial. The drill-down's
    parts are inside the block and not kept beside it (a report whose entry turns out otherwise reads them again
    from the trial's file): a run keeps one copy of each trial's drill-down, not two."""
    block = trial_block(entry, folder, drill, threshold)
    empty = Markup("")
    return dataclasses.replace(
        drill, assertions=empty, evidence=empty, block=block, block_for=(entry, folder, threshold)
    )


def _trial_view(
    files: TrialFiles, run_dir: Path, known: Mapping[TrialKey, TrialDrillDown], threshold: float
) -> TrialView:
    drill = known.get(files.entry.key)
    folder = _inside(files.path, run_dir)
    if drill is not None and drill.block is not None:
        if drill.block_for == (files.entry, folder, threshold):
            return TrialView(entry=files.entry, block=drill.block)
        drill = None  # rendered for another entry: its drill-down's parts were not kept beside it (`with_block`)
    if drill is None:
        drill = drill_down(trial_evidence(files.content().document))
    return TrialView(entry=files.entry, block=trial_block(files.entry, folder, drill, threshold))


def _agent_views(run: RunFolder, known: Mapping[TrialKey, TrialDrillDown]) -> list[AgentView]:
    doc = run.document
    trials_by_agent: dict[str, dict[str, list[TrialView]]] = defaultdict(lambda: defaultdict(list))
    threshold = doc.attempt_policy.pass_threshold
    for files in run.trials():
        trials_by_agent[files.entry.agent][files.entry.case].append(_trial_view(files, run.path, known, threshold))
    views = []
    for index, (name, agent) in enumerate(doc.agents.items(), start=1):
        chart_id = f"agent{index}"
        cases = _case_rows(doc, name)
        standard, custom = _metric_rows(agent)
        views.append(
            AgentView(
                agent=agent,
                rows=_dimension_rows(agent),
                evaluator_rows=standard,
                custom_rows=custom,
                case_rows=cases,
                case_svg=Markup(
                    charts.case_chart(
                        f"{chart_id}-cases",
                        [c.case for c in cases],
                        [c.without_mean for c in cases],
                        [c.with_mean for c in cases],
                    )
                ),
                chart_each_case=charts.charts_each_case(len(cases)),
                forest_svg=_forest(agent, chart_id),
                pass_k_svg=_pass_k(agent, chart_id),
                checks_by_case=_check_tallies(doc, name),
                trials_by_case={
                    case: sorted(trials, key=lambda t: (t.entry.arm, t.entry.attempt))
                    for case, trials in sorted(trials_by_agent.get(name, {}).items(), key=lambda kv: natural_key(kv[0]))
                },
            )
        )
    return views


# ------------------------------------------------------------------------------------------------ render


def _finalize(value: Any) -> Any:
    """Every string the template prints is redacted (errors, reasons and warnings in result.json come from agents
    and graders too); our own markup (the charts) passes through."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return redact_text(value)
    return value


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_skilleval.results", "templates"),
        autoescape=True,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # Compiling the template is most of loading it; Jinja's own cache keeps the result in a per-user 0700 folder.
        bytecode_cache=jinja2.FileSystemBytecodeCache(),
    )
    env.filters.update(
        score=score,
        signed=signed,
        interval=interval,
        rate_interval=rate_interval,
        count=count,
        usd=usd,
        estimators=estimators_text,
        not_passed=not_passed,
    )
    return env


@lru_cache(maxsize=1)
def _drill_down_macros() -> Any:
    """The drill-down template's macros, loaded once (Jinja would check the file's age on every lookup)."""
    return _environment().get_template("trial_drill_down.html.j2").module


def load_template() -> None:
    """Load the report's templates now (their environment and compiled forms are cached for the rendering)."""
    _environment().get_template("report.html.j2")
    _drill_down_macros()


def verdict_headline(doc: ResultDocument) -> str:
    """The verdict as the report and the card both open with it; INCOMPLETE when the run is not publishable."""
    incomplete = "" if doc.coverage.publication_complete else " (INCOMPLETE: partial selection or missing attempts)"
    return f"{doc.verdict.upper()}{incomplete}"


def _trigger_trial_views(run: RunFolder, agent: str) -> dict[str, list[dict[str, Any]]]:
    """Per query: each trigger trial with its file and trajectory (read from the run folder, one trial at a time)."""
    by_query: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for trial in run.document.triggering[agent].trials:
        # The path from the trial's identity, as for case trials (never a path a result.json could bend).
        path = run.path / trigger_file_name(agent, trial.query, trial.attempt)
        trajectory = TrialContent(read_trial(path) or {}).trajectory()
        steps, omitted = trajectory_steps(trajectory)
        by_query[trial.query].append(
            {"trial": trial, "steps": steps, "steps_omitted": omitted, "has_trajectory": trajectory is not None}
        )
    return by_query


def _trigger_views(run: RunFolder) -> list[dict[str, Any]]:
    """Per agent with trigger items: its metrics, the per-query chart and each trial's trajectory."""
    return [
        {
            "agent": agent,
            "metrics": metrics,
            "svg": Markup(
                charts.trigger_chart(
                    f"triggers{index}",
                    [(query.id, query.should_trigger, query.trigger_rate) for query in metrics.queries],
                )
            ),
            "trials": _trigger_trial_views(run, agent),
        }
        for index, (agent, metrics) in enumerate(run.document.triggering.items(), start=1)
    ]


def render_report(run: RunFolder, known: Mapping[TrialKey, TrialDrillDown] | None = None) -> str:
    """report.html of the run; `known`: trials' drill-downs already rendered from their files' bytes (by the
    session that wrote them, `drill_down`), the rest is read from the run folder."""
    doc = run.document
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            doc=doc,
            run_dir=str(run.path),
            headline=verdict_headline(doc),
            unmeasured=unmeasured_line(doc.correctness_unmeasured) if doc.correctness_unmeasured else "",
            agents=_agent_views(run, known or {}),
            triggering=_trigger_views(run),
            trigger_only=run.trigger_only,
            trigger_only_note=" (no case selected)" if run.cases_planned else "",
            dimensions=DIMENSIONS,
        )
    )


def write_report(run: RunFolder, write: Any | None = None) -> Path:
    """Render and write `<run>/report.html` (through `write(path, bytes)` when given: the tree's atomic writer)."""
    data = render_report(run).encode("utf-8")
    if write is None:
        run.report_path.write_bytes(data)
    else:
        write(run.report_path, data)
    return run.report_path
