"""Terminal summary: content, NO SCORE / N/A / SKIPPED, and the 100-column limit."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.records import TokenUsage, TrialRecord
from pytest_skilleval.results.models import AggregateResult, RunPlan
from pytest_skilleval.results.summary import render_summary

PATH = "/tmp/skill/evals/results/20250102_030405_42_0123456789ab"


def rec(case: str, arm: str, score: float, agent: str = "codex", **kw: Any) -> TrialRecord:
    metrics = {"security": score, "skill_execution": score, "skill_efficiency": score}
    metrics.update(kw.pop("metrics", {}))
    kw.setdefault("activation", 1.0 if arm == "with_skill" else None)
    kw.setdefault("tokens", TokenUsage(prompt=12000, completion=3456))
    kw.setdefault("agent_seconds", 61.25)
    attempt = kw.pop("attempt", 1)
    return TrialRecord(
        skill="s", case=case, agent=agent, arm=arm, attempt=attempt, status="scored", metrics=metrics, **kw  # type: ignore[arg-type]
    )


def full(n: int = 5, **plan_kw: Any) -> AggregateResult:
    records = []
    for i in range(n):
        records.append(rec(f"case-{i}", "with_skill", 0.9, custom_metrics={"style": 0.8}))
        records.append(rec(f"case-{i}", "without_skill", 0.4 + 0.05 * i, custom_metrics={"style": 0.5}))
    plan_kw.setdefault("agents", ["codex"])
    return aggregate(records, RunPlan(skill="demo-skill", cases=[f"case-{i}" for i in range(n)], **plan_kw))


def text(lines: list[str]) -> str:
    return "\n".join(lines)


def test_fits_100_columns() -> None:
    lines = render_summary(full(agent_models={"codex": "gpt-5-codex"}), PATH)
    assert all(len(line) <= 100 for line in lines), [line for line in lines if len(line) > 100]
    narrow = render_summary(full(), PATH, width=80)
    assert all(len(line) <= 100 for line in narrow)


def test_sections_and_values() -> None:
    out = text(render_summary(full(), PATH))
    for needle in (
        "skilleval: demo-skill",
        "Results by Evaluator",
        "Results by Dimension",
        "pass@k (k=1, threshold 0.50)",
        "Resources",
        "Overall verdict: NEUTRAL",
        "Outcome lift (Correctness and Effectiveness only)",
        "McNemar exact p",
        PATH,
    ):
        assert needle in out, needle
    # evaluator row: with 0.9, without mean(0.4..0.6)=0.5, lift +0.4 PASS
    row = next(line for line in out.splitlines() if line.strip().startswith("security"))
    assert "0.9000" in row and "0.5000" in row and "+0.4000 PASS" in row
    dim = next(line for line in out.splitlines() if line.strip().startswith("Security"))
    assert "0.9000 PASS" in dim and "[+" in dim and "n=5 PASS" in dim
    assert "custom: style" in out
    tokens = next(line for line in out.splitlines() if "tokens" in line and "prompt" in line and "," in line)
    assert "77,280" in tokens and "+0" in tokens


def test_unscored_dimensions_read_no_score() -> None:
    out = render_summary(full(), PATH)
    corr = next(line for line in out if line.strip().startswith("Correctness"))
    assert corr.count("NO SCORE") == 2 and "N/A" in corr
    assert not any("0.0000" in line for line in out if line.strip().startswith(("Correctness", "Effectiveness")))


def test_skip_baseline_reads_skipped_and_na() -> None:
    out = render_summary(full(arms=["with_skill"]), PATH)
    row = next(line for line in out if line.strip().startswith("security"))
    assert "SKIPPED" in row and "N/A" in row
    assert any("Skill Lift omitted" in line for line in out)
    assert any("delta N/A" in line for line in out)


def test_baseline_calibration_banner() -> None:
    records = [rec("a", "without_skill", 0.7)]
    res = aggregate(records, RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["without_skill"]))
    out = text(render_summary(res, None))
    assert "Baseline calibration" in out and "Results: not written" in out


def test_inconclusive_is_explained() -> None:
    records = [rec("a", "with_skill", 0.9, activation=0.0), rec("a", "without_skill", 0.5)]
    res = aggregate(records, RunPlan(skill="s", cases=["a"], agents=["codex"]))
    out = text(render_summary(res, PATH))
    assert "INCONCLUSIVE" in out and "skill never activated" in out


def test_partial_selection_is_flagged() -> None:
    records = [rec("a", "with_skill", 0.9), rec("a", "without_skill", 0.5)]
    res = aggregate(
        records, RunPlan(skill="s", cases=["a", "b"], agents=["codex"], selection_complete=False, skipped_cases=["b"])
    )
    out = text(render_summary(res, PATH))
    assert "PUBLICATION-INCOMPLETE" in out and "skipped cases: b" in out


def test_insufficient_pairs_are_marked() -> None:
    out = render_summary(full(n=3), PATH)
    assert any("n=3!" in line for line in out)
    assert any("fewer than 5 paired cases" in line for line in out)


def test_multi_agent_blocks() -> None:
    records = []
    for agent in ("codex", "claude-code"):
        records += [rec("a", "with_skill", 0.9, agent=agent), rec("a", "without_skill", 0.5, agent=agent)]
    res = aggregate(records, RunPlan(skill="s", cases=["a"], agents=["codex", "claude-code"]))
    out = render_summary(res, PATH)
    assert any(" codex: " in line for line in out) and any(" claude-code: " in line for line in out)


@pytest.mark.parametrize("width", [100, 120])
def test_header_respects_width(width: int) -> None:
    assert len(render_summary(full(), PATH, width=width)[0]) == width
