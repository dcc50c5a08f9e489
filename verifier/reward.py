"""The rich reward: everything the host verifier says about one trial, as one typed model.

Host grading (`grade_on_host`, for the verifier phase and `--regrade`) returns a `RichReward`; the host verifier writes
it to `<trial>/verifier/skilleval_reward.json`; the runner, `--regrade` and the reports read it back through
`read_rich_reward` / `rich_reward_of`. Nothing else reads that file's keys, so what a reward holds is said here once.

Written with `exclude_unset`: a key is in the file only when grading set it (`trajectory_source` only when the
standard checks ran, `evaluation_status` only when a judge failed), as readers of result files expect.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifier import safe_io
from verifier.check_host import WorkspaceDiff
from verifier.check_spec import CheckResult, checks_score
from verifier.custom import SanitizedReward, flat_numeric_reward
from verifier.evidence import CHECKS_METRIC, JUDGE_METRICS, STANDARD_METRICS
from verifier.scoring import overall_basis, trial_overall

RICH_REWARD_NAME = "skilleval_reward.json"
MAX_RICH_REWARD_BYTES = 64 * 1024 * 1024
MAX_HANDED_OVER = 4096  # trials whose written reward nobody took (one that failed after grading) are dropped past this


class RichReward(BaseModel):
    """One trial's grading: standard and custom metrics, the overall and the details behind every score.

    Field order is the file's key order."""

    model_config = ConfigDict(extra="ignore")

    entry_id: str | None = None
    grading_mode: str | None = None
    metrics: dict[str, float | None] = Field(default_factory=dict, description="The standard evaluators' scores.")
    custom_metrics: dict[str, float] = Field(default_factory=dict)
    custom_overall: float | None = None
    details: dict[str, Any] = Field(default_factory=dict, description="Per evaluator (and `custom`, `regrade`).")
    trajectory_source: str | None = None
    evaluation_status: str | None = Field(default=None, description='"failed" when a configured judge failed.')
    evaluation_errors: dict[str, str | None] | None = None
    overall: float | None = None
    overall_basis: list[str] = Field(default_factory=list)
    checks: list[CheckResult] | None = Field(default=None, description="The case's checks; None when it has none.")
    workspace_diff: WorkspaceDiff | None = Field(default=None, description="What the agent changed in /workspace.")

    def set_checks(self, results: list[CheckResult] | None) -> None:
        """The case's check results and their score, `checks` among the metrics (None when none is scored)."""
        self.checks = results
        if results is not None:
            self.metrics = {**self.metrics, CHECKS_METRIC: checks_score(results)}

    def document(self) -> dict[str, Any]:
        """The JSON object written to the reward file (only the keys grading set, in field order)."""
        return self.model_dump(exclude_unset=True)

    def flat(self) -> dict[str, float]:
        """Harbor accepts only a flat object of finite numbers: scored metrics, custom metrics and overall."""
        return flat_numeric_reward({**self.custom_metrics, **self.metrics, "overall": self.overall})

    def section(self, name: str) -> dict[str, Any]:
        """One evaluator's details (`security`, `custom`, ...); empty when it wrote none or not an object."""
        found = self.details.get(name)
        return found if isinstance(found, dict) else {}

    @property
    def activation_score(self) -> object:
        """skill_execution's activation sub-score as written (the caller cleans it)."""
        activation = self.section("skill_execution").get("activation")
        return activation.get("score") if isinstance(activation, dict) else None

    @property
    def custom_unscored_reason(self) -> str | None:
        why = self.section("custom").get("unscored_reason")
        return why if isinstance(why, str) else None

    def judge_models(self) -> dict[str, str | None]:
        """Per judge metric, the model whose verdict was used (None when unscored or skipped)."""
        return {
            metric: self.section(metric).get("judge_model_used")
            for metric in JUDGE_METRICS
            if "judge_model_used" in self.section(metric)
        }

    def judge_cost_usd(self) -> float | None:
        """What the LLM judges cost for this trial (USD; a cached verdict costs 0), or None when no judge answered
        or one answer's price is unknown (missing is never zero)."""
        given = [
            self.section(metric).get("judge_cost_usd")
            for metric in JUDGE_METRICS
            if self.section(metric).get("judge_model_used")
        ]
        costs = [float(cost) for cost in given if isinstance(cost, int | float) and cost >= 0]
        return sum(costs) if given and len(costs) == len(given) else None

    def judge_failures(self) -> dict[str, str]:
        """metric -> why, for each configured judge that failed."""
        if self.evaluation_status != "failed" or self.evaluation_errors is None:
            return {}
        return {metric: str(why) for metric, why in self.evaluation_errors.items()}

    def judge_failure_reason(self) -> str | None:
        """'accuracy: <why>; ...' when a configured judge failed (the trial is then unscored)."""
        failures = self.judge_failures()
        if not failures:
            return None
        return "judge failed: " + "; ".join(f"{metric}: {why}" for metric, why in failures.items())


@dataclass(frozen=True)
class WrittenFile:
    """One file the host verifier wrote into a trial's verifier folder: its value (the JSON value, or the text)
    and its size in bytes."""

    value: Any
    size: int


_written: dict[str, dict[str, WrittenFile]] = {}


def hand_over(verifier_dir: Path, files: dict[str, WrittenFile]) -> None:
    """Keep what the host verifier has just written (file name -> value) for the trial's record and file, in this
    process: read back from disk they were the same bytes, parsed again (and on a Docker sandbox, whose
    /logs/verifier is the host folder itself, the disk is also what a process left in the sandbox could change)."""
    _written[os.fspath(verifier_dir)] = files
    while len(_written) > MAX_HANDED_OVER:
        del _written[next(iter(_written))]


def take_written(verifier_dir: Path) -> dict[str, WrittenFile] | None:
    """What `hand_over` kept for this verifier folder, once; None when nothing was (read the files then)."""
    return _written.pop(os.fspath(verifier_dir), None)


def rich_reward_of(value: object) -> RichReward | None:
    """A rich reward from a parsed JSON value (a trial file's `rich_reward`); None when absent, empty or malformed."""
    if not isinstance(value, Mapping) or not value:
        return None
    try:
        return RichReward.model_validate(value)
    except ValidationError:
        return None


def read_rich_reward(verifier_dir: Path, written: Mapping[str, WrittenFile] | None = None) -> RichReward | None:
    """What the host verifier wrote (never a link, never a file the sandbox left: the adapter removes those); from
    `written` (`take_written`) when the verifier handed it over in this process."""
    kept = written.get(RICH_REWARD_NAME) if written is not None else None
    if kept is not None:
        return rich_reward_of(kept.value) if kept.size <= MAX_RICH_REWARD_BYTES else None
    try:
        data = json.loads(safe_io.read_text(verifier_dir, RICH_REWARD_NAME, max_bytes=MAX_RICH_REWARD_BYTES))
    except (OSError, ValueError):
        return None
    return rich_reward_of(data)


def own_test_reward(verifier_dir: Path) -> RichReward:
    """Score what a native task's own test.sh wrote, with the same sanitizing as any custom grader (custom_only)."""
    from verifier.custom import read_grader_reward

    sanitized = read_grader_reward(verifier_dir / "reward.json", verifier_dir / "reward.txt", "custom_only")
    if sanitized.errors:
        return RichReward(overall=None, details={"custom": {"errors": sanitized.errors}})
    return RichReward(
        grading_mode="custom_only",
        overall=sanitized.overall,
        custom_metrics=sanitized.custom_metrics,
        metrics={},
        details={"custom": sanitized.model_dump(mode="json", exclude={"custom_metrics", "overall"})},
    )


async def grade_on_host(
    agent_dir: Path,
    entry: dict[str, Any],
    grading_mode: str,
    judge: dict[str, Any] | None,
    custom: SanitizedReward | None,
) -> RichReward:
    """The rich reward from what the host holds: the trajectory in `agent_dir` (standard checks and judges) and the
    author's sanitized custom reward, if any. Shared by the verifier phase and `--regrade`."""
    reward = RichReward(
        entry_id=entry.get("id"),
        grading_mode=grading_mode,
        metrics={name: None for name in STANDARD_METRICS},
        custom_metrics={},
        custom_overall=None,
        details={},
    )
    if custom is not None:
        reward.custom_metrics = custom.custom_metrics
        reward.custom_overall = custom.overall
        reward.details["custom"] = custom.model_dump(mode="json", exclude={"custom_metrics", "overall"})
    if grading_mode != "custom_only":
        from verifier.grade import entry_for_grading, grade
        from verifier.judges import judge_trial
        from verifier.trajectory import load_evidence

        evidence = load_evidence(agent_dir)
        judged = await judge_trial(evidence, entry_for_grading(entry, None), judge)
        standard = grade(evidence, entry, judged=judged)
        reward.metrics.update(standard.get("metrics", {}))
        reward.details.update(standard.get("details", {}))
        reward.trajectory_source = standard.get("trajectory_source")
        if "evaluation_status" in standard:
            reward.evaluation_status = standard["evaluation_status"]
        if "evaluation_errors" in standard:
            reward.evaluation_errors = standard["evaluation_errors"]
    reward.overall = trial_overall(grading_mode, reward.metrics, reward.custom_overall)
    reward.overall_basis = overall_basis(grading_mode, reward.metrics)
    if reward.evaluation_status == "failed":
        reward.overall = None  # a judge that failed leaves the trial unscored, never partially scored
    return reward
