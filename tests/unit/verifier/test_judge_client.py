"""Judge request rules that need no server: model traits, structured-output mode, Retry-After, the cache."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from verifier.judges.cache import JudgeCache, cache_key
from verifier.judges.client import request_params, retry_after, schema_option, structured_mode


@pytest.mark.parametrize(
    ("model", "provider", "expected"),
    [
        ("openai/gpt-5.6-sol", "openai", {"max_tokens": 32768}),
        ("gpt-6", "openai", {"max_tokens": 32768, "reasoning_effort": "medium"}),
        ("openai/gpt-4.1", "openai", {"max_tokens": 16384, "temperature": 0.0}),
        ("anthropic/claude-opus-5-5", "anthropic", {"max_tokens": 16384, "reasoning_effort": "medium"}),
        ("anthropic/claude-sonnet-4-5", "anthropic", {"max_tokens": 16384, "temperature": 0.0}),
        ("bedrock/us.anthropic.claude-opus-5-5", "bedrock", {"max_tokens": 16384}),
    ],
)
def test_request_params_per_model(model, provider, expected):
    assert request_params(model, provider) == expected


def test_structured_output_per_provider():
    assert structured_mode("openai") == structured_mode("nv_build") == "json_schema"
    assert structured_mode("anthropic") == "output_config" and structured_mode("bedrock") == "prompt"
    option = schema_option("json_schema", "accuracy", {"type": "object"})
    assert option["response_format"]["json_schema"] == {
        "name": "accuracy",
        "strict": True,
        "schema": {"type": "object"},
    }
    assert schema_option("output_config", "a", {"x": 1}) == {
        "output_config": {"format": {"type": "json_schema", "schema": {"x": 1}}}
    }
    assert schema_option("output_config", "a", {"x": 1}, "medium")["output_config"]["effort"] == "medium"
    assert schema_option("prompt", "a", {}) == {}


def test_retry_after_seconds_and_http_date():
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({}) is None and retry_after({"retry-after": "soon"}) is None
    now = datetime(2026, 1, 1, tzinfo=UTC)
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after({"retry-after": date}, now=now.timestamp()) == pytest.approx(30.0)
    assert (
        retry_after({"retry-after": format_datetime(now - timedelta(seconds=5), usegmt=True)}, now=now.timestamp())
        == 0.0
    )


def test_cache_modes(tmp_path):
    key = cache_key({"prompt": "p", "model": "m"})
    assert key != cache_key({"prompt": "p", "model": "other"})
    verdict = {"score": 0.5, "details": {"reason": "r"}}
    JudgeCache(tmp_path, "read").put(key, verdict)
    assert JudgeCache(tmp_path, "on").get(key) is None  # read mode never writes
    JudgeCache(tmp_path, "write").put(key, verdict)
    assert JudgeCache(tmp_path, "write").get(key) is None  # write mode never reads
    assert JudgeCache(tmp_path, "on").get(key)["score"] == 0.5
    assert JudgeCache(tmp_path, "off").get(key) is None
    assert JudgeCache(None, "on").get(key) is None


def test_cache_refuses_symlinked_folders(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "results"
    root.mkdir()
    (root / ".judge-cache").symlink_to(elsewhere)
    cache = JudgeCache(root / ".judge-cache", "on")
    key = cache_key({"prompt": "p"})
    cache.put(key, {"score": 1.0, "details": {}})
    assert list(elsewhere.iterdir()) == [] and cache.get(key) is None


def test_a_cache_written_elsewhere_is_never_read(tmp_path):
    """A `.judge-cache` shipped inside someone else's skill (or written on another machine) gives no verdicts: each
    entry carries an HMAC with this machine's key."""
    key = cache_key({"prompt": "p"})
    theirs = JudgeCache(tmp_path, "on", secret=b"k" * 64)
    theirs.put(key, {"score": 1.0, "details": {"reason": "planted"}})
    assert theirs.get(key)["score"] == 1.0  # their own machine reads it back
    assert JudgeCache(tmp_path, "on", secret=b"m" * 64).get(key) is None  # ours does not
    entry = next(tmp_path.rglob(f"{key}.json"))
    forged = json.loads(entry.read_text())
    forged["verdict"]["score"] = 0.0
    entry.write_text(json.dumps(forged))
    assert theirs.get(key) is None  # altered since it was written
    entry.write_text(json.dumps({"key": key, "score": 1.0, "details": {}}))  # the old, unsigned layout
    assert theirs.get(key) is None


def test_the_machine_key_is_made_once_and_private(tmp_path):
    from verifier.judges.cache import machine_key

    path = tmp_path / "judge-cache.key"
    first = machine_key(path)
    assert first is not None and len(first) == 64 and machine_key(path) == first
    assert path.stat().st_mode & 0o777 == 0o600
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere")
    assert machine_key(path) is None  # a planted link is never followed
