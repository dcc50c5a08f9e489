"""`skilleval validate`'s checks of a trigger set (evals/triggers.json): it loads as a run loads it, its inputs
stage, and its ids do not share a replay with a case."""

from __future__ import annotations

from pytest_skilleval.authoring.findings import ValidationContext
from pytest_skilleval.skill.case_inputs import StagingError, input_sources
from pytest_skilleval.skill.dataset import DatasetError
from pytest_skilleval.skill.triggers import TRIGGER_NAMES, find_trigger_set, load_trigger_set


def check_trigger_set(ctx: ValidationContext) -> list[str] | None:
    """The trigger set's query ids (None: no trigger set, or one that does not load), its problems added to ctx."""
    present = [name for name in TRIGGER_NAMES if (ctx.evals_dir / name).is_file()]
    if len(present) > 1:
        ctx.add("multiple-trigger-sets", "error", f"more than one trigger set ({', '.join(present)}); keep one")
    path = find_trigger_set(ctx.evals_dir)
    if path is None:
        return None
    try:
        triggers = load_trigger_set(path)
    except DatasetError as error:
        ctx.add("trigger-set-invalid", "error", str(error).removeprefix(f"{path}: "), path)
        return None
    case_ids = {case.id.casefold() for case in ctx.valid_cases}
    for query in triggers.queries:
        try:
            input_sources(ctx.evals_dir, list(query.files or []), query.id)
        except StagingError as error:
            ctx.add("trigger-files", "error", str(error), path)
        if query.id.casefold() in case_ids:
            ctx.add(
                "trigger-id-shared",
                "error",
                f"query {query.id!r} has a case's id: both would replay evals/replays/{query.id}.json (a run refuses "
                "it); rename one",
                path,
            )
    return [query.id for query in triggers.queries]
