"""The settings one skill runs with, after every source is merged (the merge itself lives in `options`).

Each field is the one declaration of a setting: its type, range and default here, and a `Setting` (see
`setting_specs`) saying how the command line, the ini file and `evals/config.yml` reach it and whether `--resume`
compares it. Adding a setting is one field here plus its behaviour. Plain data: nothing here knows about pytest.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt, field_validator
from pydantic_core import PydanticCustomError

from pytest_skilleval.results.keys import ALL_ARMS, Arm
from pytest_skilleval.skill.setting_specs import (
    MAX_COUNT,
    CountOrAuto,
    Setting,
    agent_kwarg,
    agent_model,
    count_or_auto,
    ek_file_refusal,
    lower,
    model_price,
    pairs,
    pass_env_name,
    pass_env_names,
    split_list,
)

AGENT_ALIASES = {"claude": "claude-code"}
# How `--env-mode` names our own `local` environment (the name, or either import path).
LOCAL_ENV_MODES = (
    "local",
    "pytest_skilleval.harbor.local_env:LocalEnvironment",
    "pytest_skilleval.harbor_ext.local_env:LocalEnvironment",
)
GRADING_MODES = ("default", "default_plus_custom", "custom_only")
GRADING_MODE_ALIASES = {"aces_default": "default", "aces_plus_custom": "default_plus_custom"}


def normalize_grading_mode(value: Any) -> str:
    """Canonical grading mode for any spelling (flag, ini or config.yml); aliases map to their modes."""
    if not isinstance(value, str):
        raise PydanticCustomError("mode", "grading mode must be a string, not {kind}", {"kind": type(value).__name__})
    key = value.strip().lower()
    key = GRADING_MODE_ALIASES.get(key, key)
    if key not in GRADING_MODES:
        allowed = ", ".join([*GRADING_MODES, *GRADING_MODE_ALIASES])
        raise PydanticCustomError(
            "mode",
            "unknown grading mode {value}; expected one of {allowed}",
            {"value": repr(value), "allowed": allowed},
        )
    return key


class AgentVariant(NamedTuple):
    """One agent on one model: `name` is what node ids, markers and result.json call it."""

    name: str
    agent: str
    model: str | None


class ModelPrice(BaseModel):
    """A model's price in USD per million tokens, for a gateway or a model litellm's price map does not know."""

    model_config = ConfigDict(extra="forbid")
    input_per_mtok: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    output_per_mtok: Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ResourcesConfig(BaseModel):
    """`harbor.resources` in evals/config.yml: the sandbox's CPUs, memory and disk."""

    model_config = ConfigDict(extra="forbid")
    cpus: Annotated[StrictInt, Field(ge=1)] | None = None
    memory_mb: Annotated[StrictInt, Field(ge=1)] | None = None
    storage_mb: Annotated[StrictInt, Field(ge=1)] | None = None


class AgentSettings(BaseModel):
    """One agent under `harbor.agents` in evals/config.yml: its model."""

    model_config = ConfigDict(extra="forbid")
    model: str

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise PydanticCustomError("model", "model must be a non-empty string")
        return value.strip()


def canonical_models(value: Any) -> Any:
    """Models per agent as a list, each once, under the agent's canonical name (`claude` is `claude-code`);
    evals/config.yml's `harbor.agents` ({name: {model: ...}}) names models too. Anything else is left to pydantic."""
    if not isinstance(value, dict):
        return value
    models: dict[str, list[Any]] = {}
    for name, item in value.items():
        agent = AGENT_ALIASES.get(str(name).strip(), str(name).strip())
        given = item.get("model") if isinstance(item, dict) else item
        listed = models.setdefault(agent, [])
        for model in given if isinstance(given, list) else [given]:
            model = model.strip() if isinstance(model, str) else model
            if model not in listed:
                listed.append(model)
    return models


GradingMode = Annotated[
    Literal["default", "default_plus_custom", "custom_only"], BeforeValidator(normalize_grading_mode)
]
Threshold = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Multiplier = Annotated[float, Field(gt=0, allow_inf_nan=False)]
PositiveCount = Annotated[int, Field(ge=1)]
MAX_ATTEMPTS = 100  # each is an item made at collection: `n_attempts: 100000000` in a config.yml took all memory
AttemptCount = Annotated[int, Field(ge=1, le=MAX_ATTEMPTS)]
NonNegativeCount = Annotated[int, Field(ge=0, le=MAX_COUNT)]


class RunSettings(BaseModel):
    """Everything that shapes a skill's run, after merging every source; each field declares one setting."""

    agents: Annotated[
        list[str],
        Setting(
            "Comma-separated agents: replay, codex, claude-code, opencode, any Harbor agent name or module:Class.",
            parse=split_list,
            metavar="A,B",
        ),
    ] = Field(default_factory=lambda: ["codex"])
    agent_models: Annotated[
        dict[str, list[str]],
        Setting(
            "Model for one agent, AGENT=MODEL (repeatable). Two models for one agent run it once per model, as the "
            "variants AGENT@MODEL.",
            option="agent_model",
            parse=agent_model,
            repeat=True,
            metavar="AGENT=MODEL",
            config="harbor.agents",
            config_type=dict[str, AgentSettings],
            default_text="Harbor's default for the agent",
        ),
    ] = Field(default_factory=dict)
    agent_kwargs: Annotated[
        dict[str, dict[str, Any]],
        Setting(
            "Constructor setting for one agent, AGENT:KEY=VALUE (repeatable), "
            "e.g. terminus-2:record_terminal_session=false. VALUE is read as JSON when it parses, else as text.",
            option="agent_kwarg",
            parse=agent_kwarg,
            repeat=True,
            metavar="AGENT:KEY=VALUE",
            cli_only=True,
        ),
    ] = Field(default_factory=dict)
    env_mode: Annotated[
        str,
        Setting(
            "Where trials run: local (built in, no Docker), docker, or any Harbor environment type.", metavar="MODE"
        ),
    ] = "docker"
    env_kwargs: Annotated[
        dict[str, str],
        Setting(
            "Environment keyword argument KEY=VALUE (repeatable), e.g. sandbox=auto|bwrap|none for local. "
            "Only sandbox=auto or sandbox=bwrap may come from an ini file: the rest weakens isolation and is "
            "command line only.",
            option="ek",
            parse=pairs("--ek"),
            repeat=True,
            metavar="KEY=VALUE",
            file_refusal=ek_file_refusal,
        ),
    ] = Field(default_factory=dict)
    n_attempts: Annotated[
        AttemptCount,
        Setting("Attempts per case, agent and arm (at most 100).", parse=int, metavar="N", config="harbor.n_attempts"),
    ] = 1
    pass_threshold: Annotated[
        Threshold,
        Setting("Score an attempt needs to pass, 0.0-1.0.", parse=float, metavar="X", config="harbor.pass_threshold"),
    ] = 0.5
    stop_on_pass: Annotated[
        bool,
        Setting(
            "Skip a case's remaining attempts once one passes (needs --n-attempts > 1).",
            config="harbor.stop_on_pass",
            measured=False,
        ),
    ] = False
    grading_mode: Annotated[
        GradingMode,
        Setting(
            "default, default_plus_custom or custom_only (aliases aces_default, aces_plus_custom).",
            metavar="MODE",
            config="grading.mode",
        ),
    ] = "default"
    skip_baseline: Annotated[bool, Setting("Run only the with-skill arm.")] = False
    baseline_skill: Annotated[
        str | None,
        Setting(
            "A previous version of the skill as the baseline_skill arm: its folder, or git:REF (the skill's folder at "
            "that revision, read from git; the working tree is never touched). The arms become with_skill and "
            "baseline_skill unless --arms says otherwise.",
            metavar="PATH|git:REF",
            default_text="none",
        ),
    ] = None
    selected_arms: Annotated[
        list[Arm] | None,
        Setting(
            "The arms to run, any of with_skill, without_skill, baseline_skill (baseline_skill needs "
            "--baseline-skill).",
            option="arms",
            parse=split_list,
            metavar="A,B",
            default_text="with_skill,without_skill (with --baseline-skill: with_skill,baseline_skill)",
        ),
    ] = None
    skip_with_skill: Annotated[bool, Setting("Run only the without-skill arm (a baseline calibration).")] = False
    agent_runtime_preflight: Annotated[
        bool,
        Setting(
            "Before the evaluation, one real agent-only trial per agent (the first dataset case, with the skill, "
            "grading disabled); its failure stops the run with the agent's own error. Costs one agent run each.",
            config="harbor.agent_runtime_preflight",
            measured=False,
        ),
    ] = False
    no_credential_check: Annotated[
        bool,
        Setting(
            "Skip the model-catalog requests that prove each agent's and the judge's credentials before anything "
            "is built or staged.",
            measured=False,
        ),
    ] = False
    autopilot: Annotated[
        bool,
        Setting(
            "A skill given on the command line with no dataset and no native task gets one starter case drafted "
            "from its SKILL.md (the judge/LLM model settings) into the run's results folder, and runs it; the skill "
            "folder is not written.",
            cli_only=True,
            measured=False,
        ),
    ] = False
    max_cases: Annotated[
        PositiveCount | None,
        Setting(
            "Evaluate only the first N cases of each skill, in staged order (dataset order, then native tasks by "
            "folder name).",
            parse=int,
            metavar="N",
            config="harbor.max_cases",
            measured=False,
            default_text="all",
        ),
    ] = None
    n_concurrent: Annotated[
        PositiveCount,
        Setting(
            "Trials in flight inside one pytest process (1 runs them one by one). Composes with -n: -n 2 "
            "--n-concurrent 4 is up to 8 trials.",
            parse=int,
            metavar="N",
            config="harbor.n_concurrent",
            measured=False,
        ),
    ] = 4
    trial_processes: Annotated[
        CountOrAuto,
        Setting(
            "Run the trials in N processes beside pytest's, each with its own event loop, so Harbor's trial "
            "machinery and the grading use more than one core (0: in the pytest process; auto: one per core, "
            "shared among xdist workers, none when that leaves fewer than two). Not under Docker.",
            parse=count_or_auto,
            metavar="N|auto",
            config="harbor.trial_processes",
            measured=False,
        ),
    ] = 0
    changed_since: Annotated[
        str | None,
        Setting(
            "Run only the skills whose folder differs from git revision REF (committed, uncommitted or untracked "
            "changes); none changed exits 0.",
            metavar="REF",
            measured=False,
            default_text="every skill",
        ),
    ] = None
    min_lift: Annotated[
        Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] | None,
        Setting(
            "The lift the attempts suggestion aims at (at a power of 0.8), instead of the lift observed.",
            parse=float,
            metavar="X",
            measured=False,
            default_text="the observed lift",
        ),
    ] = None
    max_cost: Annotated[
        Annotated[float, Field(gt=0, allow_inf_nan=False)] | None,
        Setting(
            "Stop starting trials once the run's trials have cost USD (running ones finish); the run is marked "
            "budget-stopped and --resume continues it.",
            parse=float,
            metavar="USD",
            config="harbor.max_cost",
            measured=False,
            default_text="no limit",
        ),
    ] = None
    model_prices: Annotated[
        dict[str, ModelPrice],
        Setting(
            "Price of a model in USD per million tokens, MODEL=INPUT/OUTPUT (repeatable), e.g. gw/gpt-5=1.25/10; "
            "else litellm's installed price map.",
            option="model_price",
            parse=model_price,
            repeat=True,
            metavar="MODEL=IN/OUT",
            config="harbor.model_prices",
            default_text="litellm's price map",
        ),
    ] = Field(default_factory=dict)
    max_agents: Annotated[
        PositiveCount | None,
        Setting(
            "At most N agents' trials at once.",
            parse=int,
            metavar="N",
            config="harbor.max_agents",
            measured=False,
            default_text="no limit",
        ),
    ] = None
    timeout_multiplier: Annotated[
        Multiplier,
        Setting("Multiply every Harbor timeout.", parse=float, metavar="X", config="harbor.timeout_multiplier"),
    ] = 1.0
    results_dir: Annotated[
        str | None,
        Setting(
            "Write results under DIR/<skill-name>/ instead of <skill>/evals/results/.",
            metavar="DIR",
            measured=False,
            default_text="<skill>/evals/results/",
        ),
    ] = None
    keep_runs: Annotated[
        PositiveCount | None,
        Setting(
            "After a run, keep only the newest N run folders of each skill that this machine wrote (sealed as "
            "ours); older ones are deleted, nothing else ever is.",
            parse=int,
            metavar="N",
            measured=False,
            default_text="keep every run",
        ),
    ] = None
    harbor_keep_jobs: Annotated[
        bool,
        Setting(
            "Keep Harbor's staged tasks and trial folders after the session (deleted once results are written "
            "otherwise).",
            cli_only=True,
            measured=False,
        ),
    ] = False
    base_image: Annotated[
        str | None,
        Setting(
            "Image the sandbox starts from, used as it is: only the plugin's own layers go on top.",
            metavar="IMAGE",
            default_text="python:3.12-slim plus bash curl git jq ripgrep",
        ),
    ] = None
    custom_dockerfile_mode: Annotated[
        Literal["preserve", "rebase"],
        Setting(
            "preserve or rebase: whether --base-image replaces the FROM of a skill's evals/environment/Dockerfile.",
            metavar="MODE",
            config="harbor.custom_dockerfile_mode",
        ),
    ] = "rebase"
    resume: Annotated[
        str | None,
        Setting(
            "Finish an interrupted, killed or partial run (a run id, or latest) in its own folder: finished trials "
            "are read back, the rest run. Refused when the dataset, skill or settings changed.",
            metavar="RUN_ID",
            measured=False,
        ),
    ] = None
    regrade: Annotated[
        str | None,
        Setting(
            "Grade a finished run's stored trials again with today's host-side graders (0 agent runs), into a new "
            "run folder.",
            metavar="RUN_ID",
            measured=False,
        ),
    ] = None
    judge_model: Annotated[
        str | None,
        Setting(
            "Model for the LLM judges (litellm name, e.g. openai/gpt-4.1).",
            metavar="MODEL",
            default_text="LLM_JUDGE_MODEL, else SKILL_EVAL_JUDGE_MODEL, else SKILL_EVAL_LLM_MODEL, else the default "
            "model of SKILL_EVAL_LLM_PROVIDER (openai, nv_build); unset: judges not configured",
        ),
    ] = None
    judge_cache: Annotated[
        Literal["on", "off", "read", "write"],
        Setting(
            "Judge verdict cache under the results root: on, off, read or write.",
            parse=lower,
            metavar="MODE",
        ),
    ] = "on"
    block_on_agent_eval: Annotated[
        bool, Setting("Exit non-zero unless the verdict is a completed PASS.", measured=False)
    ] = False
    pass_env: Annotated[
        list[str],
        Setting(
            "Let native tasks read this host variable through ${NAME} (repeatable).",
            parse=pass_env_name,
            repeat=True,
            metavar="NAME",
            cli_only=True,
        ),
    ] = Field(default_factory=list)
    trust_skill_code: Annotated[
        bool,
        Setting(
            "Let a pytest conftest or ini file inside a skill under evaluation load: runs the skill's code on this "
            "machine.",
            cli_only=True,
            measured=False,
        ),
    ] = False
    distractor_skills: Annotated[
        str | None,
        Setting(
            "Trigger items install the skill among the skills in DIR (its folders with a SKILL.md) instead of the "
            "skill's siblings.",
            metavar="DIR",
            default_text="the folders with a SKILL.md next to the skill's own",
        ),
    ] = None
    trigger_max_turns: Annotated[
        PositiveCount,
        Setting(
            "Turn budget of a trigger item's agent (only its choice of skill matters), for agents that take one "
            "(terminus-2, claude-code).",
            parse=int,
            metavar="N",
            config="harbor.trigger_max_turns",
        ),
    ] = 3
    # Set only in evals/config.yml (see docs/datasets.md): how a skill's sandbox and tasks are built.
    base_image_mode: Annotated[
        Literal["reuse", "rebuild", "disabled"],
        Setting(
            "Reuse, rebuild or skip the run's image cache.",
            config_only=True,
            config="harbor.base_image_mode",
            measured=False,
        ),
    ] = "disabled"
    task_source: Annotated[
        Literal["auto", "evals_json", "native_harbor"],
        Setting(
            "Which tasks run: the dataset, the native tasks, or both.", config_only=True, config="harbor.task_source"
        ),
    ] = "auto"
    agent_workdir: Annotated[
        str | None,
        Setting("The agent's working directory in the sandbox.", config_only=True, config="harbor.agent_workdir"),
    ] = None
    resources: Annotated[
        dict[str, int],
        Setting(
            "The sandbox's CPUs, memory and disk.",
            config_only=True,
            config="harbor.resources",
            config_type=ResourcesConfig,
        ),
    ] = Field(default_factory=dict)
    runtime_env: Annotated[
        dict[str, str],
        Setting("Variables set in the sandbox.", config_only=True, config="harbor.runtime_env"),
    ] = Field(default_factory=dict)
    pre_agent_setup: Annotated[
        list[str],
        Setting("Commands run in the sandbox before the agent.", config_only=True, config="harbor.pre_agent_setup"),
    ] = Field(default_factory=list)
    skill_workspace_mode: Annotated[
        Literal["isolated", "group"],
        Setting("Install only this skill, or a group of skills.", config_only=True, config="skill_workspace.mode"),
    ] = "isolated"
    skill_workspace_include: Annotated[
        list[str],
        Setting("The other skills a group workspace installs.", config_only=True, config="skill_workspace.include"),
    ] = Field(default_factory=list)

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

    @field_validator("agent_models", mode="before")
    @classmethod
    def _canonical_models(cls, value: Any) -> Any:
        return canonical_models(value)

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
    def variants(self) -> tuple[AgentVariant, ...]:
        """What runs, in order: each agent once per model given; an agent with one model (or none) keeps its
        name, one with several runs as `<agent>@<model>` per model."""
        found: list[AgentVariant] = []
        for agent in self.agents:
            models: list[str | None] = [*self.agent_models.get(agent, [])] or [None]
            if len(models) == 1:
                found.append(AgentVariant(agent, agent, models[0]))
            else:
                found += [AgentVariant(f"{agent}@{model}", agent, model) for model in models]
        return tuple(found)

    def variant(self, name: str) -> AgentVariant:
        """The variant a trial's agent name stands for (a name outside the plan is an agent with no model)."""
        return next((v for v in self.variants if v.name == name), AgentVariant(name, name, None))

    @property
    def arms(self) -> tuple[Arm, ...]:
        if self.selected_arms:
            return tuple(arm for arm in ALL_ARMS if arm in self.selected_arms)
        if self.baseline_skill:
            return ("with_skill", "baseline_skill")
        arms: list[Arm] = []
        if not self.skip_with_skill:
            arms.append("with_skill")
        if not self.skip_baseline:
            arms.append("without_skill")
        return tuple(arms)

    @property
    def comparison_arm_runs(self) -> bool:
        """Whether an arm runs that must not see the version under test (without_skill, or baseline_skill with
        the previous version): the baseline's rules then hold, so nothing skill-owned runs before its agent."""
        return "without_skill" in self.arms or "baseline_skill" in self.arms
