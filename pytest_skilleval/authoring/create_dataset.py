"""`skilleval create-eval-dataset SKILL_DIR [--full]`: draft the skill's evals/evals.json from its SKILL.md.

Never over an existing source: a skill that already has a dataset or native tasks is left alone, and one whose
existing dataset is invalid is an error (fix it or remove it), never replaced.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_skilleval.authoring.draft_dataset import DraftError, draft_dataset, existing_source, write_new
from pytest_skilleval.skill.dataset import DatasetError, load_dataset


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skilleval create-eval-dataset",
        description="Draft evals/evals.json from SKILL.md through an LLM (litellm); checked before it is written.",
    )
    parser.add_argument("skill_dir", metavar="SKILL_DIR")
    parser.add_argument(
        "--full",
        action="store_true",
        help="a covering set (positive cases, near-miss negative controls, assertions) instead of one starter case",
    )
    parser.add_argument(
        "--model",
        help="litellm model name; default: the judge/LLM model settings (SKILL_EVAL_LLM_MODEL, LLM_JUDGE_MODEL, "
        "SKILL_EVAL_JUDGE_MODEL, or SKILL_EVAL_LLM_PROVIDER's default)",
    )
    return parser


def create_eval_dataset(skill_dir: Path, *, full: bool, model: str | None) -> Path:
    """Write SKILL_DIR/evals/evals.json from a validated draft and return its path; DraftError says why not."""
    if not (skill_dir / "SKILL.md").is_file():
        raise DraftError(f"{skill_dir}: no SKILL.md here; create-eval-dataset drafts from a skill's SKILL.md")
    evals = skill_dir / "evals"
    if evals.is_symlink():
        raise DraftError(f"{evals}: is a link; refusing to write through it")
    source = existing_source(evals)
    if source is not None:
        if source.is_file():
            try:
                load_dataset(source)
            except DatasetError as error:
                raise DraftError(f"existing source is invalid and is not replaced: {error}") from None
        raise DraftError(f"{source}: an evaluation source already exists; nothing written (it is never replaced)")
    target = evals / "evals.json"
    draft = draft_dataset(skill_dir, full=full, model=model, target=target)
    write_new(target, draft.text)
    return target


def run_create_eval_dataset(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    skill_dir = Path(args.skill_dir)
    try:
        target = create_eval_dataset(skill_dir, full=args.full, model=args.model)
    except (DraftError, OSError) as error:
        print(f"skilleval create-eval-dataset: {error}", file=sys.stderr)
        return 1
    cases = load_dataset(target).cases
    negatives = sum(1 for case in cases if not case.expected_skill)
    print(f"wrote {target}: {len(cases)} case(s), {negatives} negative control(s); review it before you rely on it")
    print(f"next: pytest --skill-eval {skill_dir}")
    return 0
