"""Judge replies: strict JSON extraction, score coercion, accuracy criteria, goal and behavior parsing, salvage."""

from __future__ import annotations

import pytest

from verifier.judges.jsontext import extract_json, is_json_prefix, salvage_results
from verifier.judges.replies import (
    ACCURACY_CRITERIA,
    ACCURACY_POLICY,
    InvalidReply,
    finite_score,
    parse_accuracy,
    parse_behavior,
    parse_goal,
    salvaged_behavior,
)

ALL_TRUE = dict.fromkeys(ACCURACY_CRITERIA, True)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "YES YES YES",
        '{"a": 1} {"b": 2}',
        '{"score": 1, "score": 0}',
        '{"score": NaN}',
        '{"score": Infinity}',
        '{"a": [1, 2}',
        "{" * 200 + "}" * 200,
        "x" * 100_001,
    ],
)
def test_extract_rejects_ambiguous_or_invalid_text(text):
    assert extract_json(text) is None


def test_extract_tolerates_prose_and_fences_around_one_document():
    assert extract_json('Here you go:\n```json\n{"score": 0.5, "note": "a } in a string"}\n```\nthanks') == {
        "score": 0.5,
        "note": "a } in a string",
    }
    assert extract_json("prefix [1, 2] suffix") == [1, 2]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, 0.0),
        (-2, 0.0),
        (4.2, 1.0),
        (3, 1.0),
        (0.25, 0.25),
        (10**400, 1.0),
        (-(10**400), 0.0),
        (True, None),
        ("0.5", None),
        (float("nan"), None),
        (float("inf"), None),
        (None, None),
    ],
)
def test_finite_score(value, expected):
    assert finite_score(value) == expected


def test_accuracy_scores_criteria_not_the_numeric_total():
    reply = {"criteria": {**ALL_TRUE, "ACTIONABLE": False, "FACTUALLY_ACCURATE": False}, "score": 1.0, "reason": "r"}
    parsed = parse_accuracy(reply, negative=False)
    assert parsed["score"] == 0.6 and parsed["score_source"] == "criteria"
    assert parsed["applicable"] == 5 and parsed["scoring_policy"] == ACCURACY_POLICY


def test_accuracy_negative_case_excludes_skill_identified_from_both_counts():
    reply = {"criteria": {**ALL_TRUE, "SKILL_IDENTIFIED": False, "ACTIONABLE": False}, "score": 0.0, "reason": ""}
    parsed = parse_accuracy(reply, negative=True)
    assert parsed["score"] == 0.75  # 3 of the 4 applicable
    assert parsed["excluded_criteria"] == ["SKILL_IDENTIFIED"] and parsed["applicable"] == 4
    # a negative case may omit the excluded criterion, but not an applicable one
    four = {k: True for k in ACCURACY_CRITERIA if k != "SKILL_IDENTIFIED"}
    assert parse_accuracy({"criteria": four}, negative=True)["score"] == 1.0
    with pytest.raises(InvalidReply):
        parse_accuracy({"criteria": {k: v for k, v in four.items() if k != "ACTIONABLE"}}, negative=True)


def test_accuracy_positive_without_criteria_falls_back_to_score_negative_is_an_error():
    assert parse_accuracy({"score": 0.4, "reason": "x"}, negative=False)["score"] == 0.4
    with pytest.raises(InvalidReply, match="negative case"):
        parse_accuracy({"score": 0.4}, negative=True)


@pytest.mark.parametrize(
    "reply",
    [
        [],
        {},
        {"score": True},
        {"criteria": {**ALL_TRUE, "ACTIONABLE": "true"}},
        {"criteria": {**ALL_TRUE, "EXTRA": True}},
        {"criteria": {k: True for k in list(ACCURACY_CRITERIA)[:4]}},
        {"score": 0.5, "criteria": []},
    ],
)
def test_accuracy_rejected_shapes(reply):
    with pytest.raises(InvalidReply):
        parse_accuracy(reply, negative=False)


def test_goal_achieved_must_be_boolean_and_score_overrides():
    assert parse_goal({"achieved": True})["score"] == 1.0
    assert parse_goal({"achieved": False, "score": 0.25})["score"] == 0.25
    with pytest.raises(InvalidReply):
        parse_goal({"achieved": "yes"})
    with pytest.raises(InvalidReply):
        parse_goal({"achieved": True, "score": float("nan")})


def test_behavior_divides_by_behaviors_and_ignores_its_score():
    behaviors = ["a", "b"]
    parsed = parse_behavior({"results": [{"passed": True}, {"passed": False}], "score": 1.0}, behaviors)
    assert parsed["score"] == 0.5
    assert parse_behavior({"results": [{"passed": False}], "score": 10**400}, ["a"])["score"] == 0.0
    with pytest.raises(InvalidReply):
        parse_behavior({"results": [{"passed": True}]}, behaviors)
    with pytest.raises(InvalidReply):
        parse_behavior({"results": [{"passed": "true"}, {"passed": True}]}, behaviors)


TRUNCATED = '{"summary": "ok", "results": [{"step": 1, "passed": true, "reason": "saw it"}, {"step": 2, "passed": tr'


def test_salvage_recovers_complete_entries_and_counts_missing_as_not_passed():
    found = salvage_results(TRUNCATED, expected=3)
    assert found is not None
    fields, results = found
    assert fields == {"summary": "ok"} and results == [{"step": 1, "passed": True, "reason": "saw it"}]
    verdict = salvaged_behavior(results, ["a", "b", "c"])
    assert verdict["score"] == round(1 / 3, 4)
    assert verdict["reason"] == "Salvaged 1/3 behavior results from truncated judge response"


@pytest.mark.parametrize(
    "text",
    [
        '{"results": [{"passed": true}]',  # closed array: not salvaged
        '[ {"results": [{"passed": true}, {"pa',  # structural bracket before the object
        '{"score": NaN, "results": [{"passed": true}, {"pa',  # bad field before results
        '{"summary": "cut',
        '{"results": [',  # nothing recovered
        '{"results": [{"passed": true}, {"passed": true}} ]',  # trailing text is no JSON prefix
    ],
)
def test_salvage_refuses(text):
    assert salvage_results(text, expected=3) is None


def test_salvage_needs_at_most_the_expected_count():
    text = '{"results": [{"passed": true}, {"passed": true}, {"pass'
    assert salvage_results(text, expected=1) is None


def test_json_prefix():
    assert is_json_prefix('{"a": tr') and is_json_prefix('{"a": "unfinished') and is_json_prefix('{"a": [1, 2')
    assert not is_json_prefix('{"a": 1}}') and not is_json_prefix('{"a": xyz')
