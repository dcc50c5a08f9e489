"""A run_config.json an earlier release wrote, read as this release writes the same run, so `--resume` and
`--regrade` compare what was measured rather than how it was spelled.

Three differences are readings, not changes: models per agent stored as one string (`{"codex": "gpt-5"}`, before
one agent could run on several models) are that one model as a list; a setting the stored file does not name did
not exist when it was written, and that run went as the setting's default does; and the `judge` section's prose
(`reason`, why no judge ran) and keys added to it since (`model_source`) say nothing of their own: whether a judge
ran, which provider and model, its fallbacks, base URL and cache are still compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_core import to_jsonable_python

from pytest_skilleval.skill.settings import RunSettings, canonical_models

JUDGE_PROSE = ("reason",)


def as_current(stored: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """`stored` (a run folder's run_config.json) in the shape `current` (this session's) has."""
    config = dict(stored)
    if isinstance(config.get("agent_models"), dict):
        config["agent_models"] = canonical_models(config["agent_models"])
    for name, field in RunSettings.model_fields.items():
        if name not in config:
            config[name] = to_jsonable_python(field.get_default(call_default_factory=True))
    judge, now = config.get("judge"), current.get("judge")
    if isinstance(judge, dict) and isinstance(now, dict):
        added = {key: value for key, value in now.items() if key not in judge}
        prose = {key: now[key] for key in JUDGE_PROSE if key in now and judge.get("enabled") == now.get("enabled")}
        config["judge"] = {**judge, **added, **prose}
    return config
