"""The settings one skill runs with, after every source is merged (the merge itself lives in `options`).

Plain data: the Harbor side and the session read it; nothing here knows about pytest.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from pytest_skilleval.results.records import Arm
from pytest_skilleval.skill.host_env import pass_env_names

AGENT_ALIASES = {"claude": "claude-code"}
# How `--env-mode` names our own `local` environment (the name, or either import path).
LOCAL_ENV_MODES = (
    "local",
    "pytest_skilleval.harbor.local_env:LocalEnvironment",
    "pytest_skilleval.harbor_ext.local_env:LocalEnvironment",
)


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


class RunSettings(BaseModel):
    """Everything that shapes a skill's run, after merging every source."""

    agents: list[str] = Field(default_factory=lambda: ["codex"])
    agent_models: dict[str, str] = Field(default_factory=dict)
    agent_kwargs: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Per agent, constructor settings from --agent-kwarg (command line only)."
    )
    env_mode: str = "docker"
    env_kwargs: dict[str, str] = Field(default_factory=dict)
    n_attempts: int = Field(default=1, ge=1)
    pass_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    stop_on_pass: bool = False
    grading_mode: Literal["default", "default_plus_custom", "custom_only"] = "default"
    skip_baseline: bool = False
    skip_with_skill: bool = False
    max_cases: int | None = Field(default=None, ge=1)
    n_concurrent: int = Field(default=4, ge=1, description="Trials in flight inside one pytest process.")
    max_agents: int | None = Field(default=None, ge=1, description="At most this many agents' trials at once.")
    timeout_multiplier: float = Field(default=1.0, gt=0)
    results_dir: str | None = None
    harbor_keep_jobs: bool = False
    judge_model: str | None = None
    judge_cache: Literal["on", "off", "read", "write"] = "on"
    block_on_agent_eval: bool = False
    # The sandbox image and what goes in it (see docs/environments.md).
    base_image: str | None = None
    custom_dockerfile_mode: Literal["preserve", "rebase"] = "rebase"
    base_image_mode: Literal["reuse", "rebuild", "disabled"] = "disabled"
    task_source: Literal["auto", "evals_json", "native_harbor"] = "auto"
    agent_workdir: str | None = None
    resources: dict[str, int] = Field(default_factory=dict)
    runtime_env: dict[str, str] = Field(default_factory=dict)
    pre_agent_setup: list[str] = Field(default_factory=list)
    skill_workspace_mode: Literal["isolated", "group"] = "isolated"
    skill_workspace_include: list[str] = Field(default_factory=list)
    resume: str | None = Field(default=None, description="Run id (or latest) to finish in its own folder.")
    regrade: str | None = Field(default=None, description="Run id (or latest) whose stored trials to grade again.")
    pass_env: list[str] = Field(
        default_factory=list,
        description="Host variables a native task may reference (--pass-env, command line only); none by default.",
    )

    @field_validator("agents")
    @classmethod
    def _canonical_agents(cls, agents: list[str]) -> list[str]:
        canonical: list[str] = []
        for agent in agents:
            name = AGENT_ALIASES.get(agent.strip(), agent.strip())
            if not name:
                raise ValueError("agent names must not be empty")
            if name not in canonical:
                canonical.append(name)
        if not canonical:
            raise ValueError("at least one agent is needed")
        return canonical

    @field_validator("agent_kwargs", mode="before")
    @classmethod
    def _canonical_kwarg_agents(cls, value: Any) -> Any:
        """Agent aliases (`claude`) name the same agent as in --agents."""
        if not isinstance(value, dict):
            return value
        nested: dict[str, dict[str, Any]] = {}
        for name, item in value.items():
            agent = AGENT_ALIASES.get(str(name).strip(), str(name).strip())
            nested[agent] = {**nested.get(agent, {}), **(item if isinstance(item, dict) else {})}
        return nested

    @field_validator("pass_env")
    @classmethod
    def _pass_env_names(cls, names: list[str]) -> list[str]:
        return pass_env_names(names)

    @property
    def local_sandbox(self) -> str | None:
        """The `local` environment's isolation: `none` only when asked for, else `bwrap` (the session refuses
        to start where bwrap cannot run); None for any other environment."""
        if self.env_mode not in LOCAL_ENV_MODES:
            return None
        return "none" if str(self.env_kwargs.get("sandbox", "auto")).strip().lower() == "none" else "bwrap"

    @property
    def arms(self) -> tuple[Arm, ...]:
        arms: list[Arm] = []
        if not self.skip_with_skill:
            arms.append("with_skill")
        if not self.skip_baseline:
            arms.append("without_skill")
        return tuple(arms)
