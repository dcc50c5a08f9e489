"""The one decision whether a case's correctness was measured: checks, a custom grader's metric (or its overall in
custom_only), a judge; and the sentence every surface prints."""

from __future__ import annotations

from pytest_skilleval.results.correctness import unmeasured_cases, unmeasured_line

NO_JUDGE = {"accuracy": None, "goal_accuracy": None, "behavior_check": None, "security": 1.0}


def test_a_case_is_unmeasured_only_when_no_trial_has_any_signal() -> None:
    trials = [
        ("plain", "default", NO_JUDGE, {}, True),
        ("graded", "default_plus_custom", NO_JUDGE, {"answer_ok": 0.0}, True),
        ("custom", "custom_only", NO_JUDGE, {}, True),
        ("custom-unscored", "custom_only", NO_JUDGE, {}, False),
        ("judged", "default", {**NO_JUDGE, "accuracy": 0.0}, {}, True),
        ("checked", "default", NO_JUDGE, {}, True),
    ]
    assert unmeasured_cases(trials, judge_enabled=False) == ["plain", "custom-unscored", "checked"]
    assert unmeasured_cases(trials, judge_enabled=False, cases_with_checks={"checked"}) == [
        "plain",
        "custom-unscored",
    ]
    assert unmeasured_cases(trials, judge_enabled=True) == []


def test_one_attempt_with_a_signal_measures_the_case() -> None:
    trials = [("a", "default", NO_JUDGE, {}, True), ("a", "default_plus_custom", NO_JUDGE, {"m": 1.0}, True)]
    assert unmeasured_cases(trials, judge_enabled=False) == []


def test_the_line_names_the_cases_and_how_to_measure() -> None:
    line = unmeasured_line([f"c{i}" for i in range(7)])
    assert line.startswith("Correctness not measured for 7 cases (c0, c1, c2, c3, c4 and 2 more)")
    assert "checks" in line and "evals/grader.py" in line and "--judge-model" in line
