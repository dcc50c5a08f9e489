"""Turning a case into a Harbor task folder for one arm, under the run directory (never in the user's tree).

A generated task holds `instruction.md` (the prompt), `task.toml`, `tests/entry.json` (the case plus the trusted
fields the plugin adds), `tests/test.sh` (Harbor requires one; grading itself runs on the host) and the author's
grader when there is one. The skill itself is staged separately (without its `evals/`) and handed to Harbor's
skills mechanism in the with-skill arm only.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_skilleval.harbor.task_environment import TaskEnvironment
from pytest_skilleval.skill.case_inputs import StagingError, input_sources
from pytest_skilleval.skill.dataset import arm_prompt
from pytest_skilleval.skill.folder import SkillFolder
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.skill_copy import copy_skill, plan_skill_copy
from verifier import safe_io

ARM_SLUG = {"with_skill": "with-skill", "without_skill": "without-skill", "baseline_skill": "baseline-skill"}
# Arms whose agent is given a skill: the version under test, or the earlier one (--baseline-skill).
SKILLED_ARMS = ("with_skill", "baseline_skill")

TEST_SH = """#!/usr/bin/env bash
# Harbor requires tests/test.sh. pytest-skilleval grades on the host with its own verifier, so this script only
# matters when the task is run by Harbor directly: it runs the author's grader if one was staged.
set -u
tests="${HARBOR_TESTS_DIR:-/tests}"
if [ -f "$tests/grader.py" ]; then exec python3 "$tests/grader.py"; fi
if [ -f "$tests/grader.sh" ]; then exec bash "$tests/grader.sh"; fi
mkdir -p "${HARBOR_VERIFIER_DIR:-/logs/verifier}"
echo 0 > "${HARBOR_REWARD_TXT:-/logs/verifier/reward.txt}"
"""


# The fields of entry.json that name one trial rather than its case: a task folder shared by every trial of a case
# and arm holds the entry without them, and each trial's own entry.json (with them) is laid over /tests for grading.
TRIAL_ENTRY_FIELDS = ("agent", "attempt")


def stage_skill(
    skill_dir: Path, staging_root: Path, name: str | None = None, exclude: Iterable[Path] = (), strict: bool = True
) -> Path:
    """Copy the skill as `skill/skill_copy.py` plans it (evals/, generated output and results folders left out, no
    link followed, capped in files and bytes) to `<staging_root>/<skill-name>/` once per run (`name`: the skill's
    name when the folder copied is named otherwise, as a baseline version's folder may be; `exclude`: more folders to
    leave out, such as the run's results folder). A link the agent could not use, or a skill over the caps, raises
    StagingError; with `strict` False (a distractor skill, not the author's) such links are only left out."""
    target = staging_root / (name or skill_dir.name)
    if not (target / "SKILL.md").is_file():
        plan = plan_skill_copy(skill_dir, [*exclude, staging_root])
        problems = [p for p in plan.problems if strict or p.rule != "skill-link"]
        if problems:
            plan.problems = problems
            raise StagingError(plan.error())
        # A folder of its own for each copy: trials stage in worker threads, two may copy the same skill at once.
        staging_root.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{skill_dir.name}.", suffix=".partial", dir=staging_root))
        try:
            copy_skill(plan, partial / target.name)
            (partial / target.name).rename(target)
        except OSError:  # another trial staged it first
            if not (target / "SKILL.md").is_file():
                raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target


def stage_inputs(spec: TrialSpec, destination: Path) -> Path | None:
    """Copy the case's inputs to a folder the runner uploads to /workspace/input; None when there are none.

    The rules are checked again here (the folder may have changed since collection) and the copy itself refuses
    links, so nothing outside the skill folder is ever read.
    """
    pairs = input_sources(spec.skill_dir / "evals", spec.files, spec.case_id)
    if not pairs:
        return None
    destination.mkdir(parents=True, exist_ok=True)
    for source, relative in pairs:
        try:
            if source.is_dir():
                refused = safe_io.copy_tree(source, "", destination, relative.as_posix())
            else:
                safe_io.copy_file(source.parent, source.name, destination, relative.as_posix())
                refused = []
        except OSError as error:
            refused = [str(error)]
        if refused:
            raise StagingError(f"case {spec.case_id!r}: inputs refused: " + "; ".join(refused))
    return destination


def entry_document(
    spec: TrialSpec,
    grading_mode: str,
    has_grader: bool,
    workspace_mode: str = "isolated",
    workspace_skills: list[str] | None = None,
) -> dict[str, Any]:
    """/tests/entry.json: the authored entry plus the fields only the plugin may set."""
    entry = dict(spec.entry)
    entry.update(
        id=spec.case_id if spec.source == "dataset" else entry.get("id", spec.case_id),
        evaluated_skill=spec.skill_name,
        has_skill=spec.arm in SKILLED_ARMS,
        arm=spec.arm,
        agent=spec.agent,
        attempt=spec.attempt,
        grading_mode=grading_mode,
        custom_grader=has_grader,
        skill_workspace_mode=workspace_mode,
        workspace_skill_names=([spec.skill_name] if spec.arm in SKILLED_ARMS else []) + list(workspace_skills or []),
    )
    return entry


def case_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A trial's entry.json without the fields that name the trial: what every trial of the case and arm shares."""
    return {key: value for key, value in entry.items() if key not in TRIAL_ENTRY_FIELDS}


def stage_trial_tests(task_tests: Path, destination: Path, entry: dict[str, Any]) -> Path:
    """A trial's own /tests: the shared task's tests/ (hard links to its files: nothing is copied here, and the upload
    copies their contents into the sandbox) with the trial's own entry.json."""
    destination.mkdir(parents=True)
    for item in task_tests.iterdir():
        target = destination / item.name
        if item.name == "entry.json":
            continue
        if item.is_dir() and not item.is_symlink():
            shutil.copytree(item, target, symlinks=True)
            continue
        try:
            os.link(item, target, follow_symlinks=False)
        except OSError:  # a file system without hard links
            shutil.copy2(item, target, follow_symlinks=False)
    (destination / "entry.json").write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return destination


def _task_toml(spec: TrialSpec, environment: TaskEnvironment, separate_verifier: bool = False) -> str:
    from harbor.models.task.config import TaskConfig

    slug = ARM_SLUG[spec.arm]
    config = TaskConfig.model_validate(
        {
            "schema_version": "1.4",
            "task": {"name": f"skilleval/{spec.skill_name}-{spec.case_id}-{slug}"[:200]},
            "metadata": {
                "entry_id": spec.case_id,
                "skill": str(spec.entry.get("expected_skill") or "none"),
                "has_skill": spec.arm in SKILLED_ARMS,
                "arm": spec.arm,
            },
            "agent": {"timeout_sec": 300.0},
            # A regrade verifies in a fresh environment holding the recorded artifacts (Harbor's regrade rule).
            "verifier": {"timeout_sec": 180.0, **({"environment_mode": "separate"} if separate_verifier else {})},
            "environment": environment.table(),
        }
    )
    return config.model_dump_toml()


def stage_dataset_task(
    spec: TrialSpec,
    task_dir: Path,
    grading_mode: str,
    grader: Path | None,
    environment: TaskEnvironment | None = None,
    inputs: Path | None = None,
    entry: dict[str, Any] | None = None,
    separate_verifier: bool = False,
) -> Path:
    """Write a Harbor task for a case and arm (`entry`: what its tests/entry.json holds; by default one trial's)."""
    environment = environment or TaskEnvironment()
    tmp = task_dir.with_name(task_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tests = tmp / "tests"
    tests.mkdir(parents=True)
    environment.write(tmp / "environment", inputs)
    prompt = arm_prompt(spec.entry, spec.arm, spec.skill_name)
    (tmp / "instruction.md").write_text(prompt.rstrip("\n") + "\n", encoding="utf-8")
    (tmp / "task.toml").write_text(_task_toml(spec, environment, separate_verifier), encoding="utf-8")
    entry = entry if entry is not None else entry_document(spec, grading_mode, grader is not None)
    (tests / "entry.json").write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    test_sh = tests / "test.sh"
    test_sh.write_text(TEST_SH, encoding="utf-8")
    test_sh.chmod(0o755)
    if grader is not None:
        staged = tests / grader.name
        shutil.copyfile(grader, staged)  # its contents; its times and extended attributes are of no use here
        staged.chmod(0o755)
    shutil.rmtree(task_dir, ignore_errors=True)
    tmp.rename(task_dir)
    return task_dir


def workspace_skill_dirs(skill: SkillFolder) -> list[Path]:
    """skill_workspace.include (group mode): other skills installed beside the evaluated one, in both arms.

    A skill that is the evaluated one under another name (same SKILL.md) would leak it into the baseline, so it is
    refused.
    """
    settings = skill.settings
    if settings.skill_workspace_mode != "group":
        return []
    target = (skill.path / "SKILL.md").read_bytes()
    dirs = []
    for include in settings.skill_workspace_include:
        path = (skill.path.resolve() / include).resolve()
        if path != Path(os.path.normpath(skill.path.resolve() / include)):  # a link on the way: never followed
            raise StagingError(f"{skill.evals_dir}/config.yml: skill_workspace.include {include!r} goes through a link")
        manifest = path / "SKILL.md"
        if not manifest.is_file():
            raise StagingError(f"{skill.evals_dir}/config.yml: skill_workspace.include {include!r}: no SKILL.md")
        if path == skill.path or path.name == skill.name or manifest.read_bytes() == target:
            raise StagingError(
                f"{skill.evals_dir}/config.yml: skill_workspace.include {include!r} is the "
                "evaluated skill itself; the baseline must not see it"
            )
        dirs.append(path)
    return dirs
