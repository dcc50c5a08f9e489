"""The shipped evals.json schema matches the models and accepts what the loader accepts."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pytest_skilleval.skill.dataset_schema import SCHEMA_PATH, render

REPO = Path(__file__).resolve().parents[2]


def test_shipped_schema_is_in_sync_with_the_models() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render(), (
        "regenerate with: python -m pytest_skilleval.skill.dataset_schema"
    )


def test_demo_dataset_validates() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    data = json.loads((REPO / "examples/hello-skill/evals/evals.json").read_text())
    jsonschema.validate(data, schema)


@pytest.mark.parametrize(
    "data",
    [
        {"skill_name": "s", "evals": []},
        {"skill_name": "s", "evals": [{"id": "has space", "prompt": "p", "expected_output": "e"}]},
        {"skill_name": "s", "evals": [{"id": "ok", "expected_output": "e"}]},
        {"skill_name": "s", "evals": [{"id": "ok", "prompt": "p"}]},
        {"evals": [{"id": "ok", "prompt": "p", "expected_output": "e"}]},
    ],
)
def test_schema_rejects_broken_datasets(data: object) -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)


def test_schema_accepts_legacy_lists() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate([{"id": 3, "question": "q", "ground_truth": "g", "acceptable_alternates": "a,b"}], schema)
