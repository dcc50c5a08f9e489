"""How a run setting is declared: the `Setting` record attached to each `RunSettings` field, and the text parsers
its flag and ini twin use.

A setting is declared once, as a `RunSettings` field annotated with a `Setting`: the field holds the type, range
and default (pydantic validates them, whatever the source); the `Setting` says how the command line, the ini file
and `evals/config.yml` reach it and whether `--resume` compares it. The pytest options, the ini keys, the config.yml
models, resume's comparison and the defaults in `--help` are all generated from these declarations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError


@dataclass(frozen=True)
class Setting:
    """How one `RunSettings` field is set and used (its type, range and default are the field's own).

    `option` names the flag and ini twin when it differs from the field (`--ek` sets `env_kwargs`); `config_only`
    marks a setting only `evals/config.yml` gives (no flag, no ini key). `cli_only` settings are refused from an ini file and from
    `evals/config.yml` because they weaken isolation or run code; `file_refusal` does the same for some values only.
    `measured=False` settings (speed, places, the run's own bookkeeping) may differ when a run is resumed.
    """

    help: str
    option: str | None = None
    config_only: bool = False
    parse: Callable[[str], Any] | None = None
    repeat: bool = False
    metavar: str | None = None
    config: str | None = None
    config_type: Any = None
    cli_only: bool = False
    file_refusal: Callable[[Any], str | None] | None = None
    measured: bool = True
    default_text: str | None = None

    @property
    def config_path(self) -> tuple[str, ...] | None:
        return tuple(self.config.split(".")) if self.config else None


# ---------------------------------------------------------------------------------------------------------------
# Text parsers: a flag's or an ini line's string to the value the field validates; ValueError on bad text.


def split_list(value: str) -> list[str]:
    """`a,b` or one item per line, blanks dropped."""
    return [part.strip() for part in value.replace("\n", ",").split(",") if part.strip()]


def parse_bool(value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def pairs(flag: str) -> Callable[[str], dict[str, str]]:
    """A parser of `KEY=VALUE` for `flag` (its name goes in the error)."""

    def parse(value: str) -> dict[str, str]:
        items = split_list(value) if "=" in value else [value]
        result: dict[str, str] = {}
        for item in items:
            key, sep, text = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"{flag} expects KEY=VALUE, got {item!r}")
            result[key.strip()] = text.strip()
        return result

    return parse


def agent_model(value: str) -> dict[str, list[str]]:
    """`AGENT=MODEL` (or several, comma-separated) as {AGENT: [MODEL, ...]}: repeated flags add models, so one
    agent can run on several."""
    models: dict[str, list[str]] = {}
    for item in split_list(value) if "=" in value else [value]:
        for agent, model in pairs("--agent-model")(item).items():
            if not model:
                raise ValueError(f"--agent-model {agent}=: the model is empty; give AGENT=MODEL")
            models.setdefault(agent, []).append(model)
    return models


def model_price(value: str) -> dict[str, dict[str, float]]:
    """`MODEL=INPUT/OUTPUT` (USD per million tokens) as {MODEL: {input_per_mtok, output_per_mtok}}."""
    model, sep, price = value.rpartition("=")
    given, slash, taken = price.partition("/")
    try:
        prices = (float(given), float(taken)) if sep and slash and model.strip() else None
    except ValueError:
        prices = None
    if prices is None:
        raise ValueError(f"--model-price expects MODEL=INPUT/OUTPUT in USD per million tokens, got {value!r}")
    return {model.strip(): {"input_per_mtok": prices[0], "output_per_mtok": prices[1]}}


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


def agent_kwarg(value: str) -> dict[str, dict[str, Any]]:
    """`AGENT:KEY=VALUE` as {AGENT: {KEY: value}}; the agent is what comes before the last ':' of the part before
    '=', so import-path agents (`pkg.mod:Class:KEY=VALUE`) work too."""
    target, sep, item = value.partition("=")
    agent, colon, key = target.strip().rpartition(":")
    agent, key = agent.strip(), key.strip()
    if not sep or not colon or not agent or not key:
        raise ValueError(f"--agent-kwarg expects AGENT:KEY=VALUE, got {value!r}")
    if key in RESERVED_AGENT_KWARGS:
        hint = " (use --agent-model)" if key == "model_name" else ""
        raise ValueError(
            f"--agent-kwarg {agent}:{key}: {key!r} is set by Harbor or the plugin and cannot be passed{hint}"
        )
    return {agent: {key: _kwarg_value(item.strip())}}


VARIABLE_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def pass_env_names(values: Iterable[str]) -> list[str]:
    """The `--pass-env` allowance: valid variable names, each once, in the order given; raises ValueError."""
    names: list[str] = []
    for value in values:
        name = value.strip()
        if not VARIABLE_NAME_RE.fullmatch(name):
            raise ValueError(f"--pass-env expects a variable name like MY_SERVICE_URL, got {value!r}")
        if name not in names:
            names.append(name)
    return names


def pass_env_name(value: str) -> list[str]:
    return pass_env_names([value])


def lower(value: str) -> str:
    return value.strip().lower()


def count_or_auto(value: str) -> int | str:
    """`N` or `auto` (as pytest-xdist's `-n auto`: the machine decides)."""
    text = value.strip().lower()
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"expected a number, or auto, not {value!r}") from None


MAX_COUNT = 64  # the most processes (or workers) a count setting may ask for


def _count_or_auto_value(value: Any) -> Any:
    """0 to MAX_COUNT or `auto`, with one error for anything else (not one per member of the union)."""
    if isinstance(value, str):
        try:
            value = count_or_auto(value)
        except ValueError:
            pass
    if value == "auto" or (type(value) is int and 0 <= value <= MAX_COUNT):
        return value
    raise PydanticCustomError("count_or_auto", f"expected a number from 0 to {MAX_COUNT}, or auto")


# A process count (0 to MAX_COUNT) or `auto`: one type for the flag, the ini key and evals/config.yml.
CountOrAuto = Annotated[int | Literal["auto"], BeforeValidator(_count_or_auto_value)]


# Environment keyword arguments a file may set: asking for the sandbox, never turning it off or mounting host folders.
FILE_SAFE_EK = {"sandbox": ("auto", "bwrap")}


def ek_file_refusal(kwargs: Any) -> str | None:
    """Which of these `--ek` settings only the command line may give (they weaken isolation), or None."""
    if not isinstance(kwargs, dict):
        return None
    weakening = [
        f"{key}={value}"
        for key, value in kwargs.items()
        if str(value).strip().lower() not in FILE_SAFE_EK.get(str(key).strip(), ())
    ]
    return ", ".join(weakening) or None
