"""Reading a skill's trigger set, `evals/triggers.json` (or .jsonl/.yaml/.yml), into validated `TriggerQuery`s.

A trigger set asks one question per query: given this request, and the skill installed among others, does the
agent load the skill? The file is a top-level list, in skill-creator's shape `[{"query", "should_trigger"}]` or
ours (the same entries with `id`, `files`, `note` and `split`). An entry without `id` gets `query-<n>` (its
1-based position), so a skill-creator file runs as is. Every problem is one `DatasetError` naming the file, the
entry and the field.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from pytest_skilleval.skill.case_ids import MAX_CASE_ID_LENGTH, canonical_case_id, duplicate_key
from pytest_skilleval.skill.dataset import (
    MAX_ENTRIES,
    DatasetError,
    _entry_label,
    _parse_text,
    _validation_message,
    read_text,
    unknown_field,
)
from pytest_skilleval.skill.foreign_formats import CRUCIBLE, foreign_layout

TRIGGER_NAMES: tuple[str, ...] = ("triggers.json", "triggers.jsonl", "triggers.yaml", "triggers.yml")
AGENT_SKILL_EVAL_QUERIES = "eval_queries.json"  # agent-skill-eval's name for its trigger set (not read; named)
SCHEMA_PATH = Path(__file__).parents[1] / "schemas" / "triggers.schema.json"
SCHEMA_ID = "https://pytest-skilleval.invalid/schemas/triggers.schema.json"
Split = Literal["train", "test"]


class TriggerQuery(BaseModel):
    """One query of a trigger set: the request the agent gets, and whether the skill under test should load."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, BeforeValidator(canonical_case_id)] = Field(
        description="Query id (case-id rules); default `query-<n>`, the entry's 1-based position."
    )
    query: str = Field(description="The request given to the agent as its task.")
    should_trigger: bool = Field(description="Whether the agent should load the skill under test for this query.")
    files: list[str] | None = Field(
        default=None, description="Inputs relative to evals/, as a case's `files`; omitted or null: none."
    )
    note: str | None = Field(default=None, description="Why this query is here (a near miss, a paraphrase, ...).")
    split: Split | None = Field(
        default=None, description="train or test: `optimize-description` shows only train failures to the proposer."
    )

    @field_validator("query", mode="before")
    @classmethod
    def _non_empty_query(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("should_trigger", mode="before")
    @classmethod
    def _strict_bool(cls, value: Any) -> Any:
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value

    @field_validator("files", mode="before")
    @classmethod
    def _file_list(cls, value: Any) -> list[str] | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
            raise ValueError("must be a list of paths relative to evals/")
        return value

    def entry_json(self) -> dict[str, Any]:
        """What the trial's entry.json and the run's snapshot record of this query."""
        return self.model_dump(mode="json", exclude_none=True)


class TriggerSet(BaseModel):
    """A validated trigger set and the digest of its text."""

    path: Path
    queries: list[TriggerQuery]
    digest: str

    def split(self, name: Split) -> list[TriggerQuery]:
        return [query for query in self.queries if query.split == name]


def find_trigger_set(evals_dir: Path) -> Path | None:
    """The skill's trigger set: the first of TRIGGER_NAMES that exists."""
    for name in TRIGGER_NAMES:
        candidate = evals_dir / name
        if candidate.is_file():
            return candidate
    return None


def case_id_clashes(queries: Iterable[TriggerQuery], case_ids: Iterable[str]) -> list[str]:
    """One line per query whose id is a case's (a dataset entry's or a native task's; compared case-folded, as
    duplicate ids are): both would replay evals/replays/<id>.json and share its trials' names. A run and validate
    refuse it with this line."""
    taken = {case_id.casefold() for case_id in case_ids}
    return [
        f"query {query.id!r} has a case's id: both would replay evals/replays/{query.id}.json and share its trials' "
        "names; rename the query (give it an `id`)"
        for query in queries
        if query.id.casefold() in taken
    ]


def unread_trigger_set(evals_dir: Path) -> str | None:
    """The line naming agent-skill-eval's trigger set (`evals/eval_queries.json`, a list of `query` and
    `should_trigger`: skill-creator's shape, which ours reads as is) and the copy that makes it ours; None when there is
    none, or a trigger set of ours is beside it."""
    source = evals_dir / AGENT_SKILL_EVAL_QUERIES
    if not source.is_file() or find_trigger_set(evals_dir) is not None:
        return None
    return (
        f"{source} is agent-skill-eval's trigger set, which is not read under that name; its list of query and "
        f"should_trigger is the shape of ours: cp {source} {evals_dir / TRIGGER_NAMES[0]} (docs/triggering.md)"
    )


def _entry(path: Path, index: int, raw: Any) -> TriggerQuery:
    label = _entry_label(index, raw)
    if not isinstance(raw, Mapping):
        raise DatasetError(
            path, f"must be an object with query and should_trigger, not {type(raw).__name__}", entry=label
        )
    data = dict(raw)
    unknown = [str(key) for key in data if key not in TriggerQuery.model_fields]
    if unknown:
        raise DatasetError(
            path,
            unknown_field(unknown[0], list(TriggerQuery.model_fields), "a trigger entry"),
            entry=label,
            field=unknown[0],
        )
    data.setdefault("id", f"query-{index + 1}")
    try:
        return TriggerQuery.model_validate(data)
    except ValidationError as error:
        field, message = _validation_message(error)
        raise DatasetError(
            path, "is required" if message == "Field required" else message, entry=label, field=field
        ) from None


def parse_trigger_set(path: Path, text: str) -> TriggerSet:
    data = _parse_text(path, text)
    if not isinstance(data, list):
        if isinstance(data, Mapping) and "cases" in data and foreign_layout(path.parent) == CRUCIBLE:
            raise DatasetError(path, CRUCIBLE)
        kind = type(data).__name__ if data is not None else "nothing"
        raise DatasetError(path, f"must be a list of {{\"query\", \"should_trigger\"}} entries, not {kind}")
    if not data:
        raise DatasetError(path, "the trigger set has no queries")
    if len(data) > MAX_ENTRIES:
        raise DatasetError(path, f"has {len(data):,} entries; the limit per trigger set is {MAX_ENTRIES:,}")
    queries: list[TriggerQuery] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(data):
        query = _entry(path, index, raw)
        key = duplicate_key(query.id)
        if key in seen:
            raise DatasetError(
                path,
                f"id {query.id!r} is used by entry {seen[key]} too (ids must differ in more than letter case)",
                entry=_entry_label(index, raw),
                field="id",
            )
        seen[key] = index
        queries.append(query)
    return TriggerSet(path=path, queries=queries, digest=hashlib.sha256(text.encode("utf-8")).hexdigest())


def load_trigger_set(path: Path) -> TriggerSet:
    """Read and validate one trigger set; raises DatasetError."""
    return parse_trigger_set(path, read_text(path))


def trigger_json_schema() -> dict[str, Any]:
    """The published JSON Schema of a trigger set (`schemas/triggers.schema.json`; a test keeps them in sync)."""
    entry = TriggerQuery.model_json_schema()
    entry.pop("title", None)
    entry["required"] = ["query", "should_trigger"]
    entry["properties"]["id"] = {
        "description": entry["properties"]["id"]["description"],
        "anyOf": [
            {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]*$", "maxLength": MAX_CASE_ID_LENGTH},
            {"type": "integer"},
        ],
    }
    entry["properties"]["query"]["minLength"] = 1
    for spec in entry["properties"].values():
        spec.pop("title", None)
        spec.pop("default", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "pytest-skilleval trigger set",
        "description": "A list of queries, each saying whether the skill under test should load for it.",
        "type": "array",
        "minItems": 1,
        "items": entry,
    }


def render_schema() -> str:
    return json.dumps(trigger_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # regenerate the shipped schema: python -m pytest_skilleval.skill.triggers
    SCHEMA_PATH.write_text(render_schema(), encoding="utf-8")
