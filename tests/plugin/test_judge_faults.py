"""Judge robustness against the scripted model server: real HTTP on 127.0.0.1 through litellm, no mocks.

Each test scripts the server's answers, runs one judge (or all three) and asserts both the number of requests the
server saw (our retries are the only ones: litellm's and the SDK's are off) and the recorded score or unscored state.
Retry waits are kept tiny through the host-environment settings.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from verifier.evidence import ToolCallRecord, TrajectoryEvidence
from verifier.judges.cache import JudgeCache
from verifier.judges.client import SchemaSupport
from verifier.judges.config import load_config
from verifier.judges.engine import build_tasks, run_judges, run_task
from verifier.judges.prompts import STRICT_REMINDER

MODEL = "judge-model"
ENTRY = {
    "question": "Write a greeting for Ada to /workspace/output/greeting.txt",
    "ground_truth": "/workspace/output/greeting.txt says `Hello, Ada!`",
    "expected_behavior": ["runs greet.py", "writes the greeting file", "reports the result"],
    "expected_skill": "hello",
}
EVIDENCE = TrajectoryEvidence(
    source="trajectory.json",
    tool_calls=[
        ToolCallRecord(
            index=0,
            step_id=2,
            tool="Bash",
            arguments={"command": "python greet.py Ada > /workspace/output/greeting.txt"},
            observation="",
        )
    ],
    agent_messages=["Wrote /workspace/output/greeting.txt with Hello, Ada!"],
    user_messages=[ENTRY["question"]],
)
GOAL_OK = json.dumps(
    {"user_goal": "greet", "end_state": "file written", "achieved": True, "score": 0.9, "reason": "done"}
)
ACCURACY_OK = json.dumps(
    {
        "criteria": {
            "SKILL_IDENTIFIED": True,
            "ACTION_CORRECT": True,
            "FACTUALLY_ACCURATE": True,
            "TASK_ADDRESSED": True,
            "ACTIONABLE": False,
        },
        "score": 0.8,
        "reason": "ok",
    }
)
BEHAVIOR_OK = json.dumps(
    {
        "results": [{"step": i, "passed": i != 3, "reason": "r"} for i in (1, 2, 3)],
        "score": 0.66,
        "summary": "two of three",
    }
)


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {
        "SKILL_EVAL_LLM_API_KEY": "scripted-key-0000",
        "SKILL_EVAL_LLM_RETRY_BASE_DELAY": "0.01",
        "SKILL_EVAL_LLM_RETRY_MAX_DELAY": "3",
        "SKILL_EVAL_LLM_MAX_RETRIES": "4",
        "SKILL_EVAL_JUDGE_TIME_BUDGET": "20",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def judge(
    metric: str, server: Any, env: dict[str, str], support: SchemaSupport | None = None, **extra: str
) -> tuple[Any, float]:
    """Run one judge against `server`; (MetricResult, seconds). litellm's slow first import is kept out of the time."""
    import litellm  # noqa: F401

    config = load_config(
        {**env, "LLM_JUDGE_MODEL": f"openai/{MODEL}", "SKILL_EVAL_LLM_BASE_URL": server.openai_base_url, **extra}
    )
    task = next(t for t in build_tasks(EVIDENCE, ENTRY, config) if t.metric == metric)
    started = time.monotonic()
    result = asyncio.run(run_task(task, config, JudgeCache(None, "off"), support or SchemaSupport()))
    return result, time.monotonic() - started


def test_429_with_retry_after_seconds_waits_then_scores(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"status": 429, "headers": {"Retry-After": "1"}}, GOAL_OK]}})
    result, seconds = judge("goal_accuracy", server, judge_env)
    assert len(server.requests) == 2 and [r.status for r in server.requests] == [429, 200]
    assert result.score == 0.9 and result.details["judge_requests"] == 2
    assert seconds >= 0.95  # the server's wait, not our 0.01 s backoff


def test_429_with_retry_after_http_date(scripted_model, judge_env):
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    server = scripted_model({"models": {MODEL: [{"status": 429, "headers": {"Retry-After": when}}, GOAL_OK]}})
    result, seconds = judge("goal_accuracy", server, judge_env)
    assert len(server.requests) == 2 and result.score == 0.9
    assert seconds >= 0.9  # the date is at one-second resolution: between 1 and 2 s away


def test_retry_after_above_the_maximum_delay_fails_at_once(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"status": 429, "headers": {"Retry-After": "120"}}, GOAL_OK]}})
    result, seconds = judge("goal_accuracy", server, judge_env)
    assert len(server.requests) == 1 and seconds < 10
    assert result.score is None and result.details["status"] == "error"
    assert "Retry-After 120s exceeds the maximum retry delay" in result.details["error"]


def test_503_then_success(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"status": 503}, GOAL_OK]}})
    result, _ = judge("goal_accuracy", server, judge_env)
    assert [r.status for r in server.requests] == [503, 200] and result.score == 0.9


@pytest.mark.parametrize("status", [501, 400, 401])
def test_non_transient_errors_are_not_retried(scripted_model, judge_env, status):
    server = scripted_model({"models": {MODEL: [{"status": status, "message": "no"}, GOAL_OK]}})
    result, _ = judge("goal_accuracy", server, judge_env)
    assert len(server.requests) == 1 and result.score is None
    assert result.details["error"].startswith(f"openai/{MODEL}: HTTP {status}")


def test_500_forever_stops_after_the_configured_retries(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"status": 500, "repeat": "forever"}]}})
    result, _ = judge("goal_accuracy", server, judge_env, SKILL_EVAL_LLM_MAX_RETRIES="2")
    assert len(server.requests) == 3  # one request and two retries, nothing more from litellm or the SDK
    assert result.score is None and "gave up after 3 request(s)" in result.details["error"]
    assert result.details["judge_requests"] == 3


def test_500_forever_until_the_judge_budget(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"status": 500, "repeat": "forever"}]}})
    result, seconds = judge(
        "goal_accuracy",
        server,
        judge_env,
        SKILL_EVAL_LLM_MAX_RETRIES="1000",
        SKILL_EVAL_LLM_RETRY_BASE_DELAY="0.2",
        SKILL_EVAL_LLM_RETRY_MAX_DELAY="0.4",
        SKILL_EVAL_JUDGE_TIME_BUDGET="2",
    )
    assert seconds < 2.5  # no wait may reach the deadline
    seen = len(server.requests)
    # every request we made reached the server, except possibly the last, when the deadline cut it in flight
    assert seen >= 3 and seen <= result.details["judge_requests"] <= seen + 1
    assert result.score is None and "budget" in result.details["error"]


def test_a_slow_request_is_cut_at_the_deadline(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"text": GOAL_OK, "delay": 5}]}})
    result, seconds = judge("goal_accuracy", server, judge_env, SKILL_EVAL_JUDGE_TIME_BUDGET="1")
    assert seconds < 2 and len(server.requests) == 1
    assert result.score is None and "budget" in result.details["error"]


def test_schema_rejected_with_400_downgrades_and_is_not_sent_again(scripted_model, judge_env):
    rejection = {
        "status": 400,
        "message": "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model",
    }
    server = scripted_model({"models": {MODEL: [rejection, GOAL_OK, GOAL_OK]}})
    support = SchemaSupport()
    first, _ = judge("goal_accuracy", server, judge_env, support)
    second, _ = judge("goal_accuracy", server, judge_env, support)
    assert len(server.requests) == 3
    assert "response_format" in server.requests[0].body
    assert all("response_format" not in r.body for r in server.requests[1:])
    assert first.score == second.score == 0.9
    assert first.details["structured_output"] is False and second.details["judge_requests"] == 1


def test_judges_at_the_same_moment_send_a_rejected_schema_once(scripted_model, judge_env):
    """Four trials judged at once: the first request probes the schema, the others wait for its answer."""
    import litellm  # noqa: F401 - its slow first import stays out of the race

    rejection = {
        "status": 400,
        "message": "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model",
        "delay": 0.5,
    }
    server = scripted_model({"models": {MODEL: [rejection, {"text": GOAL_OK, "repeat": "forever"}]}})
    config = load_config(
        {**judge_env, "LLM_JUDGE_MODEL": f"openai/{MODEL}", "SKILL_EVAL_LLM_BASE_URL": server.openai_base_url}
    )
    support = SchemaSupport()

    async def four_at_once() -> list[Any]:
        tasks = [next(t for t in build_tasks(EVIDENCE, ENTRY, config) if t.metric == "goal_accuracy")] * 4
        return await asyncio.gather(*(run_task(t, config, JudgeCache(None, "off"), support) for t in tasks))

    results = asyncio.run(four_at_once())
    with_schema = [r for r in server.requests if "response_format" in r.body]
    assert len(with_schema) == 1 and with_schema[0].status == 400
    assert len(server.requests) == 5
    assert [r.score for r in results] == [0.9] * 4
    assert not support.probing


def test_a_probe_that_fails_otherwise_lets_the_next_request_probe(scripted_model, judge_env):
    """A probe that ends in an error unrelated to the schema settles nothing: the next request sends the schema."""
    server = scripted_model({"models": {MODEL: [{"status": 400, "message": "context length exceeded"}, GOAL_OK]}})
    support = SchemaSupport()
    first, _ = judge("goal_accuracy", server, judge_env, support)
    second, _ = judge("goal_accuracy", server, judge_env, support)
    assert first.score is None and second.score == 0.9
    assert all("response_format" in r.body for r in server.requests)
    key = next(iter(support.confirmed))
    assert key[2].endswith(MODEL) and not support.probing and not support.rejected


def test_other_400_is_not_downgraded(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"status": 400, "message": "context length exceeded"}, GOAL_OK]}})
    support = SchemaSupport()
    result, _ = judge("goal_accuracy", server, judge_env, support)
    assert len(server.requests) == 1 and result.score is None and not support.rejected


def test_garbage_then_a_valid_retry_with_a_stricter_reminder(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: ["Sure! The agent did great.", ACCURACY_OK]}})
    result, _ = judge("accuracy", server, judge_env)
    assert len(server.requests) == 2
    assert STRICT_REMINDER.strip() not in server.requests[0].text
    assert STRICT_REMINDER.strip() in server.requests[1].text
    assert result.score == 0.8 and result.details["score_source"] == "criteria"


def test_an_empty_reply_out_of_output_tokens_is_retried(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"text": "", "stop_reason": "length"}, GOAL_OK]}})
    result, _ = judge("goal_accuracy", server, judge_env)
    assert len(server.requests) == 2 and result.score == 0.9
    assert "out of output tokens" in result.details["judge_problems"][0]


def test_garbage_twice_is_unscored_never_zero(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: ["nope", "still nope"]}})
    result, _ = judge("accuracy", server, judge_env)
    assert len(server.requests) == 2
    assert result.score is None and "unparseable or invalid after retry" in result.details["error"]


def test_truncated_behavior_reply_is_salvaged(scripted_model, judge_env):
    cut = '{"summary": "s", "results": [{"step": 1, "passed": true, "reason": "ran it"}, {"step": 2, "pass'
    server = scripted_model(
        {"models": {MODEL: [{"text": cut, "stop_reason": "length"}, {"text": cut, "stop_reason": "length"}]}}
    )
    result, _ = judge("behavior_check", server, judge_env)
    assert len(server.requests) == 2
    assert result.score == round(1 / 3, 4)  # one passed of three expected; the two never reached count as failed
    assert result.details["salvaged"] is True
    assert result.details["reason"] == "Salvaged 1/3 behavior results from truncated judge response"


def test_refusal_then_fallback_model(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"refusal": "I can't help with that."}], "judge-backup": [GOAL_OK]}})
    result, _ = judge("goal_accuracy", server, judge_env, LLM_JUDGE_FALLBACK_MODELS="openai/judge-backup")
    assert [r.model for r in server.requests] == [MODEL, "judge-backup"]
    assert result.score == 0.9
    assert result.details["judge_model_used"] == "openai/judge-backup"
    assert result.details["judge_fallback_used"] is True
    assert result.details["judge_reasoning_effort"] == "default"


def test_refusal_without_fallback_is_unscored(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [{"refusal": "No."}]}})
    result, _ = judge("goal_accuracy", server, judge_env)
    assert len(server.requests) == 1 and result.score is None and "refused" in result.details["error"]


def test_tls_verification_failure_is_terminal(scripted_model, judge_env):
    server = scripted_model({"models": {MODEL: [GOAL_OK]}}, tls=True)
    result, seconds = judge("goal_accuracy", server, judge_env, SKILL_EVAL_LLM_RETRY_BASE_DELAY="1")
    assert server.requests == []  # the handshake failed: no HTTP request ever reached the server
    assert seconds < 5  # not retried (a retry would have waited at least 0.5 s, four of them far longer)
    assert result.score is None and "TLS certificate verification failed" in result.details["error"]


def test_the_three_judges_run_concurrently(scripted_model, judge_env):
    """Each reply is held 5 s after its request arrives. Until the endpoint has said whether it takes the schema
    option, one request probes it alone (`SchemaSupport`); the other two then go side by side: both arrive before
    either reply is sent. Judged by arrival times, not the run's wall time (a wall-time bound fails under load
    without anything being serial, and a loose one hid that the probe goes first)."""
    hold = 5.0
    replies = [
        {"text": ACCURACY_OK, "delay": hold, "match": "USER QUESTION:"},
        {"text": GOAL_OK, "delay": hold, "match": "Infer the user's goal"},
        {"text": BEHAVIOR_OK, "delay": hold, "match": "EXPECTED BEHAVIORS"},
    ]
    server = scripted_model({"models": {MODEL: replies}})
    config = load_config(
        {**judge_env, "LLM_JUDGE_MODEL": f"openai/{MODEL}", "SKILL_EVAL_LLM_BASE_URL": server.openai_base_url}
    )
    results = asyncio.run(run_judges(EVIDENCE, ENTRY, config, SchemaSupport()))
    arrivals = sorted(request.time for request in server.requests)
    assert len(arrivals) == 3
    assert arrivals[1] - arrivals[0] >= hold  # the probe's reply came first
    assert arrivals[2] - arrivals[1] < hold  # then the other two together, before either reply left
    assert {m: r.score for m, r in results.items()} == {"accuracy": 0.8, "goal_accuracy": 0.9, "behavior_check": 0.6667}


def test_anthropic_judge_sends_output_config_with_its_effort(scripted_model, judge_env):
    server = scripted_model({"models": {"claude-opus-5-5": [GOAL_OK]}})
    config = load_config(
        {**judge_env, "LLM_JUDGE_MODEL": "anthropic/claude-opus-5-5", "SKILL_EVAL_LLM_BASE_URL": server.base_url}
    )
    task = next(t for t in build_tasks(EVIDENCE, ENTRY, config) if t.metric == "goal_accuracy")
    result = asyncio.run(run_task(task, config, JudgeCache(None, "off"), SchemaSupport()))
    [request] = server.requests
    assert request.path == "/v1/messages" and "response_format" not in request.body
    assert request.body["output_config"]["format"]["type"] == "json_schema"
    assert request.body["output_config"]["effort"] == "medium" and "temperature" not in request.body
    assert result.score == 0.9 and result.details["judge_reasoning_effort"] == "medium"


def test_the_cache_tells_endpoints_apart(scripted_model, judge_env, tmp_path):
    """A verdict cached from one endpoint is not served for the same model name behind another one."""
    first = scripted_model({"models": {MODEL: [GOAL_OK]}})
    second = scripted_model({"models": {MODEL: [GOAL_OK]}})
    cache = JudgeCache(tmp_path / ".judge-cache", "on")

    def once(server):
        config = load_config(
            {**judge_env, "LLM_JUDGE_MODEL": f"openai/{MODEL}", "SKILL_EVAL_LLM_BASE_URL": server.openai_base_url}
        )
        task = next(t for t in build_tasks(EVIDENCE, ENTRY, config) if t.metric == "goal_accuracy")
        return asyncio.run(run_task(task, config, cache, SchemaSupport()))

    assert once(first).score == 0.9 and len(first.requests) == 1
    assert once(first).details.get("cached") is True and len(first.requests) == 1  # same endpoint: cached
    assert once(second).score == 0.9 and len(second.requests) == 1  # another endpoint: asked


def test_a_bad_cache_entry_is_a_miss(scripted_model, judge_env, tmp_path):
    """A cache entry nested 200,000 deep (or over the size cap) crashed the judge; it is a miss: the judge is asked."""
    server = scripted_model({"models": {MODEL: [GOAL_OK] * 3}})
    cache = JudgeCache(tmp_path / ".judge-cache", "on")
    config = load_config(
        {**judge_env, "LLM_JUDGE_MODEL": f"openai/{MODEL}", "SKILL_EVAL_LLM_BASE_URL": server.openai_base_url}
    )
    task = next(t for t in build_tasks(EVIDENCE, ENTRY, config) if t.metric == "goal_accuracy")
    assert asyncio.run(run_task(task, config, cache, SchemaSupport())).score == 0.9
    (entry,) = (tmp_path / ".judge-cache").rglob("*.json")
    for planted in ("[" * 200_000 + "]" * 200_000, '{"key": "' + "k" * (2 * 1024 * 1024) + '"}'):
        entry.write_text(planted)
        asked = len(server.requests)
        result = asyncio.run(run_task(task, config, cache, SchemaSupport()))
        assert result.score == 0.9 and not result.details.get("cached") and len(server.requests) == asked + 1
        entry.write_text(planted)  # the fresh verdict replaced it; plant it again for the next shape
