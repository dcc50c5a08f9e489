"""What of the host's environment reaches a trial: the agent's own provider credentials, and runtime_env values
the operator allowed. Values are handed to Harbor as `${NAME}` templates where Harbor resolves them itself, so
no secret is written into the task or trial files (Harbor persists the template, not the value).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
# Agents that call no model: ours (replay) and Harbor's LLM-free ones.
OFFLINE_AGENTS = frozenset({"replay", "oracle", "nop"})


def needs_credential(agent: str) -> bool:
    """Whether the agent's provider credential comes from the host: not for an offline agent, nor for an import
    path (`module:Class`), whose own code says what it needs."""
    return agent not in OFFLINE_AGENTS and ":" not in agent


def credential_names(agent: str, model: str | None) -> tuple[list[str], list[str]]:
    """(credential names the agent reads, base-URL names) from Harbor's own model-connection spec."""
    from harbor.agents.factory import AgentFactory
    from harbor.models.trial.config import AgentConfig

    cls = AgentFactory.get_agent_class_from_config(AgentConfig(name=agent, model_name=model))
    spec = getattr(cls, "MODEL_CONNECTION", None)
    access = getattr(spec, "agent_provider_access", None)
    if access is None:
        return [], []
    return list(access.api_key_candidate_names), list(access.base_url_candidate_names)


def agent_env(agent: str, model: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The agent's own credential and base-URL variables that are set on the host, as templates."""
    if not needs_credential(agent):
        return {}
    try:
        keys, urls = credential_names(agent, model)
    except ValueError:
        return {}
    return {name: f"${{{name}}}" for name in [*keys, *urls] if environ.get(name)}


def runtime_env_values(
    runtime_env: Mapping[str, str], allowance: Iterable[str], environ: Mapping[str, str]
) -> dict[str, str]:
    """harbor.runtime_env with each `${NAME}` / `${NAME:-default}` / `$NAME` filled from the host.

    Only names in the operator's --pass-env allowance are read (preflight has already refused the others); a
    reference outside it becomes empty rather than reaching into the host.
    """
    allowed = set(allowance)

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        default = match.group(2)
        if name in allowed and name in environ:
            return environ[name]
        return default or ""

    return {name: _REFERENCE.sub(fill, value) for name, value in runtime_env.items()}
