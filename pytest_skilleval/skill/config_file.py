"""The `evals/config.yml` (or `config.yaml`) model.

A typo in a config file must not silently change how a skill is graded, so unknown keys are rejected at every
level, both spellings of an alias pair are an error, and `harbor.runtime_env` may not name or reference the
operator's own credentials or anything that controls the host process. The sections' fields are generated from the
settings' declarations (`RunSettings`), so a key's type, range and checks are the setting's own; command-line-only
settings have no key here and naming one says so. Fields are None when the file does not set them, so the options
layer can apply CLI > config > ini > default.
"""

from __future__ import annotations

import os
import posixpath
import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from pytest_skilleval.skill.bounded_parse import ParseLimitError, read_author_file
from pytest_skilleval.skill.entry_keys import did_you_mean
from pytest_skilleval.skill.foreign_formats import EXAM, exam_config
from pytest_skilleval.skill.setting_catalog import declared_settings
from pytest_skilleval.skill.setting_specs import Setting
from pytest_skilleval.skill.settings import GRADING_MODE_ALIASES as GRADING_MODE_ALIASES
from pytest_skilleval.skill.settings import GRADING_MODES as GRADING_MODES
from pytest_skilleval.skill.settings import AgentSettings as AgentSettings
from pytest_skilleval.skill.settings import ResourcesConfig as ResourcesConfig
from pytest_skilleval.skill.settings import normalize_grading_mode as normalize_grading_mode

CONFIG_FILE_NAMES = ("config.yml", "config.yaml")
MAX_CONFIG_BYTES = 1024 * 1024


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
# A section's values are YAML's own types: `"3"` is not a number there (the ini file's text is parsed instead).
_StrictSection = ConfigDict(extra="forbid", strict=True)


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


# Paths the sandbox layout owns; an agent workdir inside them would collide with inputs, logs or skills.
_RESERVED_ROOTS = ("/logs", "/tests", "/solution", "/harbor", "/runtime", "/installed-agent", "/workspace/input")
_SKILL_DISCOVERY_PARTS = frozenset({".claude", ".codex", ".agents", ".opencode", ".gemini", "skills"})


class _HarborChecks(BaseModel):
    """The `harbor:` section's checks beyond type and range (its fields come from the settings' declarations)."""

    model_config = _StrictSection

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        data = _rename_alias(data, "runtime_env", "passthrough_env")
        data = _rename_alias(data, "pre_agent_setup", "setup_commands")
        return data

    @field_validator("agent_workdir", mode="before", check_fields=False)
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

    @field_validator("runtime_env", mode="before", check_fields=False)
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

    @field_validator("pre_agent_setup", mode="before", check_fields=False)
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

    @field_validator("agents", mode="before", check_fields=False)
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


class _SkillWorkspaceChecks(BaseModel):
    model_config = _StrictSection

    @field_validator("include", mode="before", check_fields=False)
    @classmethod
    def _include(cls, value: Any) -> Any:
        if isinstance(value, list) and any(not isinstance(v, str) or not v.strip() for v in value):
            raise PydanticCustomError("include", "include entries must be non-empty strings")
        for entry in value if isinstance(value, list) else ():
            parts = posixpath.normpath(entry.strip()).split("/")
            if entry.strip().startswith("/") or parts[0] == ".." and (len(parts) < 2 or parts[1] == ".."):
                raise PydanticCustomError(  # `/home/me/.claude/skills/x` was copied into the sandbox
                    "include",
                    "include entry {entry} leaves the folder holding the skill; name a sibling skill (../name) or "
                    "a folder inside the skill",
                    {"entry": repr(entry)},
                )
        return [v.strip() for v in value] if isinstance(value, list) else value

    @model_validator(mode="after")
    def _include_needs_group(self) -> Any:
        if getattr(self, "include", None) and getattr(self, "mode", None) != "group":
            raise PydanticCustomError("include", "include needs mode: group", {"field": "include"})
        return self


class _SectionChecks(BaseModel):
    model_config = _StrictSection


_SECTION_CHECKS: dict[str, type[BaseModel]] = {"harbor": _HarborChecks, "skill_workspace": _SkillWorkspaceChecks}


def _file_type(setting: Setting, info: FieldInfo) -> Any:
    """The type a config.yml key has: the setting's own (with its range and checks), or its file shape."""
    if setting.config_type is not None:
        return setting.config_type
    constraints = [item for item in info.metadata if not isinstance(item, Setting)]
    return Annotated[(info.annotation, *constraints)] if constraints else info.annotation


def _section_models() -> dict[str, type[BaseModel]]:
    """One strict model per config.yml section, a field for every setting declared at a path in it."""
    fields: dict[str, dict[str, Any]] = {}
    for setting, info in declared_settings().values():
        path = setting.config_path
        if path is None:
            continue
        section, key = path
        kind = _file_type(setting, info)
        fields.setdefault(section, {})[key] = (kind | None, None)
    return {
        section: create_model(
            f"{section.title().replace('_', '')}Settings",
            __base__=_SECTION_CHECKS.get(section, _SectionChecks),
            **section_fields,
        )
        for section, section_fields in fields.items()
    }


SECTIONS = _section_models()
HarborSettings = SECTIONS["harbor"]
SkillWorkspaceSettings = SECTIONS["skill_workspace"]
GradingSettings = SECTIONS["grading"]


class EvalsConfigBase(BaseModel):
    """`evals/config.yml`; its sections hold None where the file does not set a key."""

    model_config = _Strict
    schema_version: Literal[1]

    @field_validator("schema_version", mode="before")
    @classmethod
    def _schema_version(cls, value: Any) -> Any:
        if isinstance(value, bool) or value != 1 or not isinstance(value, int):
            raise PydanticCustomError(
                "schema_version", "schema_version must be 1 (got {value})", {"value": repr(value)}
            )
        return value

    def setting(self, field: str) -> Any:
        """What the file says for a `RunSettings` field, or None when it does not set it."""
        setting, _ = declared_settings()[field]
        if setting.config_path is None:
            return None
        section, key = setting.config_path
        return getattr(getattr(self, section), key)

    @property
    def grading_mode(self) -> str | None:
        mode = self.setting("grading_mode")
        return mode if isinstance(mode, str) else None


_SECTION_FIELDS: dict[str, Any] = {name: (model, Field(default_factory=model)) for name, model in SECTIONS.items()}
EvalsConfig = create_model("EvalsConfig", __base__=EvalsConfigBase, **_SECTION_FIELDS)


def _cli_only_names() -> dict[str, str]:
    """Keys a config.yml might use for a command-line-only setting, and its flag."""
    names: dict[str, str] = {}
    for field, (setting, _) in declared_settings().items():
        if setting.cli_only or setting.file_refusal is not None:
            option = setting.option or field
            flag = "--" + option.replace("_", "-")
            for name in {field, option, option.replace("_", "-"), f"skilleval_{option}"}:
                names[name] = flag
    return names


CLI_ONLY_KEYS = _cli_only_names()


# ---------------------------------------------------------------------------------------------------------------
# Loading


def find_config(evals_dir: Path) -> Path | None:
    """The config file in `evals_dir`; both names present is ambiguous and an error. A link, FIFO or folder of the
    name counts as present (reading it then says what is wrong with it) rather than as no config at all."""
    present = [evals_dir / name for name in CONFIG_FILE_NAMES if os.path.lexists(evals_dir / name)]
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


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (itself, or inside Optional/Annotated), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _keys_at(loc: list[str]) -> list[str]:
    """The keys config.yml accepts at a place (`[]`: the top level; `["harbor"]`: that section), for a typo's hint."""
    model: type[BaseModel] | None = EvalsConfig
    for part in loc:
        fields = model.model_fields if model is not None else {}
        if part not in fields:
            return []
        model = _model_in(fields[part].annotation)
    return [info.alias or name for name, info in model.model_fields.items()] if model is not None else []


def _message(error: Mapping[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        loc = [str(part) for part in error.get("loc", ())]
        if loc and loc[-1] in CLI_ONLY_KEYS:
            flag = CLI_ONLY_KEYS[loc[-1]]
            return f"{flag} is command line only (a skill's files may not weaken isolation); give it there, not here"
        if loc[:2] == ["harbor", "agents"] and len(loc) == 4:
            return "unknown key" + AGENT_SETTINGS_NOTE
        known = _keys_at(loc[:-1])
        hint = did_you_mean(loc[-1], known) if loc else ""
        if hint:
            return "unknown key" + hint
        return "unknown key" + (f"; the keys here are {', '.join(known)}" if known else "")
    if error.get("type") == "missing":
        return "is required"
    return str(error.get("msg", "invalid value"))


def parse_config(path: Path, data: Any) -> EvalsConfigBase:
    """Validate an already-parsed config document."""
    if data is None:
        raise ConfigError(path, "", "config file is empty")
    if not isinstance(data, dict):
        raise ConfigError(path, "", f"config must be a mapping, not {type(data).__name__}")
    if exam_config(data):
        raise ConfigError(path, "", EXAM)
    try:
        return EvalsConfig.model_validate(data)
    except ValidationError as exc:
        errors = [(_loc(e), _message(e)) for e in exc.errors()]
        field, message = errors[0]
        raise ConfigError(path, field, message, more=errors[1:]) from None


def load_config(evals_dir: Path) -> EvalsConfigBase | None:
    """Load `evals/config.yml` (or `.yaml`); None when there is none. Raises ConfigError naming file and field."""
    path = find_config(Path(evals_dir))
    if path is None:
        return None
    try:
        if path.lstat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(path, "", f"config file is larger than {MAX_CONFIG_BYTES} bytes")
        text = read_author_file(path, MAX_CONFIG_BYTES).decode("utf-8")
    except ParseLimitError as exc:
        raise ConfigError(path, "", exc.message) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, "", f"cannot read config: {exc}") from None
    import yaml  # only a skill with a config file reads YAML

    from pytest_skilleval.skill.bounded_yaml import UniqueKeyLoader, load_yaml, yaml_error_message

    try:
        data = load_yaml(text, UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(path, "", yaml_error_message(exc)) from None
    except ParseLimitError as exc:
        raise ConfigError(path, "", str(exc)) from None
    return parse_config(path, data)
