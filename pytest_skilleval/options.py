"""Command-line flags, ini keys and `evals/config.yml`, merged into one `RunSettings` per skill.

Precedence: CLI > evals/config.yml > ini (`skilleval_<name>`) > default. Flags and ini keys are generated from the
settings' declarations (`skill/settings.py`); flags are registered with no default so the merge can tell "given"
from "defaulted". A command-line-only setting found in the ini file (a key, `-o` or `addopts`) stops the session.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from pytest_skilleval.skill.setting_catalog import declared_settings, shown_default
from pytest_skilleval.skill.setting_specs import Setting, parse_bool
from pytest_skilleval.skill.settings import LOCAL_ENV_MODES, RunSettings, canonical_models

GROUP = "skilleval"


@dataclass(frozen=True)
class OptionSpec:
    """A setting's flag and ini twin, read off its declaration in `RunSettings`."""

    field: str
    setting: Setting
    info: FieldInfo

    @property
    def name(self) -> str:
        return self.setting.option or self.field

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def ini(self) -> str:
        return f"skilleval_{self.name}"

    @property
    def dest(self) -> str:
        return f"skilleval_{self.name}"

    @property
    def is_flag(self) -> bool:
        return self.info.annotation is bool

    @property
    def parse(self) -> Callable[[Any], Any]:
        return self.setting.parse or (parse_bool if self.is_flag else str)

    @property
    def help(self) -> str:
        only = " Command line only." if self.setting.cli_only else ""
        return f"{self.setting.help}{only} (default: {shown_default(self.field)})"


OPTION_SPECS: tuple[OptionSpec, ...] = tuple(
    OptionSpec(field, setting, info)
    for field, (setting, info) in declared_settings().items()
    if not setting.config_only
)
SPEC_BY_NAME = {spec.name: spec for spec in OPTION_SPECS}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "agent-skill evals through Harbor")
    group.addoption(
        "--skill-eval",
        action="store_true",
        dest="skill_eval",
        default=False,
        help="Collect skills (folders with SKILL.md) under the given paths and run their evals.",
    )
    for spec in OPTION_SPECS:
        if spec.is_flag:
            group.addoption(spec.flag, action="store_true", dest=spec.dest, default=None, help=spec.help)
        else:
            group.addoption(
                spec.flag,
                action="append" if spec.setting.repeat else "store",
                dest=spec.dest,
                default=None,
                metavar=spec.setting.metavar,
                help=spec.help,
            )
        # Command-line-only settings keep an ini key too, so one set in a file is refused instead of ignored.
        ini_help = f"refused: {spec.flag} is command line only" if spec.setting.cli_only else spec.help
        kind: Literal["linelist", "string"] = "linelist" if spec.setting.repeat else "string"
        parser.addini(spec.ini, help=ini_help, type=kind, default=None)


@dataclass(frozen=True)
class SettingsSources:
    """The values each source gave, already parsed, keyed by RunSettings field."""

    cli: Mapping[str, Any]
    ini: Mapping[str, Any]


def _parse(spec: OptionSpec, raw: Any, source: str) -> Any:
    try:
        if spec.setting.repeat:
            parsed = [spec.parse(value) for value in (raw if isinstance(raw, list) else [raw])]
            if parsed and isinstance(parsed[0], list):  # a list per value: concatenate
                return [item for part in parsed for item in part]
            merged: dict[str, Any] = {}
            for part in parsed:
                for key, item in part.items():
                    if isinstance(item, dict) and isinstance(merged.get(key), dict):
                        merged[key] = {**merged[key], **item}  # per-agent maps (--agent-kwarg) add up
                    elif isinstance(item, list) and isinstance(merged.get(key), list):
                        merged[key] = [*merged[key], *item]  # per-agent lists (--agent-model) add up
                    else:
                        merged[key] = item
            return merged
        return spec.parse(raw)
    except (ValueError, TypeError) as error:
        message = _conversion_error(spec, raw) or str(error)
        raise pytest.UsageError(message if message.startswith(spec.flag) else f"{source}: {message}") from None


# A setting read with a bare int or float: Python's own words ("invalid literal for int() with base 10") say
# nothing to the user; name what was expected instead.
_EXPECTED: Mapping[Callable[..., Any], str] = {int: "a whole number", float: "a number"}


def _conversion_error(spec: OptionSpec, raw: Any) -> str | None:
    expected = _EXPECTED.get(spec.setting.parse) if spec.setting.parse is not None else None
    return f"expected {expected}, not {raw!r}" if expected else None


def parse_option(name: str, raw: Any) -> Any:
    """The value a flag's text (or texts, for a repeatable flag) gives, as the command line would read it."""
    spec = SPEC_BY_NAME[name]
    return _parse(spec, raw, spec.flag)


def _refusal(spec: OptionSpec, value: Any) -> str | None:
    """Why this value may not come from a file (an ini key or addopts), or None."""
    if spec.setting.cli_only:
        return f"{spec.flag} is command line only"
    if spec.setting.file_refusal is not None:
        weakening = spec.setting.file_refusal(value)
        if weakening:
            return f"{spec.flag} {weakening} weakens isolation and is command line only"
    return None


def _refuse_from_file(config: pytest.Config, where: str, spec: OptionSpec, reason: str) -> None:
    """One line: the file (or `-o`), the key, why, and the way out."""
    overrides = config.getoption("override_ini") or []
    if where == spec.ini and any(item.partition("=")[0].strip() == spec.ini for item in overrides):
        source = f"-o {spec.ini}"  # typed, or from addopts: either way not the flag itself
    else:
        source = f"{config.inipath or 'the ini file'}: {where}"
    raise pytest.UsageError(f"{source}: {reason}; give it as {spec.flag} on the command line instead")


def _check_addopts(config: pytest.Config) -> None:
    """The ini file's `addopts` is a file too: it may not carry a command-line-only setting."""
    addopts = config.getini("addopts")
    if not addopts:
        return
    guarded = [s for s in OPTION_SPECS if s.setting.cli_only or s.setting.file_refusal is not None]
    reader = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for spec in guarded:
        if spec.is_flag:
            reader.add_argument(spec.flag, action="store_true", dest=spec.dest, default=None)
        else:
            reader.add_argument(spec.flag, action="append", dest=spec.dest, default=None)
    given, _ = reader.parse_known_args(list(addopts))
    for spec in guarded:
        raw = getattr(given, spec.dest)
        if raw is None:
            continue
        value = raw if spec.is_flag else _parse(spec, raw if spec.setting.repeat else raw[-1], spec.flag)
        reason = _refusal(spec, value)
        if reason:
            _refuse_from_file(config, "addopts", spec, reason)


def read_sources(config: pytest.Config) -> SettingsSources:
    """Parse what the command line and the ini file gave; refuse command-line-only settings from the ini file."""
    cli: dict[str, Any] = {}
    ini: dict[str, Any] = {}
    for spec in OPTION_SPECS:
        raw_cli = config.getoption(spec.dest)
        if raw_cli is not None and raw_cli is not False:
            cli[spec.field] = _parse(spec, raw_cli, spec.flag)
        raw_ini = config.getini(spec.ini)
        if raw_ini not in (None, "", []):
            ini[spec.field] = _parse(spec, raw_ini, f"ini option {spec.ini}")
            reason = _refusal(spec, ini[spec.field])
            if reason:
                _refuse_from_file(config, spec.ini, spec, reason)
    _check_addopts(config)
    return SettingsSources(cli=cli, ini=ini)


def _config_value(skill_config: Mapping[str, Any] | None, path: tuple[str, ...]) -> Any:
    node: Any = skill_config
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _combine(field: str, before: Any, value: Any) -> Any:
    """A later source's value; maps keyed by agent (`agent_models`) add up instead, the later source winning."""
    if field == "agent_models" and isinstance(before, dict) and isinstance(value, dict):
        return {**canonical_models(before), **canonical_models(value)}
    return value


def merge_settings(sources: SettingsSources, skill_config: Mapping[str, Any] | None = None) -> RunSettings:
    """CLI > evals/config.yml > ini > default, validated; a bad value is a usage error naming its source."""
    values: dict[str, Any] = dict(sources.ini)
    for field, (setting, _) in declared_settings().items():
        path = setting.config_path
        value = _config_value(skill_config, path) if path else None
        if value is not None:
            values[field] = _combine(field, values.get(field), value)
    for field, value in sources.cli.items():
        values[field] = _combine(field, values.get(field), value)
    try:
        settings = RunSettings.model_validate(values)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in item['loc'])}: {item['msg']}" for item in error.errors())
        raise pytest.UsageError(f"skilleval settings: {problems}") from None
    if settings.stop_on_pass and settings.n_attempts == 1:
        raise pytest.UsageError("--stop-on-pass needs --n-attempts above 1: with one attempt there is nothing to stop")
    if settings.resume and settings.regrade:
        raise pytest.UsageError("--resume and --regrade together: resume finishes a run, regrade grades one again")
    if settings.regrade is None or "agents" in sources.cli:  # a regrade's agents are its run's: checked with them
        refuse_unselected(sources.cli, settings)
    if settings.selected_arms is not None and (settings.skip_baseline or settings.skip_with_skill):
        raise pytest.UsageError("--arms and --skip-baseline/--skip-with-skill together: give the arms with --arms only")
    if "baseline_skill" in settings.arms and not settings.baseline_skill:
        raise pytest.UsageError("--arms baseline_skill needs --baseline-skill PATH|git:REF (the version to compare to)")
    if settings.skip_baseline and settings.skip_with_skill:
        raise pytest.UsageError("--skip-baseline and --skip-with-skill together leave nothing to run")
    return settings


def refuse_unselected(cli: Mapping[str, Any], settings: RunSettings) -> None:
    """A model or constructor setting for an agent the run does not use is a mistake (a typo, or an alias the
    user thinks differs): one line naming it. Aliases are resolved first, so `claude=` means `claude-code`."""
    given = {
        "--agent-model": canonical_models(cli.get("agent_models", {})),
        "--agent-kwarg": settings.agent_kwargs,
    }
    for flag, names in given.items():
        unknown = sorted(set(names) - set(settings.agents))
        if unknown:
            raise pytest.UsageError(
                f"{flag} names agent(s) {', '.join(unknown)} that this run does not use "
                f"(--agents {','.join(settings.agents)}); add it to --agents or drop {flag}"
            )


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
