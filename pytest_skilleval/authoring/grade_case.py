"""`skilleval grade --dataset FILE --case-id ID`: read the case the way a run reads it.

The run loads the dataset with the plugin's loader (aliases, expected_skill filled from evals.json's skill_name) and
names the skill under test after the folder holding SKILL.md next to `evals/`; grading the same trajectory offline
must see the same entry and the same skill, or its scores disagree with the run's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_skilleval.skill.case_ids import CaseIdError, canonical_case_id
from pytest_skilleval.skill.dataset import DatasetError, load_dataset
from pytest_skilleval.skill.folder import find_skill_root


class CaseNotFound(Exception):
    """The dataset or the case cannot be read; the message names which and why."""


def dataset_case(dataset: Path, case_id: str) -> tuple[dict[str, Any], str | None, str]:
    """(entry as entry.json holds it, the skill folder's name or None, why there is no skill when None)."""
    try:
        loaded = load_dataset(dataset)
    except DatasetError as error:
        raise CaseNotFound(str(error)) from None
    try:
        wanted = canonical_case_id(case_id)
    except CaseIdError as error:
        raise CaseNotFound(f"--case-id {case_id!r}: {error}") from None
    case = next((case for case in loaded.cases if case.id == wanted), None)
    if case is None:
        known = ", ".join(sorted(loaded.ids())[:10])
        raise CaseNotFound(f"{dataset}: no case with id {case_id!r} (cases: {known})")
    root = find_skill_root(dataset.resolve())
    if root is None:
        return case.entry_json(), None, f"no SKILL.md next to the evals/ folder holding {dataset}"
    return case.entry_json(), root.name, ""


def run_grade(argv: list[str]) -> int:
    """`skilleval grade` with dataset loading wired in (the verifier itself imports nothing of the plugin)."""
    from verifier.grade import UsageError, run_grade_command

    def loader(dataset: Path, case_id: str) -> tuple[dict[str, Any], str | None, str]:
        try:
            return dataset_case(dataset, case_id)
        except CaseNotFound as error:
            raise UsageError(str(error)) from None

    return run_grade_command(argv, case_loader=loader)
