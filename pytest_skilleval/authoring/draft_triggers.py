"""Drafting a trigger set (`evals/triggers.json`) from a skill's SKILL.md through litellm, for
`skilleval create-eval-dataset --full`.

Its own request, after the cases': one reply has one shape (a JSON list, the trigger reader's), a bad trigger reply
never costs the drafted cases, and a rerun can ask for the trigger set alone. The model writes should-trigger
queries and near-miss should-not-trigger ones; the held-out split is ours, not the model's: of each kind, 2 queries
in every 5 are `"split": "test"`, so the held-out set always has both kinds and, with at least MIN_PER_KIND of each,
the size `skilleval optimize-description` needs (checked by its own `held_out_split`). The text is checked by the
reader a run uses before anyone writes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilleval.authoring.draft_dataset import (
    DraftError,
    drafting_config,
    error_place,
    one_line,
    read_skill_md,
    request_draft,
    skill_name_of,
)
from pytest_skilleval.authoring.optimize_description import OptimizeError, held_out_split
from pytest_skilleval.skill.dataset import DatasetError
from pytest_skilleval.skill.triggers import TriggerSet, parse_trigger_set
from verifier.judges.jsontext import extract_json

MIN_PER_KIND = 4  # should-trigger and should-not-trigger queries each: 2 of them held out, 2 to train on
MAX_QUERIES = 40
HELD_OUT_OF_FIVE = (1, 3)  # positions (mod 5) within a kind that go to the test split: 40%


@dataclass(frozen=True)
class TriggerDraft:
    """A drafted trigger set the run's reader accepted: its text (as written) and the parsed set."""

    text: str
    triggers: TriggerSet


def trigger_prompt(skill_name: str, skill_md: str) -> str:
    """What the drafting model is asked: a JSON list of should-trigger and near-miss should-not-trigger queries."""
    entry = (
        '{"id": "short-kebab-id", "query": "what a user types", "should_trigger": true, '
        '"note": "why this query is here"}'
    )
    return (
        "You draft a trigger set for an agent skill: requests given to a coding agent that has this skill installed "
        "among others, each saying whether the agent should load this skill for it. The skill's SKILL.md is between "
        "the markers.\n<<<SKILL.md\n" + skill_md + "\nSKILL.md>>>\n\n"
        f'Write 6 to 10 should-trigger queries ("should_trigger": true): realistic requests this skill is for, '
        "varied in wording and length, several that never name the skill nor its keywords. Write 6 to 10 "
        'near-miss should-not-trigger queries ("should_trigger": false): requests that share words or shape with '
        f"the skill's job but that {skill_name} should not handle (another tool or skill, or none, fits better); "
        "no obviously unrelated requests.\n\n"
        f"Answer with ONE JSON list and nothing else: [{entry}, ...]. Ids are letters, digits, '.', '_' or '-', "
        "unique; no other fields."
    )


def _entries(reply: str) -> list[Any]:
    document = extract_json(reply)
    if isinstance(document, dict) and list(document) == ["queries"]:
        document = document["queries"]  # a list wrapped in one key is still the list asked for
    if not isinstance(document, list):
        raise DraftError(
            'the drafting model\'s trigger reply is not one JSON list of {"query", "should_trigger"} entries: '
            + one_line(reply, 160)
        )
    return document


def with_split(entries: list[Any]) -> list[Any]:
    """The entries with our held-out split: within each kind, positions 1 and 3 of every 5 are test, others train.
    An entry that is not an object, or has no boolean should_trigger, is left for the reader to name."""
    seen = {True: 0, False: 0}
    out: list[Any] = []
    for entry in entries:
        kind = entry.get("should_trigger") if isinstance(entry, dict) else None
        if not isinstance(kind, bool):
            out.append(entry)
            continue
        split = "test" if seen[kind] % 5 in HELD_OUT_OF_FIVE else "train"
        seen[kind] += 1
        out.append({**entry, "split": split})
    return out


def parse_triggers(reply: str, path: Path, taken_ids: Iterable[str] = ()) -> TriggerDraft:
    """The reply's JSON list, split and checked the way a run reads `path`, plus the drafting rules: at least
    MIN_PER_KIND queries of each kind, no input files, no id a case already has, and a held-out split
    `optimize-description` accepts. Nothing is written."""
    entries = _entries(reply)
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and entry.get("files"):
            raise DraftError(f"drafted trigger query {index + 1}: field 'files': a drafted query carries no inputs")
    text = json.dumps(with_split(entries), indent=2, ensure_ascii=False) + "\n"
    try:
        triggers = parse_trigger_set(path, text)
    except DatasetError as error:
        place = error_place(error)
        raise DraftError(
            f"the drafted trigger set fails validation: {error.message}" + (f" ({place})" if place else "")
        ) from None
    should = sum(1 for query in triggers.queries if query.should_trigger)
    should_not = len(triggers.queries) - should
    if min(should, should_not) < MIN_PER_KIND or len(triggers.queries) > MAX_QUERIES:
        raise DraftError(
            f"a drafted trigger set needs at least {MIN_PER_KIND} should-trigger and {MIN_PER_KIND} should-not-trigger "
            f"queries, at most {MAX_QUERIES} in all; the model returned {should} and {should_not}"
        )
    cases = {case_id.casefold() for case_id in taken_ids}
    shared = [query.id for query in triggers.queries if query.id.casefold() in cases]
    if shared:
        raise DraftError(f"drafted trigger query {shared[0]!r} has a case's id (both would replay one file)")
    try:
        held_out_split(triggers)
    except OptimizeError as error:
        raise DraftError(f"the drafted trigger set cannot be optimised: {error}") from None
    return TriggerDraft(text=text, triggers=triggers)


def draft_trigger_set(skill_dir: Path, *, model: str | None, target: Path, taken_ids: Iterable[str]) -> TriggerDraft:
    """Ask the model for a trigger set for `skill_dir` and check it as `target` would be read. Nothing is written."""
    config = drafting_config(model)
    prompt = trigger_prompt(skill_name_of(skill_dir), read_skill_md(skill_dir))
    return parse_triggers(request_draft(config, prompt), target, taken_ids)
