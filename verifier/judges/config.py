"""Judge settings, read from the host environment (and an explicit model) once per verifier run.

Why only the host environment: the judge credential and endpoint are the operator's, never the skill's, and the
judges run in the host process, so nothing of this reaches the sandbox. Judges run only when a model is set
explicitly, or when `SKILL_EVAL_LLM_PROVIDER` names a provider with a documented default judge model; an agent's
provider key alone never starts judging.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

CacheMode = Literal["on", "off", "read", "write"]
CACHE_MODES: tuple[str, ...] = ("on", "off", "read", "write")

MODEL_VARS = ("LLM_JUDGE_MODEL", "SKILL_EVAL_JUDGE_MODEL", "SKILL_EVAL_LLM_MODEL")
FALLBACK_VAR = "LLM_JUDGE_FALLBACK_MODELS"
PROVIDER_VAR = "SKILL_EVAL_LLM_PROVIDER"
BASE_URL_VAR = "SKILL_EVAL_LLM_BASE_URL"
API_KEY_VAR = "SKILL_EVAL_LLM_API_KEY"
CHARACTER_FACTS_VAR = "SKILL_EVAL_JUDGE_CHARACTER_FACTS"
NOT_CONFIGURED = (
    "LLM judge not configured: no judge model (set --judge-model, LLM_JUDGE_MODEL, SKILL_EVAL_JUDGE_MODEL, "
    "SKILL_EVAL_LLM_MODEL or SKILL_EVAL_LLM_PROVIDER)"
)
PROVIDER_DEFAULT = "provider default"
# The seed's documented default judge model per evaluator provider, used only when SKILL_EVAL_LLM_PROVIDER is set
# explicitly and no model is: openai's is the evaluator's own default, nv_build's the NVIDIA single-key route's.
DEFAULT_JUDGE_MODELS = {
    "openai": "gpt-5.6-sol",
    "nv_build": "nvidia/nemotron-3-super-120b-a12b",
}

# Tunables: environment variable -> (field, default). Every one is a number the operator may raise or lower.
NUMERIC_VARS: dict[str, tuple[str, float]] = {
    "SKILL_EVAL_LLM_MAX_RETRIES": ("max_retries", 4),
    "SKILL_EVAL_LLM_RETRY_BASE_DELAY": ("retry_base_delay", 1.0),
    "SKILL_EVAL_LLM_RETRY_MAX_DELAY": ("retry_max_delay", 30.0),
    "SKILL_EVAL_LLM_REQUEST_TIMEOUT": ("request_timeout", 90.0),
    "SKILL_EVAL_JUDGE_TIME_BUDGET": ("time_budget", 180.0),
    "SKILL_EVAL_JUDGE_ACCURACY_BUDGET": ("accuracy_budget", 8000),
    "SKILL_EVAL_JUDGE_GOAL_BUDGET": ("goal_budget", 12000),
    "SKILL_EVAL_JUDGE_BEHAVIOR_BUDGET": ("behavior_budget", 8000),
    "SKILL_EVAL_JUDGE_FINAL_RESPONSE_LIMIT": ("final_response_limit", 800),
    "SKILL_EVAL_JUDGE_OBSERVATION_LIMIT": ("observation_limit", 1500),
}
# Providers whose name is not litellm's own prefix.
PROVIDER_PREFIX = {"nv_build": "nvidia_nim", "nvidia": "nvidia_nim"}
# NVIDIA Build's catalog ids carry their own `vendor/` part, so the litellm prefix always goes in front.
CATALOG_PROVIDERS = ("nv_build", "nvidia")
# The key variable a provider's own litellm route would not read by itself.
PROVIDER_API_KEY_VARS = {"nv_build": "NVIDIA_API_KEY", "nvidia": "NVIDIA_API_KEY"}
PROVIDER_KEY_VARS = {
    "OPENAI_API_KEY": "openai",
    "ANTHROPIC_API_KEY": "anthropic",
    "NVIDIA_API_KEY": "nv_build",
}


class JudgeConfigError(ValueError):
    """A judge setting from the environment is unusable; the message names the variable."""


class JudgeConfig(BaseModel):
    """Everything a judge call needs besides the trial: model, endpoint, retries, budgets, cache."""

    model: str
    model_source: str = Field(description="Where the model came from: --judge-model or an environment variable.")
    fallback_models: list[str] = Field(default_factory=list)
    provider: str
    base_url: str | None = None
    api_key_var: str | None = Field(default=None, description="The variable holding the key (never the key).")
    max_retries: int = Field(default=4, ge=0)
    retry_base_delay: float = Field(default=1.0, ge=0)
    retry_max_delay: float = Field(default=30.0, ge=0)
    request_timeout: float = Field(default=90.0, gt=0)
    time_budget: float = Field(default=180.0, gt=0)
    accuracy_budget: int = Field(default=8000, ge=500)
    goal_budget: int = Field(default=12000, ge=500)
    behavior_budget: int = Field(default=8000, ge=500)
    final_response_limit: int = Field(default=800, ge=100)
    observation_limit: int = Field(default=1500, ge=100)
    character_facts: bool = False
    cache_mode: CacheMode = "on"
    cache_dir: str | None = None

    @property
    def effective_behavior_budget(self) -> int:
        """The behavior budget never falls below the final-response limit plus 4,000 characters."""
        return max(self.behavior_budget, self.final_response_limit + 4000)

    def provenance(self) -> dict[str, object]:
        """What run_config.json records under `judge` (no secrets: the key's variable name at most)."""
        return {
            "enabled": True,
            "provider": self.provider,
            "model": self.model,
            "source": self.model_source,
            "model_source": self.model_source,
            "fallback_models": list(self.fallback_models),
            "base_url": self.base_url,
            "cache": self.cache_mode,
        }


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise JudgeConfigError(f"{name}={raw!r}: expected a number") from None
    if value != value or value < 0:
        raise JudgeConfigError(f"{name}={raw!r}: expected a non-negative number")
    return value


def judge_model_from(explicit: str | None, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(model, source): --judge-model, then LLM_JUDGE_MODEL, SKILL_EVAL_JUDGE_MODEL, SKILL_EVAL_LLM_MODEL, then the
    default model of an explicitly set SKILL_EVAL_LLM_PROVIDER; None when none applies."""
    if explicit and explicit.strip():
        return explicit.strip(), "--judge-model"
    for name in MODEL_VARS:
        value = env.get(name, "").strip()
        if value:
            return value, name
    provider = env.get(PROVIDER_VAR, "").strip().lower()
    if not provider:
        return None
    if provider not in DEFAULT_JUDGE_MODELS:
        known = ", ".join(sorted(DEFAULT_JUDGE_MODELS))
        raise JudgeConfigError(
            f"{PROVIDER_VAR}={provider!r} has no default judge model (only {known} have one): "
            "set SKILL_EVAL_LLM_MODEL or --judge-model"
        )
    return DEFAULT_JUDGE_MODELS[provider], PROVIDER_DEFAULT


def env_provider(env: Mapping[str, str], model: str = "") -> str | None:
    """The evaluator provider the environment names: SKILL_EVAL_LLM_PROVIDER, else a `provider/` prefix on `model`,
    else the one provider key that is set; None when none says."""
    explicit = env.get(PROVIDER_VAR, "").strip().lower()
    if explicit:
        return explicit
    if "/" in model:
        return model.split("/", 1)[0].lower()
    present = [provider for var, provider in PROVIDER_KEY_VARS.items() if env.get(var)]
    return present[0] if len(present) == 1 else None


def _provider(model: str, env: Mapping[str, str]) -> str:
    return env_provider(env, model) or "openai"


def litellm_model(model: str, provider: str) -> str:
    """The model name litellm routes: an explicit `prefix/` is kept; a bare name gets the provider's prefix."""
    prefix = PROVIDER_PREFIX.get(provider, provider)
    if provider in CATALOG_PROVIDERS and not model.startswith(prefix + "/"):
        return f"{prefix}/{model}"
    if "/" in model:
        return model
    return f"{prefix}/{model}"


def _api_key_var(provider: str, env: Mapping[str, str]) -> str | None:
    """The variable the judge's key is read from: SKILL_EVAL_LLM_API_KEY, else the provider's own when litellm's
    route would not find it (NVIDIA_API_KEY for nv_build), else None (litellm reads the provider's variable)."""
    if env.get(API_KEY_VAR):
        return API_KEY_VAR
    own = PROVIDER_API_KEY_VARS.get(provider)
    return own if own and env.get(own) else None


def load_config(
    env: Mapping[str, str] | None = None,
    *,
    model: str | None = None,
    cache_mode: str = "on",
    cache_dir: str | None = None,
) -> JudgeConfig | None:
    """The judge configuration, or None when no judge model is set (judges not configured)."""
    env = os.environ if env is None else env
    chosen = judge_model_from(model, env)
    if chosen is None:
        return None
    if cache_mode not in CACHE_MODES:
        raise JudgeConfigError(f"judge cache mode {cache_mode!r}: choose one of {', '.join(CACHE_MODES)}")
    name, source = chosen
    provider = _provider(name, env)
    base_url = env.get(BASE_URL_VAR, "").strip() or None
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise JudgeConfigError(f"{BASE_URL_VAR}={base_url!r}: only http and https URLs are allowed")
    numbers = {field: _number(env, var, default) for var, (field, default) in NUMERIC_VARS.items()}
    fallbacks = [m.strip() for m in env.get(FALLBACK_VAR, "").split(",") if m.strip()]
    ints = {
        "max_retries",
        "accuracy_budget",
        "goal_budget",
        "behavior_budget",
        "final_response_limit",
        "observation_limit",
    }
    values: dict[str, Any] = {k: int(v) if k in ints else v for k, v in numbers.items()}  # JudgeConfig checks each
    return JudgeConfig(
        model=name,
        model_source=source,
        fallback_models=[m for i, m in enumerate(fallbacks) if m != name and m not in fallbacks[:i]],
        provider=provider,
        base_url=base_url,
        api_key_var=_api_key_var(provider, env),
        character_facts=env.get(CHARACTER_FACTS_VAR, "").strip().lower() in {"1", "true", "yes", "on"},
        cache_mode=cache_mode,  # type: ignore[arg-type]
        cache_dir=cache_dir,
        **values,
    )
