"""One judge request through litellm, with the retries, waits, downgrade and deadline the contract asks for.

Why our own retry loop: litellm's and the OpenAI SDK's retries multiply requests and ignore our budget, so both are
off (`max_retries=0`, no `num_retries`) and every attempt the server sees is one we chose to make: transient
statuses (408, 429, 5xx but 501/505), connection errors and timeouts are retried with jittered exponential backoff
or the server's Retry-After; TLS verification failures and other errors are terminal; no wait may reach the
judge's deadline.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from verifier.judges.config import JudgeConfig, litellm_model

log = logging.getLogger("verifier.judges")

_SCHEMA_REJECTION = re.compile(
    r"response_format|json_schema|output_config|output_format|structured output|tool_choice", re.I
)
_MODEL_ACCESS = re.compile(r"key_model_access_denied|not allowed to access model|invalid model|model not found", re.I)
_TLS = re.compile(
    r"CERTIFICATE_VERIFY_FAILED|certificate verify failed|SSLCertVerificationError|self[- ]signed "
    r"certificate",
    re.I,
)
NOT_RETRIED_5XX = {501, 505}
# How often a request held behind a schema probe looks again.
PROBE_POLL_SECONDS = 0.02


class JudgeRequestError(Exception):
    """A request failed for good (for this model). `kind` says why: terminal, tls, budget, retries, model_access,
    refused."""

    def __init__(self, kind: str, message: str, requests: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.requests = requests


@dataclass
class Reply:
    text: str
    finish_reason: str | None
    refused: bool
    model: str
    schema_sent: bool
    requests: int
    # USD litellm priced this answer at (its installed price map), or None for a model it does not know.
    cost_usd: float | None = None


@dataclass
class SchemaSupport:
    """Whether each endpoint and model takes the schema option: rejected ones are skipped for the rest of the run
    (warned about once), and until the first answer says, one request probes while the others wait, so trials
    judged at the same moment do not all send a schema the endpoint rejects. Shared by every trial's loop."""

    rejected: set[tuple[str, str, str]] = field(default_factory=set)
    confirmed: set[tuple[str, str, str]] = field(default_factory=set)
    probing: set[tuple[str, str, str]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def allows(self, key: tuple[str, str, str]) -> bool:
        return key not in self.rejected

    async def claim(self, key: tuple[str, str, str], deadline: float) -> tuple[bool, bool]:
        """(send the schema, this request is the probe); waits while another request probes the endpoint."""
        while True:
            with self._lock:
                if key in self.rejected:
                    return False, False
                if key in self.confirmed:
                    return True, False
                if key not in self.probing:
                    self.probing.add(key)
                    return True, True
            if time.monotonic() >= deadline:
                raise JudgeRequestError("budget", "judge time budget exhausted waiting for the schema probe")
            await asyncio.sleep(PROBE_POLL_SECONDS)

    def settle(self, key: tuple[str, str, str], accepted: bool | None) -> None:
        """The probe's outcome: accepted, rejected, or None (it failed for another reason: the next one probes)."""
        with self._lock:
            self.probing.discard(key)
            if accepted:
                self.confirmed.add(key)
        if accepted is False:
            self.reject(key)

    def reject(self, key: tuple[str, str, str]) -> None:
        with self._lock:
            self.probing.discard(key)
            new = key not in self.rejected
            self.rejected.add(key)
        if new:
            log.warning(
                "judge endpoint %s rejected the structured-output schema for model %s; "
                "using prompt-only JSON for the rest of this run",
                key[1] or key[0],
                key[2],
            )


SCHEMA_SUPPORT = SchemaSupport()


def _litellm() -> Any:
    """litellm, imported late (it takes seconds) and told not to print its help banner on every error."""
    import litellm

    litellm.suppress_debug_info = True
    return litellm


# ---- model traits ----------------------------------------------------------------------------------------------


def model_leaf(model: str) -> str:
    leaf = model.rsplit("/", 1)[-1].lower()
    return re.sub(r"^(?:[a-z]{2}\.|global\.)?(?:anthropic\.)?", "", leaf)


def claude_version(leaf: str) -> tuple[int, int] | None:
    match = re.match(r"claude-(?:[a-z]+-)?(\d+)(?:[-.](\d))?(?!\d)", leaf)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def is_reasoning_gpt(leaf: str) -> bool:
    return leaf.startswith(("gpt-5", "gpt-6"))


def request_params(model: str, provider: str) -> dict[str, Any]:
    """Temperature, output tokens and reasoning effort for a model (part of the cache key)."""
    leaf = model_leaf(model)
    claude = claude_version(leaf)
    params: dict[str, Any] = {"max_tokens": 32768 if is_reasoning_gpt(leaf) else 16384}
    if not is_reasoning_gpt(leaf) and not (claude and claude >= (4, 7)):
        params["temperature"] = 0.0
    if leaf.startswith("gpt-6") or (provider == "anthropic" and claude and claude >= (5, 5)):
        params["reasoning_effort"] = "medium"
    return params


def structured_mode(provider: str) -> str:
    """json_schema for OpenAI-compatible endpoints, output_config for Anthropic, prompt-only for Bedrock."""
    if provider == "bedrock":
        return "prompt"
    if provider == "anthropic":
        return "output_config"
    return "json_schema"


def schema_option(mode: str, name: str, schema: dict[str, Any], effort: str | None = None) -> dict[str, Any]:
    """The request fields that ask for `schema`. Anthropic's `output_config` also carries the reasoning effort
    (litellm puts the effort there too; ours replaces its object, so it must keep the effort)."""
    if mode == "json_schema":
        return {
            "response_format": {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
        }
    if mode == "output_config":
        config: dict[str, Any] = {"format": {"type": "json_schema", "schema": schema}}
        return {"output_config": {**config, "effort": effort} if effort else config}
    return {}


# ---- error classification --------------------------------------------------------------------------------------


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) else None


def _headers(error: BaseException) -> dict[str, str]:
    headers = getattr(error, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(error, "response", None), "headers", None)
    try:
        return {str(k).lower(): str(v) for k, v in dict(headers or {}).items()}
    except (TypeError, ValueError):
        return {}


def _chain_text(error: BaseException) -> str:
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return " | ".join(parts)


def retry_after(headers: dict[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (seconds or an HTTP date); None when absent or unreadable."""
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return max(0.0, (when - current).total_seconds())


def is_transient(error: BaseException) -> bool:
    litellm = _litellm()
    if isinstance(error, (litellm.Timeout, litellm.APIConnectionError, asyncio.TimeoutError)):
        return True
    status = _status(error)
    if status is None:
        return False
    return status in (408, 429) or (500 <= status <= 599 and status not in NOT_RETRIED_5XX)


def is_tls_failure(error: BaseException) -> bool:
    return bool(_TLS.search(_chain_text(error)))


def is_schema_rejection(error: BaseException) -> bool:
    return _status(error) in (400, 422) and bool(_SCHEMA_REJECTION.search(str(error)))


def error_text(error: BaseException) -> str:
    status = _status(error)
    return (f"HTTP {status}: " if status else "") + f"{type(error).__name__}: {error}"


# ---- the request loop ------------------------------------------------------------------------------------------


def _reply_of(response: Any) -> tuple[str, str | None, bool]:
    choice = response.choices[0]
    message = choice.message
    text = message.content if isinstance(getattr(message, "content", None), str) else ""
    finish = getattr(choice, "finish_reason", None)
    refusal = getattr(message, "refusal", None)
    refused = finish in ("content_filter", "refusal") or bool(isinstance(refusal, str) and refusal.strip())
    return text or "", finish, refused


def _cost_of(response: Any) -> float | None:
    hidden = getattr(response, "_hidden_params", None)
    cost = hidden.get("response_cost") if isinstance(hidden, dict) else None
    return float(cost) if isinstance(cost, int | float) and cost >= 0 else None


def _backoff(config: JudgeConfig, retry: int) -> float:
    ceiling = min(config.retry_max_delay, config.retry_base_delay * (2**retry))
    return ceiling * random.uniform(0.5, 1.0)


async def request_once(
    config: JudgeConfig,
    model: str,
    prompt: str,
    name: str,
    schema: dict[str, Any],
    deadline: float,
    support: SchemaSupport = SCHEMA_SUPPORT,
) -> Reply:
    """Send one judge prompt to `model`, retrying transient failures until the retries or the deadline run out."""
    litellm = _litellm()

    routed = litellm_model(model, config.provider)
    key = (config.provider, config.base_url or "", routed)
    mode = structured_mode(config.provider)
    base: dict[str, Any] = {
        "model": routed,
        "messages": [{"role": "user", "content": prompt}],
        "max_retries": 0,
        **request_params(model, config.provider),
    }
    if config.base_url:
        base["api_base"] = config.base_url
    if config.api_key_var:
        base["api_key"] = os.environ.get(config.api_key_var)
    requests = retries = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise JudgeRequestError("budget", "judge time budget exhausted", requests)
        use_schema, probe = await support.claim(key, deadline) if mode != "prompt" else (False, False)
        remaining = deadline - time.monotonic()
        option = schema_option(mode, name, schema, base.get("reasoning_effort")) if use_schema else {}
        kwargs = {**base, **option, "timeout": max(0.001, min(config.request_timeout, remaining))}
        requests += 1
        try:
            response = await asyncio.wait_for(litellm.acompletion(**kwargs), timeout=max(0.001, remaining))
        except asyncio.CancelledError:
            if probe:
                support.settle(key, None)
            raise
        except asyncio.TimeoutError:
            if time.monotonic() >= deadline - 0.01:
                raise JudgeRequestError("budget", "judge time budget exhausted during a request", requests) from None
            error: BaseException = asyncio.TimeoutError("request timed out")
        except Exception as caught:  # noqa: BLE001 - every provider error is classified below
            error = caught
        else:
            if probe:
                support.settle(key, True)
            text, finish, refused = _reply_of(response)
            return Reply(text, finish, refused, model, use_schema, requests, _cost_of(response))
        if use_schema and is_schema_rejection(error):
            support.reject(key)
            continue
        if probe:
            support.settle(key, None)  # not an answer about the schema: the next request (maybe this one) probes
        if is_tls_failure(error):
            raise JudgeRequestError("tls", "TLS certificate verification failed: " + error_text(error), requests)
        if isinstance(error, litellm.ContentPolicyViolationError):
            raise JudgeRequestError("refused", "the provider's content filter refused: " + error_text(error), requests)
        if _MODEL_ACCESS.search(str(error)) and _status(error) in (400, 401, 403, 404):
            raise JudgeRequestError("model_access", error_text(error), requests)
        if not is_transient(error):
            raise JudgeRequestError("terminal", error_text(error), requests)
        if retries >= config.max_retries:
            raise JudgeRequestError("retries", f"gave up after {requests} request(s): {error_text(error)}", requests)
        wait = retry_after(_headers(error))
        if wait is not None and wait > config.retry_max_delay:
            raise JudgeRequestError(
                "retries",
                f"Retry-After {wait:.0f}s exceeds the maximum retry delay "
                f"{config.retry_max_delay:.0f}s: {error_text(error)}",
                requests,
            )
        if wait is None:
            wait = _backoff(config, retries)
        if time.monotonic() + wait >= deadline:
            raise JudgeRequestError(
                "budget", f"no time left in the judge budget for a retry: {error_text(error)}", requests
            )
        retries += 1
        await asyncio.sleep(wait)
