"""Cases in counting order (2 before 10) and a per-case difference that rounds like the lift (once, at the end)."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_skilleval.results.html_report import _case_rows
from pytest_skilleval.results.natural_order import natural_key
from pytest_skilleval.results.summary_text import signed


def test_digits_sort_as_numbers() -> None:
    ids = ["case-10", "case-2", "Case-1", "case-1", "alpha", "case-02b", "case-2a"]
    assert sorted(ids, key=natural_key) == ["alpha", "Case-1", "case-1", "case-2", "case-2a", "case-02b", "case-10"]


def _trial(case: str, arm: str, overall: float) -> SimpleNamespace:
    return SimpleNamespace(
        agent="replay",
        counted=True,
        status="scored",
        case=case,
        negative_control=False,
        overall=overall,
        arm=arm,
        passed=overall >= 0.5,
    )


def test_report_rows_come_in_counting_order_and_their_difference_rounds_once() -> None:
    # 0.12345 - 0.00005 = 0.1234; each mean rounded first would give 0.1234 - 0.0001 = 0.1233.
    trials = [
        _trial("case-10", "with_skill", 1.0),
        _trial("case-10", "without_skill", 0.5),
        _trial("case-2", "with_skill", 0.12345),
        _trial("case-2", "without_skill", 0.00005),
    ]
    rows = _case_rows(SimpleNamespace(trials=trials), "replay")
    assert [row.case for row in rows] == ["case-2", "case-10"]
    assert signed(rows[0].delta) == signed(0.12345 - 0.00005) == "+0.1234"
