"""The results tree's redaction pass looks at a whole document once and leaves a clean one untouched (issue 13:
session finish <= 1 ms per trial); a document that may hold a secret is still redacted string by string."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.results.redact import MARK, redact_value
from verifier import redact, safe_io, secret_patterns
from verifier.redact import REDACTED, Redactor

# One sample per secret_patterns.TOKEN_PATTERNS row (in its order), in the case and spacing variants the patterns accept.
SAMPLES = [
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
    "sk-abc123de",
    "sk_live_" + "a1" * 8,
    "ghp_" + "a1" * 12,
    "github_pat_" + "a1" * 12,
    "glpat-" + "a1" * 10,
    "AKIA" + "ABCDEFGH12345678",
    "xoxb-1234567890-abc",
    "https://hooks.slack.com/services/T0001/B0001/abcdefghijkl",
    "https://discord.com/api/webhooks/123456/abcdefghijkl",
    "AIza" + "a1" * 16,
    "nvapi-" + "a1" * 8,
    "hf_" + "a1" * 10,
    "npm_" + "a1" * 18,
    "SG." + "a1" * 11 + "." + "b2" * 11,
    "sha256~abcdefghij",
    "eyJhbGciOiJI.eyJzdWIiOiIx.sig",
    "BEARER abcdefghijklmnop",
    "Authorization = Basicabcdefgh",
    "https://user:hunter22@example.com/x",
    "https://0123456789abcdef0123456789abcdef@o123.ingest.sentry.io/456",
    "PassWord \t= hunter22x",
]


def test_every_token_pattern_has_a_sample() -> None:
    assert len(SAMPLES) == len(secret_patterns.TOKEN_PATTERNS)
    for (pattern, _), sample in zip(secret_patterns.TOKEN_PATTERNS, SAMPLES, strict=True):
        assert pattern.search(sample), sample


def _each_needle(text: str) -> bool:
    folded = text.casefold()
    return any(n.search(text) for n in secret_patterns.NEEDLES) or any(
        n.search(folded) for n in secret_patterns.LOWER_NEEDLES
    )


def test_short_texts_are_judged_as_the_needles_one_by_one_judge_them() -> None:
    """Texts up to SHORT_TEXT characters are searched for every needle at once: the same answer, every window of
    every sample (cut anywhere, so needles half in and half out) and plain names included."""
    limit = secret_patterns.SHORT_TEXT
    texts = ["", "c0417", "with_skill", "bench_agent:SleepAgent", "Key:", "AUTH =", "token", "sk-", "eyJ"]
    for sample in SAMPLES:
        padded = f"x {sample} y"
        texts += [padded[start : start + width] for width in (8, 16, limit) for start in range(len(padded))]
    short = [text for text in texts if len(text) <= limit]
    assert sum(map(_each_needle, short)) > 100 and sum(not _each_needle(text) for text in short) > 100
    for text in short:
        assert secret_patterns.may_hold_token(text) == _each_needle(text), text


@pytest.mark.parametrize("sample", SAMPLES)
def test_a_document_holding_any_token_is_redacted(sample: str) -> None:
    redactor = Redactor()
    document = {
        "record": {"case": "c1", "details": {"reason": f"the agent printed {sample} and went on"}},
        "trajectory": {"steps": [{"message": "ok"}, {"message": f"x\n{sample}\n"}]},
    }
    assert redactor.may_hold_secret(sample)
    scrubbed = redactor.scrub(document)
    text = json.dumps(scrubbed)
    assert REDACTED in text
    assert scrubbed == redactor.value(document)  # the same result as the string-by-string pass


@pytest.mark.parametrize("sample", SAMPLES)
def test_the_report_the_results_and_the_grader_agree_on_every_shape(sample: str) -> None:
    """One pattern set: what the results tree redacts, the report redacts and the grader contract refuses."""
    from pytest_skilleval.results.redact import redact_text
    from verifier.custom import looks_like_credential

    text = f"the agent printed {sample} and went on"
    assert Redactor().text(text) == redact_text(text) != text
    assert looks_like_credential(sample)
    assert redact.kwarg_secrets({"plain_name": sample}) == [sample]


def test_a_clean_document_is_returned_as_it_is() -> None:
    redactor = Redactor(["s3cr3t-Value-0123456789"])
    document: dict[str, Any] = {
        "case": "task-00001",
        "tokens": {"prompt": 10},
        "steps": [{"message": "x" * 500}],
        "details": {"security": {"reason": "no secret here", "score": 0.5}},
    }
    assert redactor.scrub(document) is document


@pytest.mark.parametrize(
    "document",
    [
        {"details": {"api_key": "plainvalue"}},  # a credential-named key over a string
        {"env": ["KEY s3cr3t-Value-0123456789 end"]},  # a known secret value
        {"s3cr3t-Value-0123456789": 1},  # ... as a key
    ],
)
def test_keys_and_known_values_still_force_the_full_pass(document: dict[str, Any]) -> None:
    redactor = Redactor(["s3cr3t-Value-0123456789"])
    scrubbed = redactor.scrub(document)
    assert "s3cr3t" not in json.dumps(scrubbed) and "plainvalue" not in json.dumps(scrubbed)


def test_redact_value_leaves_clean_values_and_still_caps_and_masks() -> None:
    clean = {"details": {"security": {"reason": "fine", "findings": []}}, "overall": 0.5}
    assert redact_value(clean) is clean
    assert redact_value({"r": "y" * 50}, limit=10)["r"].startswith("y" * 10 + "\n[...")
    assert redact_value({"custom": {"password": "hunter2"}}) == {"custom": {"password": MARK}}
    assert MARK in redact_value({"log": "export GITHUB_TOKEN=abc123def"})["log"]


def test_read_files_opens_each_folder_once_and_follows_no_link(tmp_path: Path) -> None:
    trial = tmp_path / "trial"
    (trial / "verifier").mkdir(parents=True)
    (trial / "verifier" / "reward.json").write_text('{"r": 1}')
    (trial / "verifier" / "big.txt").write_text("z" * 100)
    (trial / "verifier" / "out.txt").write_text("head\n" + "t" * 50 + "TAIL")
    (trial / "result.json").write_text("{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "trajectory.json").write_text("stolen")
    os.symlink(outside, trial / "agent")
    os.symlink(outside / "trajectory.json", trial / "linked.json")
    found = safe_io.read_files(
        trial,
        [
            "verifier/reward.json",
            "verifier/big.txt",
            "verifier/out.txt",
            "agent/trajectory.json",
            "linked.json",
            "result.json",
            "missing/x.json",
        ],
        max_bytes=60,
        tail_bytes={"verifier/out.txt": 4},
    )
    assert found == {"verifier/reward.json": b'{"r": 1}', "verifier/out.txt": b"TAIL", "result.json": b"{}"}
    assert safe_io.read_files(tmp_path / "absent", ["result.json"]) == {}
