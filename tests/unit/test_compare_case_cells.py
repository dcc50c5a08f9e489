"""`skilleval compare`'s case rows where the two sides do not pair: each cell is that side's own mean, or says
whether the side never ran the case or ran it without a score, in the text, markdown and JSON alike."""

from __future__ import annotations

import json

from pytest_skilleval.results.compare import Side, as_json, compare_sides, render_comparison, render_markdown
from pytest_skilleval.results.models import RunPlan
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.trials import score_trial

PLAN = RunPlan(skill="demo", cases=["c1", "c2", "c3", "c4"], agents=["replay"], grading_mode="custom_only")


def _side(label: str, trials: dict[str, float | None]) -> Side:
    """One attempt per case: a score, or None for a trial that ended in an error (ran, not scored)."""
    records = [
        TrialRecord(
            skill="demo",
            case=case,
            agent="replay",
            arm="with_skill",
            attempt=1,
            status="scored" if score is not None else "error",
            grading_mode="custom_only",
            overall=score,
        )
        for case, score in trials.items()
    ]
    return Side(label, PLAN, tuple(score_trial(record, PLAN) for record in records))


def test_unpaired_case_rows_show_each_sides_own_mean_or_why_not() -> None:
    """c1 paired; c2 scored in A, never run in B; c3 run in A without a score, scored in B; c4 run unscored on both."""
    a = _side("A", {"c1": 0.25, "c2": 0.75, "c3": None, "c4": None})
    b = _side("B", {"c1": 0.5, "c3": 0.125, "c4": None})
    result = compare_sides(a, b)
    rows = {d.name: (d.a, d.b, d.delta, d.a_missing, d.b_missing) for d in result.cases}
    assert rows == {
        "c1": (0.25, 0.5, 0.25, None, None),
        "c2": (0.75, None, None, None, "not run"),
        "c3": (None, 0.125, None, "not scored", None),
        "c4": (None, None, None, "not scored", "not scored"),
    }
    lines = render_comparison(a, b, result)
    rows_at = next(i for i, line in enumerate(lines) if line.startswith("By case"))
    text = {line.split()[0]: line.split() for line in lines[rows_at:] if line.startswith("  c")}
    assert text["c2"][1:5] == ["0.7500", "not", "run", "N/A"], text
    assert text["c3"][1:5] == ["not", "scored", "0.1250", "N/A"], text
    assert text["c4"][1:6] == ["not", "scored", "not", "scored", "N/A"], text
    assert "NO" not in [word for row in text.values() for word in row]  # no NO SCORE in a case row
    markdown = render_markdown(a, b, result)
    assert "| c2 | 0.7500 | not run | N/A | no interval | 0 |" in markdown, markdown
    assert "| c3 | not scored | 0.1250 | N/A | no interval | 0 |" in markdown, markdown
    cases = {case["name"]: case for case in json.loads(json.dumps(as_json(a, b, result)))["cases"]}
    assert (cases["c2"]["a"], cases["c2"]["b"], cases["c2"]["b_missing"]) == (0.75, None, "not run")
    assert (cases["c3"]["a"], cases["c3"]["a_missing"], cases["c3"]["b"]) == (None, "not scored", 0.125)
