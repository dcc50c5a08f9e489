"""What one item reports of its trial: the record with secrets redacted, the user-property text that carries it
between processes (xdist ships only plain strings), and the flat properties a JUnit XML shows per test case."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the record model: imported where a trial is reported
    from pytest_skilleval.results.records import TrialRecord
    from verifier.redact import Redactor

# Where a trial sits, from the user's own layout: kept as is so records still match the run plan.
_IDENTITY_FIELDS = ("skill", "skill_dir", "case", "agent", "arm", "attempt", "nodeid")


def redact_record(record: TrialRecord, redactor: Redactor) -> TrialRecord:
    """The record with every secret the agent or grader printed replaced, before it is reported or written."""
    from pytest_skilleval.results.records import TrialRecord

    data = record.model_dump(mode="json")
    rest = {k: v for k, v in data.items() if k not in _IDENTITY_FIELDS}
    redacted = redactor.scrub(rest)
    if redacted is rest:
        return record  # nothing to redact: the record itself, not a copy validated again
    copy = TrialRecord.model_validate({**redacted, **{k: data[k] for k in _IDENTITY_FIELDS}})
    copy.keep_written(record.written)
    return copy


def record_property_value(record: TrialRecord) -> str:
    """JSON text: xdist ships user_properties between processes, so only plain strings cross."""
    return record.model_dump_json()


def junit_item_properties(record: TrialRecord) -> list[tuple[str, str]]:
    """Flat, string-valued properties for JUnit XML: what CI dashboards show per test case."""
    tokens = record.tokens
    values: dict[str, object] = {
        "skilleval.agent": record.agent,
        "skilleval.arm": record.arm,
        "skilleval.attempt": record.attempt,
        "skilleval.case": record.case,
        "skilleval.status": record.status,
        "skilleval.overall": record.overall,
        "skilleval.prompt_tokens": tokens.prompt if tokens else None,
        "skilleval.completion_tokens": tokens.completion if tokens else None,
        "skilleval.agent_seconds": record.agent_seconds,
    }
    for name, score in {**record.metrics, **{f"custom.{k}": v for k, v in record.custom_metrics.items()}}.items():
        values[f"skilleval.metric.{name}"] = score
    return [(key, "null" if value is None else str(value)) for key, value in values.items()]
