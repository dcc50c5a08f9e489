"""The redactor remembers short strings and key decisions (issue 13: the redaction pass at 20,000 trials) without
changing what it redacts."""

from __future__ import annotations

from verifier import redact
from verifier.redact import REDACTED, Redactor

SECRET = "s3cr3t-Value-0123456789"


def test_cached_short_strings_are_redacted_every_time() -> None:
    redactor = Redactor([SECRET])
    for _ in range(3):
        assert redactor.text(f"key {SECRET}") == f"key {REDACTED}"
        assert redactor.text("passed") == "passed"
    long_text = "x" * (redact.CACHED_TEXT_LENGTH + 1) + SECRET
    assert redactor.text(long_text).endswith(REDACTED)
    assert redactor._short  # short strings were remembered; the long one was not
    assert long_text not in redactor._short


def test_cached_key_decisions_match_the_rules() -> None:
    redactor = Redactor()
    data = [{"api_key": "plainvalue", "reason": "fine"}, {"api_key": "other", "reason": "also fine"}]
    assert redactor.value(data) == [
        {"api_key": REDACTED, "reason": "fine"},
        {"api_key": REDACTED, "reason": "also fine"},
    ]
    assert redactor._credential_keys == {"api_key": True, "reason": False}


def test_cache_is_bounded() -> None:
    redact.MAX_CACHED, saved = 2, redact.MAX_CACHED
    try:
        redactor = Redactor()
        for word in ("a", "b", "c", "d"):
            assert redactor.text(word) == word
        assert len(redactor._short) == 2
    finally:
        redact.MAX_CACHED = saved
