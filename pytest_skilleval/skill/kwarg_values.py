"""Values of agent and environment kwargs as secrets are looked for in them: every nested leaf, and a copy with
each secret replaced, so run_config.json never holds a credential given with --agent-kwarg or --ek."""

from __future__ import annotations

from typing import Any


def kwarg_leaves(kwargs: Any, name: str = "") -> list[tuple[str, Any]]:
    """(innermost key, value) for every leaf of nested kwargs, so `llm_kwargs={"api_key": ...}` is seen as an
    `api_key` when secrets are looked for."""
    if isinstance(kwargs, dict):
        return [leaf for key, value in kwargs.items() for leaf in kwarg_leaves(value, str(key))]
    if isinstance(kwargs, list):
        return [leaf for value in kwargs for leaf in kwarg_leaves(value, name)]
    return [(name, kwargs)]


def redacted_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments with every secret value (a credential name or a token shape, nested ones too) replaced by
    the redaction pass's mark; a path or other plain value under an ordinary name stays as it is."""
    from verifier.redact import REDACTED, is_secret_kwarg

    def redact(key: str, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: redact(str(k), v) for k, v in value.items()}
        if isinstance(value, list):
            return [redact(key, v) for v in value]
        return REDACTED if is_secret_kwarg(key, value) else value

    return {key: redact(key, value) for key, value in kwargs.items()}
