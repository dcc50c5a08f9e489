"""Staging a native task for one arm under the run directory: the author's task.toml edited in place, nothing else
changed, so Harbor sees the task as written; the entry and grader the trial needs and its sandbox recipe beside it."""

from __future__ import annotations

import copy
import json
import re
import shutil
import tomllib
from pathlib import Path

import toml
from harbor.models.task.config import TaskConfig

from pytest_skilleval.harbor.images import adapt_native_dockerfile
from pytest_skilleval.harbor.staging import StagingError, entry_document
from pytest_skilleval.harbor.task_environment import TaskEnvironment
from pytest_skilleval.skill.native_tasks import ARM_SUFFIXES, TASK_FILE, NativeTask, NativeTaskError
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings
from verifier.skill_folders import DEFAULT_SKILLS_DIRS


def _table_span(text: str, table: str) -> tuple[int, int] | None:
    """(start of body, end of body) of `[table]`, or None when the file has no such header."""
    header = re.compile(rf"^[ \t]*\[[ \t]*{re.escape(table)}[ \t]*\][ \t]*(#.*)?$", re.MULTILINE)
    match = header.search(text)
    if match is None:
        return None
    start = match.end() + 1 if match.end() < len(text) else match.end()
    following = re.compile(r"^[ \t]*\[", re.MULTILINE).search(text, start)
    return start, following.start() if following else len(text)


def _edit_text(text: str, new_name: str | None, entry_id: str | None) -> str:
    """Keep the author's formatting and comments: change only the two lines staging needs."""
    if not text.endswith("\n"):
        text += "\n"
    if new_name is not None:
        span = _table_span(text, "task")
        if span is None:
            raise ValueError("no [task] header")
        body = text[span[0] : span[1]]
        line = re.compile(r"^([ \t]*name[ \t]*=[ \t]*)(\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*')", re.MULTILINE)
        body, count = line.subn(lambda m: m.group(1) + json.dumps(new_name), body, count=1)
        if count != 1:
            raise ValueError("no name line")
        text = text[: span[0]] + body + text[span[1] :]
    if entry_id is not None:
        span = _table_span(text, "metadata")
        entry_line = f"entry_id = {json.dumps(entry_id)}\n"
        if span is None:
            text += f"\n[metadata]\n{entry_line}"
        else:
            text = text[: span[0]] + entry_line + text[span[0] :]
    return text


def staged_task_toml(text: str, task: NativeTask, arm: str) -> str:
    """The staged copy's task.toml: `[task] name` suffixed for the arm, `[metadata] entry_id` filled in if absent."""
    data = tomllib.loads(text)
    expected = copy.deepcopy(data)
    suffix = ARM_SUFFIXES[arm]
    new_name: str | None = None
    if isinstance(expected.get("task"), dict) and isinstance(expected["task"].get("name"), str):
        name = expected["task"]["name"]
        new_name = name if name.endswith(suffix) else name + suffix
        expected["task"]["name"] = new_name
    entry_id: str | None = None
    metadata = expected.setdefault("metadata", {})
    if "entry_id" not in metadata:
        entry_id = task.entry_id
        metadata["entry_id"] = entry_id
    try:
        edited = _edit_text(text, new_name, entry_id)
        if tomllib.loads(edited) == expected:
            return edited
    except (ValueError, tomllib.TOMLDecodeError):
        pass
    rewritten = toml.dumps(expected)  # loses comments, keeps every value
    if tomllib.loads(rewritten) != expected:
        raise NativeTaskError(f"{task.path / TASK_FILE}: could not rewrite task.toml for staging")
    return rewritten


def normalize_arm(arm: str) -> str:
    value = arm.replace("-", "_")
    if value not in ARM_SUFFIXES:
        raise ValueError(f"arm must be with_skill, without_skill or baseline_skill, not {arm!r}")
    return value


def stage_native_task(task: NativeTask, dest_dir: Path, arm: str) -> Path:
    """Copy the task folder to `dest_dir` (which must not exist) for one arm and return it.

    The source is never modified. Symbolic links are copied as links, not followed, so nothing outside the task is
    pulled in. When the task has no `[task]` table Harbor names it after the folder, so pick `dest_dir` names that
    differ per arm.
    """
    arm = normalize_arm(arm)
    source = task.path.resolve()
    dest = Path(dest_dir).absolute()
    if dest.resolve() == source or source in dest.resolve().parents:
        raise NativeTaskError(f"{dest}: staging directory must be outside the task source {source}")
    if dest.exists():
        raise NativeTaskError(f"{dest}: staging directory already exists")
    text = (source / TASK_FILE).read_text(encoding="utf-8")
    staged_toml = staged_task_toml(text, task, arm)
    shutil.copytree(source, dest, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".git"))
    target = dest / TASK_FILE
    target.unlink()  # never write through a link or a hard link shared with the source
    target.write_text(staged_toml, encoding="utf-8")
    TaskConfig.model_validate_toml(staged_toml)
    return dest


def stage_native(spec: TrialSpec, task_dir: Path, mode: str, skill_grader: Path | None) -> tuple[Path, Path | None]:
    """Copy a native task for one arm (never touching the source) and give it the entry and grader it needs."""
    from pytest_skilleval.skill.native_tasks import load_native_task

    assert spec.native_task_dir is not None  # set for every spec whose source is "native"
    try:
        staged = stage_native_task(load_native_task(spec.native_task_dir), task_dir, spec.arm)
    except NativeTaskError as error:
        raise StagingError(str(error)) from None
    tests = staged / "tests"
    tests.mkdir(exist_ok=True)
    grader = next((tests / name for name in ("grader.py", "grader.sh") if (tests / name).is_file()), None)
    if grader is None and skill_grader is not None:
        grader = tests / skill_grader.name
        shutil.copy2(skill_grader, grader)
    entry = entry_document(spec, mode, grader is not None)
    if folders := task_skills_dirs(staged):
        entry["skills_dirs"] = folders
    (tests / "entry.json").write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return staged, grader


def task_skills_dirs(task_dir: Path) -> list[str] | None:
    """The skills folders the grader should know for a task with its own `[environment] skills_dir` (allowed in an
    unpaired run): Harbor gives that folder to the agent instead of its own, and the agents copy from it as usual;
    None for a task without one (the grader's defaults hold)."""
    config = TaskConfig.model_validate_toml((task_dir / TASK_FILE).read_text(encoding="utf-8"))
    folder = config.environment.skills_dir
    return [*DEFAULT_SKILLS_DIRS, folder] if folder else None


def native_environment(task_dir: Path, environment: TaskEnvironment, settings: RunSettings) -> None:
    """A native task's sandbox: its own Dockerfile rebased like a skill's (plus our layers); none at all (no
    Dockerfile, compose file or image) gets the skill's generated one, so it runs under Docker too."""
    env_dir = task_dir / "environment"
    own = [env_dir / name for name in ("Dockerfile", "docker-compose.yaml")]
    if any(path.exists() for path in own) or _native_image(task_dir):
        adapt_native_dockerfile(env_dir, settings.base_image, settings.custom_dockerfile_mode)
    else:
        environment.write(env_dir, None)


def _native_image(task_dir: Path) -> bool:
    table = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8")).get("environment", {})
    return bool(isinstance(table, dict) and table.get("docker_image"))
