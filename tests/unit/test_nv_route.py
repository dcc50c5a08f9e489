"""The NVIDIA single-key route's selection: which agents it takes, the model each asks for, and what Harbor gets
(checked without running an agent; tests/e2e/test_nv_single_key.py runs all three)."""

from __future__ import annotations

from pathlib import Path

import pytest
from harbor.agents.agent_auth_resolution import parse_model_name

from pytest_skilleval.harbor.credential_check import session_routes
from pytest_skilleval.harbor.nv_bridge import bridge_config
from pytest_skilleval.harbor.nv_route import (
    BRIDGE_TOKEN_VAR,
    DEFAULT_MODEL,
    NVIDIA_URL,
    evaluator_provider,
    nv_route,
    route_kind,
)
from pytest_skilleval.harbor.preflight import agent_checks
from pytest_skilleval.harbor.runner import agent_config
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings

KEY = "nvapi-unit-Qw27Lm45Rt90Zx81"
NV = {"SKILL_EVAL_LLM_PROVIDER": "nv_build", "NVIDIA_API_KEY": KEY}
BRIDGE = "http://127.0.0.1:4555"
OWN_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "NVIDIA_API_KEY",
    "SKILL_EVAL_LLM_PROVIDER",
    "SKILL_EVAL_LLM_BASE_URL",
)


def _spec(agent: str) -> TrialSpec:
    return TrialSpec(
        skill_dir=Path("/skills/demo"),
        skill_name="demo",
        case_id="c1",
        source="dataset",
        agent=agent,
        arm="with_skill",
        attempt=1,
    )


@pytest.mark.parametrize(
    ("environ", "provider"),
    [
        ({"SKILL_EVAL_LLM_PROVIDER": "NV_BUILD", "OPENAI_API_KEY": "k"}, "nv_build"),
        ({"NVIDIA_API_KEY": KEY}, "nv_build"),  # the one provider key set
        ({"NVIDIA_API_KEY": KEY, "OPENAI_API_KEY": "k"}, None),  # two: the provider must be named
        ({"SKILL_EVAL_LLM_PROVIDER": "openai", "NVIDIA_API_KEY": KEY}, "openai"),
    ],
)
def test_the_evaluator_provider_is_resolved_as_the_seed_does(environ: dict[str, str], provider: str | None) -> None:
    assert evaluator_provider(environ) == provider


@pytest.mark.parametrize(
    ("agent", "env_mode", "kind"),
    [
        ("opencode", "local", "direct"),
        ("opencode", "daytona", "direct"),  # opencode needs no bridge, so it keeps the route everywhere
        ("codex", "local", "bridge"),
        ("claude-code", "docker", "bridge"),
        ("codex", "docker", "bridge"),
        ("codex", "daytona", None),  # no bridge on a cloud environment: codex keeps its own credentials
        ("terminus-2", "local", None),
        ("replay", "local", None),
    ],
)
def test_which_agents_take_the_single_key_route(agent: str, env_mode: str, kind: str | None) -> None:
    assert route_kind(agent, env_mode, NV) == kind
    assert route_kind(agent, env_mode, {"SKILL_EVAL_LLM_PROVIDER": "openai", "NVIDIA_API_KEY": KEY}) is None


def test_opencode_talks_to_nvidia_build_itself_with_nemotron_super_by_default() -> None:
    route = nv_route("opencode", None, "local", NV)
    assert route is not None
    assert route.harbor_model == f"nvidia/{DEFAULT_MODEL}"  # the seed's nvidia/nvidia/nemotron-3-super-120b-a12b
    provider = route.kwargs["opencode_config"]["provider"]["nvidia"]
    assert provider["options"] == {"baseURL": NVIDIA_URL, "apiKey": "{env:NVIDIA_API_KEY}"}
    assert list(provider["models"]) == [DEFAULT_MODEL]
    assert route.env == {"NVIDIA_API_KEY": "${NVIDIA_API_KEY}"}  # a template Harbor resolves, never the value


@pytest.mark.parametrize(("agent", "wire"), [("codex", "openai"), ("claude-code", "anthropic")])
def test_codex_and_claude_code_talk_to_the_bridge_with_its_token_only(agent: str, wire: str) -> None:
    route = nv_route(agent, None, "local", NV, BRIDGE)
    assert route is not None
    assert route.model == DEFAULT_MODEL
    # Harbor strips the wire provider and sends the rest: the catalog id arrives whole.
    assert parse_model_name(route.harbor_model) == (wire, DEFAULT_MODEL)
    key_var, url_var = (
        ("OPENAI_API_KEY", "OPENAI_BASE_URL") if wire == "openai" else ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
    )
    assert route.env[key_var] == f"${{{BRIDGE_TOKEN_VAR}}}"
    assert route.env[url_var] == (f"{BRIDGE}/v1" if wire == "openai" else BRIDGE)
    assert KEY not in repr(route)


@pytest.mark.parametrize(
    ("agent", "given", "sent"),
    [
        ("codex", "nvidia/meta/llama-3.1-8b-instruct", "nvidia/meta/llama-3.1-8b-instruct"),
        ("claude-code", "meta/llama-3.1-8b-instruct", "meta/llama-3.1-8b-instruct"),
        ("opencode", "nvidia/meta/llama-3.1-8b-instruct", "meta/llama-3.1-8b-instruct"),
        ("opencode", "nvidia/nvidia/nemotron-3-super-120b-a12b", "nvidia/nemotron-3-super-120b-a12b"),
    ],
)
def test_an_explicit_model_is_kept_exactly(agent: str, given: str, sent: str) -> None:
    route = nv_route(agent, given, "local", NV, BRIDGE)
    assert route is not None
    if agent == "opencode":
        assert route.harbor_model == given
        assert list(route.kwargs["opencode_config"]["provider"]["nvidia"]["models"]) == [sent]
    else:
        assert route.model == given and parse_model_name(route.harbor_model)[1] == sent


def test_the_base_url_override_is_the_judges_one_for_agents_too() -> None:
    route = nv_route("opencode", None, "local", {**NV, "SKILL_EVAL_LLM_BASE_URL": "http://gw.test/v1/chat/completions"})
    assert route is not None
    assert route.kwargs["opencode_config"]["provider"]["nvidia"]["options"]["baseURL"] == "http://gw.test/v1"


def test_harbor_gets_the_route_and_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OWN_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in NV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-own-openai-key-never-passed-1234")
    settings = RunSettings(agents=["codex", "opencode"], env_mode="local")
    codex = agent_config(_spec("codex"), settings, None, bridge_url=BRIDGE)
    assert codex.model_name == f"openai/{DEFAULT_MODEL}"
    assert codex.env["OPENAI_BASE_URL"] == f"{BRIDGE}/v1"
    assert codex.kwargs["reasoning_effort"] == "high"  # still comparable
    opencode = agent_config(_spec("opencode"), settings, None)
    assert opencode.model_name == f"nvidia/{DEFAULT_MODEL}"
    for config in (codex, opencode):
        dumped = config.model_dump_json()
        assert KEY not in dumped and "sk-own-openai-key" not in dumped


def test_claude_codes_every_model_alias_points_at_the_routes_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its side requests ask for a tier alias; on the route each one (a host's own setting too) is the route's
    model, which NVIDIA Build serves, never a Claude model it does not."""
    for name, value in NV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ANTHROPIC_DEFAULT_FABLE_MODEL", "claude-fable-from-the-host")
    monkeypatch.setenv("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-from-the-host")
    config = agent_config(_spec("claude-code"), RunSettings(agents=["claude-code"], env_mode="local"), None, (), BRIDGE)
    aliases = {name: value for name, value in config.env.items() if name.endswith("_MODEL")}
    assert aliases == dict.fromkeys(
        (
            "ANTHROPIC_MODEL",
            "ANTHROPIC_SMALL_FAST_MODEL",
            "ANTHROPIC_DEFAULT_SONNET_MODEL",
            "ANTHROPIC_DEFAULT_OPUS_MODEL",
            "ANTHROPIC_DEFAULT_HAIKU_MODEL",
            "ANTHROPIC_DEFAULT_FABLE_MODEL",
            "CLAUDE_CODE_SUBAGENT_MODEL",
        ),
        DEFAULT_MODEL,
    )


def test_without_the_route_agents_keep_their_own_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OWN_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-own-openai-key-1234567890")
    settings = RunSettings(agents=["codex"], env_mode="local", agent_models={"codex": ["openai/gpt-5"]})
    config = agent_config(_spec("codex"), settings, None)
    assert config.model_name == "openai/gpt-5"
    assert config.env == {"OPENAI_API_KEY": "${OPENAI_API_KEY}"}


def test_preflight_asks_for_the_nvidia_key_not_the_agents_own() -> None:
    settings = RunSettings(agents=["codex", "claude-code", "opencode"], env_mode="local")
    missing = [check.problem for check in agent_checks(settings, {"SKILL_EVAL_LLM_PROVIDER": "nv_build"})]
    assert all(problem and "set NVIDIA_API_KEY" in problem for problem in missing), missing
    assert all(check.ok for check in agent_checks(settings, NV))


def test_the_credential_check_proves_the_nvidia_route_of_each_agent() -> None:
    settings = RunSettings(agents=["codex", "opencode"], env_mode="local", grading_mode="custom_only")
    routes = {route.target: route for route in session_routes(settings, [], NV)}
    assert {route.provider for route in routes.values()} == {"nv_build"}
    assert {route.key_var for route in routes.values()} == {"NVIDIA_API_KEY"}
    assert routes["agent codex"].model == routes["agent opencode"].model == DEFAULT_MODEL


def test_the_bridge_config_holds_no_secret() -> None:
    config = bridge_config("http://nvidia.test/v1")
    assert "os.environ/NVIDIA_API_KEY" in config and f"os.environ/{BRIDGE_TOKEN_VAR}" in config
    assert 'model: "nvidia_nim/*"' in config and 'api_base: "http://nvidia.test/v1"' in config
