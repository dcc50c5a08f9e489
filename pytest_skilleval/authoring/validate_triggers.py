"""`skilleval validate`'s checks of a trigger set (evals/triggers.json): it loads as a run loads it, its inputs
stage, and its ids do not share a replay with a case."""

from __future__ import annotations

from pytest_skilleval.authoring.findings import ValidationContext
from pytest_skilleval.skill.case_inputs import StagingError, input_sources
from pytest_skilleval.skill.dataset import DatasetError
from pytest_skilleval.skill.plan import native_case_names
from pytest_skilleval.skill.triggers import TRIGGER_NAMES, case_id_clashes, find_trigger_set, load_trigger_set


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
    for query in triggers.queries:
        try:
            input_sources(ctx.evals_dir, list(query.files or []), query.id)
        except StagingError as error:
            ctx.add("trigger-files", "error", str(error), path)
    case_ids = [case.id for case in ctx.valid_cases] + native_case_names(ctx.evals_dir)
    for clash in case_id_clashes(triggers.queries, case_ids):
        ctx.add("trigger-id-shared", "error", clash, path)
    return [query.id for query in triggers.queries]
