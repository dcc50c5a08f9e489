"""The `evals/config.yml` (or `config.yaml`) model.

A typo in a config file must not silently change how a skill is graded, so unknown keys are rejected at every
level, both spellings of an alias pair are an error, and `harbor.runtime_env` may not name or reference the
operator's own credentials or anything that controls the host process. Fields are None when the file does not set
them, so the options layer can apply CLI > config > ini > default.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from pytest_skilleval.skill.bounded_parse import BoundedSafeLoader, ParseLimitError, load_yaml, yaml_error_message

CONFIG_FILE_NAMES = ("config.yml", "config.yaml")
MAX_CONFIG_BYTES = 1024 * 1024

GRADING_MODES = ("default", "default_plus_custom", "custom_only")
GRADING_MODE_ALIASES = {"aces_default": "default", "aces_plus_custom": "default_plus_custom"}


class ConfigError(ValueError):
    """A config problem located by file and dotted field; str() says all three."""

    def __init__(
        self, path: Path | str, field: str, message: str, *, more: list[tuple[str, str]] | None = None
    ) -> None:
        self.path = Path(path)
        self.field = field
        self.message = message
        self.more = more or []
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.path}: {self.field}: " if self.field else f"{self.path}: "
        extra = f" (and {len(self.more)} more problem(s): {'; '.join(f'{f}: {m}' for f, m in self.more)})"
        return where + self.message + (extra if self.more else "")


def normalize_grading_mode(value: str) -> str:
    """Canonical grading mode for a CLI or config spelling; aliases map to their modes."""
    if not isinstance(value, str):
        raise ValueError(f"grading mode must be a string, not {type(value).__name__}")
    key = value.strip().lower()
    key = GRADING_MODE_ALIASES.get(key, key)
    if key not in GRADING_MODES:
        allowed = ", ".join([*GRADING_MODES, *GRADING_MODE_ALIASES])
        raise ValueError(f"unknown grading mode {value!r}; expected one of {allowed}")
    return key


# ---------------------------------------------------------------------------------------------------------------
# Environment-variable policy (also used for native tasks' env tables)

OPERATOR_CREDENTIALS = frozenset(
    {
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CODE_USE_BEDROCK",
        "NVIDIA_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    }
)
JUDGE_CONTROLS = frozenset(
    {"LLM_JUDGE_MODEL", "LLM_JUDGE_FALLBACK_MODELS", "SKILL_EVAL_JUDGE_MODEL", "SKILLEVAL_JUDGE_MODEL"}
)
_EXECUTABLE_SEARCH = frozenset({"PATH", "PATHEXT", "CDPATH"})
_SHELL = frozenset({"BASHOPTS", "BASH_ENV", "COMSPEC", "ENV", "IFS", "SHELLOPTS", "ZDOTDIR", "PS4", "PROMPT_COMMAND"})
_LOADER = frozenset(
    {
        "CLASSPATH",
        "GCONV_PATH",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "LOCPATH",
        "NLSPATH",
        "RES_OPTIONS",
        "HOSTALIASES",
    }
)
_LOADER_PREFIXES = ("LD_", "DYLD_", "PYTHON", "NODE_", "PERL5", "RUBY", "LUA_", "BASH_FUNC_")
_PROXY_TLS = frozenset(
    {
        "ALL_PROXY",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "SSL_CERT_DIR",
        "SSL_CERT_FILE",
        "SSLKEYLOGFILE",
        "SSH_AUTH_SOCK",
    }
)
_DISCOVERY = frozenset(
    {
        "HOME",
        "USERPROFILE",
        "XDG_CONFIG_HOME",
        "XDG_RUNTIME_DIR",
        "CLAUDE_CODE_DISABLE_POLICY_SKILLS",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "GEMINI_CLI_HOME",
        "OPENCODE_CONFIG_DIR",
    }
)
_HOST_PATHS = frozenset({"SYSTEMROOT", "TEMP", "TMP", "TMPDIR", "WINDIR"})
_BACKENDS = frozenset(
    {
        "DAYTONA_API_KEY",
        "DAYTONA_API_URL",
        "DAYTONA_JWT_TOKEN",
        "DAYTONA_ORGANIZATION_ID",
        "DAYTONA_TARGET",
        "E2B_API_KEY",
        "MODAL_ENVIRONMENT",
        "MODAL_TOKEN_ID",
        "MODAL_TOKEN_SECRET",
        "RUNLOOP_API_KEY",
        "LANGCHAIN_API_KEY",
        "LANGSMITH_API_KEY",
        "LANGSMITH_ENDPOINT",
        "LANGSMITH_PROFILE",
        "LANGSMITH_SANDBOX_API_URL",
        "CLOUDSDK_CONFIG",
        "GCP_PROJECT",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
        "KUBECONFIG",
        "NOVITA_API_KEY",
        "NOVITA_API_URL",
        "NOVITA_BASE_URL",
        "NOVITA_DOMAIN",
        "ISLO_API_KEY",
        "ISLO_API_URL",
        "ISLO_COMPUTE_URL",
        "TENSORLAKE_API_KEY",
        "CWSANDBOX_API_KEY",
        "WANDB_API_KEY",
        "WANDB_BASE_URL",
        "USE_COMPUTER_API_KEY",
        "USE_COMPUTER_HOST",
        "USE_COMPUTER_SNAPSHOT",
        "USE_COMPUTER_VERSION",
    }
)
# Every AWS_* is part of the credential chain (the docs say "AWS_*"; we do not whitelist AWS_REGION).
_PROVIDER_PREFIXES = ("AWS_",)
_HARBOR_PREFIXES = ("HARBOR_",)
_EVALUATOR_PREFIXES = ("SKILL_EVAL_", "SKILLEVAL_", "SKILLEVALUATOR_", "LITELLM_")
_HOST_PREFIXES = ("COMPOSE_", "DOCKER_", "GIT_", "OTEL_", "PIP_", "UV_")

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# `${...}` takes whatever stands before `}` or `:-` as the name, as Harbor's template reader does (`${1PLAIN}`,
# `${.DOTNAME}` read those host variables too); the bare `$NAME` and `%NAME%` forms need a real name.
_REFERENCE_RES = (
    re.compile(r"\$\{([^}:]+)"),
    re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)"),
    re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)%"),
)


def env_control_category(name: str) -> str | None:
    """Which protected class an environment variable name belongs to, or None for an ordinary variable.

    Categories: `provider-credential`, `judge-model`, `harbor`, `evaluator`, `executable-search`, `shell`, `loader`,
    `proxy-tls`, `discovery`, `host-control`.
    """
    upper = name.upper()
    if upper in OPERATOR_CREDENTIALS or upper.startswith(_PROVIDER_PREFIXES):
        return "provider-credential"
    if upper in JUDGE_CONTROLS:
        return "judge-model"
    if upper.startswith(_HARBOR_PREFIXES):
        return "harbor"
    if upper.startswith(_EVALUATOR_PREFIXES):
        return "evaluator"
    if upper in _EXECUTABLE_SEARCH:
        return "executable-search"
    if upper in _SHELL:
        return "shell"
    if upper in _LOADER or upper.startswith(_LOADER_PREFIXES):
        return "loader"
    if upper in _PROXY_TLS:
        return "proxy-tls"
    if upper in _DISCOVERY:
        return "discovery"
    if upper in _HOST_PATHS or upper in _BACKENDS or upper.startswith(_HOST_PREFIXES):
        return "host-control"
    return None


def referenced_env_names(value: str) -> list[str]:
    """Names a value pulls from the host environment: `$NAME`, `${NAME}`, `${NAME:-x}`, `%NAME%`, and any other
    `${...}` (`${1PLAIN}`, `${.DOTNAME}`: Harbor reads those too)."""
    names: list[str] = []
    for pattern in _REFERENCE_RES:
        for name in pattern.findall(value):
            if name not in names:
                names.append(name)
    return names


def runtime_env_problems(env: Mapping[str, str]) -> list[str]:
    """Why each runtime_env entry may not be forwarded into the sandbox; empty when all are fine."""
    problems: list[str] = []
    credentials = sorted(n for n in env if env_control_category(n) == "provider-credential")
    if credentials:
        problems.append(f"contains operator-owned credential name(s): {', '.join(credentials)}")
    for name in env:
        category = env_control_category(name)
        if category is not None and category != "provider-credential":
            problems.append(f"{name} controls the host process ({category}) and is not allowed")
    for name, value in env.items():
        for ref in referenced_env_names(value):
            if ref == name:  # already reported by name above
                continue
            category = env_control_category(ref)
            if category == "provider-credential":
                problems.append(f"{name} references operator-owned credential {ref}")
            elif category is not None:
                problems.append(f"{name} references {ref}, which controls the host process ({category})")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# Model

_Strict = ConfigDict(extra="forbid")
PositiveInt = Annotated[StrictInt, Field(ge=1)]


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PydanticCustomError("number", "{field} must be a finite number", {"field": field})
    return float(value)


def _rename_alias(data: Any, canonical: str, alias: str) -> Any:
    """Both spellings of one setting is ambiguous; either one alone means the canonical key."""
    if not isinstance(data, dict) or alias not in data:
        return data
    if canonical in data:
        raise PydanticCustomError(
            "alias_conflict",
            "both '{canonical}' and its alias '{alias}' are set; use only one",
            {"canonical": canonical, "alias": alias, "field": alias},
        )
    data = dict(data)
    data[canonical] = data.pop(alias)
    return data


class ResourcesConfig(BaseModel):
    model_config = _Strict
    cpus: PositiveInt | None = None
    memory_mb: PositiveInt | None = None
    storage_mb: PositiveInt | None = None


class AgentSettings(BaseModel):
    model_config = _Strict
    model: str

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise PydanticCustomError("model", "model must be a non-empty string")
        return value.strip()


# Paths the sandbox layout owns; an agent workdir inside them would collide with inputs, logs or skills.
_RESERVED_ROOTS = ("/logs", "/tests", "/solution", "/harbor", "/runtime", "/installed-agent", "/workspace/input")
_SKILL_DISCOVERY_PARTS = frozenset({".claude", ".codex", ".agents", ".opencode", ".gemini", "skills"})


class HarborSettings(BaseModel):
    model_config = _Strict
    task_source: Literal["auto", "evals_json", "native_harbor"] | None = None
    custom_dockerfile_mode: Literal["preserve", "rebase"] | None = None
    base_image_mode: Literal["reuse", "rebuild", "disabled"] | None = None
    n_attempts: PositiveInt | None = None
    pass_threshold: float | None = None
    stop_on_pass: StrictBool | None = None
    n_concurrent: PositiveInt | None = None
    max_agents: PositiveInt | None = None
    max_cases: PositiveInt | None = None
    timeout_multiplier: float | None = None
    agent_runtime_preflight: StrictBool | None = None
    agent_workdir: str | None = None
    resources: ResourcesConfig | None = None
    runtime_env: dict[str, str] | None = None
    pre_agent_setup: list[str] | None = None
    agents: dict[str, AgentSettings] | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        data = _rename_alias(data, "runtime_env", "passthrough_env")
        data = _rename_alias(data, "pre_agent_setup", "setup_commands")
        return data

    @field_validator("pass_threshold", mode="before")
    @classmethod
    def _threshold(cls, value: Any) -> Any:
        if value is None:
            return value
        number = _number(value, "pass_threshold")
        if not 0.0 <= number <= 1.0:
            raise PydanticCustomError("range", "pass_threshold must be between 0 and 1")
        return number

    @field_validator("timeout_multiplier", mode="before")
    @classmethod
    def _multiplier(cls, value: Any) -> Any:
        if value is None:
            return value
        number = _number(value, "timeout_multiplier")
        if number <= 0:
            raise PydanticCustomError("range", "timeout_multiplier must be greater than 0")
        return number

    @field_validator("agent_workdir", mode="before")
    @classmethod
    def _workdir(cls, value: Any) -> Any:
        if value is None:
            return value
        if not isinstance(value, str) or not value.strip():
            raise PydanticCustomError("workdir", "agent_workdir must be a non-empty string")
        path = value.strip()
        if not path.startswith("/") or posixpath.normpath(path) != path or path.startswith("//"):
            raise PydanticCustomError("workdir", "agent_workdir must be a normalized absolute POSIX path")
        if path == "/" or any(path == r or path.startswith(r + "/") for r in _RESERVED_ROOTS):
            raise PydanticCustomError(
                "workdir", "agent_workdir {path} is inside a reserved sandbox path", {"path": path}
            )
        if _SKILL_DISCOVERY_PARTS & set(path.split("/")):
            raise PydanticCustomError(
                "workdir", "agent_workdir {path} is inside a skill-discovery directory", {"path": path}
            )
        return path

    @field_validator("runtime_env", mode="before")
    @classmethod
    def _runtime_env(cls, value: Any) -> Any:
        if value is None:
            return value
        if isinstance(value, list):
            entries: dict[str, Any] = {}
            for name in value:
                if not isinstance(name, str):
                    raise PydanticCustomError("env", "runtime_env list entries must be variable names (strings)")
                entries[name] = f"${{{name}}}"
        elif isinstance(value, dict):
            entries = dict(value)
        else:
            raise PydanticCustomError("env", "runtime_env must be a list of names or a mapping of name to template")
        for name, template in entries.items():
            if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
                raise PydanticCustomError(
                    "env", "runtime_env name {name} must match ^[A-Za-z_][A-Za-z0-9_]*$", {"name": repr(name)}
                )
            if not isinstance(template, str) or not template:
                raise PydanticCustomError(
                    "env", "runtime_env value for {name} must be a non-empty string", {"name": name}
                )
        problems = runtime_env_problems(entries)
        if problems:
            raise PydanticCustomError("env_blocked", "{problems}", {"problems": "; ".join(problems)})
        return entries

    @field_validator("pre_agent_setup", mode="before")
    @classmethod
    def _setup(cls, value: Any) -> Any:
        if value is None:
            return value
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise PydanticCustomError("setup", "pre_agent_setup must be a string or a list of strings")
        commands: list[str] = []
        for item in items:
            if not isinstance(item, str) or not item.strip():
                raise PydanticCustomError("setup", "pre_agent_setup commands must be non-empty strings")
            commands.append(item.strip())
        return commands

    @field_validator("agents", mode="before")
    @classmethod
    def _agents(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        if "claude" in value and "claude-code" in value:
            raise PydanticCustomError(
                "alias_conflict",
                "both 'claude-code' and its alias 'claude' are set; use only one",
                {"field": "claude"},
            )
        return {("claude-code" if k == "claude" else k): v for k, v in value.items()}


class SkillWorkspaceSettings(BaseModel):
    model_config = _Strict
    mode: Literal["isolated", "group"] | None = None
    include: list[Annotated[str, Field(min_length=1)]] | None = None

    @field_validator("include", mode="before")
    @classmethod
    def _include(cls, value: Any) -> Any:
        if isinstance(value, list) and any(not isinstance(v, str) or not v.strip() for v in value):
            raise PydanticCustomError("include", "include entries must be non-empty strings")
        return [v.strip() for v in value] if isinstance(value, list) else value

    @model_validator(mode="after")
    def _include_needs_group(self) -> SkillWorkspaceSettings:
        if self.include and self.mode != "group":
            raise PydanticCustomError("include", "include needs mode: group", {"field": "include"})
        return self


class GradingSettings(BaseModel):
    model_config = _Strict
    mode: str | None = None

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        if value is None:
            return value
        try:
            return normalize_grading_mode(value)
        except ValueError as exc:
            raise PydanticCustomError("mode", "{error}", {"error": str(exc)}) from None


class EvalsConfig(BaseModel):
    """`evals/config.yml`. None means "not set here"."""

    model_config = _Strict
    schema_version: Literal[1]
    harbor: HarborSettings = Field(default_factory=HarborSettings)
    skill_workspace: SkillWorkspaceSettings = Field(default_factory=SkillWorkspaceSettings)
    grading: GradingSettings = Field(default_factory=GradingSettings)

    @field_validator("schema_version", mode="before")
    @classmethod
    def _schema_version(cls, value: Any) -> Any:
        if isinstance(value, bool) or value != 1 or not isinstance(value, int):
            raise PydanticCustomError(
                "schema_version", "schema_version must be 1 (got {value})", {"value": repr(value)}
            )
        return value

    @property
    def grading_mode(self) -> str | None:
        return self.grading.mode


# ---------------------------------------------------------------------------------------------------------------
# Loading


class _UniqueKeyLoader(BoundedSafeLoader):
    """PyYAML keeps the last of two equal keys; a duplicated key in a config is a mistake, so refuse it."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


# The stubs bound the loader to PyYAML's own classes; ours composes LibYAML's parser with SafeConstructor.
_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)  # type: ignore[type-var]


def find_config(evals_dir: Path) -> Path | None:
    """The config file in `evals_dir`; both names present is ambiguous and an error."""
    present = [evals_dir / name for name in CONFIG_FILE_NAMES if (evals_dir / name).is_file()]
    if len(present) > 1:
        raise ConfigError(present[1], "", f"both {present[0].name} and {present[1].name} exist; keep only one")
    return present[0] if present else None


def _loc(error: Mapping[str, Any]) -> str:
    parts = [str(p) for p in error.get("loc", ()) if not str(p).startswith("function-")]
    ctx = error.get("ctx") or {}
    if "field" in ctx and (not parts or parts[-1] != ctx["field"]):
        parts.append(str(ctx["field"]))
    return ".".join(parts)


AGENT_SETTINGS_NOTE = (
    "; a skill's config cannot set agent constructor settings: pass them on the command line (--agent-kwarg "
    "AGENT:KEY=VALUE), and an agent's endpoint and key come from the host's provider variables (OPENAI_BASE_URL, "
    "ANTHROPIC_BASE_URL, the API keys)"
)


def _message(error: Mapping[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        loc = [str(part) for part in error.get("loc", ())]
        return "unknown key" + (AGENT_SETTINGS_NOTE if loc[:2] == ["harbor", "agents"] and len(loc) == 4 else "")
    if error.get("type") == "missing":
        return "is required"
    return str(error.get("msg", "invalid value"))


def parse_config(path: Path, data: Any) -> EvalsConfig:
    """Validate an already-parsed config document."""
    if data is None:
        raise ConfigError(path, "", "config file is empty")
    if not isinstance(data, dict):
        raise ConfigError(path, "", f"config must be a mapping, not {type(data).__name__}")
    try:
        return EvalsConfig.model_validate(data)
    except ValidationError as exc:
        errors = [(_loc(e), _message(e)) for e in exc.errors()]
        field, message = errors[0]
        raise ConfigError(path, field, message, more=errors[1:]) from None


def load_config(evals_dir: Path) -> EvalsConfig | None:
    """Load `evals/config.yml` (or `.yaml`); None when there is none. Raises ConfigError naming file and field."""
    path = find_config(Path(evals_dir))
    if path is None:
        return None
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(path, "", f"config file is larger than {MAX_CONFIG_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, "", f"cannot read config: {exc}") from None
    try:
        data = load_yaml(text, _UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(path, "", yaml_error_message(exc)) from None
    except ParseLimitError as exc:
        raise ConfigError(path, "", str(exc)) from None
    return parse_config(path, data)
