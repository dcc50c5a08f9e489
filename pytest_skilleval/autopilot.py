"""`--autopilot`: a skill given on the command line (or found in a folder of skills given on it) with no accepted
evaluation source gets one drafted starter case, and the run goes on with it.

The draft never lands among the skill's own files: the skill (its files, and evals/ minus results) is copied to
`<results-root>/autopilot/<run-id>/<skill>/` (by default inside the skill's evals/results/, where every run's results
go) with the drafted `evals/evals.json`, and that copy replaces the path on the command line (a folder of skills is
replaced by its skills), so collection, the run plan and the results read it as any skill. The end of the session
says where the draft is and how to keep it.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pytest

from pytest_skilleval.authoring.draft_dataset import DraftError, draft_dataset, existing_source, write_new
from pytest_skilleval.harbor.staging import StagingError, stage_skill
from pytest_skilleval.results.run_paths import resolve_results_root
from pytest_skilleval.skill.folder import arg_path, find_skill_root, skills_below
from pytest_skilleval.skill.settings import RunSettings


def _copy_skill(skill_dir: Path, target_root: Path, results_root: Path) -> Path:
    """The skill's files (as staging copies them: evals/ and results folders left out), then its evals/ minus
    results/."""
    copy = stage_skill(skill_dir, target_root, exclude=[results_root])
    evals = skill_dir / "evals"
    if evals.is_dir() and not evals.is_symlink():
        shutil.copytree(evals, copy / "evals", symlinks=True, ignore=shutil.ignore_patterns("results"))
    return copy


def _skills_named(target: Path) -> list[Path] | None:
    """The skills a command-line path names: the skill itself, or every skill in a folder of skills; None for a
    path inside a skill or that is no folder (a node id, a dataset file: run as given)."""
    if (target / "SKILL.md").is_file():
        return [target]
    if not target.is_dir() or find_skill_root(target / "_") is not None:
        return None
    skills = skills_below(target)
    sourced = {skill for skill in skills if existing_source(skill / "evals") is not None}
    # a skill with a source inside another is collected with it: named on its own too, it would run twice
    return [s for s in skills if not (s in sourced and any(o in s.parents for o in sourced))]


def _draft_copy(skill_dir: Path, settings: RunSettings, run_id: str) -> tuple[Path, str]:
    """A copy of the bare skill with one drafted starter case, in its results folder; the note saying how to keep
    it. A drafting failure is a usage error naming the skill and why."""
    results_root = resolve_results_root(skill_dir, settings.results_dir, os.environ)
    root = results_root / "autopilot" / run_id
    made = [folder for folder in (root, *root.parents) if not folder.exists()]  # deepest first
    try:
        copy = _copy_skill(skill_dir, root, results_root)
        target = copy / "evals" / "evals.json"
        with warnings.catch_warnings():  # pytest shows pytest_configure's warnings: litellm's import-time
            warnings.simplefilter("ignore")  # deprecations are not the author's concern
            draft = draft_dataset(
                skill_dir, full=False, model=settings.judge_model, target=target, model_flag="--judge-model"
            )
        write_new(target, draft.text)
    except (DraftError, StagingError, OSError) as error:
        _remove_made(made)
        raise pytest.UsageError(f"skilleval --autopilot: {skill_dir}: {error}") from None
    case = draft.dataset.cases[0].id
    note = (
        f"skilleval: autopilot drafted one starter case ({case}, model {draft.model}) for {skill_dir} into "
        f"{target}; the skill's own files were not changed. To keep it: review it, then "
        f"mkdir -p {skill_dir / 'evals'} && cp {target} {skill_dir / 'evals' / 'evals.json'} "
        f"(or draft a covering set: skilleval create-eval-dataset {skill_dir} --full)"
    )
    return copy, note


def _remove_made(made: list[Path]) -> None:
    """A failed draft leaves nothing behind: the copy, and each folder it made on the way (in a bare skill, its
    evals/ and evals/results/), removed deepest first; a folder something else has meanwhile written to stays."""
    if made:
        shutil.rmtree(made[0], ignore_errors=True)
    for folder in made[1:]:
        try:
            folder.rmdir()
        except OSError:
            return


def prepare_autopilot(
    config: pytest.Config, settings: RunSettings, run_id: str
) -> tuple[list[str], dict[str, list[str]]]:
    """Swap each bare skill on the command line, or in a folder of skills on it, for a copy with a drafted starter
    case: the notes to print at the end, and each swapped path with what replaces it (for xdist workers). A folder
    is replaced by its skills, each bare one by its copy, so the copies (by default inside the skills' own
    evals/results/) are collected once each."""
    notes: list[str] = []
    swaps: dict[str, list[str]] = {}
    invocation_dir = config.invocation_params.dir
    args: list[str] = []
    for arg in config.args:
        target = arg_path(arg, invocation_dir).resolve()
        skills = _skills_named(target) or []
        bare = [skill for skill in skills if existing_source(skill / "evals") is None]
        if not bare:
            args.append(arg)
            continue
        copies: dict[Path, Path] = {}
        for skill_dir in bare:
            copies[skill_dir], note = _draft_copy(skill_dir, settings, run_id)
            notes.append(note)
        swaps[str(target)] = [str(copies.get(skill, skill)) for skill in skills]
        args += swaps[str(target)]
    config.args[:] = args
    return notes, swaps


def apply_swaps(config: pytest.Config, swaps: dict[str, list[str]]) -> None:
    """On an xdist worker, the controller's drafted copies replace the paths on the command line: xdist starts
    workers with the command line as typed, not with the controller's `config.args`."""
    invocation_dir = config.invocation_params.dir
    args: list[str] = []
    for arg in config.args:
        args += swaps.get(str(arg_path(arg, invocation_dir).resolve()), [arg])
    config.args[:] = args
