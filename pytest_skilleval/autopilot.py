"""`--autopilot`: a skill given on the command line with no accepted evaluation source gets one drafted starter
case, and the run goes on with it.

The draft never lands in the skill folder's evals/: the skill (its files, and evals/ minus results) is copied to
`<results-root>/autopilot/<run-id>/<skill>/` with the drafted `evals/evals.json`, and that copy replaces the path on
the command line, so collection, the run plan and the results read it as any skill. The end of the session says
where the draft is and how to keep it.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pytest

from pytest_skilleval.authoring.draft_dataset import DraftError, draft_dataset, existing_source, write_new
from pytest_skilleval.harbor.staging import stage_skill
from pytest_skilleval.results.run_paths import resolve_results_root
from pytest_skilleval.skill.folder import arg_path
from pytest_skilleval.skill.settings import RunSettings


def _copy_skill(skill_dir: Path, target_root: Path) -> Path:
    """The skill's files (as staging copies them: evals/ left out), then its evals/ minus results/."""
    copy = stage_skill(skill_dir, target_root)
    evals = skill_dir / "evals"
    if evals.is_dir() and not evals.is_symlink():
        shutil.copytree(evals, copy / "evals", symlinks=True, ignore=shutil.ignore_patterns("results"))
    return copy


def prepare_autopilot(config: pytest.Config, settings: RunSettings, run_id: str) -> tuple[list[str], dict[str, str]]:
    """Swap each bare skill on the command line for a copy with a drafted starter case: the notes to print at the
    end, and each swapped skill's path with its copy's (for xdist workers). A drafting failure is a usage error
    naming the skill and why."""
    notes: list[str] = []
    swaps: dict[str, str] = {}
    invocation_dir = config.invocation_params.dir
    for index, arg in enumerate(list(config.args)):
        skill_dir = arg_path(arg, invocation_dir).resolve()
        if not (skill_dir / "SKILL.md").is_file() or existing_source(skill_dir / "evals") is not None:
            continue
        root = resolve_results_root(skill_dir, settings.results_dir, os.environ) / "autopilot" / run_id
        try:
            copy = _copy_skill(skill_dir, root)
            target = copy / "evals" / "evals.json"
            with warnings.catch_warnings():  # pytest shows pytest_configure's warnings: litellm's import-time
                warnings.simplefilter("ignore")  # deprecations are not the author's concern
                draft = draft_dataset(skill_dir, full=False, model=settings.judge_model, target=target)
            write_new(target, draft.text)
        except (DraftError, OSError) as error:
            raise pytest.UsageError(f"skilleval --autopilot: {skill_dir}: {error}") from None
        config.args[index] = str(copy)
        swaps[str(skill_dir)] = str(copy)
        case = draft.dataset.cases[0].id
        notes.append(
            f"skilleval: autopilot drafted one starter case ({case}, model {draft.model}) for {skill_dir} into "
            f"{target}; the skill folder was not changed. To keep it: review it, then "
            f"mkdir -p {skill_dir / 'evals'} && cp {target} {skill_dir / 'evals' / 'evals.json'} "
            f"(or draft a covering set: skilleval create-eval-dataset {skill_dir} --full)"
        )
    return notes, swaps


def apply_swaps(config: pytest.Config, swaps: dict[str, str]) -> None:
    """On an xdist worker, the controller's drafted copies replace the skills on the command line: xdist starts
    workers with the command line as typed, not with the controller's `config.args`."""
    invocation_dir = config.invocation_params.dir
    for index, arg in enumerate(list(config.args)):
        copy = swaps.get(str(arg_path(arg, invocation_dir).resolve()))
        if copy is not None:
            config.args[index] = copy
