"""The rich reward as one typed model: host grading returns it, its file keeps only the keys grading set, and the
record read from it says why a trial is unscored."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pytest_skilleval.results.records import record_from_reward
from verifier.custom import SanitizedReward
from verifier.reward import RICH_REWARD_NAME, RichReward, grade_on_host, read_rich_reward, rich_reward_of

BASE = dict(skill="demo", case="c1", agent="replay", arm="with_skill", attempt=1, grading_mode="default")


def test_custom_only_reward_file_has_the_keys_grading_set_in_order(tmp_path: Path) -> None:
    custom = SanitizedReward(custom_metrics={"style": 0.5}, overall=0.75)
    reward = asyncio.run(grade_on_host(tmp_path, {"id": "c1"}, "custom_only", None, custom))
    assert isinstance(reward, RichReward)
    document = reward.document()
    assert list(document) == [
        "entry_id",
        "grading_mode",
        "metrics",
        "custom_metrics",
        "custom_overall",
        "details",
        "overall",
        "overall_basis",
    ]
    assert document["overall"] == 0.75 and document["custom_metrics"] == {"style": 0.5}
    assert reward.flat() == {"style": 0.5, "overall": 0.75}


def test_standard_grading_adds_the_trajectory_source(tmp_path: Path) -> None:
    reward = asyncio.run(grade_on_host(tmp_path, {"id": "c1", "prompt": "x"}, "default", None, None))
    document = reward.document()
    assert "trajectory_source" in document and "evaluation_status" not in document
    assert list(document)[-2:] == ["overall", "overall_basis"]


def test_a_failed_judge_leaves_the_record_unscored_and_says_why(tmp_path: Path) -> None:
    reward = RichReward(
        metrics={"accuracy": None, "security": 1.0},
        details={"accuracy": {"judge_model_used": "m1"}},
        evaluation_status="failed",
        evaluation_errors={"accuracy": "timeout"},
        overall=None,
    )
    record = record_from_reward(dict(BASE), reward, 0.5, None, tmp_path)
    assert record.status == "unscored" and record.passed is None
    assert record.judge_failures == {"accuracy": "timeout"} and record.judge_models == {"accuracy": "m1"}
    assert record.reason.startswith("judge failed: accuracy: timeout (grading mode default; trial logs:")


def test_record_reads_activation_and_custom_reason(tmp_path: Path) -> None:
    reward = RichReward(
        details={"skill_execution": {"activation": {"score": 2}}, "custom": {"unscored_reason": "no overall"}},
        overall=None,
    )
    record = record_from_reward(dict(BASE), reward, 0.5, None, tmp_path)
    assert record.activation == 1.0  # cleaned into [0, 1]
    assert record.reason.startswith("no overall (grading mode default")


def test_reading_the_file_refuses_links_and_empty_or_malformed_rewards(tmp_path: Path) -> None:
    assert read_rich_reward(tmp_path) is None
    (tmp_path / RICH_REWARD_NAME).write_text("{}")
    assert read_rich_reward(tmp_path) is None  # missing is never a zero score
    (tmp_path / RICH_REWARD_NAME).write_text(json.dumps({"overall": "high"}))
    assert read_rich_reward(tmp_path) is None
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"overall": 1.0}))
    (tmp_path / RICH_REWARD_NAME).unlink()
    (tmp_path / RICH_REWARD_NAME).symlink_to(target)
    assert read_rich_reward(tmp_path) is None
    assert rich_reward_of({"overall": 1.0, "unknown": 1}).overall == 1.0
