"""Command-line flags, ini keys and `evals/config.yml`, merged into one `RunSettings` per skill.

Precedence: CLI > evals/config.yml > ini (`skilleval_<name>`) > default. Flags are registered with no default so
the merge can tell "given" from "defaulted".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from pytest_skilleval.skill.host_env import pass_env_names
from pytest_skilleval.skill.settings import AGENT_ALIASES, LOCAL_ENV_MODES, RunSettings
from pytest_skilleval.trust import TRUST_FLAG, TRUST_HELP

GROUP = "skilleval"
GRADING_MODE_ALIASES = {"aces_default": "default", "aces_plus_custom": "default_plus_custom"}


def _split_list(value: str) -> list[str]:
    return [part.strip() for part in value.replace("\n", ",").split(",") if part.strip()]


def _pairs(values: list[str] | str, flag: str) -> dict[str, str]:
    if isinstance(values, str):
        values = _split_list(values) if "=" in values else [values]
    result: dict[str, str] = {}
    for value in values:
        key, sep, item = value.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"{flag} expects KEY=VALUE, got {value!r}")
        result[key.strip()] = item.strip()
    return result


# Constructor arguments Harbor or the plugin set themselves; an --agent-kwarg for one would clash or change meaning.
RESERVED_AGENT_KWARGS = frozenset(
    {
        "logs_dir",
        "model_name",
        "logger",
        "mcp_servers",
        "skills_dir",
        "load_trajectory",
        "environment_logs_dir",
        "extra_env",
        "task_dir",
        "trial_paths",
        "agent_timeout_sec",
        "replay_dir",
        "case_id",
        "arm",
    }
)


def _kwarg_value(text: str) -> Any:
    """JSON when it parses as JSON (`false`, `3`, `{"a": 1}`), else the text itself (`http://...`)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _agent_kwargs(values: list[str] | str) -> dict[str, Any]:
    """`AGENT:KEY=VALUE` items as {AGENT: {KEY: value}}; the agent is what comes before the last ':' of the part
    before '=', so import-path agents (`pkg.mod:Class:KEY=VALUE`) work too."""
    result: dict[str, dict[str, Any]] = {}
    for value in [values] if isinstance(values, str) else values:
        target, sep, item = value.partition("=")
        agent, colon, key = target.strip().rpartition(":")
        if not sep or not colon or not agent.strip() or not key.strip():
            raise pytest.UsageError(f"--agent-kwarg expects AGENT:KEY=VALUE, got {value!r}")
        if key.strip() in RESERVED_AGENT_KWARGS:
            hint = " (use --agent-model)" if key.strip() == "model_name" else ""
            raise pytest.UsageError(
                f"--agent-kwarg {agent.strip()}:{key.strip()}: {key.strip()!r} is set by Harbor "
                f"or the plugin and cannot be passed{hint}"
            )
        result.setdefault(agent.strip(), {})[key.strip()] = _kwarg_value(item.strip())
    return result


def _bool(value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"expected true or false, got {value!r}")


@dataclass(frozen=True)
class OptionSpec:
    """One setting: its flag, help text, how a string becomes a value, and whether it works yet."""

    name: str
    help: str
    parse: Callable[[Any], Any] = str
    is_flag: bool = False
    multiple: bool = False
    metavar: str | None = None
    implemented: bool = True
    cli_only: bool = False  # no ini key: a project file (ini, evals/config.yml) must not be able to set it

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def ini(self) -> str:
        return f"skilleval_{self.name}"


def _grading_mode(value: str) -> str:
    value = value.strip()
    return GRADING_MODE_ALIASES.get(value, value)


OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "agents",
        "Comma-separated agents: replay, codex, claude-code, opencode, any Harbor agent name or "
        "module:Class (default codex).",
        parse=_split_list,
        metavar="A,B",
    ),
    OptionSpec(
        "agent_model",
        "Model for one agent, AGENT=MODEL (repeatable).",
        parse=lambda v: _pairs(v, "--agent-model"),
        multiple=True,
        metavar="AGENT=MODEL",
    ),
    OptionSpec(
        "agent_kwarg",
        "Constructor setting for one agent, AGENT:KEY=VALUE (repeatable; command line only), "
        "e.g. terminus-2:record_terminal_session=false. VALUE is read as JSON when it parses, else as text.",
        parse=_agent_kwargs,
        multiple=True,
        metavar="AGENT:KEY=VALUE",
        cli_only=True,
    ),
    OptionSpec(
        "env_mode",
        "Where trials run: local (built in, no Docker), docker, or any Harbor environment type (default docker).",
        metavar="MODE",
    ),
    OptionSpec(
        "ek",
        "Environment keyword argument KEY=VALUE (repeatable), e.g. sandbox=auto|bwrap|none for local.",
        parse=lambda v: _pairs(v, "--ek"),
        multiple=True,
        metavar="KEY=VALUE",
    ),
    OptionSpec("n_attempts", "Attempts per case, agent and arm (default 1).", parse=int, metavar="N"),
    OptionSpec("pass_threshold", "Score an attempt needs to pass, 0.0-1.0 (default 0.5).", parse=float, metavar="X"),
    OptionSpec(
        "stop_on_pass",
        "Skip a case's remaining attempts once one passes (needs --n-attempts > 1).",
        parse=_bool,
        is_flag=True,
    ),
    OptionSpec(
        "grading_mode",
        "default, default_plus_custom or custom_only (aliases aces_default, aces_plus_custom).",
        parse=_grading_mode,
        metavar="MODE",
    ),
    OptionSpec("skip_baseline", "Run only the with-skill arm.", parse=_bool, is_flag=True),
    OptionSpec(
        "skip_with_skill", "Run only the without-skill arm (a baseline calibration).", parse=_bool, is_flag=True
    ),
    OptionSpec(
        "max_cases",
        "Evaluate only the first N cases of each skill, in staged order (dataset order, then "
        "native tasks by folder name).",
        parse=int,
        metavar="N",
    ),
    OptionSpec(
        "n_concurrent",
        "Trials in flight inside one pytest process (default 4; 1 runs them one by one). "
        "Composes with -n: -n 2 --n-concurrent 4 is up to 8 trials.",
        parse=int,
        metavar="N",
    ),
    OptionSpec("max_agents", "At most N agents' trials at once (default: no limit).", parse=int, metavar="N"),
    OptionSpec("timeout_multiplier", "Multiply every Harbor timeout (default 1.0).", parse=float, metavar="X"),
    OptionSpec(
        "results_dir", "Write results under DIR/<skill-name>/ instead of <skill>/evals/results/.", metavar="DIR"
    ),
    OptionSpec(
        "harbor_keep_jobs",
        "Keep Harbor's staged tasks and trial folders after the session (deleted once results are written otherwise).",
        parse=_bool,
        is_flag=True,
    ),
    OptionSpec(
        "base_image",
        "Image the sandbox starts from, used as it is: only the plugin's own layers go on top "
        "(default python:3.12-slim plus bash curl git jq ripgrep).",
        metavar="IMAGE",
    ),
    OptionSpec(
        "custom_dockerfile_mode",
        "preserve or rebase (default): whether --base-image replaces the FROM of "
        "a skill's evals/environment/Dockerfile.",
        metavar="MODE",
    ),
    OptionSpec(
        "resume",
        "Finish an interrupted, killed or partial run (a run id, or latest) in its own folder: "
        "finished trials are read back, the rest run. Refused when the dataset, skill or settings changed.",
        metavar="RUN_ID",
    ),
    OptionSpec(
        "regrade",
        "Grade a finished run's stored trials again with today's host-side graders (0 agent runs), "
        "into a new run folder.",
        metavar="RUN_ID",
    ),
    OptionSpec(
        "judge_model",
        "Model for the LLM judges (litellm name, e.g. openai/gpt-4.1); default from "
        "LLM_JUDGE_MODEL or SKILL_EVAL_JUDGE_MODEL; unset: judges not configured.",
        metavar="MODEL",
    ),
    OptionSpec(
        "judge_cache",
        "Judge verdict cache under the results root: on, off, read or write (default on).",
        parse=lambda v: v.strip().lower(),
        metavar="MODE",
    ),
    OptionSpec(
        "block_on_agent_eval", "Exit non-zero unless the verdict is a completed PASS.", parse=_bool, is_flag=True
    ),
    OptionSpec(
        "pass_env",
        "Let native tasks read this host variable through ${NAME} (repeatable; command line only; none by default).",
        parse=lambda v: pass_env_names([v]),
        multiple=True,
        metavar="NAME",
        cli_only=True,
    ),
)
SPEC_BY_NAME = {spec.name: spec for spec in OPTION_SPECS}
# Option name -> RunSettings field, where they differ.
FIELD_FOR_OPTION = {"agent_model": "agent_models", "ek": "env_kwargs", "agent_kwarg": "agent_kwargs"}
# RunSettings field -> path in evals/config.yml.
CONFIG_PATHS: dict[str, tuple[str, ...]] = {
    "n_attempts": ("harbor", "n_attempts"),
    "pass_threshold": ("harbor", "pass_threshold"),
    "stop_on_pass": ("harbor", "stop_on_pass"),
    "n_concurrent": ("harbor", "n_concurrent"),
    "max_agents": ("harbor", "max_agents"),
    "max_cases": ("harbor", "max_cases"),
    "timeout_multiplier": ("harbor", "timeout_multiplier"),
    "grading_mode": ("grading", "mode"),
    "custom_dockerfile_mode": ("harbor", "custom_dockerfile_mode"),
    "base_image_mode": ("harbor", "base_image_mode"),
    "task_source": ("harbor", "task_source"),
    "agent_workdir": ("harbor", "agent_workdir"),
    "resources": ("harbor", "resources"),
    "runtime_env": ("harbor", "runtime_env"),
    "pre_agent_setup": ("harbor", "pre_agent_setup"),
    "skill_workspace_mode": ("skill_workspace", "mode"),
    "skill_workspace_include": ("skill_workspace", "include"),
}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "agent-skill evals through Harbor")
    group.addoption(
        "--skill-eval",
        action="store_true",
        dest="skill_eval",
        default=False,
        help="Collect skills (folders with SKILL.md) under the given paths and run their evals.",
    )
    group.addoption(TRUST_FLAG, action="store_true", dest="skilleval_trust_skill_code", default=False, help=TRUST_HELP)
    for spec in OPTION_SPECS:
        note = "" if spec.implemented else " (not implemented yet)"
        if spec.is_flag:
            group.addoption(
                spec.flag, action="store_true", dest=f"skilleval_{spec.name}", default=None, help=spec.help + note
            )
        else:
            group.addoption(
                spec.flag,
                action="append" if spec.multiple else "store",
                dest=f"skilleval_{spec.name}",
                default=None,
                metavar=spec.metavar,
                help=spec.help + note,
            )
        if not spec.cli_only:
            kind: Literal["linelist", "string"] = "linelist" if spec.multiple else "string"
            parser.addini(spec.ini, help=spec.help + note, type=kind, default=None)


@dataclass(frozen=True)
class SettingsSources:
    """The values each source gave, already parsed, keyed by RunSettings field."""

    cli: Mapping[str, Any]
    ini: Mapping[str, Any]


def _parse(spec: OptionSpec, raw: Any, source: str) -> Any:
    try:
        if spec.multiple:
            parsed = [spec.parse(value) for value in (raw if isinstance(raw, list) else [raw])]
            if parsed and isinstance(parsed[0], list):  # a list per value: concatenate
                return [item for part in parsed for item in part]
            merged: dict[str, Any] = {}
            for part in parsed:
                for key, item in part.items():
                    if isinstance(item, dict) and isinstance(merged.get(key), dict):
                        merged[key] = {**merged[key], **item}  # per-agent maps (--agent-kwarg) add up
                    else:
                        merged[key] = item
            return merged
        return spec.parse(raw)
    except (ValueError, TypeError) as error:
        raise pytest.UsageError(f"{source}: {error}") from None


def read_sources(config: pytest.Config) -> SettingsSources:
    """Parse what the command line and the ini file gave; refuse settings not implemented yet."""
    cli: dict[str, Any] = {}
    ini: dict[str, Any] = {}
    for spec in OPTION_SPECS:
        field = FIELD_FOR_OPTION.get(spec.name, spec.name)
        raw_cli = config.getoption(f"skilleval_{spec.name}")
        if raw_cli is not None and raw_cli is not False:
            if not spec.implemented:
                raise pytest.UsageError(f"{spec.flag} is not implemented yet")
            cli[field] = _parse(spec, raw_cli, spec.flag)
        raw_ini = None if spec.cli_only else config.getini(spec.ini)
        if raw_ini not in (None, "", []):
            if not spec.implemented:
                raise pytest.UsageError(f"ini option {spec.ini} is not implemented yet")
            ini[field] = _parse(spec, raw_ini, f"ini option {spec.ini}")
    return SettingsSources(cli=cli, ini=ini)


def _config_value(skill_config: Mapping[str, Any] | None, path: tuple[str, ...]) -> Any:
    node: Any = skill_config
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def merge_settings(sources: SettingsSources, skill_config: Mapping[str, Any] | None = None) -> RunSettings:
    """CLI > evals/config.yml > ini > default, validated; a bad value is a usage error naming its source."""
    values: dict[str, Any] = dict(sources.ini)
    for field, path in CONFIG_PATHS.items():
        value = _config_value(skill_config, path)
        if value is not None:
            values[field] = _grading_mode(value) if field == "grading_mode" and isinstance(value, str) else value
    config_agents = _config_value(skill_config, ("harbor", "agents")) or {}
    config_models = {AGENT_ALIASES.get(name, name): (spec or {}).get("model") for name, spec in config_agents.items()}
    models = {**values.get("agent_models", {}), **{k: v for k, v in config_models.items() if v}}
    values.update(sources.cli)
    values["agent_models"] = {**models, **sources.cli.get("agent_models", {})}
    try:
        settings = RunSettings.model_validate(values)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in item['loc'])}: {item['msg']}" for item in error.errors())
        raise pytest.UsageError(f"skilleval settings: {problems}") from None
    if settings.stop_on_pass and settings.n_attempts == 1:
        raise pytest.UsageError("--stop-on-pass needs --n-attempts above 1: with one attempt there is nothing to stop")
    if settings.resume and settings.regrade:
        raise pytest.UsageError("--resume and --regrade together: resume finishes a run, regrade grades one again")
    unknown = sorted(set(settings.agent_kwargs) - set(settings.agents))
    if unknown:
        raise pytest.UsageError(
            f"--agent-kwarg names agent(s) {', '.join(unknown)} that this run does not use "
            f"(--agents {','.join(settings.agents)})"
        )
    if settings.skip_baseline and settings.skip_with_skill:
        raise pytest.UsageError("--skip-baseline and --skip-with-skill together leave nothing to run")
    return settings


def check_environment(settings: RunSettings) -> None:
    """At start-up, once: the local environment's `--ek` settings parse and its sandbox can run here; else one
    line says why (and, when bwrap cannot run, that `--ek sandbox=none` runs without isolation)."""
    if settings.env_mode not in LOCAL_ENV_MODES:
        return
    from pytest_skilleval.harbor.sandbox.options import check_local_env

    try:
        check_local_env(dict(settings.env_kwargs))
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
