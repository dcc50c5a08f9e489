"""`skilleval create-eval-dataset SKILL_DIR [--full]`: draft the skill's evals/evals.json from its SKILL.md, and with
`--full` its trigger set, evals/triggers.json, too.

Never over an existing source: a skill that already has a dataset or native tasks keeps them, and one whose
existing dataset is invalid is an error (fix it or remove it), never replaced; the same holds for a trigger set.
With `--full`, whichever of the two is missing is drafted, so a rerun after a bad trigger reply asks for the trigger
set alone. The cases are written as soon as they pass; a bad trigger reply then leaves them and says so.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_skilleval.authoring.draft_dataset import DraftError, draft_dataset, existing_source, write_new
from pytest_skilleval.authoring.draft_triggers import draft_trigger_set
from pytest_skilleval.skill.dataset import DatasetError, load_dataset
from pytest_skilleval.skill.triggers import TRIGGER_NAMES, TriggerSet, load_trigger_set


class TriggersNotDrafted(DraftError):
    """The cases were written (`dataset`), the trigger set was not: the message says which file was kept and why."""

    def __init__(self, message: str, dataset: Path) -> None:
        super().__init__(message)
        self.dataset = dataset


@dataclass
class Created:
    """What one command wrote: the dataset and/or the trigger set (None: not written by this command)."""

    dataset: Path | None = None
    triggers: TriggerSet | None = None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skilleval create-eval-dataset",
        description="Draft evals/evals.json (and with --full evals/triggers.json) from SKILL.md through an LLM "
        "(litellm); each is checked before it is written.",
    )
    parser.add_argument("skill_dir", metavar="SKILL_DIR")
    parser.add_argument(
        "--full",
        action="store_true",
        help="a covering set (positive cases, near-miss negative controls, assertions) instead of one starter case, "
        "and a trigger set with a held-out split (evals/triggers.json)",
    )
    parser.add_argument(
        "--model",
        help="litellm model name; default: the judge/LLM model settings (SKILL_EVAL_LLM_MODEL, LLM_JUDGE_MODEL, "
        "SKILL_EVAL_JUDGE_MODEL, or SKILL_EVAL_LLM_PROVIDER's default)",
    )
    return parser


def _checked_source(evals: Path) -> Path | None:
    """The existing evaluation source, if any; an invalid dataset is an error, never replaced."""
    source = existing_source(evals)
    if source is not None and source.is_file():
        try:
            load_dataset(source)
        except DatasetError as error:
            raise DraftError(f"existing source is invalid and is not replaced: {error}") from None
    return source


def _checked_trigger_source(evals: Path) -> Path | None:
    """The existing trigger set (any of TRIGGER_NAMES, a link included), if any; an invalid one is an error."""
    for name in TRIGGER_NAMES:
        path = evals / name
        if path.is_symlink():
            raise DraftError(f"{path}: is a link; an existing trigger set is never replaced or followed")
        if path.exists():
            try:
                load_trigger_set(path)
            except DatasetError as error:
                raise DraftError(f"existing trigger set is invalid and is not replaced: {error}") from None
            return path
    return None


def _case_ids(evals: Path) -> list[str]:
    """The ids of the skill's cases (dataset and native task folders): a trigger query may not share one."""
    source = existing_source(evals)
    ids = [case.id for case in load_dataset(source).cases] if source is not None and source.is_file() else []
    harbor = evals / "harbor"
    return ids + ([task.parent.name for task in harbor.glob("*/task.toml")] if harbor.is_dir() else [])


def create_eval_dataset(skill_dir: Path, *, full: bool, model: str | None) -> Created:
    """Write what is missing of SKILL_DIR/evals/evals.json (and with `full` evals/triggers.json) from validated
    drafts; DraftError says why nothing was written, TriggersNotDrafted that only the cases were."""
    if not (skill_dir / "SKILL.md").is_file():
        raise DraftError(f"{skill_dir}: no SKILL.md here; create-eval-dataset drafts from a skill's SKILL.md")
    evals = skill_dir / "evals"
    if evals.is_symlink():
        raise DraftError(f"{evals}: is a link; refusing to write through it")
    source = _checked_source(evals)
    trigger_source = _checked_trigger_source(evals) if full else None
    if source is not None and (not full or trigger_source is not None):
        kept = f"{source}" + (f" and {trigger_source}" if trigger_source is not None else "")
        raise DraftError(f"{kept}: an evaluation source already exists; nothing written (it is never replaced)")
    created = Created()
    if source is None:
        target = evals / "evals.json"
        draft = draft_dataset(skill_dir, full=full, model=model, target=target)
        write_new(target, draft.text)
        created.dataset = target
    if full and trigger_source is None:
        target = evals / "triggers.json"
        try:
            drafted = draft_trigger_set(skill_dir, model=model, target=target, taken_ids=_case_ids(evals))
            write_new(target, drafted.text)
        except (DraftError, OSError) as error:
            if created.dataset is None:
                raise
            raise TriggersNotDrafted(
                f"{created.dataset} was written and is kept; {target} was not: {error}; run the same command again "
                "to draft the trigger set alone",
                created.dataset,
            ) from None
        created.triggers = drafted.triggers
    return created


def _say(created: Created) -> None:
    if created.dataset is not None:
        cases = load_dataset(created.dataset).cases
        negatives = sum(1 for case in cases if not case.expected_skill)
        print(f"wrote {created.dataset}: {len(cases)} case(s), {negatives} negative control(s)")
    if created.triggers is not None:
        queries = created.triggers.queries
        should = sum(1 for query in queries if query.should_trigger)
        print(
            f"wrote {created.triggers.path}: {len(queries)} trigger queries, {should} should-trigger and "
            f"{len(queries) - should} should-not-trigger, {len(created.triggers.split('test'))} held out "
            '("split": "test")'
        )


def run_create_eval_dataset(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    skill_dir = Path(args.skill_dir)
    try:
        created = create_eval_dataset(skill_dir, full=args.full, model=args.model)
    except TriggersNotDrafted as error:
        _say(Created(dataset=error.dataset))
        print(f"skilleval create-eval-dataset: {error}", file=sys.stderr)
        return 1
    except (DraftError, OSError) as error:
        print(f"skilleval create-eval-dataset: {error}", file=sys.stderr)
        return 1
    _say(created)
    print("review the draft before you rely on it: a model wrote it")
    print(f"next: pytest --skill-eval {skill_dir}")
    if created.triggers is not None:
        print(f"then: skilleval optimize-description {skill_dir} (measures and improves the description's triggering)")
    return 0
