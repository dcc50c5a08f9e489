"""Terminal summary: content, NO SCORE / N/A / SKIPPED, width, full names, folded rows, reasons, next step."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.models import AggregateResult, RunPlan
from pytest_skilleval.results.records import TokenUsage, TrialRecord
from pytest_skilleval.results.summary import render_summary

PATH = "/tmp/skill/evals/results/20250102_030405_42_0123456789ab"
RESULT = f"{PATH}/result.json"
REPORT = f"{PATH}/report.html"
NO_JUDGE = {"judge": {"enabled": False, "reason": "LLM judge not configured: no judge model"}}
LONG_NAME = "greeting_is_correct_for_the_time_of_day_and_the_users_locale"


def rec(case: str, arm: str, score: float, agent: str = "codex", **kw: Any) -> TrialRecord:
    metrics = {"security": score, "skill_execution": score, "skill_efficiency": score}
    metrics.update(kw.pop("metrics", {}))
    kw.setdefault("activation", 1.0 if arm == "with_skill" else None)
    kw.setdefault("tokens", TokenUsage(prompt=12000, completion=3456))
    kw.setdefault("agent_seconds", 61.25)
    attempt = kw.pop("attempt", 1)
    return TrialRecord(
        skill="s",
        case=case,
        agent=agent,
        arm=arm,
        attempt=attempt,
        status="scored",
        metrics=metrics,
        **kw,  # type: ignore[arg-type]
    )


def full(n: int = 5, custom: str = "style", **plan_kw: Any) -> AggregateResult:
    records = []
    for i in range(n):
        records.append(rec(f"case-{i}", "with_skill", 0.9, custom_metrics={custom: 0.8}))
        records.append(rec(f"case-{i}", "without_skill", 0.4 + 0.05 * i, custom_metrics={custom: 0.5}))
    plan_kw.setdefault("agents", ["codex"])
    return aggregate(records, RunPlan(skill="demo-skill", cases=[f"case-{i}" for i in range(n)], **plan_kw))


def custom_only(n: int = 5) -> AggregateResult:
    records = []
    for i in range(n):
        for arm, value in (("with_skill", 0.9), ("without_skill", 0.3)):
            records.append(
                rec(
                    f"c{i}",
                    arm,
                    value,
                    metrics={},
                    grading_mode="custom_only",
                    overall=value,
                    custom_metrics={"cc": value},
                )
            )
    for r in records:
        r.metrics = {}
    plan = RunPlan(
        skill="s",
        cases=[f"c{i}" for i in range(n)],
        agents=["codex"],
        grading_mode="custom_only",
        run_config={"judge": {"enabled": False, "reason": "custom_only grading runs no judges"}},
    )
    return aggregate(records, plan)


def text(lines: list[str]) -> str:
    return "\n".join(lines)


def flat(lines: list[str]) -> str:
    """The text with wrapped continuation lines joined back, to match a sentence wherever the width broke it."""
    return text(lines).replace("\n    ", " ").replace("\n  ", " ")


def line_with(lines: list[str], start: str) -> str:
    return next(line for line in lines if line.strip().startswith(start))


def too_wide(lines: list[str], width: int) -> list[str]:
    return [line for line in lines if len(line) > width and PATH not in line]


# ------------------------------------------------------------------------------------------ width and names


@pytest.mark.parametrize("width", [80, 160])
def test_fits_the_terminal_width(width: int) -> None:
    res = full(agent_models={"codex": "gpt-5-codex"}, custom=LONG_NAME, run_config=NO_JUDGE)
    lines = render_summary(res, RESULT, width, report_path=REPORT, block_on_agent_eval=True)
    assert not too_wide(lines, width)
    assert len(lines[0]) == width  # the header rule spans the terminal, like pytest's own separators


def test_narrow_terminals_get_the_80_column_layout() -> None:
    lines = render_summary(full(), RESULT, 60)
    assert not too_wide(lines, 80) and len(lines[0]) == 80


def test_a_long_metric_name_is_never_cut() -> None:
    narrow = render_summary(full(custom=LONG_NAME), RESULT, 80)
    i = next(i for i, line in enumerate(narrow) if f"custom: {LONG_NAME}" in line)
    values = narrow[i + 1]  # the name had its own line; the values follow, aligned under the cells
    assert "0.8000" in values and "0.5000" in values and "+0.3000 PASS" in values
    wide = render_summary(full(custom=LONG_NAME), RESULT, 160)
    row = line_with(wide, f"custom: {LONG_NAME}")
    assert "0.8000" in row and "+0.3000 PASS" in row  # room enough: one row


def test_a_long_case_id_is_never_cut() -> None:
    case = "a-case-whose-id-is-long-enough-to-overflow-its-column"
    res = aggregate(
        [rec(case, "with_skill", 0.9), rec(case, "without_skill", 0.5)],
        RunPlan(skill="s", cases=[case], agents=["codex"]),
    )
    lines = render_summary(res, RESULT, 80)
    assert any(line.strip() == case for line in lines)
    assert not too_wide(lines, 80)


def test_score_policy_is_not_split_inside_its_name() -> None:
    lines = render_summary(full(), RESULT, 80)
    assert any("skill-evaluator-dimension-mean-v1" in line for line in lines)


# ------------------------------------------------------------------------------------------------ content


def test_sections_and_values() -> None:
    out = text(render_summary(full(), RESULT))
    for needle in (
        "skilleval: demo-skill",
        "Results by Case",
        "Results by Evaluator",
        "Results by Dimension",
        "Skill Lift (with skill - without skill, paired by case)",
        "pass@k (k=1, threshold 0.50)",
        "Resources",
        "Overall verdict: NEUTRAL",
        "Outcome lift (Correctness and Effectiveness only)",
        "McNemar exact p",
        f"Results: {RESULT}",
    ):
        assert needle in out, needle
    lines = out.splitlines()
    # evaluator row: with 0.9, without mean(0.4..0.6)=0.5, lift +0.4 PASS
    row = line_with(lines, "security")
    assert "0.9000" in row and "0.5000" in row and "+0.4000 PASS" in row
    assert "0.9000 PASS" in line_with(lines, "Security")
    lift_rows = [line for line in lines if line.strip().startswith("Security")]
    assert "[+" in lift_rows[1] and "  5  " in lift_rows[1] and lift_rows[1].endswith("PASS")
    assert "custom: style" in out
    tokens = next(line for line in lines if "tokens" in line and "prompt" in line and "," in line)
    assert "77,280" in tokens and "+0" in tokens


def test_unscored_dimensions_read_no_score() -> None:
    out = render_summary(full(), RESULT)
    corr = [line for line in out if line.strip().startswith("Correctness")]
    assert corr[0].count("NO SCORE") == 2 and corr[1].split()[-1] == "N/A"  # both arms, then its lift
    assert not any("0.0000" in line for line in out if line.strip().startswith(("Correctness", "Effectiveness")))


def test_judge_rows_fold_into_one_line_without_a_judge() -> None:
    lines = render_summary(full(run_config=NO_JUDGE), RESULT)
    assert not any(line.strip().startswith(("accuracy", "goal_accuracy", "behavior_check")) for line in lines)
    assert "NO SCORE (LLM judge not configured): accuracy, goal_accuracy, behavior_check" in text(lines)
    # the dimensions stay: the verdict needs all five
    assert line_with(lines, "Correctness").count("NO SCORE") == 2


def test_custom_only_hides_rows_that_cannot_score() -> None:
    lines = render_summary(custom_only(), RESULT, 80)
    out = flat(lines)
    standard = (
        "security",
        "skill_execution",
        "skill_efficiency",
        "accuracy",
        "goal_accuracy",
        "behavior_check",
        "Security",
        "Correctness",
        "Discoverability",
        "Effectiveness",
        "Efficiency",
        "Outcome*",
    )
    rows = [line.split("  ")[1] for line in lines if line.startswith("  ") and "  " in line[2:]]
    assert not [row for row in rows if row in standard]  # no table row for anything that cannot score
    assert sum("NO SCORE" in line for line in lines) == 2  # the evaluators' line and the dimensions' line
    assert "NO SCORE (custom_only grading runs only your grader): security" in out
    assert "0.9000" in line_with(lines, "Overall") and "custom: cc" in out
    assert "+0.6000" in [line for line in lines if line.strip().startswith("Overall  ")][1]
    assert "score policy custom-overall-v1" in out


def test_skip_baseline_reads_skipped_and_na() -> None:
    out = render_summary(full(arms=["with_skill"]), RESULT)
    row = line_with(out, "security")
    assert "SKIPPED" in row and "N/A" in row
    assert any("Skill Lift (with skill - without skill, paired by case): omitted" in line for line in out)
    assert any("delta N/A" in line for line in out)


def test_baseline_calibration_banner() -> None:
    records = [rec("a", "without_skill", 0.7)]
    res = aggregate(records, RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["without_skill"]))
    out = text(render_summary(res, None))
    assert "Baseline calibration" in out and "Results: not written" in out


def test_inconclusive_is_explained() -> None:
    records = [rec("a", "with_skill", 0.9, activation=0.0), rec("a", "without_skill", 0.5)]
    res = aggregate(records, RunPlan(skill="s", cases=["a"], agents=["codex"]))
    out = text(render_summary(res, RESULT))
    assert "INCONCLUSIVE" in out and "skill never activated" in out


def test_insufficient_pairs_are_marked() -> None:
    out = render_summary(full(n=3), RESULT)
    overall_lift = [line for line in out if line.strip().startswith("Overall  ")][1]
    assert " 3! " in overall_lift
    assert any("fewer than 5 paired cases" in line for line in out)


def test_multi_agent_blocks() -> None:
    records = []
    for agent in ("codex", "claude-code"):
        records += [rec("a", "with_skill", 0.9, agent=agent), rec("a", "without_skill", 0.5, agent=agent)]
    res = aggregate(records, RunPlan(skill="s", cases=["a"], agents=["codex", "claude-code"]))
    out = render_summary(res, RESULT)
    assert any(" codex: " in line for line in out) and any(" claude-code: " in line for line in out)
    assert "agent" in line_with(out, "case")  # the case table names the agent of each row


# ----------------------------------------------------------------------------------------- verdict reasons


def test_verdict_says_why_a_neutral_run_is_neutral() -> None:
    header = flat(render_summary(full(run_config=NO_JUDGE), RESULT)[:3])
    assert "no agent passes every dimension" not in header
    assert "NO SCORE for correctness, effectiveness (LLM judge not configured)" in header
    assert "custom_only grading scores no dimensions" in flat(render_summary(custom_only(), RESULT)[:3])


def test_partial_selection_is_flagged_in_the_verdict() -> None:
    records = [rec("a", "with_skill", 0.9), rec("a", "without_skill", 0.5)]
    res = aggregate(
        records, RunPlan(skill="s", cases=["a", "b"], agents=["codex"], selection_complete=False, skipped_cases=["b"])
    )
    out = flat(render_summary(res, RESULT))
    assert "Verdict: NEUTRAL -- publication-incomplete (partial selection: 1 case(s) not run)" in out
    assert "PUBLICATION-INCOMPLETE: cases not run: b" in out


def test_baseline_rows_use_pytests_outcome_words() -> None:
    records = [
        rec("a", "with_skill", 0.3),
        rec("a", "without_skill", 0.2),
        rec("b", "with_skill", 0.9),
        rec("b", "without_skill", 0.2),
    ]
    lines = render_summary(aggregate(records, RunPlan(skill="s", cases=["a", "b"], agents=["codex"])), RESULT)
    header = line_with(lines, "case")
    assert header.split() == ["case", "arm", "mean", "passed", "pytest"]
    rows = {tuple(line.split()[:3]): line for line in lines if line.strip().startswith(("a ", "b "))}
    assert rows[("a", "with", "skill")].endswith("0/1     1 failed")
    assert rows[("a", "without", "skill")].endswith("0/1     1 passed")  # below threshold, yet PASSED in pytest
    assert rows[("b", "with", "skill")].endswith("1/1     1 passed")
    assert "passes in pytest whatever it scores" in text(lines)


# ------------------------------------------------------------------------------------- gate and next step


def partial() -> AggregateResult:
    records = [rec("a", "with_skill", 0.9), rec("a", "without_skill", 0.5)]
    return aggregate(
        records, RunPlan(skill="s", cases=["a", "b"], agents=["codex"], selection_complete=False, skipped_cases=["b"])
    )


def test_gate_on_a_partial_run_says_incomplete() -> None:
    out = flat(render_summary(partial(), RESULT, block_on_agent_eval=True, pytest_status=0))
    gate = out[out.index("--block-on-agent-eval") :].split("\n")[0]
    assert gate == (
        "--block-on-agent-eval: exit status 13: the run was incomplete (partial selection: 1 case(s) "
        "not run); the gate needs every planned case and attempt"
    )


def test_gate_keeps_pytests_own_failure_status() -> None:
    out = flat(render_summary(partial(), RESULT, block_on_agent_eval=True, pytest_status=1))
    assert "--block-on-agent-eval: blocked: the run was incomplete" in out
    assert "pytest's own exit status 1 stands" in out and "exit status 13" not in out


def test_gate_on_a_complete_neutral_run_names_the_verdict() -> None:
    out = flat(render_summary(full(), RESULT, block_on_agent_eval=True))
    assert "--block-on-agent-eval: exit status 11: verdict NEUTRAL, not PASS" in out
    assert "block-on-agent-eval" not in text(render_summary(full(), RESULT))


def test_ends_with_the_report_and_one_next_step() -> None:
    lines = render_summary(full(run_config=NO_JUDGE), RESULT, report_path=REPORT, card_path=f"{PATH}/BENCHMARK.md")
    tail = lines[-5:]
    assert tail[0] == f"Results: {RESULT}" and tail[1] == f"Report: {REPORT}"
    assert tail[2] == f"Card:   {PATH}/BENCHMARK.md"
    assert text(tail[3:]).startswith("Next: set a judge model (--judge-model MODEL or LLM_JUDGE_MODEL)")
    assert sum(line.startswith("Next:") for line in lines) == 1


def test_a_report_that_failed_to_render_says_so() -> None:
    out = text(render_summary(full(), RESULT, report_error="OSError: disk full"))
    assert "Report: not written (OSError: disk full)" in out


def judged(n: int, attempts: int = 1, **plan_kw: Any) -> AggregateResult:
    judges = {"accuracy": 0.9, "goal_accuracy": 0.9, "behavior_check": 0.9}
    records = [
        rec(f"c{i}", arm, 0.9, metrics=judges, attempt=a)
        for i in range(n)
        for a in range(1, attempts + 1)
        for arm in ("with_skill", "without_skill")
    ]
    return aggregate(
        records, RunPlan(skill="s", cases=[f"c{i}" for i in range(n)], agents=["codex"], n_attempts=attempts, **plan_kw)
    )


@pytest.mark.parametrize(
    ("result", "step"),
    [
        (lambda: partial(), "run every case for a publishable verdict: drop -k/-m/--max-cases"),
        (lambda: judged(5, interrupted=True), "--resume 20250102_030405_42_0123456789ab runs only the missing"),
        (
            lambda: aggregate(
                [rec("a", "without_skill", 0.7)],
                RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["without_skill"]),
            ),
            "drop --skip-with-skill",
        ),
        (
            lambda: aggregate(
                [rec("a", "with_skill", 0.9, activation=0.0), rec("a", "without_skill", 0.5)],
                RunPlan(skill="s", cases=["a"], agents=["codex"]),
            ),
            "SKILL.md's description",
        ),
        (
            lambda: aggregate(  # a wrong answer with the skill comes before measurement advice (no judge here)
                [
                    rec(case, arm, score, negative_control=case == "neg")
                    for case, score in (("good", 0.9), ("bad", 0.2), ("neg", 0.2))
                    for arm in ("with_skill", "without_skill")
                ],
                RunPlan(skill="s", cases=["good", "bad", "neg"], negative_cases=["neg"], agents=["codex"]),
            ),
            "fix the case no with-skill attempt passed: bad (each FAILED item above says which gate failed",
        ),
        (lambda: full(arms=["with_skill"]), "drop --skip-baseline"),
        (lambda: full(run_config=NO_JUDGE), "set a judge model"),
        (lambda: judged(3), "add cases"),
        (lambda: judged(5), "add attempts (--n-attempts 3)"),
        (lambda: judged(5, attempts=2), f"open the report in a browser: {REPORT}"),
    ],
)
def test_next_step_is_the_most_useful_one(result: Any, step: str) -> None:
    lines = render_summary(result(), RESULT, report_path=REPORT)
    nxt = flat(lines[next(i for i, line in enumerate(lines) if line.startswith("Next:")) :])
    assert step in nxt, nxt


def test_a_resume_names_the_run_shown_and_latest_only_when_no_run_folder_is_known() -> None:
    """`skilleval view` of an older run must not send the author to `latest`, which is another run."""
    older = "/tmp/skill/evals/results/20240101_000000_7_aaaaaaaaaaaa/result.json"
    named = flat(render_summary(partial(), older, report_path=REPORT))
    assert "--resume 20240101_000000_7_aaaaaaaaaaaa to run only the missing trials" in named
    assert "latest" not in named
    assert "--resume latest" in flat(render_summary(judged(5, interrupted=True), None))


def test_mixed_outcomes_are_spelled_out_and_still_fit() -> None:
    case = "contextual-greeting"
    records = [
        rec(case, "with_skill", 0.9, attempt=1),
        rec(case, "with_skill", 0.2, attempt=2),
        TrialRecord(skill="s", case=case, agent="codex", arm="with_skill", attempt=3, status="error", error="boom"),
        rec(case, "without_skill", 0.2),
    ]
    res = aggregate(records, RunPlan(skill="s", cases=[case], agents=["codex"], n_attempts=3))
    lines = render_summary(res, RESULT, 80)
    assert any(line.endswith("1/3     1 failed, 1 passed, 1 error") for line in lines)
    assert not too_wide(lines, 80)
    assert "PUBLICATION-INCOMPLETE: 2 planned trial(s) missing" in text(lines)


def test_a_power_line_that_gives_cases_is_headed_cases_not_attempts() -> None:
    """One attempt per case: the spread of attempts is unknown, so the suggestion is a number of cases; a line that
    began "Attempts for 80% power" and then said "about 2 cases" read as if it counted attempts."""
    out = flat(render_summary(full(), RESULT))
    assert "Cases for 80% power to detect a lift of 0.4000 (observed): about 2 cases (now 5)" in out
    assert "Attempts for 80% power" not in out


def test_a_negative_control_is_named_under_the_case_rows() -> None:
    """Its with-skill row reads like any other's; a pass there means the skill was left unused, so the table says
    which cases are negative controls."""
    records = [
        rec("greet", "with_skill", 0.9),
        rec("greet", "without_skill", 0.4),
        rec("arith", "with_skill", 1.0, negative_control=True),
        rec("arith", "without_skill", 1.0, negative_control=True),
    ]
    res = aggregate(records, RunPlan(skill="s", cases=["greet", "arith"], agents=["codex"]))
    said = " ".join(" ".join(render_summary(res, RESULT, 100)).split())
    assert "Negative control (passes when the agent leaves the skill unused): arith" in said
    assert "Negative control (passes when the agent leaves the skill unused): arith, greet" not in said
