"""Redaction of judge error text before it reaches result files or the terminal (bounded, secrets removed).

Provider error messages can echo request headers or keys; the configured secret values and well-known key shapes
are replaced, and the reason is capped so a verbose gateway cannot flood the results.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

MAX_REASON = 512
SECRET_VARS = (
    "OPENAI_API_KEY", "NVIDIA_API_KEY", "ANTHROPIC_API_KEY", "SKILL_EVAL_LLM_API_KEY", "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY", "AWS_SECURITY_TOKEN", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
)
_PATTERNS = (
    (re.compile(r"\bsk-[A-Za-z0-9_-]+"), "sk-<redacted>"),
    (re.compile(r"\bnvapi-[A-Za-z0-9_-]+"), "nvapi-<redacted>"),
    (re.compile(r"\bcrsr_[0-9a-fA-F]{16,}"), "crsr_<redacted>"),
    (re.compile(r"sha256~[A-Za-z0-9_-]+"), "sha256~<redacted>"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{17,}\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"), "jwt-<redacted>"),
)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    for name in SECRET_VARS:
        value = env.get(name, "")
        if len(value) >= 8:
            text = text.replace(value, "<redacted>")
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def bounded_reason(text: str, env: Mapping[str, str] | None = None) -> str:
    """Redacted and at most 512 characters (509 plus '...')."""
    text = redact(" ".join(text.split()), env)
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."
