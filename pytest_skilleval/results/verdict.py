"""Verdicts per agent and for the run, the best agent, and exit codes for --block-on-agent-eval (pure)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from pytest_skilleval.results.models import (
    DIMENSIONS,
    AgentResult,
    AggregateResult,
    ArmSummary,
    Coverage,
    LiftStat,
    RunPlan,
    Verdict,
)
from pytest_skilleval.results.trials import CUSTOM_ONLY
from verifier.evidence import JUDGE_METRICS, STANDARD_METRICS
from verifier.scoring import DIMENSION_SOURCES

# The dimensions only the LLM judges score (correctness, effectiveness): no judge model, no score.
JUDGE_DIMENSIONS = frozenset(d for d, sources in DIMENSION_SOURCES.items() if set(sources) <= set(JUDGE_METRICS))

# ------------------------------------------------------------------------------------------------ verdicts


def agent_verdict(status: str, ws: ArmSummary, inconclusive: bool, plan: RunPlan) -> tuple[Verdict, str]:
    if status != "succeeded":
        return "neutral", f"agent execution {status}; only a succeeded agent is judged"
    if ws.execution_status == "skipped":
        return "neutral", "with-skill arm not run (baseline calibration): no skill was measured"
    if inconclusive:
        return "inconclusive", "skill never activated"
    if plan.grading_mode == CUSTOM_ONLY:
        return "neutral", "custom_only grading has no dimensions to gate on"
    bands = ws.dimension_bands.model_dump()
    missing = [d for d, b in bands.items() if b is None]
    if missing:
        failing = [d for d, b in bands.items() if b == "FAIL"]
        extra = f"; failing: {', '.join(failing)}" if failing else ""
        return "neutral", f"NO SCORE for {', '.join(missing)}{_unscored_because(missing, plan)}{extra}"
    failing = [d for d, b in bands.items() if b == "FAIL"]
    if failing:
        return "fail", f"dimension(s) below 0.40: {', '.join(failing)}"
    neutral = [d for d, b in bands.items() if b == "NEUTRAL"]
    if neutral:
        return "neutral", f"dimension(s) below 0.50: {', '.join(neutral)}"
    return "pass", "every dimension passes"


def _unscored_because(missing: list[str], plan: RunPlan) -> str:
    """Why a dimension has no score, when the run settings say: the judge dimensions without a judge model."""
    judge = plan.run_config.get("judge")
    if isinstance(judge, Mapping) and judge.get("enabled") is False and set(missing) <= JUDGE_DIMENSIONS:
        return " (LLM judge not configured)"
    return ""


def top_verdict(
    execution_status: str, calibration: bool, agents: Mapping[str, AgentResult], grading_mode: str = "default"
) -> tuple[Verdict, str]:
    """The run's verdict and its true cause: a NEUTRAL names what kept each agent from passing."""
    if execution_status != "succeeded":
        return "neutral", f"run {execution_status}; not every agent completed"
    if calibration:
        return "neutral", "baseline calibration (with-skill arm skipped): no skill was measured"
    succeeded = [a for a in agents.values() if a.execution_status == "succeeded"]
    judged = [a for a in succeeded if a.verdict != "inconclusive"]
    if any(a.verdict == "pass" for a in judged):
        return "pass", "at least one agent passes every dimension"
    if not succeeded:
        return "neutral", "no agent completed"
    if not judged:
        return "inconclusive", "skill never activated for any agent"
    if grading_mode == CUSTOM_ONLY:
        return "neutral", "custom_only grading scores no dimensions, so the verdict cannot be PASS"
    neutral = [a for a in judged if a.verdict == "neutral"]
    if neutral:
        causes = "; ".join(a.verdict_reason if len(agents) == 1 else f"{a.name}: {a.verdict_reason}" for a in neutral)
        return "neutral", causes if len(agents) == 1 else f"no agent passes every dimension ({causes})"
    return "fail", "every judged agent fails a dimension"


def incomplete_why(coverage: Coverage) -> str | None:
    """Why the run does not cover its planned grid (`partial selection: 3 case(s) not run`); None when it does."""
    if coverage.publication_complete:
        return None
    if coverage.interrupted:
        return "interrupted"
    if coverage.budget_stopped:
        return f"budget-stopped: {coverage.budget_stopped} spent; finish it with --resume"
    if coverage.skipped_cases:
        return f"partial selection: {len(coverage.skipped_cases)} case(s) not run"
    if coverage.missing_trials:
        return f"{len(coverage.missing_trials)} planned trial(s) missing"
    return "partial selection"


def pick_best_agent(agents: Mapping[str, AgentResult], calibration: bool) -> str | None:
    """The succeeded agent with the highest arm score, ties broken by lift."""
    best: tuple[float, float] | None = None
    name = None
    for agent in agents.values():
        if agent.execution_status != "succeeded":
            continue
        score = (agent.without_skill if calibration else agent.with_skill).overall
        if score is None:
            continue
        lift = agent.lift.overall.delta if agent.lift and agent.lift.overall.delta is not None else -math.inf
        if best is None or (score, lift) > best:
            best, name = (score, lift), agent.name
    return name


def agent_comparison(agents: Mapping[str, AgentResult]) -> dict[str, object]:
    """comparison.json: per metric/dimension/overall, each agent's arms and lift (null unless succeeded)."""

    def cell(agent: AgentResult, w: float | None, wo: float | None, lift: LiftStat | None) -> dict[str, float | None]:
        if agent.execution_status != "succeeded":
            return {"with_skill": None, "without_skill": None, "lift": None}
        return {"with_skill": w, "without_skill": wo, "lift": lift.delta if lift else None}

    def lift_of(agent: AgentResult, group: str, key: str) -> LiftStat | None:
        if agent.lift is None:
            return None
        return getattr(agent.lift, group)[key] if group else getattr(agent.lift, key)

    return {
        "overall": {
            a.name: cell(a, a.with_skill.overall, a.without_skill.overall, lift_of(a, "", "overall"))
            for a in agents.values()
        },
        "metrics": {
            m: {
                a.name: cell(a, a.with_skill.metrics[m], a.without_skill.metrics[m], lift_of(a, "metrics", m))
                for a in agents.values()
            }
            for m in STANDARD_METRICS
        },
        "dimensions": {
            d: {
                a.name: cell(
                    a,
                    getattr(a.with_skill.dimensions, d),
                    getattr(a.without_skill.dimensions, d),
                    lift_of(a, "dimensions", d),
                )
                for a in agents.values()
            }
            for d in DIMENSIONS
        },
        "pass_at_k": {
            a.name: {
                "with_skill": a.with_skill.pass_at_k.rate if a.with_skill.pass_at_k else None,
                "without_skill": a.without_skill.pass_at_k.rate if a.without_skill.pass_at_k else None,
                "lift": a.lift.pass_at_k.delta if a.lift else None,
            }
            for a in agents.values()
        },
        "verdicts": {a.name: a.verdict for a in agents.values()},
    }


# ------------------------------------------------------------------------------------------------ exit code

EXIT_VERDICT_FAIL = 10
EXIT_VERDICT_NEUTRAL = 11
EXIT_VERDICT_INCONCLUSIVE = 12
EXIT_INCOMPLETE = 13
EXIT_BASELINE_ONLY = 14


def gate_failure_reason(result: AggregateResult) -> str | None:
    """Why `--block-on-agent-eval` would block this run, or None when it passes the gate."""
    if result.baseline_calibration:
        return "baseline calibration runs (--skip-with-skill) never satisfy the gate"
    if result.execution_status != "succeeded":
        return f"run {result.execution_status}"
    if not result.coverage.publication_complete:
        return "attempt coverage incomplete (partial selection or missing attempts)"
    if result.verdict != "pass":
        return f"verdict {result.verdict}"
    return None


def exit_code_for(result: AggregateResult, block: bool) -> int | None:
    """Session exit status demanded by `--block-on-agent-eval`; None means "leave pytest's status alone".

    Without `block` this is always None: the verdict is reported, not enforced. With `block`, a completed PASS with
    complete attempt coverage also gives None, and anything else a non-zero code outside pytest's own 0-5 range,
    checked in this order:

    - 14 `EXIT_BASELINE_ONLY`: a baseline calibration (`--skip-with-skill`) can never satisfy the gate;
    - 13 `EXIT_INCOMPLETE`: the run failed or was interrupted, or the selection/attempt coverage is incomplete
      (`-k`, `--max-cases`, missing attempts);
    - 10 `EXIT_VERDICT_FAIL`: a completed run whose verdict is FAIL;
    - 11 `EXIT_VERDICT_NEUTRAL`: a completed run whose verdict is NEUTRAL;
    - 12 `EXIT_VERDICT_INCONCLUSIVE`: a completed run whose skill never activated.

    Callers should keep a pytest status of 2-4 (interrupted, internal error, usage error) over these codes.
    """
    if not block or gate_failure_reason(result) is None:
        return None
    if result.baseline_calibration:
        return EXIT_BASELINE_ONLY
    if result.execution_status != "succeeded" or not result.coverage.publication_complete:
        return EXIT_INCOMPLETE
    return {
        "fail": EXIT_VERDICT_FAIL,
        "neutral": EXIT_VERDICT_NEUTRAL,
        "inconclusive": EXIT_VERDICT_INCONCLUSIVE,
    }.get(result.verdict, EXIT_VERDICT_NEUTRAL)
