"""Harbor's view of a folder the runner staged, built once and shared by every trial that uses the folder.

Creating a trial, Harbor builds the task from its folder (`Task.__init__`: task.toml parsed, the input tree
validated), hashes the folder for the trial's lock and again for its result (`Task.checksum`), reads task.toml twice
more for the lock, and hashes every skill the agent is given; its file filter decides each file's fate anew in each
walk of the folder. Several milliseconds of the pytest process's CPU a trial, spent on the same few files. The runner
stages one task folder per case and arm, and each skill once per run, and changes neither afterwards (what is one
trial's own, its entry.json, lives in the trial's folder), so each of these is computed once here, by Harbor's own
code, and handed back to Harbor for every trial (`compat.create_trial`). Only folders registered here are answered
from what was built; anything else (a native task staged for one trial, a skill given from elsewhere) goes to Harbor
as usual.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from harbor.models.task.task import Task

try:
    from harbor.models.task.file_filter import TaskFileFilter

    IGNORE_FILE = TaskFileFilter.IGNORE_FILENAME
except ImportError:  # Harbor 0.24: no file filter (nothing is excluded)
    IGNORE_FILE = ".harborignore"


class StagedTask(Task):
    """Harbor's Task for a folder that no longer changes: its checksum (a walk and hash of the folder) made once."""

    _checksum: str | None = None

    @property
    def checksum(self) -> str:
        if self._checksum is None:
            with warnings.catch_warnings():  # Harbor's deprecation notice, attributed here: not the author's concern
                warnings.simplefilter("ignore", DeprecationWarning)
                self._checksum = super().checksum
        return self._checksum


# Task.toml parses kept for the trials being created: a trial's three parses of its text follow one another.
TASK_CONFIGS_KEPT = 64


@dataclass
class _Folder:
    """What Harbor builds from one staged task folder, kept for every trial that uses it."""

    loaded: dict[bool, tuple[StagedTask, Any]] = field(default_factory=dict)  # by disable_verification
    lock_tasks: dict[str, Any] = field(default_factory=dict)  # the lock's task entry, by the trial's task config
    verifier_mode: list[Any] = field(default_factory=list)  # [mode] once known
    excluded: dict[str, bool] = field(default_factory=dict)  # Harbor's file filter's answer, by path
    plain: dict[str, bool] | None = None  # a plain folder's entries (is a folder, by relative path); else None


def _key(task_dir: str | os.PathLike[str]) -> str:
    """A folder's path as `Path` spells it; a `Path` keeps that string, so asking for it again costs nothing (this
    runs for each file Harbor's file filter asks about)."""
    return str(task_dir if isinstance(task_dir, PurePath) else Path(task_dir))


def _plain_entries(task_dir: str) -> dict[str, bool] | None:
    """A folder's entries (relative path -> is a folder) when none is a link or an ignore file (Harbor's file filter
    then answers from the relative path and kind alone); None otherwise, or when it cannot be read."""
    entries: dict[str, bool] = {}
    pending = [""]
    try:
        while pending:
            rel = pending.pop()
            with os.scandir(os.path.join(task_dir, rel) if rel else task_dir) as found:
                for entry in found:
                    if entry.is_symlink() or entry.name == IGNORE_FILE:
                        return None
                    name = os.path.join(rel, entry.name)
                    entries[name] = entry.is_dir(follow_symlinks=False)
                    if entries[name]:
                        pending.append(name)
    except OSError:
        return None
    return entries


class StagedTasks:
    """The staged task folders and skills of one runner, and what Harbor built from each of them."""

    def __init__(self) -> None:
        self._folders: dict[str, _Folder] = {}  # by the folder's path as a string
        self._skills: set[str] = set()
        self._skill_locks: dict[tuple[str, ...], list[Any]] = {}
        self._plain_excluded: dict[tuple[str, bool], bool] = {}  # the filter's answer in plain folders, by entry
        self._task_configs: dict[str, Any] = {}  # Harbor's parse of a task.toml, by its text (the latest few)
        self._lock = threading.Lock()

    def add_folder(self, task_dir: Path) -> None:
        """A task folder staged for many trials; it must not change afterwards (nothing built from it is redone)."""
        plain = _plain_entries(str(task_dir))
        with self._lock:
            folder = self._folders.setdefault(_key(task_dir), _Folder(plain=plain))
            self._folders.setdefault(str(Path(task_dir).resolve()), folder)  # as Harbor's file filter names it

    def add_skill(self, skill_dir: Path) -> None:
        """A skill folder staged once for the run and given to agents as it is."""
        with self._lock:
            self._skills.add(str(skill_dir))

    def _folder(self, task_dir: Path) -> _Folder | None:
        return self._folders.get(_key(task_dir))

    async def load_task(self, config: Any) -> tuple[StagedTask, Any] | None:
        """Harbor's task and download result for a trial of a registered folder (built on its first trial, the way
        Harbor's `Trial._load_task` builds them); None for any other task, or one given extra instructions."""
        from harbor.tasks.client import TaskClient

        task = config.task
        local = task.path is not None and not task.is_git_task() and not task.is_package_task()
        folder = self._folder(task.path) if local else None
        if folder is None or config.extra_instruction_paths or config.extra_instructions:
            return None
        disable = bool(config.verifier.disable)
        if disable not in folder.loaded:
            download = (
                await TaskClient().download_tasks(
                    task_ids=[task.get_task_id()], overwrite=task.overwrite, output_dir=task.download_dir
                )
            ).results[0]
            staged = StagedTask(download.path, disable_verification=disable)
            staged.checksum  # noqa: B018 - made now, while the file filter's answers for the folder are shared
            folder.loaded[disable] = (staged, download)
        return folder.loaded[disable]

    def lock_task(self, task_config: Any, download: Any, build: Callable[[Any, Any], Any]) -> Any:
        """The trial lock's task entry (a content hash of the folder): built once per folder and task config."""
        folder = self._folder(download.path)
        if folder is None:
            return build(task_config, download)
        key = task_config.model_dump_json()
        if key not in folder.lock_tasks:
            folder.lock_tasks[key] = build(task_config, download)
        return folder.lock_tasks[key].model_copy(deep=True)

    def excluded(self, task_dir: Path, path: Path, build: Callable[[], bool]) -> bool:
        """Whether Harbor's file filter excludes a file of a registered folder: asked once per file, not once per
        walk of the folder (its validation, its lock's hash, its checksum); in a plain folder (no link, no ignore
        file: what the runner stages), once per relative path and kind for every plain folder, since Harbor's
        answer there depends on nothing else."""
        prefix = _key(task_dir)
        folder = self._folders.get(prefix)
        if folder is None:
            return build()
        key = os.path.abspath(path)
        if folder.plain is not None and key.startswith(prefix + os.sep):
            rel = key[len(prefix) + 1 :]
            is_dir = folder.plain.get(rel)
            if is_dir is not None:
                entry = (rel, is_dir)
                found = self._plain_excluded.get(entry)
                if found is None:
                    found = self._plain_excluded[entry] = build()
                return found
        if key not in folder.excluded:
            folder.excluded[key] = build()
        return folder.excluded[key]

    def task_config(self, text: str, parse: Callable[[str], Any]) -> Any:
        """Harbor's parse of a task.toml's text (`parse`), made once per text for the trials being created; each
        caller gets its own copy, so what one keeps or changes is never what another is given."""
        found = self._task_configs.get(text)
        if found is None:
            if len(self._task_configs) >= TASK_CONFIGS_KEPT:
                self._task_configs.clear()
            found = self._task_configs[text] = parse(text)
        return found.model_copy(deep=True)

    def verifier_mode(self, task_dir: Path, build: Callable[[Path], Any]) -> Any:
        """The trial lock's verifier mode, read from the folder's task.toml once."""
        folder = self._folder(task_dir)
        if folder is None:
            return build(task_dir)
        if not folder.verifier_mode:
            folder.verifier_mode.append(build(task_dir))
        return folder.verifier_mode[0]

    def skill_locks(self, skills: Sequence[str | Path], build: Callable[[list[str | Path]], list[Any]]) -> list[Any]:
        """The trial lock's skill entries (a digest of each skill folder): built once when every skill is one
        this runner staged."""
        key = tuple(str(skill) for skill in skills)
        if not key or not all(skill in self._skills for skill in key):
            return build(list(skills))
        if key not in self._skill_locks:
            self._skill_locks[key] = build(list(skills))
        return [entry.model_copy(deep=True) for entry in self._skill_locks[key]]
