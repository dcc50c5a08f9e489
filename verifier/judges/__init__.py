"""The LLM judges (accuracy, goal_accuracy, behavior_check), run on the host through litellm.

`judge_trial` is the one entry point the verifier adapter and `skilleval grade` use; everything else is detail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verifier.evidence import MetricResult, TrajectoryEvidence
from verifier.judges.config import JudgeConfig, load_config
from verifier.judges.engine import run_judges


async def judge_trial(
    evidence: TrajectoryEvidence, entry: Mapping[str, Any], settings: Mapping[str, Any] | None
) -> dict[str, MetricResult]:
    """The judges' results for one trial, or {} when no judge model is configured (or nothing can be judged).

    `settings` is what the plugin passes the verifier: `model` (from --judge-model, may be None), `cache`
    (on|off|read|write) and `cache_dir`; everything else comes from the host environment.
    """
    settings = settings or {}
    config = load_config(model=settings.get("model"), cache_mode=settings.get("cache") or "on",
                         cache_dir=settings.get("cache_dir"))
    if config is None or not evidence.usable:
        return {}
    return await run_judges(evidence, entry, config)


__all__ = ["JudgeConfig", "judge_trial", "load_config"]
