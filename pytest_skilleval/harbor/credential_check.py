"""Credentials proven before spending: one bounded model-catalog request per agent route and for the judge route,
made before any image is built or task staged, and classified the way the seed does.

- `verified`: the provider itself said yes (its catalog answered the key, and lists or names the model).
- `inconclusive`: the listing worked, but that catalog does not authenticate inference (NVIDIA Build's is public;
  a compatible gateway's may be), so only the run proves the key.
- `degraded`: a non-authoritative answer (OpenAI catalog permission or membership, a gateway's catalog auth), no
  catalog to ask (unsupported), or a transient failure (timeout, connection error, 429, 5xx). Reported; the run
  goes on.
- `failed`: a definitive authentication failure from the native provider (401/403), an authoritative model
  rejection (Anthropic's 404 for the model, a model NVIDIA Build's catalog does not have), or a Bedrock setup that
  cannot work (no region, no credentials). The run stops with one line per problem.

Only names of variables and the endpoint are recorded; keys never are, and any text a server sent back goes through
the redaction pass and a length cap.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from pytest_skilleval.harbor.credentials import credential_names, needs_credential
from pytest_skilleval.harbor.nv_route import NVIDIA_KEY_VAR, catalog_model, nvidia_base_url, route_kind
from pytest_skilleval.skill.settings import RunSettings
from verifier.judges.config import JudgeConfigError, load_config
from verifier.redact import Redactor

Status = Literal["verified", "inconclusive", "degraded", "failed"]
OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"
NVIDIA_URL = "https://integrate.api.nvidia.com/v1"
TIMEOUT = 10.0
DETAIL_CAP = 200
# The provider an agent talks to when its model names none.
AGENT_PROVIDERS = {"codex": "openai", "claude-code": "anthropic"}
PREFIX_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "nvidia": "nv_build", "nvidia_nim": "nv_build"}
KEY_PROVIDERS = {"OPENAI_API_KEY": "openai", "ANTHROPIC_API_KEY": "anthropic", "NVIDIA_API_KEY": "nv_build"}
BEDROCK_CREDENTIALS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_PROFILE",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)


@dataclass(frozen=True)
class Route:
    """Where one target's requests go: provider kind, endpoint, the variable holding the key, and the model."""

    target: str
    provider: str  # openai | openai-compatible | anthropic | nv_build | bedrock | unsupported
    endpoint: str
    key_var: str | None
    model: str | None


class Outcome(BaseModel):
    """One target's result, as run_config.json records it (no key, redacted detail)."""

    target: str
    provider: str
    endpoint: str
    variable: str | None = Field(description="The environment variable holding the key (never the key).")
    model: str | None
    status: Status
    detail: str

    def line(self) -> str:
        model = f" model {self.model}" if self.model else ""
        return f"{self.target}: {self.provider} at {self.endpoint}{model}: {self.status}: {self.detail}"


def _strip_prefix(model: str | None, provider: str) -> str | None:
    """The model id the provider's catalog knows: a leading `provider/` namespace (litellm's or an agent's, as in
    opencode's `nvidia/meta/llama-3.1-8b-instruct`) removed; an NVIDIA catalog id keeps its own vendor part."""
    if not model:
        return None
    head, _, rest = model.partition("/")
    if rest and PREFIX_PROVIDERS.get(head.lower()) == provider:
        if provider == "nv_build" and head == "nvidia" and "/" not in rest:
            return model  # `nvidia/nemotron-...` is itself a catalog id
        return rest
    return model


def _openai_route(target: str, model: str | None, env: Mapping[str, str], base: str | None = None) -> Route:
    url = (base or env.get("OPENAI_BASE_URL", "") or OPENAI_URL).rstrip("/")
    kind = "openai" if url == OPENAI_URL else "openai-compatible"
    return Route(target, kind, url, "OPENAI_API_KEY", _strip_prefix(model, "openai"))


def _provider_route(
    target: str, provider: str, model: str | None, env: Mapping[str, str], base: str | None, key_var: str | None
) -> Route:
    if provider == "openai":
        route = _openai_route(target, model, env, base)
        return route if key_var is None else Route(**{**route.__dict__, "key_var": key_var})
    if provider == "anthropic":
        url = (base or env.get("ANTHROPIC_BASE_URL", "") or ANTHROPIC_URL).rstrip("/").removesuffix("/v1")
        return Route(target, "anthropic", url, key_var or "ANTHROPIC_API_KEY", _strip_prefix(model, "anthropic"))
    if provider in ("nv_build", "nvidia"):
        url = (base or NVIDIA_URL).rstrip("/").removesuffix("/chat/completions")
        return Route(target, "nv_build", url, key_var or "NVIDIA_API_KEY", _strip_prefix(model, "nv_build"))
    if provider == "bedrock":
        return Route(
            target, "bedrock", f"bedrock ({env.get('AWS_REGION') or env.get('AWS_DEFAULT_REGION')})", None, model
        )
    return Route(target, "unsupported", provider, key_var, model)


def agent_route(agent: str, model: str | None, env: Mapping[str, str]) -> Route | None:
    """The route an agent's model requests take, or None for an agent that calls no provider of ours."""
    if not needs_credential(agent):
        return None
    target = f"agent {agent}"
    if agent == "claude-code" and env.get("CLAUDE_CODE_USE_BEDROCK", "").strip() not in ("", "0", "false"):
        return _provider_route(target, "bedrock", model, env, None, None)
    head = model.split("/", 1)[0].lower() if model and "/" in model else None
    provider = PREFIX_PROVIDERS.get(head or "") or AGENT_PROVIDERS.get(agent)
    if provider is None:
        try:
            keys, _ = credential_names(agent, model)
        except ValueError:
            return None
        provider = next((KEY_PROVIDERS[key] for key in keys if key in KEY_PROVIDERS), None)
    if provider is None:
        return Route(target, "unsupported", head or agent, None, model)
    route = _provider_route(target, provider, model, env, None, None)
    try:
        keys, _ = credential_names(agent, model)
    except ValueError:
        keys = []
    chosen = next((key for key in keys if env.get(key, "").strip()), None)  # e.g. ANTHROPIC_AUTH_TOKEN, CODEX_API_KEY
    if chosen is not None and route.key_var not in keys[: keys.index(chosen) + 1]:
        route = Route(route.target, route.provider, route.endpoint, chosen, route.model)
    return route


def single_key_route(agent: str, model: str | None, env_mode: str, env: Mapping[str, str]) -> Route | None:
    """An agent on the NVIDIA single-key route: its requests end at NVIDIA Build under NVIDIA_API_KEY, whether it
    talks there itself (opencode) or through the bridge (codex, claude-code)."""
    kind = route_kind(agent, env_mode, env)
    if kind is None:
        return None
    catalog_id = catalog_model(agent, model, kind)
    return Route(f"agent {agent}", "nv_build", nvidia_base_url(env), NVIDIA_KEY_VAR, catalog_id)


def judge_route(settings: RunSettings, env: Mapping[str, str]) -> Route | None:
    """The judges' route, when judges will run."""
    if settings.grading_mode == "custom_only":
        return None
    try:
        config = load_config(env, model=settings.judge_model, cache_mode=settings.judge_cache)
    except JudgeConfigError:
        return None  # the session header already refused it
    if config is None:
        return None
    key_var = config.api_key_var
    provider = config.provider
    if provider not in ("anthropic", "nv_build", "nvidia", "bedrock"):
        if provider != "openai":
            return Route("judge", "unsupported", provider, key_var, config.model)
        key_var = key_var or "OPENAI_API_KEY"
    return _provider_route("judge", provider, config.model, env, config.base_url, key_var)


def session_routes(settings: RunSettings, skills: Iterable[RunSettings], env: Mapping[str, str]) -> list[Route]:
    """Every distinct route of the run: each agent with each model a skill gives it, and the judge."""
    routes: dict[tuple[Any, ...], Route] = {}
    for each in [settings, *skills]:
        for variant in each.variants:
            route = single_key_route(variant.agent, variant.model, each.env_mode, env) or agent_route(
                variant.agent, variant.model, env
            )
            if route is not None:
                routes.setdefault((route.target, route.provider, route.endpoint, route.model), route)
    judge = judge_route(settings, env)
    if judge is not None:
        routes.setdefault(("judge",), judge)
    return list(routes.values())


def _detail(text: str) -> str:
    flat = " ".join(Redactor.from_environment(os.environ).text(text).split())
    return flat if len(flat) <= DETAIL_CAP else flat[: DETAIL_CAP - 3] + "..."


def _error_text(response: Any) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)
    return str(error or body)[:500]


def _bedrock(route: Route, env: Mapping[str, str]) -> tuple[Status, str]:
    if not (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")):
        return "failed", "no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION)"
    if not any(env.get(name) for name in BEDROCK_CREDENTIALS):
        return "failed", f"no AWS credentials: set one of {', '.join(BEDROCK_CREDENTIALS[:3])}"
    return "degraded", "region and credentials are set; Bedrock's catalog is not asked here (unsupported)"


def _classify(route: Route, status: int, response: Any) -> tuple[Status, str]:
    said = _detail(_error_text(response)) if status >= 400 else ""
    native = route.provider in ("openai", "anthropic", "nv_build")
    if status in (401, 403):
        if route.provider == "openai" and status == 403:
            return "degraded", f"the catalog refused the key (HTTP 403: {said}); not authoritative for inference"
        if native:
            return "failed", f"authentication failed (HTTP {status}: {said})"
        return "degraded", f"the gateway's catalog refused the key (HTTP {status}: {said}); not authoritative"
    if status == 429 or status >= 500:
        return "degraded", f"transient: HTTP {status} ({said})"
    if status == 404:
        if route.provider == "anthropic" and route.model:
            return "failed", f"model rejected: {route.model} (HTTP 404: {said})"
        return "degraded", "no model catalog at this endpoint (HTTP 404): unsupported"
    if status >= 400:
        return "degraded", f"HTTP {status} ({said})"
    if route.provider == "anthropic":
        return "verified", "the key is accepted" + (f" and names {route.model}" if route.model else "")
    try:
        ids = {str(item.get("id")) for item in response.json().get("data", []) if isinstance(item, dict)}
    except (ValueError, AttributeError):
        return "degraded", "the catalog's answer is not a model list: unsupported"
    if route.model and route.model not in ids:
        if route.provider == "nv_build":
            return "failed", f"model rejected: {route.model} is not in NVIDIA Build's catalog"
        return "degraded", f"{route.model} is not in the key's catalog listing; not authoritative"
    if route.provider == "openai":
        return "verified", "the key lists its models" + (f", {route.model} among them" if route.model else "")
    return "inconclusive", "the catalog answered, but it does not authenticate inference; the run will prove it"


def check_route(route: Route, env: Mapping[str, str], timeout: float = TIMEOUT) -> Outcome:
    """One bounded request (no retries) for one route, classified."""
    import httpx

    def outcome(status: Status, detail: str) -> Outcome:
        return Outcome(
            target=route.target,
            provider=route.provider,
            endpoint=route.endpoint,
            variable=route.key_var,
            model=route.model,
            status=status,
            detail=detail,
        )

    if route.provider == "bedrock":
        return outcome(*_bedrock(route, env))
    if route.provider == "unsupported":
        return outcome("degraded", "no catalog check for this provider (unsupported); the run will prove it")
    key = env.get(route.key_var, "").strip() if route.key_var else ""
    if not key and route.provider in ("openai", "anthropic", "nv_build"):
        return outcome("failed", f"no credential: set {route.key_var}")
    if route.provider == "anthropic":
        auth = {"x-api-key": key} if (route.key_var or "").endswith("API_KEY") else {"Authorization": f"Bearer {key}"}
        headers = {**auth, "anthropic-version": "2023-06-01"}
        url = f"{route.endpoint}/v1/models" + (f"/{route.model}" if route.model else "")
    else:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        url = f"{route.endpoint}/models"
    try:
        response = httpx.get(url, headers=headers, timeout=timeout, follow_redirects=False)
    except httpx.TimeoutException:
        return outcome("degraded", f"transient: no answer within {timeout:g} s")
    except httpx.HTTPError as error:
        return outcome("degraded", f"transient: {_detail(type(error).__name__ + ': ' + str(error))}")
    return outcome(*_classify(route, response.status_code, response))


def check_routes(routes: list[Route], env: Mapping[str, str] | None = None, timeout: float = TIMEOUT) -> list[Outcome]:
    """Every route checked at once (each bounded by `timeout`), in the routes' order."""
    env = os.environ if env is None else env
    if not routes:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(routes))) as pool:
        return list(pool.map(lambda route: check_route(route, env, timeout), routes))


def validation_record(outcomes: list[Outcome]) -> dict[str, Any]:
    """run_config.json -> credential_validation: the outcome per target, and whether the run may go on."""
    failed = any(o.status == "failed" for o in outcomes)
    degraded = any(o.status == "degraded" for o in outcomes)
    return {
        "status": "failed" if failed else "degraded" if degraded else "passed",
        "targets": [o.model_dump() for o in outcomes],
    }
