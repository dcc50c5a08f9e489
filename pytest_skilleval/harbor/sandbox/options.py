"""The `local` environment's settings (`--ek KEY=VALUE`), checked once when the session starts.

Why: a typo (`sandbox=bogus`) or a machine where bubblewrap cannot run must stop the session at start with one
line, not surface as an error in every trial; and `auto` must never quietly mean "no isolation".
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pytest_skilleval.harbor.sandbox.bwrap import usable_bwrap

SandboxMode = Literal["auto", "bwrap", "none"]
MODES: tuple[str, ...] = ("auto", "bwrap", "none")
NONE_HINT = "--ek sandbox=none runs without isolation"


class LocalEnvOptions(BaseModel):
    """`--ek` settings the local environment understands."""

    model_config = ConfigDict(extra="forbid")

    sandbox: SandboxMode = "auto"
    tools: Path | None = None
    # Behave like a remote (cloud) sandbox: this many milliseconds before every call, and every folder check, reset
    # and chmod sent as a command instead of answered on the host. None: the plain local environment.
    remote_latency_ms: float | None = Field(default=None, ge=0, le=60_000)

    @field_validator("sandbox", mode="before")
    @classmethod
    def _mode(cls, value: object) -> object:
        text = str(value).strip().lower()
        if text not in MODES:
            raise ValueError(f"must be one of {', '.join(MODES)} (got {value!r})")
        return text

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: Path | None) -> Path | None:
        if value is None:
            return None
        path = value.expanduser().resolve()
        if not path.is_dir():
            raise ValueError(f"must be a directory (got {str(value)!r})")
        return path


def local_env_options(kwargs: dict[str, object]) -> LocalEnvOptions:
    """Parse `--ek` settings for the local environment; a bad one is a ValueError naming it, in one line."""
    try:
        return LocalEnvOptions.model_validate(kwargs)
    except ValidationError as error:
        item = error.errors()[0]
        key = ".".join(str(part) for part in item["loc"])
        if item["type"] == "extra_forbidden":
            known = ", ".join(LocalEnvOptions.model_fields)
            raise ValueError(f"--ek {key} is not a setting of the local environment (known: {known})") from None
        message = str(item["msg"]).removeprefix("Value error, ")
        raise ValueError(f"--ek {key} {message}") from None


def resolve_mode(requested: str) -> Literal["bwrap", "none"]:
    """`none` only when asked for; `auto` and `bwrap` need a bwrap that works here, or it is an error saying why."""
    if requested == "none":
        return "none"
    if requested not in MODES:
        raise ValueError(f"--ek sandbox must be one of {', '.join(MODES)} (got {requested!r})")
    exe, problem = usable_bwrap()
    if exe is None:
        raise RuntimeError(f"local environment: no sandbox: {problem}; {NONE_HINT}")
    return "bwrap"


def check_local_env(kwargs: dict[str, object]) -> Literal["bwrap", "none"]:
    """Start-of-session check: the settings parse and the sandbox they ask for can run here."""
    options = local_env_options(kwargs)
    try:
        return resolve_mode(options.sandbox)
    except RuntimeError as error:
        raise ValueError(str(error)) from None
