"""Per-trial work done once: `compat.create_trial` with `StagedTasks`: Harbor's own trial creation, with the task, its lock entries and its
checksum built once for a registered folder and by Harbor as usual for anything else (nothing is started here: a
trial is only created, which writes its lock and builds its environment object); the host verifier's redactor."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from harbor.models.task.task import Task
from harbor.models.trial.config import AgentConfig, EnvironmentConfig, TaskConfig, TrialConfig
from harbor.publisher.packager import Packager
from harbor.trial.trial import Trial

from pytest_skilleval.harbor.compat import create_trial
from pytest_skilleval.harbor.environments import LOCAL_ENV_IMPORT_PATH
from pytest_skilleval.harbor.process_env import forget_logger
from pytest_skilleval.harbor.staged_tasks import StagedTasks
from pytest_skilleval.harbor.verifier_adapter import host_redactor


def _task(root: Path, instruction: str) -> Path:
    task = root / "task"
    (task / "tests").mkdir(parents=True, exist_ok=True)
    (task / "task.toml").write_text('schema_version = "1.4"\n[task]\nname = "skilleval/demo-c1"\n')
    (task / "instruction.md").write_text(instruction + "\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    return task


def _config(task: Path, trials: Path, name: str, skills: list[str] | None = None) -> TrialConfig:
    return TrialConfig(
        task=TaskConfig(path=task),
        trial_name=name,
        trials_dir=trials,
        agent=AgentConfig(name="nop", skills=skills or []),
        environment=EnvironmentConfig(import_path=LOCAL_ENV_IMPORT_PATH, kwargs={"sandbox": "none"}),
    )


def _created(config: TrialConfig, staged: StagedTasks | None) -> tuple[Trial, dict[str, Any]]:
    async def go() -> Trial:
        return await (create_trial(config, staged) if staged is not None else Trial.create(config))

    trial = asyncio.run(go())
    forget_logger(trial.logger.name)
    return trial, json.loads((config.trials_dir / config.trial_name / "lock.json").read_text())


def _harbor_digest(task: Path) -> str:
    return "sha256:" + Packager.compute_content_hash(task)[0]


def _harbor_checksum(task: Path | Task) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Harbor's notice that Task.checksum will go
        return (task if isinstance(task, Task) else Task(task)).checksum


def test_a_registered_folder_is_built_once_for_every_trial_and_as_harbor_builds_it(tmp_path: Path) -> None:
    task = _task(tmp_path, "Do c1.")
    skill = tmp_path / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\n")
    staged = StagedTasks()
    staged.add_folder(task)
    staged.add_skill(skill)
    first, first_lock = _created(_config(task, tmp_path / "trials", "t1", [str(skill)]), staged)
    second, second_lock = _created(_config(task, tmp_path / "trials", "t2", [str(skill)]), staged)
    assert first.task is second.task  # one Task for the folder
    assert first.config.trial_name != second.config.trial_name
    assert first_lock["task"] == second_lock["task"]
    assert first_lock["task"]["digest"] == _harbor_digest(task)
    assert first_lock["skills"] == second_lock["skills"] and first_lock["skills"][0]["name"] == "demo"
    assert first.task.checksum == second.task.checksum == _harbor_checksum(task)


def test_a_folder_not_registered_is_built_by_harbor_for_each_trial(tmp_path: Path) -> None:
    task = _task(tmp_path, "Do c1.")
    staged = StagedTasks()  # the folder is not one it staged
    first, first_lock = _created(_config(task, tmp_path / "trials", "t1"), staged)
    (task / "instruction.md").write_text("Do something else.\n")
    second, second_lock = _created(_config(task, tmp_path / "trials", "t2"), staged)
    assert first.task is not second.task
    assert first_lock["task"]["digest"] != second_lock["task"]["digest"] == _harbor_digest(task)
    assert type(second.task) is Task and _harbor_checksum(second.task) == _harbor_checksum(task)


def test_a_changed_folder_is_built_anew_by_the_next_runner_and_by_harbor_outside_it(tmp_path: Path) -> None:
    task = _task(tmp_path, "Do c1.")
    earlier = StagedTasks()
    earlier.add_folder(task)
    _, before = _created(_config(task, tmp_path / "trials", "t1"), earlier)
    (task / "instruction.md").write_text("Do something else.\n")
    later = StagedTasks()  # the next run's runner
    later.add_folder(task)
    trial, after = _created(_config(task, tmp_path / "trials", "t2"), later)
    assert before["task"]["digest"] != after["task"]["digest"] == _harbor_digest(task)
    assert trial.task.instruction == "Do something else.\n"
    (task / "instruction.md").write_text("A third text.\n")
    _, plain = _created(_config(task, tmp_path / "trials", "t3"), None)  # Trial.create itself, routes installed
    assert plain["task"]["digest"] == _harbor_digest(task) != after["task"]["digest"]


def test_the_verifiers_redactor_is_made_once_and_again_when_the_environment_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first_secret, second_secret = "sk-test-Aa1Bb2Cc3Dd4Ee5Ff6Gg7", "sk-test-Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
    monkeypatch.setenv("SKILLEVAL_TEST_API_KEY", first_secret)
    redactor = host_redactor()
    assert host_redactor() is redactor  # the same environment: made once
    assert first_secret not in redactor.text(f"key={first_secret}")
    monkeypatch.setenv("SKILLEVAL_TEST_API_KEY", second_secret)
    changed = host_redactor()
    assert changed is not redactor and second_secret not in changed.text(f"key={second_secret}")


def test_a_registered_folders_ignored_files_stay_ignored_in_each_walk(tmp_path: Path) -> None:
    file_filter = pytest.importorskip("harbor.models.task.file_filter", reason="Harbor 0.24 has no .harborignore")
    task = _task(tmp_path, "Do c1.")
    (task / "tests" / ".harborignore").write_text("notes.txt\n")
    (task / "tests" / "notes.txt").write_text("not part of the task\n")
    staged = StagedTasks()
    staged.add_folder(task)
    trial, lock = _created(_config(task, tmp_path / "trials", "t1"), staged)
    assert lock["task"]["digest"] == _harbor_digest(task)
    assert trial.task.checksum == _harbor_checksum(task)
    (task / "tests" / "notes.txt").write_text("changed, and still ignored\n")
    assert _harbor_digest(task) == lock["task"]["digest"]  # Harbor's own filter leaves the file out too
    assert file_filter.TaskFileFilter(task).is_excluded(task / "tests" / "notes.txt")  # outside: Harbor's own


def _case_folder(root: Path, case: str, grader: str = "grader.sh") -> Path:
    task = _task(root / case, f"Do {case}.")
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM python:3.12-slim\n")
    (task / "tests" / "entry.json").write_text(json.dumps({"id": case}) + "\n")
    (task / "tests" / grader).write_text("#!/bin/bash\necho 1\n")
    return task


def _files(task: Path) -> list[Path]:
    return sorted(task.resolve().rglob("*"))


def test_plain_folders_share_the_filters_answers_and_each_answer_is_harbors(tmp_path: Path) -> None:
    file_filter = pytest.importorskip("harbor.models.task.file_filter", reason="Harbor 0.24 has no .harborignore")
    folders = [_case_folder(tmp_path, "c1"), _case_folder(tmp_path, "c2"), _case_folder(tmp_path, "c3", "grader.py")]
    staged = StagedTasks()
    for task in folders:
        staged.add_folder(task)
    asked: list[Path] = []
    for task in folders:
        harbor = file_filter.TaskFileFilter(task)
        for path in _files(task):

            def build(path: Path = path, harbor: Any = harbor) -> bool:
                asked.append(path)
                return bool(harbor.is_excluded(path))

            assert staged.excluded(harbor.task_dir, path, build) is bool(harbor.is_excluded(path))
    # Harbor was asked once per relative path: the third folder's grader.py is the only entry new to it.
    relative = {str(path.relative_to(task.resolve())) for task in folders for path in _files(task)}
    assert len(asked) == len(relative) == len(_files(folders[0])) + 1


def test_a_folder_with_an_ignore_file_or_a_link_keeps_answers_of_its_own(tmp_path: Path) -> None:
    file_filter = pytest.importorskip("harbor.models.task.file_filter", reason="Harbor 0.24 has no .harborignore")
    plain = _case_folder(tmp_path, "c1")
    ignoring = _case_folder(tmp_path, "c2")
    (ignoring / "tests" / ".harborignore").write_text("grader.sh\n")
    linked = _case_folder(tmp_path, "c3")
    (linked / "tests" / "extra.sh").symlink_to(linked / "tests" / "grader.sh")
    staged = StagedTasks()
    for task in (plain, ignoring, linked):
        staged.add_folder(task)
    for task in (plain, ignoring, linked):
        harbor = file_filter.TaskFileFilter(task)
        for path in _files(task):
            answer = bool(harbor.is_excluded(path))
            assert staged.excluded(harbor.task_dir, path, lambda answer=answer: answer) is answer
    assert file_filter.TaskFileFilter(ignoring).is_excluded(ignoring / "tests" / "grader.sh")  # the case checked


def test_trials_of_many_plain_folders_record_what_harbor_computes_for_each(tmp_path: Path) -> None:
    folders = [_case_folder(tmp_path, f"c{n}") for n in range(3)]
    staged = StagedTasks()
    for task in folders:
        staged.add_folder(task)
    for n, task in enumerate(folders):
        trial, lock = _created(_config(task, tmp_path / "trials", f"t{n}"), staged)
        _, plain = _created(_config(task, tmp_path / "plain", f"t{n}"), None)  # Harbor's own, for the same folder
        assert lock["task"] == plain["task"] and lock["verifier"] == plain["verifier"]
        assert lock["task"]["digest"] == _harbor_digest(task)
        assert trial.task.checksum == _harbor_checksum(task)
        assert trial.task.instruction == f"Do c{n}.\n"


def test_a_task_toml_is_parsed_once_per_text_and_each_caller_gets_its_own_copy(tmp_path: Path) -> None:
    from harbor.models.task.config import TaskConfig as TaskDefinition

    text = (_case_folder(tmp_path, "c1") / "task.toml").read_text()
    parsed: list[str] = []

    def parse(toml: str) -> TaskDefinition:
        parsed.append(toml)
        return TaskDefinition.model_validate_toml(toml)  # outside create_trial: Harbor's own

    staged = StagedTasks()
    first, second = staged.task_config(text, parse), staged.task_config(text, parse)
    assert parsed == [text]
    assert first == second == TaskDefinition.model_validate_toml(text) and first is not second
    first.agent.timeout_sec = 1.0  # what one caller changes, the next is not given
    assert staged.task_config(text, parse).agent.timeout_sec == second.agent.timeout_sec != 1.0
    other = text.replace("c1", "c2")
    assert staged.task_config(other, parse) == TaskDefinition.model_validate_toml(other) and parsed == [text, other]
