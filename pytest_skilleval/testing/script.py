"""The scripted model server's script: per-model queues of replies, validated by pydantic.

The format is documented in `pytest_skilleval.testing.scripted_model`; this module only defines and loads it, so a
bad script fails before the server starts, with the file and the field named.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

DEFAULT_QUEUE = "*"
CONTENT_FIELDS = ("text", "tool_calls", "refusal", "usage", "stop_reason")
RAW_FIELDS = ("status", "body", "message", "content_type")


class ScriptError(ValueError):
    """A script that cannot be used: says where (file, field) and what is wrong."""


class ToolCall(BaseModel):
    """One tool (function) call the model makes."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    # A JSON object, or a string sent as is (chat and Responses only; lets a test send malformed arguments).
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None
    # Responses API: a custom (freeform) tool call whose input is `arguments` as a string (codex's apply_patch).
    custom: bool = False


class Usage(BaseModel):
    """Token counts reported with a reply; a count left out is estimated from the text (about 4 characters a token)."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cached_tokens: int = Field(default=0, ge=0)


class Reply(BaseModel):
    """One answer: model content (text, tool calls, refusal) or an HTTP response sent as is (status, body)."""

    model_config = ConfigDict(extra="forbid")

    # Guards: a guarded reply answers only a request whose conversation text matches; until then it stays queued.
    match: str | None = None
    match_regex: str | None = None
    # Model content, rendered in the dialect of the request.
    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    refusal: str | None = None
    stop_reason: str | None = None
    usage: Usage | None = None
    # An HTTP response sent as is (errors, garbage). `message` fills the dialect's error body when `body` is absent.
    status: int | None = Field(default=None, ge=100, le=599)
    body: str | dict[str, Any] | list[Any] | None = None
    message: str | None = None
    content_type: str | None = None
    # Sent with either kind of reply.
    headers: dict[str, str] = Field(default_factory=dict)
    delay: float = Field(default=0.0, ge=0, le=600)
    repeat: int | Literal["forever"] = 1

    @model_validator(mode="before")
    @classmethod
    def _text_shorthand(cls, data: Any) -> Any:
        return {"text": data} if isinstance(data, str) else data

    @field_validator("match_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"not a valid regular expression: {error}") from None
        return value

    @field_validator("repeat")
    @classmethod
    def _positive(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError('must be at least 1 (the number of requests this reply answers), or "forever"')
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Reply:
        content = [name for name in CONTENT_FIELDS if name in self.model_fields_set]
        raw = [name for name in RAW_FIELDS if name in self.model_fields_set]
        if content and raw:
            raw_names, content_names = ", ".join(raw), ", ".join(content)
            raise ValueError(
                f"a reply with {raw_names} is an HTTP response sent as is; it cannot also have {content_names}"
            )
        if raw and self.status is None and self.body is None:
            raise ValueError("an HTTP reply needs a status (or a body, sent with status 200)")
        if not raw and self.text is None and not self.tool_calls and self.refusal is None:
            raise ValueError("a reply needs text, tool_calls or refusal (or status/body for an HTTP reply)")
        if self.refusal is not None and (self.text is not None or self.tool_calls):
            raise ValueError("a refusal reply cannot also have text or tool_calls")
        return self

    @property
    def is_raw(self) -> bool:
        return self.status is not None or self.body is not None

    @property
    def guarded(self) -> bool:
        return self.match is not None or self.match_regex is not None

    def matches(self, text: str) -> bool:
        if self.match is not None and self.match not in text:
            return False
        return self.match_regex is None or re.search(self.match_regex, text) is not None


class Catalog(BaseModel):
    """What the models endpoints (`GET /v1/models`, `GET /v1/models/<id>`) answer: the ids listed (default: the
    script's model names), or an error sent instead (`status` with an optional `message`), after `delay` seconds:
    a 401, a 500, or a delay past a client's timeout."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] | None = None
    status: int | None = Field(default=None, ge=400, le=599)
    message: str | None = None
    delay: float = Field(default=0.0, ge=0, le=600)


class Script(BaseModel):
    """Queues of replies by model name (exact, then glob patterns, then "*"), and what to answer when they run out."""

    model_config = ConfigDict(extra="forbid")

    models: dict[str, list[Reply]] = Field(default_factory=dict)
    replies: list[Reply] = Field(default_factory=list)
    on_empty: Reply | None = None
    catalog: Catalog = Field(default_factory=Catalog)

    @field_validator("models")
    @classmethod
    def _named(cls, value: dict[str, list[Reply]]) -> dict[str, list[Reply]]:
        if any(not name for name in value):
            raise ValueError('a model name is empty (use "*" for the default queue)')
        return value

    @model_validator(mode="after")
    def _one_default(self) -> Script:
        if self.replies and DEFAULT_QUEUE in self.models:
            raise ValueError('give the default queue either as "replies" or as models["*"], not both')
        if self.on_empty is not None and (self.on_empty.guarded or "repeat" in self.on_empty.model_fields_set):
            raise ValueError("on_empty answers every request once the script has run out: no match or repeat")
        return self

    def queues(self) -> dict[str, list[Reply]]:
        queues = {name: list(replies) for name, replies in self.models.items()}
        if self.replies:
            queues[DEFAULT_QUEUE] = list(self.replies)
        return queues


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def _problems(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{_field_path(item['loc'])}: {message}")
    return "; ".join(lines)


def parse_script(data: Any, source: str = "script") -> Script:
    """Validate an already-parsed script; ScriptError names the source and each bad field."""
    if isinstance(data, Script):
        return data
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise ScriptError(f"{source}: a script is a JSON object (with models, replies, on_empty), not {kind}")
    try:
        return Script.model_validate(data)
    except ValidationError as error:
        raise ScriptError(f"{source}: {_problems(error)}") from None


def parse_reply(data: Any, source: str = "reply") -> Reply:
    if isinstance(data, Reply):
        return data
    try:
        return Reply.model_validate(data)
    except ValidationError as error:
        raise ScriptError(f"{source}: {_problems(error)}") from None


def load_script(path: str | Path) -> Script:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ScriptError(f"{path}: cannot read the script: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ScriptError(f"{path}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    return parse_script(data, str(path))


def regex_all(*needles: str, absent: tuple[str, ...] = ()) -> str:
    """A `match_regex` guard for a conversation that holds every needle and none of `absent` (a with-skill arm's
    requests hold the skill listing, the baseline's do not)."""
    ahead = "".join(f"(?=.*{re.escape(needle)})" for needle in needles)
    not_ahead = "".join(f"(?!.*{re.escape(needle)})" for needle in absent)
    return f"(?s)^{not_ahead}{ahead}"
