"""Running the three judges of one trial, concurrently, each within its own time budget.

Per judge: a cache lookup; then each candidate model (the judge model, then LLM_JUDGE_FALLBACK_MODELS) until one
gives a valid verdict. A reply that is empty, unparseable or the wrong shape gets one retry with a stricter
reminder; a refusal or an empty reply moves on to the next candidate; a transient failure is retried inside the
request layer. A judge that still fails is unscored (score None, status error, a bounded redacted reason), never 0.0.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import verifier.judges.bundles as bundles
from verifier.checks.skill_entry import should_trigger
from verifier.evidence import JUDGE_METRICS, MetricResult, TrajectoryEvidence
from verifier.judges.cache import JudgeCache, cache_key
from verifier.judges.characters import character_facts
from verifier.judges.client import (
    SCHEMA_SUPPORT,
    JudgeRequestError,
    SchemaSupport,
    claude_version,
    model_leaf,
    request_once,
    request_params,
)
from verifier.judges.config import JudgeConfig
from verifier.judges.jsontext import extract_json, salvage_results
from verifier.judges.prompts import STRICT_REMINDER, accuracy_prompt, behavior_prompt, goal_prompt
from verifier.judges.redact import bounded_reason
from verifier.judges.replies import (
    SCHEMAS,
    InvalidReply,
    parse_accuracy,
    parse_behavior,
    parse_goal,
    salvaged_behavior,
)

CLAUDE_SERVER_FALLBACK = "claude-opus-4-8"
NO_GROUND_TRUTH = "No ground_truth -- skipped"
NO_BEHAVIORS = "No expected_behavior defined"


@dataclass
class JudgeTask:
    """One judge's prompt and how its reply becomes a score; `skipped` is a verdict that needs no model."""

    metric: str
    prompt: str
    parse: Callable[[Any], dict[str, Any]] | None = None
    salvage: Callable[[str], dict[str, Any] | None] | None = None
    bundle: bundles.Bundle | None = None
    skipped: dict[str, Any] | None = None


def is_negative(entry: Mapping[str, Any]) -> bool:
    """Negative for accuracy: should_trigger false, or no expected_skill declared."""
    return should_trigger(entry) is False or not str(entry.get("expected_skill") or "").strip()


def build_tasks(evidence: TrajectoryEvidence, entry: Mapping[str, Any], config: JudgeConfig) -> list[JudgeTask]:
    question = str(entry.get("question") or entry.get("prompt") or "")
    expected = str(entry.get("ground_truth") or entry.get("expected_output") or "")
    behaviors = bundles.behaviors_of(entry)
    negative = is_negative(entry)
    tasks: list[JudgeTask] = []

    def facts(fields: dict[str, str]) -> str:
        return character_facts(fields) if config.character_facts else ""

    if expected.strip():
        acc = bundles.accuracy_bundle(evidence, entry, config.accuracy_budget, config.observation_limit)
        goal = bundles.goal_bundle(evidence, entry, config.goal_budget, config.observation_limit)
        tasks.append(
            JudgeTask(
                "accuracy",
                accuracy_prompt(question, expected, acc.text, negative)
                + facts({"question": question, "expected": expected, "evidence": acc.text}),
                lambda reply: parse_accuracy(reply, negative),
                bundle=acc,
            )
        )
        tasks.append(
            JudgeTask(
                "goal_accuracy",
                goal_prompt(question, expected, goal.text)
                + facts({"question": question, "expected": expected, "evidence": goal.text}),
                parse_goal,
                bundle=goal,
            )
        )
    else:
        tasks.append(JudgeTask("accuracy", "", skipped={"score": 1.0, "reason": NO_GROUND_TRUTH}))
        tasks.append(JudgeTask("goal_accuracy", "", skipped={"score": 1.0, "reason": NO_GROUND_TRUTH}))
    if behaviors:
        beh = bundles.behavior_bundle(evidence, entry, config.effective_behavior_budget, config.final_response_limit)

        def salvage(text: str) -> dict[str, Any] | None:
            found = salvage_results(text, len(behaviors))
            if found is None:
                return None
            try:
                return salvaged_behavior(found[1], behaviors)
            except InvalidReply:
                return None

        tasks.append(
            JudgeTask(
                "behavior_check",
                behavior_prompt(beh.text, behaviors)
                + facts({"evidence": beh.text, **{f"behavior {i}": b for i, b in enumerate(behaviors, 1)}}),
                lambda reply: parse_behavior(reply, behaviors),
                salvage=salvage,
                bundle=beh,
            )
        )
    else:
        tasks.append(JudgeTask("behavior_check", "", skipped={"score": 1.0, "reason": NO_BEHAVIORS, "results": []}))
    return tasks


def candidates(config: JudgeConfig) -> list[str]:
    """The judge model, Anthropic's server-side fallback for Claude >= 5.5, then the configured fallbacks."""
    models = [config.model]
    version = claude_version(model_leaf(config.model))
    if config.provider == "anthropic" and version and version >= (5, 5):
        models.append(CLAUDE_SERVER_FALLBACK)
    return [m for i, m in enumerate(models + config.fallback_models) if m not in (models + config.fallback_models)[:i]]


def _provenance(config: JudgeConfig, model: str | None) -> dict[str, Any]:
    params = request_params(model, config.provider) if model else {}
    return {
        "judge_model_used": model,
        "judge_reasoning_effort": params.get("reasoning_effort", "default") if model else None,
        "judge_fallback_used": bool(model) and model != config.model,
    }


def _bundle_details(task: JudgeTask) -> dict[str, Any]:
    if task.bundle is None:
        return {}
    return {
        "omitted": task.bundle.omitted.model_dump(),
        "verified": [fact.model_dump() for fact in task.bundle.verified],
    }


async def _judge_with(
    task: JudgeTask,
    config: JudgeConfig,
    model: str,
    deadline: float,
    support: SchemaSupport,
    log: list[str],
    spend: list[float | None],
) -> tuple[dict[str, Any] | None, int, str | None]:
    """(verdict, requests, why this model gave none). `why` starting with 'next:' moves on to the next model.
    Each answer's price (None when unknown) is appended to `spend`."""
    texts: list[str] = []
    requests = 0
    problem = ""
    for attempt in range(2):
        prompt = task.prompt + (STRICT_REMINDER if attempt else "")
        try:
            reply = await request_once(config, model, prompt, task.metric, SCHEMAS[task.metric], deadline, support)
        except JudgeRequestError as error:
            requests += error.requests
            if error.kind in ("refused", "model_access"):
                return None, requests, f"next:{model}: {error}"
            return None, requests, f"{model}: {error}"
        requests += reply.requests
        spend.append(reply.cost_usd)
        if reply.refused:
            return None, requests, f"next:{model} refused to judge"
        texts.append(reply.text)
        if not reply.text.strip():
            problem = "empty reply" + (" (out of output tokens)" if reply.finish_reason == "length" else "")
            log.append(f"{model}: {problem}")
            continue
        try:
            assert task.parse is not None
            return {**task.parse(extract_json(reply.text)), "structured_output": reply.schema_sent}, requests, None
        except InvalidReply as error:
            problem = f"invalid reply: {error}"
            log.append(f"{model}: {problem}")
    if task.salvage is not None:
        for text in reversed(texts):
            if text.strip() and extract_json(text) is None and (saved := task.salvage(text)) is not None:
                return saved, requests, None
    if all(not t.strip() for t in texts):
        return None, requests, f"next:{model}: empty reply after retry"
    return None, requests, f"{model}: unparseable or invalid after retry ({problem})"


async def run_task(
    task: JudgeTask, config: JudgeConfig, cache: JudgeCache, support: SchemaSupport = SCHEMA_SUPPORT
) -> MetricResult:
    if task.skipped is not None:
        return MetricResult(score=task.skipped["score"], details={**task.skipped, "skipped": True})
    models = candidates(config)
    # The endpoint too: the same model name behind another gateway is another judge.
    key = cache_key(
        {
            "metric": task.metric,
            "prompt": task.prompt,
            "models": models,
            "provider": config.provider,
            "endpoint": config.base_url or "",
            "params": request_params(config.model, config.provider),
            "schema": SCHEMAS[task.metric],
        }
    )
    hit = cache.get(key)
    if hit is not None and isinstance(hit.get("details"), dict):
        cached = {**hit["details"], "cached": True, "judge_requests": 0, "judge_cost_usd": 0.0}
        return MetricResult(score=hit.get("score"), details=cached)
    deadline = time.monotonic() + config.time_budget
    total = 0
    log: list[str] = []
    spend: list[float | None] = []
    why = "no judge model"
    for model in models:
        verdict, requests, why_not = await _judge_with(task, config, model, deadline, support, log, spend)
        total += requests
        if verdict is not None:
            details = {
                **verdict,
                **_provenance(config, model),
                **_bundle_details(task),
                "judge_requests": total,
                "judge_cost_usd": None if not spend or None in spend else math.fsum(spend),  # type: ignore[arg-type]
                "cached": False,
            }
            if log:
                details["judge_problems"] = [bounded_reason(item) for item in log[-5:]]
            cache.put(key, {"score": verdict["score"], "details": details})
            return MetricResult(score=verdict["score"], details=details)
        why = why_not or why
        if not why.startswith("next:"):
            break
    reason = bounded_reason(why.removeprefix("next:"))
    details = {
        "status": "error",
        "error": reason,
        **_provenance(config, None),
        **_bundle_details(task),
        "judge_requests": total,
        "cached": False,
        "judge_models_tried": models,
    }
    return MetricResult(score=None, details=details)


def not_configured(reason: str) -> dict[str, MetricResult]:
    return {m: MetricResult(score=None, details={"status": "not_configured", "reason": reason}) for m in JUDGE_METRICS}


async def run_judges(
    evidence: TrajectoryEvidence, entry: Mapping[str, Any], config: JudgeConfig, support: SchemaSupport = SCHEMA_SUPPORT
) -> dict[str, MetricResult]:
    """The three judges of one trial, concurrently."""
    cache = JudgeCache(config.cache_dir, config.cache_mode)
    tasks = build_tasks(evidence, entry, config)
    results = await asyncio.gather(*(run_task(task, config, cache, support) for task in tasks), return_exceptions=True)
    out: dict[str, MetricResult] = {}
    for task, result in zip(tasks, results, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result  # cancellation and interrupts are not judge failures
            why = bounded_reason(f"judge crashed: {type(result).__name__}: {result}")
            result = MetricResult(score=None, details={"status": "error", "error": why, **_provenance(config, None)})
        out[task.metric] = result
    return out
