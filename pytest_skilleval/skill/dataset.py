"""Reading `evals/evals.json` (or .jsonl/.yaml/.yml) into validated `EvalCase`s.

Two shapes are accepted: the agentskills shape `{"skill_name": ..., "evals": [...]}` and the legacy flat list (or
`{"cases": [...]}`) whose entries use `question`, `ground_truth`, `expected_behavior` and `acceptable_alternates`.
Every problem becomes one `DatasetError` naming the file, the entry (id or index) and the field, so a broken file is
one clear collection error and never a traceback.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import typing
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pytest_skilleval.skill.bounded_parse import ParseLimitError, load_json, read_author_file
from pytest_skilleval.skill.case_ids import CaseIdError, canonical_case_id, duplicate_key
from pytest_skilleval.skill.check_files import expected_files
from pytest_skilleval.skill.entry_keys import KeyTypo, did_you_mean, near_miss_keys
from pytest_skilleval.skill.foreign_formats import CRUCIBLE, crucible_suite
from verifier.check_spec import CHECK_TYPES, MAX_CHECKS, CheckSpec

DATASET_NAMES: tuple[str, ...] = ("evals.json", "evals.jsonl", "evals.yaml", "evals.yml")
MAX_DATASET_BYTES = 64 * 1024 * 1024
MAX_ENTRIES = 10_000  # far beyond any real eval set; a flood of entries would cost gigabytes before a trial runs

# Legacy (and skill-creator) names -> the names the runtime uses. Authored runtime names win when both appear.
FIELD_ALIASES: dict[str, str] = {
    "question": "prompt",
    "query": "prompt",
    "ground_truth": "expected_output",
    "expected_behavior": "assertions",
    "expectations": "assertions",
    "acceptable_alternates": "acceptable_skills",
}


class DatasetError(ValueError):
    """A dataset problem, located: file, entry and field."""

    def __init__(self, path: Path, message: str, *, entry: str | None = None, field: str | None = None) -> None:
        self.path = path
        self.entry = entry
        self.field = field
        self.message = message
        where = [str(path)]
        if entry is not None:
            where.append(entry)
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{': '.join(where)}: {message}")


def _assertion_text(item: Any) -> Any:
    """An assertion object's text, as other tools write them: `{"text": ...}`, or `{"name", "description"}`
    (`name: description`); a string stays as it is, anything else is left for the string check to refuse."""
    if not isinstance(item, Mapping):
        return item
    text = item.get("text")
    if isinstance(text, str) and text.strip():
        return text
    name, description = item.get("name"), item.get("description")
    if isinstance(description, str) and description.strip():
        return f"{name.strip()}: {description}" if isinstance(name, str) and name.strip() else description
    raise ValueError("an assertion object needs a non-empty 'text', or a 'description' (with an optional 'name')")


def _non_empty_strings(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"{field} must be a list of strings")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"{field} must hold only non-empty strings")
    return value


TAG_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
RESERVED_TAGS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst", "trylast", "skilleval"}
)


class EvalCase(BaseModel):
    """One eval case. Unknown authored keys are kept: they travel to the grader in `/tests/entry.json`."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str
    prompt: str
    expected_output: str
    assertions: list[str] = Field(default_factory=list)
    files: list[str] | None = Field(
        default=None, description="Paths relative to evals/; None with files_given False means all of evals/files/."
    )
    files_given: bool = Field(default=False, exclude=True)
    expected_skill: str | None = None
    expected_skill_given: bool = Field(default=False, exclude=True)
    aliases_not_read: list[str] = Field(
        default_factory=list, exclude=True, description="Aliases given beside their runtime name, with another value."
    )
    should_trigger: bool | None = None
    expected_script: str | None = None
    acceptable_skills: list[str] = Field(default_factory=list)
    force_skill_invocation: bool = Field(
        default=False, description="agent-skill-eval's flag: the with-skill prompt names the skill explicitly."
    )
    checks: list[CheckSpec] | None = Field(
        default=None, description="Deterministic checks of the agent's result, graded after the agent (see grading.md)."
    )

    @field_validator("checks", mode="before")
    @classmethod
    def _check_list(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, list):
            raise ValueError("checks must be a list of check objects, each with a 'type'")
        if isinstance(value, list) and len(value) > MAX_CHECKS:
            raise ValueError(f"has {len(value)} checks; the limit per case is {MAX_CHECKS}")
        return value or None

    tags: list[str] = Field(
        default_factory=list, description="pytest markers for the case's items, e.g. [\"slow\"] for -m 'not slow'."
    )

    @field_validator("tags", mode="before")
    @classmethod
    def _tag_names(cls, value: Any) -> list[str]:
        """Marker names: what `-m` can select (identifiers), each once; never one of pytest's own marks (a tag
        `skip` would skip the case, `skilleval` would clash with the plugin's)."""
        tags: list[str] = []
        for tag in [] if value is None else _non_empty_strings(value, "tags"):
            tag = tag.strip()
            if not TAG_RE.fullmatch(tag):
                raise ValueError(
                    f"tags: {tag!r} is not a marker name (letters, digits and _, not starting with a digit)"
                )
            if tag in RESERVED_TAGS:
                raise ValueError(f"tags: {tag!r} is one of pytest's or the plugin's own marks; choose another name")
            if tag not in tags:
                tags.append(tag)
        return tags

    @field_validator("id", mode="before")
    @classmethod
    def _canonical_id(cls, value: Any) -> str:
        try:
            return canonical_case_id(value)
        except CaseIdError as error:
            raise ValueError(str(error)) from None

    @field_validator("prompt", "expected_output", mode="before")
    @classmethod
    def _non_empty_text(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("assertions", mode="before")
    @classmethod
    def _assertion_list(cls, value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, list):
            value = [_assertion_text(item) for item in value]
        return _non_empty_strings(value, "assertions")

    @field_validator("files", mode="before")
    @classmethod
    def _file_list(cls, value: Any) -> list[str] | None:
        if value is None:
            return []
        return _non_empty_strings(value, "files")

    @field_validator("acceptable_skills", mode="before")
    @classmethod
    def _skill_list(cls, value: Any) -> list[str]:
        """A comma/newline separated string, or a list of names or {name|skill|expected_skill} objects."""
        if value is None:
            return []
        if isinstance(value, str):
            value = [part for chunk in value.splitlines() for part in chunk.split(",")]
        if not isinstance(value, list):
            raise ValueError("acceptable_skills must be a string or a list")
        names: list[str] = []
        for item in value:
            if isinstance(item, Mapping):
                item = item.get("name") or item.get("skill") or item.get("expected_skill")
            if not isinstance(item, str):
                raise ValueError("acceptable_skills items must be names")
            item = item.strip()
            if item and item.casefold() not in {n.casefold() for n in names}:
                names.append(item)
        return names

    @field_validator("should_trigger", mode="before")
    @classmethod
    def _strict_bool(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, bool):
            raise ValueError("should_trigger must be true, false or null")
        return value

    @field_validator("force_skill_invocation", mode="before")
    @classmethod
    def _strict_force(cls, value: Any) -> Any:
        if value is None:
            return False
        if not isinstance(value, bool):
            raise ValueError("force_skill_invocation must be true or false")
        return value

    @model_validator(mode="after")
    def _force_needs_a_positive_case(self) -> EvalCase:
        if self.force_skill_invocation and self.is_negative:
            raise ValueError(
                "force_skill_invocation: true on a negative control names the skill the case says must stay unused; "
                "drop one of them"
            )
        return self

    @property
    def is_negative(self) -> bool:
        """A negative control: the skill should stay unused (the grader's own tri-state rule decides)."""
        from verifier.checks.skill_entry import should_trigger

        return should_trigger(self.entry_json()) is False

    def entry_json(self) -> dict[str, Any]:
        """The authored entry plus the runtime aliases a grader written for either naming may read."""
        data = self.model_dump(mode="json", exclude={"files_given", "expected_skill_given", "aliases_not_read"})
        if not self.files_given:
            data.pop("files", None)
        if not self.expected_skill_given and self.expected_skill is None:
            data.pop("expected_skill", None)
        # An absent should_trigger means "decide from expected_skill"; a null key would read as a negative case.
        for optional in ("should_trigger", "expected_script"):
            if data.get(optional) is None:
                data.pop(optional, None)
        if "force_skill_invocation" not in self.model_fields_set:
            data.pop("force_skill_invocation", None)  # as authored: absent stays absent
        data["question"] = self.prompt
        data["ground_truth"] = self.expected_output
        data["expected_behavior"] = list(self.assertions)
        data["acceptable_alternates"] = list(self.acceptable_skills)
        if self.checks is not None:
            data["checks"] = [check.model_dump(mode="json", exclude_unset=True) for check in self.checks]
        else:
            data.pop("checks", None)
        if not self.tags:
            data.pop("tags", None)
        return data


FORCED_INVOCATION = "Use the ${skill} skill. {prompt}"  # agent-skill-eval's wording, `$` included


def arm_prompt(entry: Mapping[str, Any], arm: str, skill_name: str) -> str:
    """The instruction the agent gets in one arm: the case's prompt, or under `force_skill_invocation: true` in the
    with-skill arm the prompt that names the skill first, word for word as agent-skill-eval builds it."""
    prompt = str(entry.get("prompt", ""))
    if arm == "with_skill" and entry.get("force_skill_invocation") is True:
        return FORCED_INVOCATION.format(skill=skill_name, prompt=prompt)
    return prompt


class Dataset(BaseModel):
    path: Path
    skill_name: str | None
    shape: str  # "agentskills" | "legacy"
    cases: list[EvalCase]
    digest: str
    key_typos: list[KeyTypo] = Field(default_factory=list)

    def ids(self) -> set[str]:
        return {case.id for case in self.cases}


def find_dataset(evals_dir: Path) -> Path | None:
    """The skill's dataset: the first of DATASET_NAMES that exists."""
    for name in DATASET_NAMES:
        candidate = evals_dir / name
        if candidate.is_file():
            return candidate
    return None


def _jsonl_rows(path: Path, text: str) -> list[Any]:
    """One JSON value per non-blank line; stops at the entry limit instead of parsing a flood of lines."""
    rows: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(rows) == MAX_ENTRIES:
            raise DatasetError(path, f"has more than {MAX_ENTRIES:,} entries (the limit per dataset)")
        try:
            rows.append(load_json(line))
        except json.JSONDecodeError as error:
            raise DatasetError(path, f"invalid JSON: {error.msg}", entry=f"line {number}") from None
        except ParseLimitError as error:
            raise DatasetError(path, error.message, entry=f"line {number}") from None
    return rows


def _parse_text(path: Path, text: str) -> Any:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".jsonl"):
        return _parse_yaml(path, text)
    try:
        if suffix == ".json":
            return load_json(text)
        return _jsonl_rows(path, text)
    except json.JSONDecodeError as error:
        raise DatasetError(path, f"invalid JSON at line {error.lineno} column {error.colno}: {error.msg}") from None
    except ParseLimitError as error:
        raise DatasetError(path, str(error)) from None


def _parse_yaml(path: Path, text: str) -> Any:
    """A YAML dataset; PyYAML is imported here, so a JSON dataset never loads it."""
    import yaml

    from pytest_skilleval.skill.bounded_yaml import load_yaml, yaml_error_message

    try:
        return load_yaml(text)
    except yaml.YAMLError as error:
        raise DatasetError(path, yaml_error_message(error)) from None
    except ParseLimitError as error:
        raise DatasetError(path, str(error)) from None


def _entries(path: Path, data: Any) -> tuple[str, str | None, list[Any]]:
    """Tell the shape apart: (shape, skill_name, raw entries)."""
    if isinstance(data, Mapping) and "evals" in data:
        skill_name = data.get("skill_name")
        if not isinstance(skill_name, str) or not skill_name.strip():
            raise DatasetError(path, "must be a non-empty string", field="skill_name")
        entries = data["evals"]
        if not isinstance(entries, list):
            raise DatasetError(path, "must be a list of eval entries", field="evals")
        return "agentskills", skill_name.strip(), entries
    if isinstance(data, list):
        return "legacy", None, data
    if isinstance(data, Mapping) and "cases" in data:
        if not isinstance(data["cases"], list):
            raise DatasetError(path, "must be a list of eval entries", field="cases")
        return "legacy", None, data["cases"]
    if isinstance(data, Mapping) and "id" in data:
        return "legacy", None, [data]
    if crucible_suite(data):
        raise DatasetError(path, CRUCIBLE)
    kind = type(data).__name__ if data is not None else "nothing"
    raise DatasetError(
        path,
        f"unknown dataset shape ({kind}): expected {{\"skill_name\": ..., \"evals\": [...]}} or a list of entries",
    )


def _normalize_entry(raw: Mapping[str, Any], skill_name: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    shadowed = []
    for key, value in raw.items():
        target = FIELD_ALIASES.get(key, key)
        if target != key and target in raw:
            if value != raw[target]:
                shadowed.append(key)  # `skilleval validate` says so
            continue  # the runtime name was authored too, and wins
        entry[target] = value
    entry["aliases_not_read"] = shadowed
    entry["files_given"] = "files" in raw
    entry["expected_skill_given"] = "expected_skill" in raw
    if "expected_skill" not in raw and skill_name is not None:
        entry["expected_skill"] = skill_name
    return entry


def _aliases_read(raw: Mapping[str, Any]) -> str:
    """Said with an entry's error: which of its keys were read under another name (`expected_behavior` is read as
    `assertions`), so an error naming the runtime field is not a mystery."""
    read = [
        f"'{key}' as '{FIELD_ALIASES[key]}'" for key in raw if key in FIELD_ALIASES and FIELD_ALIASES[key] not in raw
    ]
    return f" (this entry's {', '.join(read)} {'was' if len(read) == 1 else 'were'} read)" if read else ""


def _entry_label(index: int, raw: Any) -> str:
    if isinstance(raw, Mapping) and isinstance(raw.get("id"), (str, int)) and not isinstance(raw.get("id"), bool):
        return f"entry {index} (id {raw['id']!r})"
    return f"entry {index}"


def _field_name(loc: tuple[Any, ...]) -> str | None:
    """`checks.0.file_contains.path` -> `checks[0].path`: a check's place and field, not pydantic's union tag."""
    parts = list(loc)
    if len(parts) == 2 and parts[0] == "checks" and isinstance(parts[1], int):
        return f"checks[{parts[1]}]"
    if len(parts) >= 3 and parts[0] == "checks" and isinstance(parts[1], int) and isinstance(parts[2], str):
        tail = [str(part) for part in parts[3:]] if parts[2] in CHECK_TYPES else [str(part) for part in parts[2:]]
        return ".".join([f"checks[{parts[1]}]", *tail])
    return ".".join(str(part) for part in parts) or None


@functools.cache
def _check_fields() -> dict[str, list[str]]:
    """Each check type's fields, read from the check models (`type` first)."""
    union = typing.get_args(CheckSpec)[0]
    return {
        typing.get_args(model.model_fields["type"].annotation)[0]: [
            "type",
            *(f for f in model.model_fields if f != "type"),
        ]
        for model in typing.get_args(union)
    }


def unknown_field(key: str, fields: Sequence[str], owner: str) -> str:
    """`unknown field (did you mean 'x'?); <owner> has a, b, c`: the nearest known field, then every one."""
    return f"unknown field{did_you_mean(key, fields)}; {owner} has {', '.join(fields)}"


def _item_message(item: Mapping[str, Any]) -> str:
    """One pydantic problem in words; an unknown field of a check names the nearest field and the type's fields."""
    loc = item.get("loc", ())
    if item.get("type") == "extra_forbidden" and len(loc) >= 4 and loc[0] == "checks" and loc[2] in CHECK_TYPES:
        return unknown_field(str(loc[-1]), _check_fields()[loc[2]], f"a {loc[2]} check")
    return str(item.get("msg", "invalid value")).removeprefix("Value error, ")


def _validation_message(error: ValidationError) -> tuple[str | None, str]:
    """The field at fault (when there is one problem) and the message: one problem's own text, or every problem
    with its field."""
    problems = [(_field_name(item["loc"]), _item_message(item)) for item in error.errors()]
    if len(problems) == 1:
        return problems[0]
    return None, "; ".join(f"field '{field}': {message}" if field else message for field, message in problems)


def _checked_entries(path: Path, data: Any) -> tuple[str, str | None, list[Any]]:
    """`_entries` plus the dataset-wide limits: at least one entry, at most MAX_ENTRIES."""
    shape, skill_name, raw_entries = _entries(path, data)
    if not raw_entries:
        raise DatasetError(path, "the dataset has no eval entries")
    if len(raw_entries) > MAX_ENTRIES:
        field = "evals" if shape == "agentskills" else None
        raise DatasetError(
            path, f"has {len(raw_entries):,} entries; the limit per dataset is {MAX_ENTRIES:,}", field=field
        )
    return shape, skill_name, raw_entries


def entry_outcomes(path: Path, skill_name: str | None, raw_entries: list[Any]) -> Iterator[EvalCase | DatasetError]:
    """Each entry validated in order: its EvalCase, or the DatasetError naming its problem (ids checked for
    duplicates across the valid ones). The loader stops at the first error; `validate` lists them all."""
    seen: dict[str, tuple[int, str]] = {}
    for index, raw in enumerate(raw_entries):
        label = _entry_label(index, raw)
        if not isinstance(raw, Mapping):
            yield DatasetError(path, f"must be an object, not {type(raw).__name__}", entry=label)
            continue
        try:
            case = EvalCase.model_validate(_normalize_entry(raw, skill_name))
        except ValidationError as error:
            field, message = _validation_message(error)
            yield DatasetError(path, message + _aliases_read(raw), entry=label, field=field)
            continue
        problem = expected_files(case, path.parent)
        if problem is not None:
            yield DatasetError(path, problem[1], entry=label, field=problem[0])
            continue
        key = duplicate_key(case.id)
        if key in seen:
            first, first_id = seen[key]
            if first_id == case.id:
                message = f"duplicate id {case.id!r} (entry {first} has the same id)"
            else:
                message = (
                    f"id {case.id!r} differs only in case from {first_id!r} (entry {first}); ids must differ in "
                    f"more than letter case, since case-insensitive file systems would mix their results"
                )
            yield DatasetError(path, message, entry=label, field="id")
            continue
        seen[key] = (index, case.id)
        yield case


def entry_key_typos(raw_entries: list[Any]) -> list[KeyTypo]:
    """Extra keys one or two edits from a known field, labelled like entry errors."""
    return near_miss_keys((_entry_label(index, raw), raw) for index, raw in enumerate(raw_entries))


def read_entries(path: Path, text: str) -> tuple[str, str | None, list[Any]]:
    """Parse the text and find its entries within the limits: (shape, skill_name, raw entries)."""
    return _checked_entries(path, _parse_text(path, text))


def parse_dataset(path: Path, text: str) -> Dataset:
    shape, skill_name, raw_entries = read_entries(path, text)
    cases: list[EvalCase] = []
    for outcome in entry_outcomes(path, skill_name, raw_entries):
        if isinstance(outcome, DatasetError):
            raise outcome
        cases.append(outcome)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Dataset(
        path=path,
        skill_name=skill_name,
        shape=shape,
        cases=cases,
        digest=digest,
        key_typos=entry_key_typos(raw_entries),
    )


def read_text(path: Path) -> str:
    """The dataset file's text, refusing what is too large or not UTF-8; raises DatasetError. A leading byte order
    mark (some Windows editors write one) is dropped, as JSON parsers may and as config.yml's reader does."""
    try:
        if path.lstat().st_size > MAX_DATASET_BYTES:
            raise DatasetError(path, f"larger than {MAX_DATASET_BYTES // (1024 * 1024)} MiB")
        return read_author_file(path, MAX_DATASET_BYTES).decode("utf-8-sig")
    except ParseLimitError as error:
        raise DatasetError(path, error.message) from None
    except UnicodeDecodeError:
        raise DatasetError(path, "is not UTF-8 text") from None
    except OSError as error:
        raise DatasetError(path, f"cannot be read: {error.strerror or error}") from None


def load_dataset(path: Path) -> Dataset:
    """Read and validate one dataset file; raises DatasetError."""
    return parse_dataset(path, read_text(path))
