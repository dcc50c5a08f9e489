"""The one place we reach into Harbor's private names (a leading underscore); everything else uses Harbor's public
classes and models. Harbor exposes no public equivalent of these, and each must match what Harbor itself does, so
we call its own rather than copy it; a Harbor release that renames one breaks only this module. The one place we
also route Harbor's own per-trial builders (the task loader of `Trial.create` and three entries of the trial lock)
through what was built once per staged folder, and its task.toml parse through one made per text: `create_trial`.
"""

from __future__ import annotations

import functools
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harbor.environments.base import BaseEnvironment
    from harbor.models.job.lock import AgentSkillLock, TaskDownloadResolution, TaskLock
    from harbor.models.task.config import VerifierEnvironmentMode
    from harbor.models.task.task import Task
    from harbor.models.trial.config import TaskConfig, TrialConfig
    from harbor.tasks.client import TaskDownloadResult
    from harbor.trial.trial import Trial

    from pytest_skilleval.harbor.staged_tasks import StagedTasks


def environment_class_for(type_name: str) -> type[BaseEnvironment]:
    """The class Harbor constructs for a built-in environment type; ImportError (Harbor's install hint) when the
    environment's extra is missing."""
    from harbor.environments.factory import _load_environment_class
    from harbor.models.environment_type import EnvironmentType

    return _load_environment_class(EnvironmentType(type_name))


def environment_extra(type_name: str) -> str | None:
    """The `harbor[<extra>]` a built-in environment type needs (its SDK), or None when it needs none."""
    from harbor.environments.factory import _ENVIRONMENT_REGISTRY
    from harbor.models.environment_type import EnvironmentType

    entry = _ENVIRONMENT_REGISTRY.get(EnvironmentType(type_name))
    return entry.pip_extra if entry is not None else None


def docker_compose_project_name(name: str) -> str:
    """The Compose project name Harbor's Docker environment derives from `name`."""
    from harbor.environments.docker.docker import _sanitize_docker_compose_project_name

    return _sanitize_docker_compose_project_name(name)


# The staged folders whose task, lock entries and checksum Harbor is handed instead of building them per trial
# (harbor/staged_tasks.py): set around `create_trial` only, so Harbor used any other way builds its own.
_STAGED: ContextVar[StagedTasks | None] = ContextVar("skilleval_staged_tasks", default=None)


async def create_trial(config: TrialConfig, staged: StagedTasks) -> Trial:
    """Harbor's `Trial.create(config)`, with the task, and the trial lock's task and skill entries, taken from what
    `staged` built once for its registered folders (through Harbor's own builders; any other folder gets them built
    by Harbor as usual)."""
    _route_builders()
    token = _STAGED.set(staged)
    try:
        return await _staged_trial_class().create(config)
    finally:
        _STAGED.reset(token)


@functools.cache
def _staged_trial_class() -> type[Trial]:
    """Harbor's `Trial` with its task loader answered from the staged folder: only its `create` is called, which
    picks and builds Harbor's own trial class (single-step, multi-step, regrade) with that task."""
    from harbor.trial.trial import Trial

    class StagedTaskTrial(Trial):
        @staticmethod
        async def _load_task(config: TrialConfig) -> tuple[Task, TaskDownloadResult]:
            staged = _STAGED.get()
            found = await staged.load_task(config) if staged is not None else None
            return found if found is not None else await Trial._load_task(config)

    return StagedTaskTrial


@functools.cache
def _route_builders() -> None:
    """Harbor's trial lock builder makes a task entry (a content hash of the task folder), the task's verifier
    mode (task.toml read again) and the skill entries (a digest of each skill) per trial, and the task's file filter
    decides for each file, in each of the folder's three walks (validation, lock, checksum), whether it is excluded;
    while a trial is created through `create_trial`, each goes through its `StagedTasks`, which calls Harbor's own
    once per staged folder (and file). Installed once; outside `create_trial` each is Harbor's own, called directly."""
    from harbor.models.job import lock

    build_task, build_mode, build_skills = (
        lock._build_lock_trial_task,
        lock._task_verifier_environment_mode,
        lock._build_agent_skill_locks,
    )

    def task_entry(task_config: TaskConfig, task_download_result: TaskDownloadResolution) -> TaskLock:
        staged, download = _STAGED.get(), task_download_result
        return (
            build_task(task_config, download) if staged is None else staged.lock_task(task_config, download, build_task)
        )

    def verifier_mode(task_dir: Path) -> VerifierEnvironmentMode | None:
        staged = _STAGED.get()
        return build_mode(task_dir) if staged is None else staged.verifier_mode(task_dir, build_mode)

    def skill_entries(skills: list[str | Path]) -> list[AgentSkillLock]:
        staged = _STAGED.get()
        return build_skills(skills) if staged is None else staged.skill_locks(skills, build_skills)

    lock._build_lock_trial_task = task_entry
    lock._task_verifier_environment_mode = verifier_mode
    lock._build_agent_skill_locks = skill_entries
    _route_file_filter()
    _route_task_toml()


def _route_task_toml() -> None:
    """Harbor's task.toml parse (`TaskConfig.model_validate_toml`), which creating a trial runs three times on the
    same text (the task, the lock's task version, its verifier mode): parsed once per text while a trial is created
    through `create_trial`, each caller given its own copy of Harbor's result; anywhere else Harbor's own."""
    from harbor.models.task.config import TaskConfig

    parse = TaskConfig.model_validate_toml

    def validate_toml(cls: type[TaskConfig], toml_data: str) -> TaskConfig:
        staged = _STAGED.get()
        if staged is None or cls is not TaskConfig:
            return parse.__func__(cls, toml_data)  # type: ignore[attr-defined]
        return staged.task_config(toml_data, parse)

    setattr(TaskConfig, "model_validate_toml", classmethod(validate_toml))  # noqa: B010 - as the file filter's


def _route_file_filter() -> None:
    """Harbor's task file filter (`.harborignore`, Harbor 0.25 on; 0.24 has none and walks without one)."""
    try:
        from harbor.models.task.file_filter import TaskFileFilter
    except ImportError:
        return
    is_excluded = TaskFileFilter.is_excluded

    def excluded(self: TaskFileFilter, path: Path) -> bool:
        staged = _STAGED.get()
        if staged is None:
            return is_excluded(self, path)
        return staged.excluded(self.task_dir, path, lambda: is_excluded(self, path))

    setattr(TaskFileFilter, "is_excluded", excluded)  # noqa: B010 - mypy refuses assigning to a method
