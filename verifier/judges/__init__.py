"""The LLM judges (accuracy, goal_accuracy, behavior_check), run on the host through litellm.

`judge_trial` is the one entry point the verifier adapter and `skilleval grade` use; everything else is detail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from verifier.judges.config import JudgeConfig, load_config

if TYPE_CHECKING:
    from verifier.evidence import MetricResult, TrajectoryEvidence


async def judge_trial(
    evidence: TrajectoryEvidence, entry: Mapping[str, Any], settings: Mapping[str, Any] | None
) -> dict[str, MetricResult]:
    """The judges' results for one trial, or {} when no judge model is configured (or nothing can be judged).

    `settings` is what the plugin passes the verifier: `model` (from --judge-model, may be None), `cache`
    (on|off|read|write) and `cache_dir`; everything else comes from the host environment.
    """
    settings = settings or {}
    config = load_config(
        model=settings.get("model"), cache_mode=settings.get("cache") or "on", cache_dir=settings.get("cache_dir")
    )
    if config is None or not evidence.usable:
        return {}
    # Imported here: the engine (litellm's client, the prompts) is only needed when a judge runs, and the package
    # is imported at pytest start-up for its cache and config names.
    from verifier.judges.engine import run_judges

    return await run_judges(evidence, entry, config)


__all__ = ["JudgeConfig", "judge_trial", "load_config"]
