"""Pydantic models for the session aggregate and the result.json it becomes.

`RunPlan` is what the session *meant* to run (from the dataset and the options); `AggregateResult` is what the pure
core concluded from the records that actually ran. `ResultDocument` adds what only the writer knows (run id, Harbor
version, paths) and is the model the shipped JSON Schema (`schemas/result.schema.json`) is generated from.

Numbers are rounded to 4 places when the aggregate builds these models; None (JSON null) always means "not scored"
or "not available", never zero.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from pytest_skilleval.results.records import ARMS, Arm, TrialKey
from pytest_skilleval.results.triggering import TriggeringAgent
from verifier.check_spec import CheckResult
from verifier.scoring import SCORE_POLICY

SCHEMA_VERSION: Final = "2.0"
DIMENSIONS: tuple[str, ...] = ("security", "correctness", "discoverability", "effectiveness", "efficiency")

Band = Literal["PASS", "NEUTRAL", "FAIL"]
Verdict = Literal["pass", "neutral", "fail", "inconclusive"]
ExecutionStatus = Literal["succeeded", "failed", "interrupted"]
ConditionStatus = Literal["succeeded", "failed", "skipped"]
AgentStatus = Literal["succeeded", "failed", "skipped"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunPlan(_Model):
    """What the session set out to run: the expected grid is cases x agents x arms x attempts."""

    skill: str
    skill_dir: str = ""
    cases: list[str] = Field(description="Every case id the dataset defines, in dataset order.")
    negative_cases: list[str] = Field(default_factory=list, description="Negative-control case ids, if known.")
    agents: list[str]
    arms: list[Arm] = Field(default_factory=lambda: list(ARMS), description="Arms run.")
    n_attempts: int = Field(default=1, ge=1)
    pass_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    stop_on_pass: bool = False
    grading_mode: Literal["default", "default_plus_custom", "custom_only"] = "default"
    selection_complete: bool = Field(default=True, description="False under -k/-m/--max-cases/node-id selection.")
    skipped_cases: list[str] = Field(default_factory=list, description="Cases left out of this session's run.")
    interrupted: bool = False
    run_config: dict[str, Any] = Field(default_factory=dict)
    agent_models: dict[str, str | None] = Field(default_factory=dict)
    dataset_summary: dict[str, Any] = Field(default_factory=dict)
    dataset_digest: str | None = None
    dataset_digest_algorithm: str | None = None
    dataset_snapshot: dict[str, Any] | None = Field(default=None, description="Written as dataset_snapshot.json.")
    evaluated_at: str | None = Field(default=None, description="ISO-8601 UTC; the aggregate stamps now if None.")
    duration_seconds: float | None = None
    baseline_version: dict[str, Any] | None = Field(
        default=None, description="--baseline-skill: source (path or git:REF), commit, short and label."
    )
    budget_stopped: str | None = Field(default=None, description="--max-cost stopped the run: what was spent.")
    min_lift: float | None = Field(default=None, description="--min-lift: the lift the power suggestion aims at.")


class Dimensions(_Model):
    security: float | None = None
    correctness: float | None = None
    discoverability: float | None = None
    effectiveness: float | None = None
    efficiency: float | None = None


class DimensionBands(_Model):
    security: Band | None = None
    correctness: Band | None = None
    discoverability: Band | None = None
    effectiveness: Band | None = None
    efficiency: Band | None = None


class TokenCounts(_Model):
    prompt: int | None = None
    completion: int | None = None
    cache: int | None = None
    total: int | None = Field(default=None, description="prompt + completion; cache is inside prompt.")
    cost_usd: float | None = None
    cost_source: Literal["agent", "override", "price_map"] | None = Field(
        default=None, description="The agent's own figure, a --model-price override, or litellm's installed price map."
    )


class TrialEntry(_Model):
    case: str
    agent: str
    arm: Arm
    attempt: int
    status: str
    grading_mode: str
    overall: float | None
    passed: bool | None
    metrics: dict[str, float | None]
    dimensions: Dimensions
    custom_metrics: dict[str, float]
    checks: list[CheckResult] | None = Field(default=None, description="The case's checks; null when it has none.")
    overall_basis: list[str] | None = Field(
        default=None, description="The dimensions the overall is the mean of; fewer than five: a partial overall."
    )
    activation: float | None = None
    negative_control: bool = False
    judge_models: dict[str, str | None] = Field(default_factory=dict)
    tokens: TokenCounts | None = None
    judge_cost_usd: float | None = Field(
        default=None,
        description="The LLM judges' cost (USD) of grading this trial, apart from the agent's (tokens.cost_usd); "
        "null when no judge ran or its cost is unknown.",
    )
    seconds: float | None = None
    error: str | None = None
    reason: str | None = None
    nodeid: str = ""
    counted: bool = Field(default=True, description="False for extra, duplicate or skipped records.")
    notes: list[str] = Field(default_factory=list)

    @property
    def key(self) -> TrialKey:
        return TrialKey(self.case, self.agent, self.arm, self.attempt)


class AttemptOutcome(_Model):
    attempt: int
    score: float | None
    passed: bool


class CasePassAtK(_Model):
    passed: bool
    first_pass_attempt: int | None
    attempts_used: int
    attempts_scored: int
    attempts_passed: int
    attempts_skipped: int
    attempts_missing: int
    best_score: float | None
    attempts: list[AttemptOutcome]


class PassAtK(_Model):
    k: int
    pass_threshold: float
    stop_on_pass: bool
    passed_cases: int
    failed_cases: int
    total_cases: int
    rate: float | None
    wilson95: list[float] | None = Field(description="[lo, hi] Wilson interval on rate.")
    unbiased: dict[str, float | None] = Field(description="k -> mean over cases of 1 - C(n-c,k)/C(n,k).")
    pass_hat_k: dict[str, float | None] = Field(description="k -> mean over cases of C(c,k)/C(n,k).")
    estimator_cases: dict[str, int] = Field(description="k -> cases with at least k scored attempts.")
    estimator_note: str | None = None
    attempts_used: int
    max_attempts_possible: int
    cases: dict[str, CasePassAtK]


class ArmResources(_Model):
    n_trials: int
    telemetry_complete: bool
    prompt_tokens: int | None
    completion_tokens: int | None
    cache_tokens: int | None
    total_tokens: int | None
    agent_seconds: float | None
    cost_usd: float | None
    judge_cost_usd: float | None = Field(
        default=None, description="The LLM judges' cost (USD), apart from cost_usd (the agents')."
    )
    trials_missing_tokens: int
    trials_missing_seconds: int


class ResourceDelta(_Model):
    available: bool
    reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    agent_seconds: float | None = None
    cost_usd: float | None = Field(default=None, description="With-skill minus without-skill cost in USD.")
    cost_usd_ci95: list[float] | None = Field(
        default=None, description="[lo, hi] of cost_usd: paired bootstrap over cases of the per-case cost difference."
    )


class TrialFailure(_Model):
    case: str
    attempt: int
    status: str
    error: str | None = None


class ChecksPassAtK(_Model):
    """pass@k of the checks metric alone: over the cases that have checks, the share where some scored attempt's
    checks score reached the pass threshold."""

    k: int
    passed_cases: int
    total_cases: int
    rate: float | None
    wilson95: list[float] | None


class ArmSummary(_Model):
    arm: Arm
    execution_status: ConditionStatus
    execution_errors: list[str] = Field(default_factory=list)
    expected_attempts: int
    scored_attempts: int
    n_trials: int
    n_scored: int
    overall: float | None
    dimensions: Dimensions
    dimension_bands: DimensionBands
    metrics: dict[str, float | None]
    custom_metrics: dict[str, float | None]
    pass_at_k: PassAtK | None
    checks_pass_at_k: ChecksPassAtK | None = Field(
        default=None, description="Cases with checks where some attempt's checks score reached the threshold."
    )
    resources: ArmResources
    trial_failures: list[TrialFailure] = Field(default_factory=list)


class LiftStat(_Model):
    """One paired lift: mean over comparable cases of (with-skill case mean - without-skill case mean)."""

    delta: float | None
    ci95: list[float] | None = Field(description="[lo, hi]; expanded percentile paired bootstrap.")
    n_pairs: int
    insufficient: bool
    band: Band | None
    with_skill: float | None = Field(default=None, description="With-skill mean over the paired cases.")
    without_skill: float | None = Field(default=None, description="Without-skill mean over the paired cases.")
    direction: Literal["up", "down", "flat"] | None = None
    excluded_judge_mixed: int = 0


class McNemar(_Model):
    only_with_skill: int
    only_without_skill: int
    both_pass: int
    both_fail: int
    n_pairs: int
    p_value: float | None


class PassAtKLift(_Model):
    with_skill: float | None
    without_skill: float | None
    delta: float | None
    passed_cases_delta: int | None
    with_skill_wilson95: list[float] | None
    without_skill_wilson95: list[float] | None
    mcnemar_p: float | None


class LiftSection(_Model):
    overall: LiftStat
    outcome: LiftStat
    outcome_label: str = "Outcome lift (Correctness and Effectiveness only)"
    dimensions: dict[str, LiftStat]
    metrics: dict[str, LiftStat]
    mcnemar_p: float | None
    mcnemar: McNemar
    judge_mixed_cases: dict[str, int]
    judge_mixed_case_ids: list[str]
    pass_at_k: PassAtKLift


class Activation(_Model):
    positive_trials: int
    confirmed: int
    activated: int
    never_activated: bool


class AssertionArm(_Model):
    """One assertion in one arm, over the attempts whose behavior_check judged it."""

    judged: int
    passed: int
    rate: float | None = Field(description="passed / judged; null when no attempt was judged.")


class AssertionRate(_Model):
    """One natural-language assertion of a case: its pass rate per arm (behavior_check's verdicts)."""

    index: int = Field(description="1-based position in the case's assertions.")
    text: str
    with_skill: AssertionArm
    without_skill: AssertionArm


class AgentResources(_Model):
    with_skill: ArmResources
    without_skill: ArmResources
    delta: ResourceDelta
    baseline_skill: ArmResources | None = Field(
        default=None, description="The previous version's arm (--baseline-skill), when that arm is in the run."
    )
    edit_delta: ResourceDelta | None = Field(
        default=None,
        description="With-skill minus baseline_skill (the edit's resource cost), as delta is: cost_usd and its "
        "paired interval over cases.",
    )


class PowerSuggestion(_Model):
    """Attempts per case that would detect `target_lift` at 80% power (two-sided, alpha 0.05), from this run's
    per-case spread; `suggested_attempts` None means attempts cannot get there (see `cases_needed`, `note`)."""

    target_lift: float | None
    target_source: Literal["observed", "min_lift"]
    n_cases: int
    power: float
    alpha: float
    attempts_now: int | None = None
    suggested_attempts: int | None = None
    cases_needed: int | None = None
    within_case_sd: float | None = None
    between_case_sd: float | None = None
    note: str | None = None


EditVerdict = Literal["the edit helps", "the edit hurts", "no evidence"]


class AgentResult(_Model):
    name: str
    model: str | None = None
    execution_status: AgentStatus
    execution_errors: list[str] = Field(default_factory=list)
    expected_attempts: int
    scored_attempts: int
    verdict: Verdict
    verdict_reason: str
    inconclusive: bool
    inconclusive_reason: str | None = None
    activation: Activation
    with_skill: ArmSummary
    without_skill: ArmSummary
    lift: LiftSection | None
    custom_lift: dict[str, LiftStat] | None
    lift_omitted_reason: str | None = None
    resources: AgentResources
    assertions: dict[str, list[AssertionRate]] = Field(
        default_factory=dict,
        description="case -> each assertion's pass rate per arm over attempts; cases judged by behavior_check only.",
    )
    baseline_skill: ArmSummary | None = Field(
        default=None, description="The previous version of the skill (--baseline-skill), when that arm ran."
    )
    edit_lift: LiftSection | None = Field(
        default=None,
        description="with_skill minus baseline_skill, paired by case as Skill Lift is (with_skill/only_with_skill "
        "name the version under test, without_skill/only_without_skill the baseline version).",
    )
    edit_verdict: EditVerdict | None = Field(default=None, description="What the edit did, from edit_lift.")
    edit_lift_omitted_reason: str | None = None
    power: PowerSuggestion | None = Field(
        default=None, description="Attempts that would detect the observed lift (or --min-lift) at 80% power."
    )


class Coverage(_Model):
    publication_complete: bool
    selection_complete: bool
    interrupted: bool
    expected_trials: int
    run_trials: int
    scored_trials: int
    missing_trials: list[str] = Field(description="agent/arm/case/attempt keys expected but not run.")
    skipped_cases: list[str] = Field(description="Cases with no trial run (deselected, --max-cases, interrupted).")
    partial_cases: list[str] = Field(default_factory=list, description="Cases with some expected trials missing.")
    extra_cases: list[str]
    budget_stopped: str | None = Field(
        default=None, description="--max-cost stopped new trials (spent of limit); --resume continues the run."
    )


class AttemptPolicy(_Model):
    max_attempts: int
    pass_threshold: float
    stop_on_pass: bool
    score_definition: str


class VerdictPolicy(_Model):
    attempt_pass_threshold: float
    dimension_pass_threshold: float = 0.5
    dimension_neutral_threshold: float = 0.4
    lift_pass_threshold: float = 0.05
    lift_fail_threshold: float = -0.1
    min_paired_cases: int = 5
    overall_pass_rule: str = "one_supported_agent_all_dimensions_pass"
    inconclusive_rule: str = "every positive with-skill trial has a confirmed activation of zero"


class AggregateResult(_Model):
    schema_version: Literal["2.0"] = SCHEMA_VERSION
    skill_name: str
    execution_status: ExecutionStatus
    execution_errors: list[str] = Field(default_factory=list)
    verdict: Verdict
    verdict_reason: str
    baseline_calibration: bool
    grading_mode: str
    score_policy: str = SCORE_POLICY
    verdict_policy: VerdictPolicy
    attempt_policy: AttemptPolicy
    evaluated_at: str
    evaluator_version: str
    dataset_summary: dict[str, Any]
    dataset_digest: str | None
    dataset_digest_algorithm: str | None = None
    run_config: dict[str, Any]
    duration_seconds: float | None = None
    coverage: Coverage
    expected_attempts: int
    scored_attempts: int
    agents_run: list[str]
    best_agent: str | None
    overall_score: float | None
    overall_lift: float | None
    agents: dict[str, AgentResult]
    baseline_version: dict[str, Any] | None = Field(
        default=None, description="The baseline_skill arm's version: source (path or git:REF), commit, short, label."
    )
    comparison: dict[str, Any] | None = None
    trials: list[TrialEntry]
    warnings: list[str] = Field(default_factory=list)
    correctness_unmeasured: list[str] = Field(
        default_factory=list,
        description="Cases with no correctness signal (no checks, no custom grader metric, no judge): their scores "
        "say nothing about whether the output was right.",
    )
    triggering: dict[str, TriggeringAgent] = Field(
        default_factory=dict,
        description="Trigger-set metrics per agent (evals/triggers.json); never part of the dimensions or lift.",
    )


class ResultDocument(AggregateResult):
    """result.json: the aggregate plus what only the writer knows."""

    run_id: str
    plugin_version: str = Field(description="pytest-skilleval version (same as evaluator_version).")
    harbor_version: str | None = None
    run_dir: str | None = None
