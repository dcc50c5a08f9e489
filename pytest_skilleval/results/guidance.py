"""What the summary tells a person to do: the `--block-on-agent-eval` outcome in words, and one next step.

Pure: both read only the aggregate (and, for the gate, pytest's own exit status), so `skilleval view` and the live
session say the same thing about the same run.
"""

from __future__ import annotations

from pytest_skilleval.results.models import AggregateResult
from pytest_skilleval.results.trials import CUSTOM_ONLY
from pytest_skilleval.results.verdict import (
    EXIT_BASELINE_ONLY,
    EXIT_INCOMPLETE,
    exit_code_for,
    incomplete_why,
)

__all__ = ["gate_line", "next_step"]

MIN_PAIRS = 5
FAILING_NAMED = 5  # failing cases named in the next step; the rest counted


def _gate_reason(result: AggregateResult, code: int) -> str:
    if code == EXIT_BASELINE_ONLY:
        return "a baseline calibration (--skip-with-skill) never passes the gate"
    if code == EXIT_INCOMPLETE:
        if result.execution_status != "succeeded":
            return f"the run {result.execution_status}, so it was incomplete"
        why = incomplete_why(result.coverage) or "coverage incomplete"
        return f"the run was incomplete ({why}); the gate needs every planned case and attempt"
    return f"verdict {result.verdict.upper()}, not PASS"


def gate_line(result: AggregateResult, block: bool, pytest_status: int | None = None) -> str | None:
    """The gate's outcome for this skill, or None without `--block-on-agent-eval`.

    The gate's status replaces only a clean pytest exit (0): when pytest already failed (a FAILED item, 1) that
    status stands, and the line says so instead of naming a status the shell will never see.
    """
    if not block:
        return None
    code = exit_code_for(result, block)
    if code is None:
        return "--block-on-agent-eval: passed (a completed PASS with every planned trial)"
    reason = _gate_reason(result, code)
    if pytest_status:
        return f"--block-on-agent-eval: blocked: {reason}; pytest's own exit status {pytest_status} stands"
    return f"--block-on-agent-eval: exit status {code}: {reason}"


def _judges_off(result: AggregateResult) -> bool:
    judge = result.run_config.get("judge")
    return isinstance(judge, dict) and judge.get("enabled") is False and result.grading_mode != CUSTOM_ONLY


def _few_pairs(result: AggregateResult) -> bool:
    lifts = [a.lift.overall for a in result.agents.values() if a.lift is not None]
    return any(stat.delta is not None and stat.n_pairs < MIN_PAIRS for stat in lifts)


def _failing_with_skill(result: AggregateResult) -> list[str]:
    """Cases (not negative controls) where some with-skill attempt was scored and none met the pass rule."""
    negative = {trial.case for trial in result.trials if trial.negative_control}
    failing = {
        case
        for agent in result.agents.values()
        if agent.with_skill.pass_at_k is not None
        for case, outcome in agent.with_skill.pass_at_k.cases.items()
        if not outcome.passed and outcome.attempts_scored and case not in negative
    }
    return sorted(failing)


def next_step(result: AggregateResult, report_path: str | None, run_id: str | None = None) -> str:
    """The one thing most worth doing after this run, checked from the most to the least blocking. A resume names
    the run by its id when it is known: `latest` may be another run by the time the advice is read (`skilleval
    view` of an older run, or a run started since)."""
    agents = list(result.agents.values())
    resume = f"--resume {run_id or 'latest'}"
    if result.execution_status == "interrupted":
        return f"finish this run: the same command with {resume} runs only the missing trials"
    if result.execution_status != "succeeded":
        return (
            "read the errors above (each ERROR item says what failed; the trial's file in the run folder keeps "
            "Harbor's result, and --harbor-keep-jobs keeps its logs), fix them and run again"
        )
    if result.dataset_summary.get("skill_name_mismatch"):  # no other advice helps while the names disagree
        return str(result.dataset_summary["skill_name_mismatch"])
    if result.dataset_summary.get("unnamed_skill_cases"):  # Discoverability and Efficiency measured nothing
        return str(result.dataset_summary["unnamed_skill_cases"])
    if not result.coverage.publication_complete:
        return (
            f"run every case for a publishable verdict: drop -k/-m/--max-cases, or add {resume} to run only the "
            "missing trials"
        )
    if result.baseline_calibration:
        return "run the with-skill arm too (drop --skip-with-skill) to measure Skill Lift"
    if result.verdict == "inconclusive":
        return "the skill never activated: make SKILL.md's description match what the prompts ask, then rerun"
    failing = _failing_with_skill(result)
    if failing:  # a wrong answer with the skill matters before any measurement advice
        more = f" and {len(failing) - FAILING_NAMED} more" if len(failing) > FAILING_NAMED else ""
        return (
            f"fix the case{'s' if len(failing) > 1 else ''} no with-skill attempt passed: "
            f"{', '.join(failing[:FAILING_NAMED])}{more} (each FAILED item above says which gate failed; the report's "
            "drill-down shows the trial)"
        )
    if any(a.without_skill.execution_status == "skipped" for a in agents):
        return "run the baseline too (drop --skip-baseline) to measure Skill Lift"
    if _judges_off(result):
        return "set a judge model (--judge-model MODEL or LLM_JUDGE_MODEL) so Correctness and Effectiveness score"
    if _few_pairs(result):
        return f"add cases: Skill Lift needs {MIN_PAIRS} or more paired cases for a firm conclusion"
    if result.attempt_policy.max_attempts == 1:
        return "add attempts (--n-attempts 3) to see pass@k and pass^k over k"
    if report_path:
        return f"open the report in a browser: {report_path}"
    return "skilleval view prints this summary again"
