"""A case's declarative checks: what an author writes under `checks` in evals.json, and what each check found.

Each check is an object with a `type`; pydantic picks the model by it (a discriminated union), so a typo'd type or
field is one located error. Paths are relative to /workspace and may not climb out of it. Checks are graded after
the agent: file and command checks in the sandbox (`verifier.check_runner`), the rest on the host
(`verifier.check_host`). A check that cannot be evaluated is an `error`: unscored, never a failure of the agent.
"""

from __future__ import annotations

import hashlib
import math
import posixpath
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

MAX_CHECKS = 64
MAX_PATTERN_CHARS = 4096
MAX_COMMAND_CHARS = 8192
MAX_EQUALS_TEXT_CHARS = 65536
MAX_EQUALS_FILE_BYTES = 16 * 1024 * 1024
MAX_COMMAND_TIMEOUT_SEC = 600.0
DEFAULT_COMMAND_TIMEOUT_SEC = 60.0
MAX_EVIDENCE_CHARS = 300
WORKSPACE = "/workspace"

CheckStatus = Literal["passed", "failed", "error"]


def workspace_path(value: str) -> str:
    """A path relative to /workspace (an absolute one under /workspace is accepted), normalized; never `..` out."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be a non-empty path relative to /workspace")
    if "\x00" in value:
        raise ValueError("must not contain a NUL character")
    text = value.strip()
    if text.startswith("/"):
        if text != WORKSPACE and not text.startswith(WORKSPACE + "/"):
            raise ValueError(f"{value!r} is outside /workspace; write it relative to /workspace (e.g. 'output/x')")
        text = text[len(WORKSPACE) :].lstrip("/") or "."
    if any(part == ".." for part in text.split("/")):
        raise ValueError(f"{value!r} climbs out of /workspace with '..'; write it relative to /workspace")
    normalized = posixpath.normpath(text)
    if normalized == ".":
        raise ValueError("names /workspace itself; name a file under it (e.g. 'output/result.txt')")
    return normalized


def _regex(value: str) -> str:
    if len(value) > MAX_PATTERN_CHARS:
        raise ValueError(f"is longer than {MAX_PATTERN_CHARS} characters")
    try:
        re.compile(value)
    except re.error as error:
        raise ValueError(f"is not a valid regular expression: {error}") from None
    return value


def _text(value: str) -> str:
    if len(value) > MAX_PATTERN_CHARS:
        raise ValueError(f"is longer than {MAX_PATTERN_CHARS} characters")
    return value


# A literal to find, and a regular expression (Python's `re`, matched with re.search): checked when read.
Text = Annotated[str, AfterValidator(_text)]
Regex = Annotated[str, AfterValidator(_regex)]


class _Check(BaseModel):
    """What every check has: an optional display name and a weight in the case's checks score."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, description="Shown in reports; defaults to the type and its target.")
    weight: float = Field(default=1.0, description="Share of this check in the case's checks score (>= 0).")

    @field_validator("weight")
    @classmethod
    def _weight(cls, value: float) -> float:
        if not math.isfinite(value) or value < 0:
            raise ValueError("must be a finite number >= 0")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or len(value) > 200):
            raise ValueError("must be 1 to 200 characters")
        return value

    def label(self) -> str:
        return self.name or self.default_label()

    def default_label(self) -> str:
        return str(getattr(self, "type", "check"))


class _PathCheck(_Check):
    path: str = Field(description="A file, relative to /workspace.")

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return workspace_path(value)

    def default_label(self) -> str:
        return f"{getattr(self, 'type', 'check')} {self.path}"


class FileExists(_PathCheck):
    type: Literal["file_exists"]


class FileAbsent(_PathCheck):
    type: Literal["file_absent"]


class _TextOrRegex(_PathCheck):
    text: Text | None = Field(default=None, description="A literal to find.")
    regex: Regex | None = Field(default=None, description="A regular expression, matched as Python's re.search.")

    @model_validator(mode="after")
    def _one_of(self) -> _TextOrRegex:
        if (self.text is None) == (self.regex is None):
            raise ValueError("give exactly one of 'text' or 'regex'")
        return self


class FileContains(_TextOrRegex):
    type: Literal["file_contains"]


class FileNotContains(_TextOrRegex):
    type: Literal["file_not_contains"]


class FileEquals(_PathCheck):
    type: Literal["file_equals"]
    text: str | None = Field(default=None, description="The whole expected content.")
    file: str | None = Field(default=None, description="A file under evals/files/ holding the expected content.")
    expected_sha256: str | None = Field(default=None, description="Set by the loader from `text` or `file`.")
    expected_size: int | None = Field(default=None, description="Set by the loader from `text` or `file`.")

    @model_validator(mode="after")
    def _one_of(self) -> FileEquals:
        if (self.text is None) == (self.file is None):
            raise ValueError("give exactly one of 'text' or 'file' (a file under evals/files/)")
        if self.text is not None:
            if len(self.text) > MAX_EQUALS_TEXT_CHARS:
                raise ValueError(f"'text' is longer than {MAX_EQUALS_TEXT_CHARS} characters; use 'file' instead")
            data = self.text.encode("utf-8")
            self.expected_sha256, self.expected_size = hashlib.sha256(data).hexdigest(), len(data)
        return self


class JsonPath(_PathCheck):
    type: Literal["json_path"]
    json_path: str = Field(description="`$.a.b[0]`-style path into the JSON or YAML file (`$` is the document).")
    equals: Any = Field(default=None, description="The value there must equal this.")
    contains: Any = Field(default=None, description="The value there (string, list or object) must contain this.")
    exists: bool | None = Field(default=None, description="The path must (true) or must not (false) exist.")

    @field_validator("json_path")
    @classmethod
    def _json_path(cls, value: str) -> str:
        parse_json_path(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _one_of(cls, data: Any) -> Any:
        if isinstance(data, dict) and sum(key in data for key in ("equals", "contains", "exists")) != 1:
            raise ValueError("give exactly one of 'equals', 'contains' or 'exists'")
        return data

    def mode(self) -> str:
        if self.exists is not None:
            return "exists"
        return "contains" if "contains" in self.model_fields_set else "equals"


class Command(_Check):
    type: Literal["command"]
    run: str = Field(description="Shell text, run with bash -c (sh when bash is missing), cwd /workspace.")
    exit_code: int = 0
    timeout_sec: float = DEFAULT_COMMAND_TIMEOUT_SEC
    stdout_contains: Text | None = None
    stdout_regex: Regex | None = None
    stderr_contains: Text | None = None
    stderr_regex: Regex | None = None

    @field_validator("run")
    @classmethod
    def _run(cls, value: str) -> str:
        if not value.strip() or len(value) > MAX_COMMAND_CHARS or "\x00" in value:
            raise ValueError(f"must be a non-empty command of at most {MAX_COMMAND_CHARS} characters")
        return value

    @field_validator("timeout_sec")
    @classmethod
    def _timeout(cls, value: float) -> float:
        if not math.isfinite(value) or not 0 < value <= MAX_COMMAND_TIMEOUT_SEC:
            raise ValueError(f"must be more than 0 and at most {MAX_COMMAND_TIMEOUT_SEC:g} seconds")
        return value

    def default_label(self) -> str:
        return f"command {self.run[:60]}"


class FinalMessageContains(_Check):
    type: Literal["final_message_contains"]
    text: Text

    def default_label(self) -> str:
        return f"final message contains {self.text[:60]!r}"


class FinalMessageMatches(_Check):
    type: Literal["final_message_matches"]
    regex: Regex

    def default_label(self) -> str:
        return f"final message matches {self.regex[:60]!r}"


class _Globs(_Check):
    paths: list[str] = Field(default_factory=lambda: ["**"], description="Glob patterns relative to /workspace.")

    @field_validator("paths", mode="before")
    @classmethod
    def _globs(cls, value: Any) -> list[str]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items:
            raise ValueError("must be a glob or a non-empty list of globs")
        return [workspace_path(item) if item not in ("**", "*") else item for item in items]

    def default_label(self) -> str:
        return f"{getattr(self, 'type', 'check')} {', '.join(self.paths)[:60]}"


class WorkspaceChanged(_Globs):
    type: Literal["workspace_changed"]


class WorkspaceUnchanged(_Globs):
    type: Literal["workspace_unchanged"]


class NoCommandMatching(_Check):
    type: Literal["no_command_matching"]
    regex: Regex

    def default_label(self) -> str:
        return f"no command matching {self.regex[:60]}"


CheckSpec = Annotated[
    FileExists
    | FileAbsent
    | FileContains
    | FileNotContains
    | FileEquals
    | JsonPath
    | Command
    | FinalMessageContains
    | FinalMessageMatches
    | WorkspaceChanged
    | WorkspaceUnchanged
    | NoCommandMatching,
    Field(discriminator="type"),
]
CHECK_TYPES: tuple[str, ...] = (
    "file_exists",
    "file_absent",
    "file_contains",
    "file_not_contains",
    "file_equals",
    "json_path",
    "command",
    "final_message_contains",
    "final_message_matches",
    "workspace_changed",
    "workspace_unchanged",
    "no_command_matching",
)
# Evaluated inside the sandbox by verifier/check_runner.py; the rest on the host.
SANDBOX_TYPES = frozenset(
    {"file_exists", "file_absent", "file_contains", "file_not_contains", "file_equals", "json_path", "command"}
)
CHECK_LIST: TypeAdapter[list[CheckSpec]] = TypeAdapter(list[CheckSpec])

_PATH_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(-?\d+)\]|\[\"((?:[^\"\\]|\\.)*)\"\]|\['([^']*)'\]")


def parse_json_path(text: str) -> list[str | int]:
    """`$.a.b[0]["c d"]` -> ["a", "b", 0, "c d"]; raises ValueError naming the first bad position."""
    if not isinstance(text, str) or not text.startswith("$"):
        raise ValueError("must start with '$' (the document), e.g. '$.items[0].name'")
    steps: list[str | int] = []
    position = 1
    while position < len(text):
        match = _PATH_TOKEN.match(text, position)
        if match is None:
            raise ValueError(f"cannot be read at character {position + 1} ({text[position : position + 10]!r})")
        key, index, quoted, single = match.groups()
        if index is not None:
            steps.append(int(index))
        else:
            steps.append(key if key is not None else quoted if quoted is not None else single)
        position = match.end()
    return steps


class CheckResult(BaseModel):
    """One check's outcome in one trial; `evidence` is short, redacted, and says what was expected and found."""

    model_config = ConfigDict(extra="ignore")

    name: str
    type: str
    status: CheckStatus
    weight: float = 1.0
    evidence: str = ""

    @field_validator("evidence", "name")
    @classmethod
    def _short(cls, value: str) -> str:
        return value if len(value) <= MAX_EVIDENCE_CHARS else value[: MAX_EVIDENCE_CHARS - 1] + "…"


def checks_score(results: Sequence[CheckResult] | None) -> float | None:
    """Weighted fraction of passed checks among the scored ones (`error` drops out); None when none is scored."""
    if not results:
        return None
    scored = [r for r in results if r.status != "error"]
    total = math.fsum(r.weight for r in scored)
    if not scored or total <= 0:
        return None
    return round(math.fsum(r.weight for r in scored if r.status == "passed") / total, 4)


def first_failure(results: Sequence[CheckResult] | None) -> CheckResult | None:
    """The first failed check, whose evidence is an item's failure text."""
    return next((r for r in results or () if r.status == "failed"), None)
