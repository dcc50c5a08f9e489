"""The published JSON Schema of `evals.json`, generated from the `EvalCase` model.

The file `schemas/evals.schema.json` is this function's output; a test keeps the two in sync. Editors validate a
dataset with it through `"$schema"`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_skilleval.skill.case_ids import MAX_CASE_ID_LENGTH
from pytest_skilleval.skill.dataset import FIELD_ALIASES, EvalCase

SCHEMA_PATH = Path(__file__).parents[1] / "schemas" / "evals.schema.json"
SCHEMA_ID = "https://pytest-skilleval.invalid/schemas/evals.schema.json"
INTERNAL_FIELDS = {"files_given", "expected_skill_given", "aliases_not_read"}


# Filled in by the loader from a file_equals check's `text` or `file`: never authored.
LOADER_CHECK_FIELDS = ("expected_sha256", "expected_size")


def _check_defs(defs: dict[str, Any]) -> dict[str, Any]:
    """The check models' definitions, without the fields only the loader sets."""
    for definition in defs.values():
        properties = definition.get("properties", {})
        for name in LOADER_CHECK_FIELDS:
            properties.pop(name, None)
        if "paths" in properties:  # one glob or a list of them
            properties["paths"] = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    return defs


def _entry_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    schema = EvalCase.model_json_schema()
    properties: dict[str, Any] = {k: v for k, v in schema["properties"].items() if k not in INTERNAL_FIELDS}
    properties["id"] = {
        "description": "Case id: starts with a letter or digit; ASCII letters, digits, '.', '_', '-'.",
        "anyOf": [
            {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]*$", "maxLength": MAX_CASE_ID_LENGTH},
            {"type": "integer"},
        ],
    }
    properties["files"] = {
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}, {"type": "null"}]
    }
    properties["acceptable_skills"] = {"anyOf": [{"type": "string"}, {"type": "array"}, {"type": "null"}]}
    assertion = {
        "anyOf": [
            {"type": "string"},
            {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
            {"type": "object", "required": ["description"], "properties": {"description": {"type": "string"}}},
        ]
    }
    properties["assertions"] = {
        "description": "Behaviours to check: strings, or objects whose `text` (or `name: description`) is read.",
        "anyOf": [{"type": "string"}, {"type": "array", "items": assertion}, {"type": "null"}],
    }
    for alias, target in FIELD_ALIASES.items():
        properties[alias] = {**properties[target], "description": f"Alias of {target}."}
    for spec in properties.values():
        spec.pop("title", None)
        spec.pop("default", None)
    # Each required field may come under its runtime or its legacy name.
    required = [
        {"required": ["id"]},
        {"anyOf": [{"required": ["prompt"]}, {"required": ["question"]}, {"required": ["query"]}]},
        {"anyOf": [{"required": ["expected_output"]}, {"required": ["ground_truth"]}]},
    ]
    entry = {"type": "object", "properties": properties, "allOf": required, "additionalProperties": True}
    return entry, _check_defs(schema.get("$defs", {}))


def dataset_json_schema() -> dict[str, Any]:
    entry, check_defs = _entry_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "pytest-skilleval eval dataset",
        "description": "The agentskills shape {skill_name, evals: [...]} or a legacy flat list of entries.",
        "$defs": {"entry": entry, **check_defs},
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "$schema": {"type": "string"},
                    "skill_name": {"type": "string", "minLength": 1},
                    "evals": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/entry"}},
                },
                "required": ["skill_name", "evals"],
            },
            {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/entry"}},
        ],
    }


def render() -> str:
    return json.dumps(dataset_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(render(), encoding="utf-8")
