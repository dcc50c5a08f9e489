"""Trigger metrics (pure): per query a trigger rate with a Wilson interval; per agent precision, recall, F1 and
accuracy with bootstrap intervals over queries, and the missed and false-trigger queries.

A query counts as triggered when at least half of its scored attempts loaded the skill (its trigger rate >= 0.5);
precision, recall, F1 and accuracy are over queries, so an interval resamples queries (attempts of one query stay
together). A figure with nothing to stand on (precision with no triggered query, recall with no should-trigger
query) is None, never zero. Trigger items never enter the five dimensions, pass@k or Skill Lift: they travel as
their own records (`TriggerRecord`) and end in result.json's `triggering` section only.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_skilleval.results.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, quantile, wilson_interval
from pytest_skilleval.results.trial_file import safe_component

TRIGGERED_AT = 0.5
MetricName = Literal["precision", "recall", "f1", "accuracy"]
METRICS: tuple[MetricName, ...] = ("precision", "recall", "f1", "accuracy")


class TriggerRecord(BaseModel):
    """One trigger trial's outcome as it crosses the xdist boundary (JSON in `report.user_properties`)."""

    model_config = ConfigDict(extra="ignore")

    skill: str
    skill_dir: str = ""
    query: str = Field(description="The trigger query's id.")
    agent: str
    attempt: int
    nodeid: str = ""
    status: Literal["scored", "unscored", "error"]
    should_trigger: bool
    split: str | None = None
    triggered: bool | None = None
    distractors_loaded: list[str] = Field(default_factory=list)
    distractors: list[str] = Field(default_factory=list, description="The other skills installed beside it.")
    reason: str | None = None
    error: str | None = None
    trial_dir: str | None = None
    agent_seconds: float | None = None
    cost_usd: float | None = Field(default=None, description="The agent's reported cost; None when not reported.")
    source_run: str | None = Field(default=None, description="Set when --resume kept the trial from that run.")
    regraded_from: str | None = Field(default=None, description="--regrade: the run whose trajectory was read.")

    @property
    def passed(self) -> bool | None:
        """Whether the outcome matches should_trigger; None when there is no outcome."""
        return None if self.triggered is None else self.triggered == self.should_trigger


def trigger_file_name(agent: str, query: str, attempt: int) -> str:
    """A trigger trial's file, relative to the run folder: `<agent>/triggers/<query>.<attempt>.json`."""
    return f"{safe_component(agent)}/triggers/{safe_component(query)}.{int(attempt)}.json"


class TriggerTrial(BaseModel):
    """One trigger trial as result.json lists it, with its file in the run folder (trajectory and verdict)."""

    query: str
    attempt: int
    status: str
    triggered: bool | None
    distractors_loaded: list[str] = Field(default_factory=list)
    reason: str | None = None
    error: str | None = None
    file: str = Field(description="The trial's file, relative to the run folder: record, verdict, trajectory.")


class QueryRate(BaseModel):
    id: str
    should_trigger: bool
    split: str | None = None
    attempts: int = Field(description="Scored attempts.")
    triggered: int
    trigger_rate: float | None
    interval: tuple[float, float] | None = Field(description="Wilson 95% interval of the trigger rate.")
    distractors_loaded: dict[str, int] = Field(
        default_factory=dict, description="Distractor -> attempts that loaded it."
    )


class TriggeringAgent(BaseModel):
    """One agent's trigger metrics for the skill."""

    precision: float | None
    recall: float | None
    f1: float | None
    accuracy: float | None
    intervals: dict[str, tuple[float, float] | None] = Field(description="Bootstrap 95% interval per metric.")
    queries: list[QueryRate]
    missed: list[str] = Field(description="Should-trigger queries it did not trigger on.")
    false_triggers: list[str] = Field(description="Should-not-trigger queries it triggered on.")
    missed_to: dict[str, list[str]] = Field(
        default_factory=dict, description="Missed query -> the distractors loaded instead."
    )
    unscored: list[str] = Field(default_factory=list, description="Queries with no scored attempt (left out).")
    errors: int = 0
    cost_usd: float | None = Field(default=None, description="Reported agent cost of the trigger trials, if any.")
    trials: list[TriggerTrial] = Field(default_factory=list, description="Every trigger trial, with its file.")


def _confusion(rows: Sequence[tuple[bool, bool]]) -> dict[MetricName, float | None]:
    """(should_trigger, triggered) per query -> the four metrics."""
    tp = sum(1 for want, got in rows if want and got)
    fp = sum(1 for want, got in rows if not want and got)
    fn = sum(1 for want, got in rows if want and not got)
    tn = sum(1 for want, got in rows if not want and not got)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = (
        2 * precision * recall / (precision + recall)
        if precision is not None and recall is not None and precision + recall
        else (0.0 if precision is not None and recall is not None else None)
    )
    accuracy = (tp + tn) / len(rows) if rows else None
    return {"precision": precision, "recall": recall, "f1": f1, "accuracy": accuracy}


def _figure_of(name: MetricName, rows: Sequence[tuple[bool, bool]]) -> float | None:
    return _confusion(rows)[name]


def _bootstrap(
    rows: Sequence[tuple[bool, bool]], metric: Callable[[Sequence[tuple[bool, bool]]], float | None]
) -> tuple[float, float] | None:
    """Percentile interval of `metric` over queries resampled with replacement; None below two queries."""
    if len(rows) < 2:
        return None
    rng = random.Random(BOOTSTRAP_SEED)
    values = sorted(
        value
        for value in (metric(rng.choices(rows, k=len(rows))) for _ in range(BOOTSTRAP_RESAMPLES))
        if value is not None
    )
    if not values:
        return None
    return (quantile(values, 0.025), quantile(values, 0.975))


def _rounded(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else round(value, 4)


def query_rates(records: Iterable[TriggerRecord], planned: Sequence[dict[str, Any]]) -> list[QueryRate]:
    """Per query, in the trigger set's order: scored attempts, triggered attempts, rate and Wilson interval."""
    by_query: dict[str, list[TriggerRecord]] = {}
    for record in records:
        by_query.setdefault(record.query, []).append(record)
    order = [str(query["id"]) for query in planned] + sorted(set(by_query) - {str(q["id"]) for q in planned})
    facts = {str(query["id"]): query for query in planned}
    rates = []
    for query_id in order:
        trials = by_query.get(query_id, [])
        if query_id not in facts and not trials:
            continue
        scored = [trial for trial in trials if trial.status == "scored" and trial.triggered is not None]
        hits = sum(1 for trial in scored if trial.triggered)
        should = facts[query_id]["should_trigger"] if query_id in facts else trials[0].should_trigger
        split = facts[query_id].get("split") if query_id in facts else trials[0].split
        interval = wilson_interval(hits, len(scored))
        rates.append(
            QueryRate(
                id=query_id,
                should_trigger=bool(should),
                split=split,
                attempts=len(scored),
                triggered=hits,
                trigger_rate=_rounded(hits / len(scored)) if scored else None,
                interval=(round(interval[0], 4), round(interval[1], 4)) if interval else None,
                distractors_loaded=dict(Counter(name for trial in scored for name in trial.distractors_loaded)),
            )
        )
    return rates


def agent_metrics(records: Sequence[TriggerRecord], planned: Sequence[dict[str, Any]]) -> TriggeringAgent:
    """One agent's metrics over the queries that have a scored attempt."""
    rates = query_rates(records, planned)
    scored = [rate for rate in rates if rate.trigger_rate is not None]
    rows = [(rate.should_trigger, (rate.trigger_rate or 0.0) >= TRIGGERED_AT) for rate in scored]
    figures = _confusion(rows)
    intervals: dict[str, tuple[float, float] | None] = {}
    for name in METRICS:
        interval = _bootstrap(rows, partial(_figure_of, name))
        intervals[name] = (round(interval[0], 4), round(interval[1], 4)) if interval else None
    missed = [rate.id for rate, (want, got) in zip(scored, rows, strict=True) if want and not got]
    false = [rate.id for rate, (want, got) in zip(scored, rows, strict=True) if not want and got]
    by_id = {rate.id: rate for rate in scored}
    order = {rate.id: index for index, rate in enumerate(rates)}
    return TriggeringAgent(
        precision=_rounded(figures["precision"]),
        recall=_rounded(figures["recall"]),
        f1=_rounded(figures["f1"]),
        accuracy=_rounded(figures["accuracy"]),
        intervals=intervals,
        queries=rates,
        missed=missed,
        false_triggers=false,
        missed_to={
            query: sorted(by_id[query].distractors_loaded) for query in missed if by_id[query].distractors_loaded
        },
        unscored=[rate.id for rate in rates if rate.trigger_rate is None],
        errors=sum(1 for record in records if record.status != "scored"),
        cost_usd=_cost(records),
        trials=[
            _trial(record) for record in sorted(records, key=lambda r: (order.get(r.query, len(order)), r.attempt))
        ],
    )


# What a trigger trial's entry in result.json repeats of its record: every field but its file.
TRIAL_FIELDS = set(TriggerTrial.model_fields) - {"file"}


def _trial(record: TriggerRecord) -> TriggerTrial:
    """The record's entry in result.json: its own fields, named alike, and the file it was written to."""
    file = trigger_file_name(record.agent, record.query, record.attempt)
    return TriggerTrial(**record.model_dump(include=TRIAL_FIELDS), file=file)


def _cost(records: Sequence[TriggerRecord]) -> float | None:
    known = [record.cost_usd for record in records if record.cost_usd is not None]
    return round(math.fsum(known), 6) if known else None


def subset_scores(queries: Sequence[QueryRate], ids: Collection[str]) -> dict[str, float | None]:
    """precision, recall, f1 and accuracy over the scored queries among `ids` (a split of the trigger set)."""
    rows = [
        (query.should_trigger, query.trigger_rate >= TRIGGERED_AT)
        for query in queries
        if query.trigger_rate is not None and query.id in ids
    ]
    return {name: _rounded(value) for name, value in _confusion(rows).items()}


def triggering_section(
    records: Sequence[TriggerRecord], planned: Sequence[dict[str, Any]]
) -> dict[str, TriggeringAgent]:
    """result.json's `triggering`: one entry per agent that ran trigger items."""
    agents: dict[str, list[TriggerRecord]] = {}
    for record in records:
        agents.setdefault(record.agent, []).append(record)
    return {agent: agent_metrics(rows, planned) for agent, rows in sorted(agents.items())}


def _figure(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


def trigger_only_line(skill: str, cases_planned: bool, result_path: str) -> str:
    """The summary's line for a run whose only trials were its trigger set's: a skill with no cases, or one whose
    cases none was selected (`-m skilleval_trigger`); its trigger lines follow."""
    alone = " (no case selected)" if cases_planned else ""
    return f"{skill}: trigger set only{alone}; results: {result_path}"


def triggering_lines(skill: str, section: dict[str, TriggeringAgent]) -> list[str]:
    """The terminal summary's trigger lines: one per agent, then its misses and false triggers."""
    lines = []
    for agent, metrics in section.items():
        n = len([query for query in metrics.queries if query.trigger_rate is not None])
        figures = "  ".join(
            f"{name} {_figure(getattr(metrics, name), metrics.intervals.get(name))}" for name in METRICS
        )
        lines.append(f"{skill} triggering ({agent}, {n} queries): {figures}")
        if metrics.missed:
            shown = [
                query + (f" (loaded {', '.join(metrics.missed_to[query])})" if query in metrics.missed_to else "")
                for query in metrics.missed
            ]
            lines.append(f"  missed: {', '.join(shown)}")
        if metrics.false_triggers:
            lines.append(f"  false triggers: {', '.join(metrics.false_triggers)}")
        if metrics.unscored:
            lines.append(f"  no scored attempt (left out): {', '.join(metrics.unscored)}")
    return lines


def junit_trigger_properties(skill: str, section: dict[str, TriggeringAgent]) -> list[tuple[str, str]]:
    """Run-level JUnit properties: each agent's four metrics."""
    return [
        (f"skilleval.{skill}.{agent}.trigger_{name}", "null" if value is None else str(value))
        for agent, metrics in section.items()
        for name in METRICS
        for value in [getattr(metrics, name)]
    ]
