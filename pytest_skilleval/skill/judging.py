"""The pytest side of the LLM judges: what the verifier is told and what run_config.json records. Kept in one place
so the runner, plugin and reporting each call one function (what a trial's reward says about its judges is the
reward's own: `verifier.reward.RichReward`).

The judges themselves live in `verifier.judges` and read the provider, base URL and keys from the host
environment; only the model (from --judge-model) and the cache settings travel through the verifier's kwargs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_skilleval.skill.settings import RunSettings
from verifier.judges.cache import CACHE_DIR_NAME
from verifier.judges.config import NOT_CONFIGURED, JudgeConfigError, judge_model_from, load_config

__all__ = [
    "JudgeConfigError",
    "judge_banner",
    "judge_run_config",
    "verifier_judge_kwargs",
]


def verifier_judge_kwargs(settings: RunSettings, results_root: Path) -> dict[str, Any]:
    """The `judge` kwarg of the host verifier: model override, cache mode and the cache folder."""
    return {
        "model": settings.judge_model,
        "cache": settings.judge_cache,
        "cache_dir": str(results_root / CACHE_DIR_NAME),
    }


def judge_run_config(settings: RunSettings, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """run_config.json -> judge: the configured provider and model (no secrets), or why there is none."""
    if settings.grading_mode == "custom_only":
        return {"enabled": False, "reason": "custom_only grading runs no judges"}
    config = load_config(
        env if env is not None else os.environ, model=settings.judge_model, cache_mode=settings.judge_cache
    )
    if config is None:
        return {"enabled": False, "reason": NOT_CONFIGURED}
    return config.provenance()


def judge_banner(settings: RunSettings, env: Mapping[str, str] | None = None) -> str | None:
    """The one line said at session start when judges will not run; raises JudgeConfigError on a bad setting."""
    env = env if env is not None else os.environ
    load_config(env, model=settings.judge_model, cache_mode=settings.judge_cache)  # validate early
    if judge_model_from(settings.judge_model, env) is not None or settings.grading_mode == "custom_only":
        return None
    return (
        "skilleval: " + NOT_CONFIGURED + "; accuracy, goal_accuracy and behavior_check are not scored, "
        "Correctness and Effectiveness show NO SCORE and overall scores are partial"
    )
