"""The JSON Schema of result.json: generated from `ResultDocument`, shipped as a file, and checked on write."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from pytest_skilleval.results.models import ResultDocument

__all__ = ["SCHEMA_ID", "render_result_schema", "result_schema", "validate_result"]

SCHEMA_ID = "https://pytest-skilleval.dev/schemas/result.schema.json"


def result_schema() -> dict[str, Any]:
    """The JSON Schema for result.json, generated from `ResultDocument`."""
    schema = ResultDocument.model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def render_result_schema() -> str:
    """The text shipped as `schemas/result.schema.json` (a unit test keeps the file in sync)."""
    return json.dumps(result_schema(), indent=2, sort_keys=True) + "\n"


@lru_cache(maxsize=1)
def _shipped_schema() -> dict[str, Any]:
    text = resources.files("pytest_skilleval").joinpath("schemas/result.schema.json").read_text("utf-8")
    return json.loads(text)


def validate_result(document: Mapping[str, Any], *, every_trial: bool = True) -> None:
    """Raise jsonschema.ValidationError unless `document` matches the shipped result.json schema.

    With `every_trial=False` the trial entries, and each arm's per-case pass@k entries, are checked once per
    distinct shape (which keys hold which JSON types) rather than one by one: the entries are dumps of one pydantic
    model, so entries of the same shape pass or fail together, and the check stays linear with a small constant
    at 20,000 trials.
    """
    import jsonschema  # slow to import: when a run is written (or warmed up), not at pytest's start

    if not every_trial:
        document = _one_of_each_shape(document)
    jsonschema.Draft202012Validator(_shipped_schema()).validate(document)


def _one_of_each_shape(document: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the document whose repeated entries (trials, per-case pass@k) keep one per shape."""
    reduced = dict(document)
    if isinstance(document.get("trials"), list):
        reduced["trials"] = _one_per_shape(document["trials"])
    agents = document.get("agents")
    if isinstance(agents, dict):
        reduced["agents"] = {name: _agent_one_of_each_shape(agent) for name, agent in agents.items()}
    return reduced


def _agent_one_of_each_shape(agent: Any) -> Any:
    if not isinstance(agent, dict):
        return agent
    reduced = dict(agent)
    for arm, summary in agent.items():
        pass_at_k = summary.get("pass_at_k") if isinstance(summary, dict) else None
        if isinstance(pass_at_k, dict) and isinstance(pass_at_k.get("cases"), dict):
            shapes: dict[Any, tuple[str, Any]] = {}
            for case, entry in pass_at_k["cases"].items():
                shapes.setdefault(_shape(entry), (case, entry))
            reduced[arm] = {**summary, "pass_at_k": {**pass_at_k, "cases": dict(shapes.values())}}
    return reduced


def _shape(value: Any) -> Any:
    """Which keys hold which JSON types, recursively. Keys in the order given: the entries are dumps of one model,
    so the same shape comes with the same order (another order only means one more entry checked)."""
    if isinstance(value, dict):
        return tuple([(key, _shape(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", tuple(sorted({_shape(item) for item in value}, key=repr)))
    return type(value)


def _one_per_shape(trials: list[Any]) -> list[Any]:
    shapes: dict[Any, Any] = {}
    for trial in trials:
        shapes.setdefault(_shape(trial), trial)
    return list(shapes.values())


if __name__ == "__main__":  # regenerate the shipped schema: python -m pytest_skilleval.results.result_schema
    from pathlib import Path

    target = Path(__file__).parents[1] / "schemas" / "result.schema.json"
    target.write_text(render_result_schema(), encoding="utf-8")
    print(f"wrote {target}")
