"""The item's pass/fail rule: what the `skilleval_trial` fixture hands the call phase, and the call phase itself.

With-skill trials must reach the skill's pass threshold; baseline trials only report their score. The overall alone
does not say the output was right, so what does stands beside it (`verifier.scoring.correctness_gates`): a case's
checks score must reach the threshold too, and in default_plus_custom with no judge so must the custom grader's own
overall. A failed item says which gate failed and, for checks, the failed checks' evidence. A trial that could not
be scored never gets here: setup raises `TrialError` and the item is an ERROR, not a FAIL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_skilleval.results.keys import TRIGGER_PROPERTY_KEY
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.triggering import TriggerRecord
from verifier.scoring import passes

MAX_FAILED_CHECKS_SHOWN = 3


class TrialFailed(AssertionError):
    """The with-skill score, or a correctness gate beside it, is below the pass threshold."""


@dataclass(frozen=True)
class TrialOutcome:
    """What the `skilleval_trial` fixture hands the call phase."""

    record: TrialRecord
    pass_threshold: float


@dataclass(frozen=True)
class TriggerOutcome:
    """What the `skilleval_trial` fixture hands a trigger item's call phase."""

    record: TriggerRecord


def trigger_outcome(item: Any, record: TriggerRecord, state: Any) -> TriggerOutcome:
    """A trigger item's setup after its trial: the record redacted and reported under its own key (it never joins
    the case records), an ERROR when there is no verdict."""
    from pytest_skilleval.harbor.runner import TrialError

    identity = {"skill", "skill_dir", "query", "agent", "attempt", "nodeid"}
    data = record.model_dump(mode="json")
    redacted = state.redactor.value({key: value for key, value in data.items() if key not in identity})
    record = TriggerRecord.model_validate({**redacted, **{key: data[key] for key in identity}})
    item.user_properties.append((TRIGGER_PROPERTY_KEY, record.model_dump_json()))
    if getattr(item.config.option, "xmlpath", None):
        item.user_properties.extend(
            [
                ("skilleval.agent", record.agent),
                ("skilleval.attempt", str(record.attempt)),
                ("skilleval.trigger_query", record.query),
                ("skilleval.should_trigger", str(record.should_trigger).lower()),
                ("skilleval.triggered", "null" if record.triggered is None else str(record.triggered).lower()),
                ("skilleval.distractors_loaded", ",".join(record.distractors_loaded)),
            ]
        )
    if record.status == "error":
        raise TrialError(record.error or "the trigger trial failed")
    if record.status == "unscored":
        raise TrialError(f"{record.query}: no trigger verdict: {record.reason or 'the detector could not tell'}")
    return TriggerOutcome(record)


def _judge_trigger(record: TriggerRecord) -> None:
    if record.passed:
        return
    wanted = "should trigger" if record.should_trigger else "should not trigger"
    what = "loaded the skill" if record.triggered else "did not load the skill"
    instead = f"; loaded instead: {', '.join(record.distractors_loaded)}" if record.distractors_loaded else ""
    raise TrialFailed(
        f"{record.query} [{record.agent}-{record.attempt}]: {wanted}, but the agent {what}{instead} ({record.reason})"
    )


def judge(outcome: TrialOutcome | TriggerOutcome) -> None:
    """The call phase: with-skill trials must pass (overall and correctness gates); baseline trials only report;
    a trigger item passes when the skill loaded exactly when it should."""
    if isinstance(outcome, TriggerOutcome):
        _judge_trigger(outcome.record)
        return
    record, threshold = outcome.record, outcome.pass_threshold
    if record.arm in ("without_skill", "baseline_skill") or record.passed:
        return
    head = f"{record.case} [{record.agent}-{record.arm}-{record.attempt}]: "
    reasons = []
    if passes(record.overall, threshold) is False:
        reasons.append(f"overall {record.overall:.4f} < pass threshold {threshold:.2f}" + _weakest(record))
    gates = record.gates()
    checks = gates.get("checks")
    if checks is not None and passes(checks, threshold) is False:
        reasons.append(f"checks {checks:.4f} < pass threshold {threshold:.2f}: {_failed_checks(record)}")
    custom = gates.get("custom overall")
    if custom is not None and passes(custom, threshold) is False:
        reasons.append(
            f"the custom grader's overall {custom:.4f} < pass threshold {threshold:.2f} (it stands for correctness: "
            "default_plus_custom with no judge)"
        )
    raise TrialFailed(head + "; ".join(reasons or [f"below pass threshold {threshold:.2f}"]))


def _failed_checks(record: TrialRecord) -> str:
    failed = [check for check in record.checks or () if check.status == "failed"]
    shown = [f"{check.name}: {check.evidence}" for check in failed[:MAX_FAILED_CHECKS_SHOWN]]
    more = len(failed) - len(shown)
    return "; ".join(shown) + (f" (and {more} more failed check(s))" if more > 0 else "")


def _weakest(record: TrialRecord) -> str:
    scored = {k: v for k, v in {**record.metrics, **record.custom_metrics}.items() if v is not None}
    if not scored:
        return ""
    lowest = sorted(scored.items(), key=lambda kv: kv[1])[:2]
    return " (lowest: " + ", ".join(f"{name} {value:.2f}" for name, value in lowest) + ")"
