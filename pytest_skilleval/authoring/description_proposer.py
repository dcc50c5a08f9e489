"""The proposer of `optimize-description`: one LLM request for a better SKILL.md `description`, and the front matter
edit that puts a description in place.

The request goes through the judges' client (`verifier.judges.client.request_once`: the same provider settings,
retries, waits and time budget) and its answers are kept in the judges' cache, keyed by the model and the whole
prompt, so a rerun asks nothing it already asked. The proposer sees the current description, the SKILL.md body and
the train split's failures; the test split never reaches the prompt.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from pytest_skilleval.skill.bounded_yaml import yaml_error_message
from pytest_skilleval.skill.skill_md import MAX_DESCRIPTION_CHARS, find_front_matter, front_matter_data

MAX_BODY_CHARS = 8000
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"description": {"type": "string", "minLength": 1, "maxLength": MAX_DESCRIPTION_CHARS}},
    "required": ["description"],
    "additionalProperties": False,
}


class ProposerError(Exception):
    """The proposer could not give a usable description; the message says why."""


@dataclass(frozen=True)
class Failure:
    """A train query the current description got wrong."""

    query: str
    should_trigger: bool


@dataclass(frozen=True)
class Proposal:
    description: str
    cached: bool
    # USD the request cost as litellm prices it (its installed price map, as for the judges): 0.0 from the cache,
    # None for a model the price map does not know (missing, never zero).
    cost_usd: float | None = 0.0


def front_matter(text: str) -> tuple[dict[str, Any], str, str]:
    """(front matter as data, its raw text, the body) of a SKILL.md, read as validate reads it (skill/skill_md.py);
    raises ValueError without one."""
    found = find_front_matter(text)
    if found is None:
        raise ValueError("SKILL.md has no front matter (a block between --- lines at the top)")
    try:
        data = front_matter_data(found.block) or {}
    except yaml.YAMLError as error:
        raise ValueError(f"SKILL.md's front matter is not valid YAML ({yaml_error_message(error)})") from None
    if not isinstance(data, dict):
        raise ValueError("SKILL.md's front matter is not a mapping")
    return data, found.block, text[found.close :].lstrip("\r\n")


def description_of(text: str) -> str:
    data, _, _ = front_matter(text)
    value = data.get("description")
    if not isinstance(value, str) or not value.strip():
        raise ValueError("SKILL.md's front matter has no description")
    return value.strip()


def with_description(text: str, description: str) -> str:
    """SKILL.md with its front matter's description replaced (every other line kept as it was, line endings too)."""
    found = find_front_matter(text)
    if found is None:
        raise ValueError("SKILL.md has no front matter")
    lines = found.block.splitlines(keepends=True)
    out: list[str] = []
    skipping = False
    for line in lines:
        if skipping and (line.startswith((" ", "\t")) or not line.strip()):
            continue
        skipping = False
        if re.match(r"description\s*:", line):
            ending = "\r\n" if line.endswith("\r\n") else "\n"
            out.append(f"description: {json.dumps(description, ensure_ascii=False)}{ending}")
            skipping = True
            continue
        out.append(line)
    front = "".join(out)
    replaced = text[: found.start] + front + text[found.end :]
    if description_of(replaced) != description.strip():
        raise ValueError("the new description did not survive a round trip through the front matter")
    return replaced


def prompt_for(
    skill: str, current: str, body: str, failures: Sequence[Failure], history: Sequence[tuple[str, float | None]]
) -> str:
    """The proposer's prompt: only train material (the held-out queries are never passed here)."""
    missed = [f"- {json.dumps(f.query)}" for f in failures if f.should_trigger]
    false = [f"- {json.dumps(f.query)}" for f in failures if not f.should_trigger]
    tried = [f"- accuracy {'n/a' if score is None else f'{score:.2f}'}: {json.dumps(text)}" for text, score in history]
    return "\n".join(
        [
            f"You improve the `description` of the agent skill {skill!r}. An agent sees only each installed skill's "
            "name and description and decides from them whether to load the skill for a request. Write a "
            "description that makes it load this skill for the requests it serves and not for others (some of the "
            "other installed skills do related work).",
            "",
            f"Current description: {json.dumps(current)}",
            "",
            "SKILL.md body:",
            body[:MAX_BODY_CHARS],
            "",
            "Requests where the agent should have loaded the skill and did not:",
            *(missed or ["- none"]),
            "",
            "Requests where the agent loaded the skill though it should not have:",
            *(false or ["- none"]),
            "",
            "Descriptions tried so far, with their accuracy on these requests:",
            *(tried or ["- none"]),
            "",
            f'Answer with one JSON object, {{"description": "..."}}, at most {MAX_DESCRIPTION_CHARS} characters: '
            "what the skill does and when to use it.",
        ]
    )


def propose(prompt: str, config: Any, cache: Any) -> Proposal:
    """One description from the proposer, or from the cache when this exact prompt was answered before."""
    from verifier.judges.cache import cache_key
    from verifier.judges.client import JudgeRequestError, request_once
    from verifier.judges.jsontext import extract_json

    key = cache_key({"kind": "optimize-description", "model": config.model, "prompt": prompt})
    stored = cache.get(key)
    if stored is not None and isinstance(stored.get("description"), str):
        return Proposal(stored["description"], cached=True, cost_usd=0.0)
    deadline = time.monotonic() + config.time_budget
    try:
        reply = asyncio.run(request_once(config, config.model, prompt, "description", SCHEMA, deadline))
    except JudgeRequestError as error:
        raise ProposerError(f"the proposer ({config.model}) failed: {error}") from None
    answer = extract_json(reply.text)
    description = answer.get("description") if isinstance(answer, dict) else None
    if not isinstance(description, str) or not description.strip():
        raise ProposerError(f'the proposer ({config.model}) did not answer {{"description": ...}}')
    description = description.strip()[:MAX_DESCRIPTION_CHARS]
    cache.put(key, {"description": description})
    return Proposal(description, cached=False, cost_usd=reply.cost_usd)
