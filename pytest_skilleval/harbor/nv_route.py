"""The NVIDIA single-key route: with the evaluator provider `nv_build`, one `NVIDIA_API_KEY` drives every agent.

opencode talks to NVIDIA Build itself (its own OpenAI-compatible provider, `provider.nvidia` in its config); codex
(OpenAI Responses API) and claude-code (Anthropic Messages API) talk to the compatibility bridge
(`harbor/nv_bridge.py`), which turns both into chat completions at NVIDIA Build. Only the `local` and `docker`
environments have the bridge; elsewhere the agents keep their own credentials. This module only decides the route:
which model each agent asks for, and the variables and kwargs Harbor gets (secrets as `${NAME}` templates Harbor
resolves itself, never values).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_skilleval.harbor.agent_model_env import ALIAS_VARIABLES
from verifier.judges.config import BASE_URL_VAR, env_provider

NV_PROVIDER = "nv_build"
NVIDIA_KEY_VAR = "NVIDIA_API_KEY"
NVIDIA_URL = "https://integrate.api.nvidia.com/v1"
# Nemotron Super, the seed's default for all three agents; opencode names it under its provider namespace.
DEFAULT_MODEL = "nvidia/nemotron-3-super-120b-a12b"
OPENCODE_PROVIDER = "nvidia"
# The variable holding the bridge's per-run token in this process (Harbor fills `${...}` templates from it).
BRIDGE_TOKEN_VAR = "SKILLEVAL_NV_BRIDGE_TOKEN"
# What each bridged agent speaks to the bridge, and the variables that point it there.
BRIDGED = {
    "codex": ("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1"),
    "claude-code": ("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", ""),
}
DIRECT = ("opencode",)
# claude-code's model aliases (the ones Harbor points at a custom endpoint's model, and its older small-fast one):
# on the route every one is the route's model, a host's own setting included.
CLAUDE_ALIASES = ("ANTHROPIC_SMALL_FAST_MODEL", *ALIAS_VARIABLES)
BRIDGE_ENV_MODES = ("local", "docker")


@dataclass(frozen=True)
class NvRoute:
    """How one agent reaches NVIDIA Build: `direct` (opencode) or through the `bridge` (codex, claude-code)."""

    agent: str
    kind: str  # "direct" or "bridge"
    model: str  # the model as the operator gave it (or the default), sent on exactly
    harbor_model: str  # what Harbor's agent is given, so that its requests carry `model`
    env: dict[str, str] = field(default_factory=dict)  # templates or non-secret values
    kwargs: dict[str, Any] = field(default_factory=dict)


def evaluator_provider(environ: Mapping[str, str]) -> str | None:
    """The evaluator provider as the seed resolves it: SKILL_EVAL_LLM_PROVIDER, else the one provider key set."""
    return env_provider(environ)


def nvidia_base_url(environ: Mapping[str, str]) -> str:
    """NVIDIA Build's OpenAI-compatible root: SKILL_EVAL_LLM_BASE_URL (the judges' endpoint, `/chat/completions`
    dropped) when set, else NVIDIA's own."""
    base = environ.get(BASE_URL_VAR, "").strip() or NVIDIA_URL
    return base.rstrip("/").removesuffix("/chat/completions").rstrip("/")


def route_kind(agent: str, env_mode: str, environ: Mapping[str, str]) -> str | None:
    """`direct`, `bridge`, or None when the agent keeps its own credentials (another provider, another agent, or a
    cloud environment, which has no bridge: there codex and claude-code use their own keys)."""
    if evaluator_provider(environ) != NV_PROVIDER:
        return None
    if agent in DIRECT:
        return "direct"
    if agent in BRIDGED and env_mode in BRIDGE_ENV_MODES:
        return "bridge"
    return None


def _opencode_model(model: str | None) -> tuple[str, str]:
    """(provider, catalog id) of opencode's `<provider>/<model>` selector: ours is `nvidia`, the rest is NVIDIA's
    catalog id (a model given without it is all catalog id)."""
    chosen = model or f"{OPENCODE_PROVIDER}/{DEFAULT_MODEL}"
    provider, _, catalog_id = chosen.partition("/")
    return (provider, catalog_id) if provider == OPENCODE_PROVIDER and catalog_id else (OPENCODE_PROVIDER, chosen)


def catalog_model(agent: str, model: str | None, kind: str) -> str:
    """The NVIDIA Build catalog id an agent's requests carry on its route (`kind`: direct or bridge)."""
    return _opencode_model(model)[1] if kind == "direct" else model or DEFAULT_MODEL


def nv_route(
    agent: str, model: str | None, env_mode: str, environ: Mapping[str, str], bridge_url: str | None = None
) -> NvRoute | None:
    """The agent's route on the single key, or None. `bridge_url` is where the trial reaches the bridge (needed
    for a bridged agent); an explicit model is kept exactly, else Nemotron Super."""
    kind = route_kind(agent, env_mode, environ)
    if kind is None:
        return None
    if kind == "direct":
        provider, catalog_id = _opencode_model(model)
        config = {
            "provider": {
                OPENCODE_PROVIDER: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "NVIDIA Build",
                    "options": {"baseURL": nvidia_base_url(environ), "apiKey": f"{{env:{NVIDIA_KEY_VAR}}}"},
                    "models": {catalog_id: {"name": catalog_id}},
                }
            }
        }
        return NvRoute(
            agent,
            kind,
            f"{provider}/{catalog_id}",
            f"{provider}/{catalog_id}",
            env={NVIDIA_KEY_VAR: f"${{{NVIDIA_KEY_VAR}}}"},
            kwargs={"opencode_config": config},
        )
    if bridge_url is None:
        raise ValueError(f"agent {agent} on {NV_PROVIDER} needs the bridge's URL")
    chosen = catalog_model(agent, model, kind)
    wire, key_var, url_var, suffix = BRIDGED[agent]
    env = {key_var: f"${{{BRIDGE_TOKEN_VAR}}}", url_var: bridge_url.rstrip("/") + suffix}
    if agent == "claude-code":  # its side requests (titles, subagents) ask for a tier alias: the same model
        env.update(dict.fromkeys(CLAUDE_ALIASES, chosen))
    # Harbor reads `<provider>/<model>` and sends `<model>`: the wire provider in front keeps the catalog id whole.
    return NvRoute(agent, kind, chosen, f"{wire}/{chosen}", env=env)
