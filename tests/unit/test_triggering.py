"""Trigger metrics, the description edit of optimize-description, and `skilleval validate` on trigger sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilleval.authoring.description_proposer import Failure, description_of, prompt_for, with_description
from pytest_skilleval.authoring.validate import validate_skill
from pytest_skilleval.results.triggering import (
    TRIAL_FIELDS,
    TriggerRecord,
    TriggerTrial,
    agent_metrics,
    subset_scores,
    trigger_file_name,
)

HELLO = Path(__file__).parents[2] / "examples" / "hello-skill"


def record(query: str, should: bool, triggered: bool | None, attempt: int = 1, **extra: object) -> TriggerRecord:
    status = "scored" if triggered is not None else "unscored"
    return TriggerRecord(
        skill="s",
        query=query,
        agent="a",
        attempt=attempt,
        status=status,
        should_trigger=should,
        triggered=triggered,
        **extra,  # type: ignore[arg-type]
    )


def test_a_query_triggers_when_at_least_half_its_attempts_loaded_the_skill() -> None:
    planned = [{"id": "p", "should_trigger": True}, {"id": "n", "should_trigger": False}]
    records = [
        record("p", True, True, 1),
        record("p", True, False, 2, distractors_loaded=["other"]),
        record("p", True, True, 3),
        record("n", False, False, 1),
        record("n", False, True, 2),
        record("n", False, False, 3),
    ]
    metrics = agent_metrics(records, planned)
    rates = {query.id: query for query in metrics.queries}
    assert rates["p"].trigger_rate == pytest.approx(0.6667) and rates["p"].triggered == 2
    assert rates["p"].distractors_loaded == {"other": 1}
    assert rates["n"].trigger_rate == pytest.approx(0.3333)
    low, high = rates["p"].interval  # type: ignore[misc]
    assert 0.0 < low < 0.6667 < high < 1.0
    assert (metrics.precision, metrics.recall, metrics.accuracy) == (1.0, 1.0, 1.0)
    assert metrics.missed == [] and metrics.false_triggers == []


def test_each_trial_listed_carries_its_records_fields_and_its_file() -> None:
    planned = [{"id": "p", "should_trigger": True}]
    loaded = record("p", True, False, 2, distractors_loaded=["other"], reason="picked other", cost_usd=0.5)
    failed = record("p", True, None, 1, error="agent crashed")
    listed = {trial.attempt: trial for trial in agent_metrics([loaded, failed], planned).trials}
    for attempt, source in ((2, loaded), (1, failed)):
        trial = listed[attempt]
        assert {name: getattr(trial, name) for name in TRIAL_FIELDS} == {
            name: getattr(source, name) for name in TRIAL_FIELDS
        }
        assert trial.file == trigger_file_name("a", "p", attempt)
    assert listed[2].distractors_loaded == ["other"] and listed[2].reason == "picked other"
    assert listed[1].error == "agent crashed" and listed[1].status == "unscored"
    # Every field the listing repeats is one the record has (a field added to the listing alone would be left unset).
    assert set(TriggerTrial.model_fields) - {"file"} <= set(TriggerRecord.model_fields)


def test_nothing_to_stand_on_is_none_never_zero_and_unscored_queries_are_left_out() -> None:
    planned = [{"id": "p", "should_trigger": True}, {"id": "q", "should_trigger": True}]
    metrics = agent_metrics([record("p", True, False), record("q", True, None)], planned)
    assert metrics.precision is None and metrics.f1 is None  # nothing triggered
    assert metrics.recall == 0.0 and metrics.missed == ["p"]
    assert metrics.unscored == ["q"] and metrics.errors == 1
    assert metrics.intervals["recall"] is None  # one scored query: no spread to estimate


def test_bootstrap_interval_covers_the_estimate() -> None:
    planned = [{"id": f"q{i}", "should_trigger": i < 5} for i in range(10)]
    outcomes = [True, True, True, False, False, True, False, False, False, False]
    metrics = agent_metrics([record(f"q{i}", i < 5, got) for i, got in enumerate(outcomes)], planned)
    assert metrics.precision == pytest.approx(0.75) and metrics.recall == pytest.approx(0.6)
    low, high = metrics.intervals["recall"]  # type: ignore[misc]
    assert low < 0.6 < high
    assert subset_scores(metrics.queries, {"q0", "q3"}) == {
        "precision": 1.0,
        "recall": 0.5,
        "f1": 0.6667,
        "accuracy": 0.5,
    }


def test_description_edit_keeps_every_other_line() -> None:
    text = "---\nname: demo\ndescription: >\n  folded\n  text\nlicense: MIT\n---\n# body\n"
    edited = with_description(text, 'Greets people: "hello" and more')
    assert description_of(edited) == 'Greets people: "hello" and more'
    assert edited.startswith("---\nname: demo\ndescription: ") and "license: MIT\n---\n# body\n" in edited
    with pytest.raises(ValueError, match="no front matter"):
        with_description("# no front matter\n", "x")


def test_the_prompt_holds_only_the_failures_it_is_given() -> None:
    prompt = prompt_for("demo", "old", "body text", [Failure("greet Ada", True)], [("old", 0.5)])
    assert '"greet Ada"' in prompt and "body text" in prompt and "accuracy 0.50" in prompt
    assert '{"description": "..."}' in prompt


def test_validate_reads_trigger_sets(tmp_path: Path) -> None:
    assert [f for f in validate_skill(HELLO).findings if f.severity != "info"] == []
    skill = tmp_path / "only-triggers"
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: only-triggers\ndescription: x\n---\n")
    (skill / "evals" / "triggers.json").write_text(json.dumps([{"id": "q", "query": "hi", "should_trigger": True}]))
    findings = validate_skill(skill).findings
    assert [f.rule for f in findings] == ["replay-missing"]  # a trigger set alone is something to run
    (skill / "evals" / "triggers.json").write_text(json.dumps([{"id": "q", "query": "hi", "should_trigger": 1}]))
    bad = [f for f in validate_skill(skill).findings if f.severity == "error"]
    assert [(f.rule, f.message) for f in bad] == [
        ("trigger-set-invalid", "entry 0 (id 'q'): field 'should_trigger': must be true or false")
    ]
