"""One trial's result as it crosses the xdist boundary (JSON in `report.user_properties`).

Everything the session aggregate needs is in a `TrialRecord`; aggregation never reads Harbor's files, so a run
under `-n N` aggregates exactly what a plain run does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from pytest_skilleval.results.keys import ALL_ARMS as ALL_ARMS
from pytest_skilleval.results.keys import ARMS as ARMS
from pytest_skilleval.results.keys import USER_PROPERTY_KEY as USER_PROPERTY_KEY
from pytest_skilleval.results.keys import Arm, TrialKey, TrialStatus
from verifier.check_host import WorkspaceDiff
from verifier.check_spec import CheckResult
from verifier.reward import RichReward, WrittenFile
from verifier.scoring import clean_score, correctness_gates, item_passes


class TokenUsage(BaseModel):
    """Prompt tokens include cache tokens; None means the agent did not report that figure."""

    prompt: int | None = None
    completion: int | None = None
    cache: int | None = None
    cost_usd: float | None = None
    # Where cost_usd came from: the agent's own report, a --model-price override, or litellm's price map.
    cost_source: Literal["agent", "override", "price_map"] | None = None


class TrialRecord(BaseModel):
    model_config = ConfigDict(extra="ignore")

    skill: str = Field(description="The skill folder's name.")
    skill_dir: str = ""
    case: str
    agent: str
    arm: Arm
    attempt: int
    nodeid: str = ""
    status: TrialStatus
    grading_mode: str = "default"
    overall: float | None = None
    metrics: dict[str, float | None] = Field(default_factory=dict, description="The six standard evaluators.")
    custom_metrics: dict[str, float] = Field(default_factory=dict)
    custom_overall: float | None = Field(default=None, description="The custom grader's own overall, if it wrote one.")
    checks: list[CheckResult] | None = Field(default=None, description="The case's checks; None when it has none.")
    workspace_diff: WorkspaceDiff | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    activation: float | None = Field(default=None, description="skill_execution's activation sub-score.")
    negative_control: bool = False
    judge_models: dict[str, str | None] = Field(default_factory=dict)
    judge_cost_usd: float | None = Field(default=None, description="The LLM judges' cost (USD), apart from tokens.")
    trajectory_source: str | None = None
    tokens: TokenUsage | None = None
    agent_seconds: float | None = None
    error: str | None = None
    reason: str | None = None
    judge_failures: dict[str, str] = Field(
        default_factory=dict, description="Judges that were configured and failed: metric -> why (trial unscored)."
    )
    trial_dir: str | None = None
    passed: bool | None = Field(
        default=None, description="overall and the correctness gates >= pass threshold; None when unscored."
    )

    def gates(self) -> dict[str, float | None]:
        """What stands for correctness in this trial's pass (checks, the custom grader's overall)."""
        return correctness_gates(self.grading_mode, self.metrics, self.custom_overall)

    source_run: str | None = Field(default=None, description="The run whose stored trial this record reuses.")
    stopped_on_pass: bool = Field(default=False, description="Not run: an earlier attempt passed (--stop-on-pass).")

    # What the host verifier wrote in the trial folder (path in it -> value), handed over in the process that ran
    # the trial, so its trial file is written without reading those files back; never serialized (under xdist the
    # controller reads the files).
    _written: Mapping[str, WrittenFile] | None = PrivateAttr(default=None)

    @property
    def key(self) -> TrialKey:
        return TrialKey(self.case, self.agent, self.arm, self.attempt)

    @property
    def written(self) -> Mapping[str, WrittenFile] | None:
        return self._written

    def keep_written(self, files: Mapping[str, WrittenFile] | None) -> None:
        self._written = files

    def __eq__(self, other: object) -> bool:
        """The fields alone: what was kept in memory (`written`) is not part of the record."""
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__


def trial_logs(trial_dir: Path, kept: bool = True) -> str:
    """Where a trial's logs are, for an error or unscored reason: its folder, and when the run deletes it once the
    trial's results are written (no --harbor-keep-jobs), that it does and how to keep it, so the path an author
    reads after the run is not a folder that is already gone."""
    if kept:
        return f"trial logs: {trial_dir}"
    return f"trial logs: {trial_dir}; removed once its results are written: rerun with --harbor-keep-jobs to read them"


def record_from_reward(
    base: dict[str, Any],
    reward: RichReward,
    pass_threshold: float,
    error: str | None,
    trial_dir: Path,
    logs_kept: bool = True,
) -> TrialRecord:
    """A trial's record from its rich reward (the verifier's, or a regrade's); `logs_kept` says whether the trial's
    folder outlives the run (see `trial_logs`)."""
    overall = clean_score(reward.overall)
    record = TrialRecord(
        **base,
        judge_models=reward.judge_models(),
        judge_cost_usd=reward.judge_cost_usd(),
        judge_failures=reward.judge_failures(),
        status="scored" if overall is not None else "unscored",
        overall=overall,
        metrics={name: clean_score(value) for name, value in reward.metrics.items()},
        custom_metrics=reward.custom_metrics,
        custom_overall=clean_score(reward.custom_overall),
        checks=reward.checks,
        workspace_diff=reward.workspace_diff,
        details=reward.details,
        activation=clean_score(reward.activation_score),
        trajectory_source=reward.trajectory_source,
        passed=item_passes(
            overall, pass_threshold, correctness_gates(base["grading_mode"], reward.metrics, reward.custom_overall)
        ),
        error=error,
    )
    if overall is None:
        why = reward.judge_failure_reason() or reward.custom_unscored_reason or "the trial produced no score"
        record.reason = f"{why} (grading mode {base['grading_mode']}; {trial_logs(trial_dir, logs_kept)})"
    return record
