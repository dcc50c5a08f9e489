"""`validate --harbor-contract`: load what Harbor would get (native tasks as authored and staged, generated tasks)
with Harbor itself, so a task Harbor refuses is found before a run."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

from pytest_skilleval.authoring.findings import ARMS, REPLAY_ARM_NAMES, ValidationContext
from pytest_skilleval.skill.native_tasks import NativeTaskError


def _harbor_problem(task_dir: Path) -> str | None:
    """Load a task folder with Harbor's own Task; its complaint, or None when Harbor accepts it."""
    from harbor.models.task.task import Task

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Task(task_dir)
    except Exception as error:  # noqa: BLE001 - whatever Harbor raises is the finding
        return f"{type(error).__name__}: {error}".strip()
    return None


def _contract_native(ctx: ValidationContext, scratch: Path) -> None:
    from pytest_skilleval.harbor.native_staging import stage_native_task

    arms = ARMS if ctx.paired else ARMS[:1]
    for task in ctx.tasks:
        problem = _harbor_problem(task.path)
        if problem:
            ctx.add(
                "harbor-task-rejected",
                "error",
                f"Harbor cannot load native task '{task.case_id}': {problem}",
                task.path,
            )
            continue
        for arm in arms:
            staged = scratch / "native" / f"{task.case_id}-{REPLAY_ARM_NAMES[arm]}"
            try:
                stage_native_task(task, staged, arm)
            except (NativeTaskError, OSError, ValueError) as error:
                ctx.add(
                    "harbor-staging-failed", "error", f"cannot stage '{task.case_id}' for {arm}: {error}", task.path
                )
                continue
            problem = _harbor_problem(staged)
            if problem:
                ctx.add(
                    "harbor-staged-task-rejected",
                    "error",
                    f"Harbor rejects the {arm} staged copy of '{task.case_id}': {problem}",
                    task.path,
                )


def _contract_dataset(ctx: ValidationContext, scratch: Path) -> None:
    from pytest_skilleval.harbor.staging import StagingError, stage_dataset_task
    from pytest_skilleval.skill.plan import TrialSpec

    grader = ctx.usable_grader()
    for case in ctx.valid_cases:
        spec = TrialSpec(
            skill_dir=ctx.skill_dir,
            skill_name=ctx.skill_dir.name,
            case_id=case.id,
            source="dataset",
            entry=case.entry_json(),
            files=case.files if case.files_given else None,
            agent="validate",
            arm="with_skill",
            attempt=1,
        )
        target = scratch / "dataset" / case.id
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            stage_dataset_task(spec, target, ctx.grading_mode, grader)
        except (StagingError, OSError, ValueError) as error:
            ctx.add("harbor-staging-failed", "error", f"cannot stage case {case.id!r}: {error}", ctx.dataset_path)
            continue
        problem = _harbor_problem(target)
        if problem:
            ctx.add(
                "harbor-generated-task-rejected",
                "error",
                f"Harbor rejects the task generated for case {case.id!r}: {problem}",
                ctx.dataset_path,
            )


def check_harbor_contract(ctx: ValidationContext) -> None:
    """Load what Harbor would get (native tasks as authored and staged, generated dataset tasks) with Harbor."""
    with tempfile.TemporaryDirectory(prefix="skilleval-validate-") as tmp:
        _contract_native(ctx, Path(tmp))
        _contract_dataset(ctx, Path(tmp))
