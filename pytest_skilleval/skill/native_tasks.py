"""Native Harbor tasks (BYOT) under `evals/harbor/<case>/`: discovery, rule checks, staging.

A native task owns its instruction, environment and tests, so it can reach surfaces the standard grading relies
on (the shared verifier environment, host-controlled environment variables, what the agent sees before the skill
runs). `check_native_task` refuses those combinations before anything is staged, each finding naming its rule.
`stage_native_task` makes the per-arm copy Harbor runs; the author's folder is never written to.
"""

from __future__ import annotations

import tomllib
import types
import typing
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Literal

from harbor.models.task.config import StepConfig, TaskConfig, TaskOS
from harbor.models.task.paths import TaskPaths
from harbor.models.task.verifier_mode import (
    resolve_effective_verifier_env_config,
    resolve_verifier_environment_definition,
    task_has_any_separate_verifier,
)
from pydantic import BaseModel, ConfigDict, ValidationError

from pytest_skilleval.skill.case_ids import CaseIdError, canonical_case_id, duplicate_key
from pytest_skilleval.skill.case_inputs import link_leaving
from pytest_skilleval.skill.config_file import env_control_category, normalize_grading_mode, referenced_env_names
from pytest_skilleval.skill.host_env import unpassed_reference_message
from pytest_skilleval.skill.native_shipped import shipped_skills
from pytest_skilleval.skill.native_sidecars import compose_sidecars
from pytest_skilleval.skill.task_durations import duration_problems

HARBOR_DIR_NAME = "harbor"
TASK_FILE = "task.toml"
MAX_TASK_TOML_BYTES = 1024 * 1024
# Folder names under evals/harbor/ that are never cases.
IGNORED_NAMES = frozenset({"results", "__pycache__", ".git", ".skilleval-generated-output"})
# Names that would clash with files the dataset layout reserves next to the cases.
RESERVED_CASE_NAMES = frozenset({"dataset.toml", "readme.md", "metric.py", "results"})
ARM_SUFFIXES = {"with_skill": "-with-skill", "without_skill": "-without-skill", "baseline_skill": "-baseline-skill"}
_GRADER_NAMES = ("grader.py", "grader.sh")
STANDARD_MODES = frozenset({"default", "default_plus_custom"})
# Provider and judge controls may be forwarded into verifier.env only as an exact `${NAME}` the operator passed.
_FORWARDABLE = frozenset({"provider-credential", "judge-model"})

Severity = Literal["error", "warning"]


class NativeTaskError(ValueError):
    """A native task that cannot even be read (bad folder name, unreadable task.toml, ...)."""


class NativeTask(BaseModel):
    """One `evals/harbor/<case>/` folder, parsed."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    case_id: str
    entry_id: str
    path: Path
    config: TaskConfig


class Finding(BaseModel):
    """One rule a native task breaks; `rule` is a stable id, `message` says what to change."""

    rule: str
    severity: Severity
    message: str
    path: Path | None = None


# ---------------------------------------------------------------------------------------------------------------
# Discovery


def _read_task_config(toml_path: Path) -> tuple[TaskConfig, dict[str, Any]]:
    try:
        if toml_path.stat().st_size > MAX_TASK_TOML_BYTES:
            raise NativeTaskError(f"{toml_path}: task.toml is larger than {MAX_TASK_TOML_BYTES // 1024} KiB")
        text = toml_path.read_text(encoding="utf-8")
        raw = tomllib.loads(text)
        config = TaskConfig.model_validate(raw)
    except (OSError, UnicodeDecodeError) as exc:
        raise NativeTaskError(f"{toml_path}: cannot read task.toml: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise NativeTaskError(f"{toml_path}: task.toml is not valid TOML: {exc}") from None
    except RecursionError:
        raise NativeTaskError(f"{toml_path}: task.toml is nested too deeply to read") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise NativeTaskError(f"{toml_path}: task.toml field {field}: {first['msg']}") from None
    problems = duration_problems(config)
    if problems:
        raise NativeTaskError(f"{toml_path}: task.toml field " + "; field ".join(problems))
    return config, raw


def load_native_task(task_dir: Path) -> NativeTask:
    """Parse one case folder; the folder name must be a valid case id."""
    task_dir = Path(task_dir)
    try:
        case_id = canonical_case_id(task_dir.name)
    except CaseIdError as exc:
        raise NativeTaskError(f"{task_dir}: native task folder name is not a valid case id: {exc}") from None
    if task_dir.name.casefold() in RESERVED_CASE_NAMES:
        raise NativeTaskError(f"{task_dir}: '{task_dir.name}' is a reserved name and cannot be a case folder")
    if task_dir.is_symlink():
        raise NativeTaskError(f"{task_dir}: native task folders must not be symbolic links")
    toml_path = task_dir / TASK_FILE
    if problem := link_leaving(task_dir, never=TASK_FILE):  # Harbor reads instruction.md on the host
        raise NativeTaskError(problem)
    config, _ = _read_task_config(toml_path)
    entry_id = case_id
    if "entry_id" in config.metadata:
        try:
            entry_id = canonical_case_id(config.metadata["entry_id"])
        except CaseIdError as exc:
            raise NativeTaskError(f"{toml_path}: [metadata] entry_id is not a valid case id: {exc}") from None
    return NativeTask(case_id=case_id, entry_id=entry_id, path=task_dir, config=config)


def discover_native_tasks(evals_dir: Path) -> list[NativeTask]:
    """Every `evals/harbor/<case>/` holding a task.toml, sorted by case id. Raises NativeTaskError on bad ones."""
    root = Path(evals_dir) / HARBOR_DIR_NAME
    if not root.is_dir():
        return []
    tasks: list[NativeTask] = []
    seen: dict[str, str] = {}
    for child in sorted(root.iterdir(), key=lambda p: p.name):
        if child.name.startswith((".", "_")) or child.name in IGNORED_NAMES:
            continue
        if not (child.is_dir() and (child / TASK_FILE).exists()):
            continue
        task = load_native_task(child)
        key = duplicate_key(task.case_id)
        if key in seen:
            raise NativeTaskError(
                f"{child}: case folder '{task.case_id}' differs from '{seen[key]}' only in letter case"
            )
        seen[key] = task.case_id
        tasks.append(task)
    return tasks


# ---------------------------------------------------------------------------------------------------------------
# Checks


def _non_empty_dir(path: Path) -> bool:
    return path.is_dir() and any(p.is_file() or p.is_symlink() for p in path.rglob("*"))


def _step_dirs(task: NativeTask, sub: str) -> list[tuple[str, Path]]:
    """`steps/<step>/<sub>` for configured steps and any other step folder on disk."""
    names = [s.name for s in task.config.steps or []]
    steps_root = task.path / "steps"
    if steps_root.is_dir():
        names.extend(p.name for p in sorted(steps_root.iterdir()) if p.is_dir() and p.name not in names)
    return [(name, steps_root / name / sub) for name in names]


def _env_tables(config: TaskConfig) -> list[tuple[str, dict[str, str], bool]]:
    """(label, table, is_verifier_env) for every environment-variable table the task controls."""
    tables: list[tuple[str, dict[str, str], bool]] = [
        ("[environment.env]", config.environment.env, False),
        ("[verifier.env]", config.verifier.env, True),
        ("[solution.env]", config.solution.env, False),
    ]
    if config.verifier.environment is not None:
        tables.append(("[verifier.environment.env]", config.verifier.environment.env, False))
    for step in config.steps or []:
        tables.append((f"[[steps]] '{step.name}' verifier.env", step.verifier.env, True))
        if step.verifier.environment is not None:
            tables.append((f"[[steps]] '{step.name}' verifier.environment.env", step.verifier.environment.env, False))
    return tables


def _env_findings(task: NativeTask, standard: bool, passed: frozenset[str]) -> list[Finding]:
    """Host references need the operator's `--pass-env`; the standard modes also keep protected names to us.

    The exact-`${NAME}` forward of a provider or judge control in a verifier env table is the one protected
    assignment allowed, and only for a passed name.
    """
    findings: list[Finding] = []
    toml_path = task.path / TASK_FILE

    def add(rule: str, severity: Severity, message: str) -> None:
        findings.append(Finding(rule=rule, severity=severity, message=message, path=toml_path))

    for label, table, is_verifier in _env_tables(task.config):
        for name, value in table.items():
            category = env_control_category(name)
            exact_forward = is_verifier and category in _FORWARDABLE and value.strip() == f"${{{name}}}"
            if exact_forward and name in passed:
                continue
            refs = referenced_env_names(value)
            for ref in refs:
                if ref not in passed:
                    add("task-env-host-variable", "error", unpassed_reference_message(f"{label} {name}", ref))
            if exact_forward:
                continue  # refused above only for not being passed, which --pass-env fixes
            if standard and category is not None:
                add(
                    "task-env-control",
                    "error",
                    f"{label} sets {name}, a task-controlled {category} variable; the standard grading modes keep "
                    "these under the evaluator's control (use grading.mode: custom_only to own them)",
                )
            for ref in refs:
                ref_category = env_control_category(ref)
                if ref not in passed or ref_category is None or (ref == name and category is not None):
                    continue  # not passed: refused above; a protected name is reported once, not for itself
                if standard:
                    add("task-env-control", "error", f"{label} {name} references {ref}, a host {ref_category} variable")
                elif ref_category == "provider-credential":
                    add(
                        "task-env-credential",
                        "warning",
                        f"{label} {name} forwards the operator credential {ref} into the task",
                    )
    return findings


def _verifier_passes(config: TaskConfig) -> list[StepConfig | None]:
    return list(config.steps) if config.steps else [None]


def _grader_files(task: NativeTask) -> list[Path]:
    found = [task.path / "tests" / name for name in _GRADER_NAMES if (task.path / "tests" / name).is_file()]
    evals_dir = task.path.parent.parent if task.path.parent.name == HARBOR_DIR_NAME else None
    if evals_dir is not None:
        found += [evals_dir / name for name in _GRADER_NAMES if (evals_dir / name).is_file()]
    return found


def _test_script(directory: Path) -> Path | None:
    for name in ("test.sh", "test.bat", "test.ps1", "test.cmd"):
        if (directory / name).is_file():
            return directory / name
    return None


def _verifier_findings(task: NativeTask, standard: bool, mode: str) -> list[Finding]:
    findings: list[Finding] = []
    config, toml_path = task.config, task.path / TASK_FILE
    paths = TaskPaths(task.path)
    graders = _grader_files(task)
    for step in _verifier_passes(config):
        where = f"step '{step.name}'" if step else "the task"
        env = resolve_effective_verifier_env_config(config, step)
        if env is not None and env.os == TaskOS.WINDOWS:
            findings.append(
                Finding(
                    rule="windows-environment",
                    severity="error",
                    message=f"the verifier for {where} runs on Windows; native task projection is POSIX-only",
                    path=toml_path,
                )
            )
        try:
            definition = resolve_verifier_environment_definition(config, paths, step)
        except (OSError, ValueError, RuntimeError) as exc:
            findings.append(Finding(rule="invalid-task-tree", severity="error", message=str(exc), path=task.path))
            continue
        if definition is None or not definition.bundled_tests:
            continue
        if graders:
            findings.append(
                Finding(
                    rule="grader-with-dedicated-verifier-image",
                    severity="error",
                    message=(
                        f"{where} uses a dedicated verifier image ({definition.directory.relative_to(task.path)}), "
                        f"so {graders[0].name} would never reach it; remove the grader or the dedicated image"
                    ),
                    path=graders[0],
                )
            )
        if _test_script(definition.directory) is None:
            findings.append(
                Finding(
                    rule="dedicated-verifier-missing-test",
                    severity="error",
                    message=(
                        f"{definition.directory.relative_to(task.path)}/ defines a dedicated verifier image but has "
                        "no test script; Harbor uploads no tests to it"
                    ),
                    path=definition.directory,
                )
            )
    if standard and task_has_any_separate_verifier(config):
        findings.append(
            Finding(
                rule="separate-verifier",
                severity="error",
                message=(
                    f"grading mode {mode} runs the standard grader in the shared verifier environment; remove the "
                    "separate verifier ([verifier] environment_mode / [verifier.environment]) or use custom_only"
                ),
                path=toml_path,
            )
        )
    if standard:
        for name, tests in _step_dirs(task, "tests"):
            if _non_empty_dir(tests):
                findings.append(
                    Finding(
                        rule="step-tests-overlay",
                        severity="error",
                        message=(
                            f"steps/{name}/tests/ is not empty; grading mode {mode} replaces the tests, so per-step "
                            "test overlays are rejected (use custom_only)"
                        ),
                        path=tests,
                    )
                )
        hooks = [("[verifier]", config.verifier.collect)] + [
            (f"step '{s.name}'", s.verifier.collect) for s in config.steps or []
        ]
        for where, collect in hooks:
            if collect:
                findings.append(
                    Finding(
                        rule="collect-hooks",
                        severity="error",
                        message=f"{where} declares [[verifier.collect]] hooks; grading mode {mode} rejects them",
                        path=toml_path,
                    )
                )
    elif not graders:
        # custom_only without a grader runs the task's own test script unchanged, so it has to exist.
        for step in _verifier_passes(config):
            step_test = paths.discovered_step_test_path_for(step.name, None) if step else None
            if step_test is None and paths.discovered_test_path_for(None) is None:
                findings.append(
                    Finding(
                        rule="missing-test-script",
                        severity="error",
                        message="custom_only without tests/grader.py or grader.sh needs an authored tests/test.sh",
                        path=task.path / "tests",
                    )
                )
                break
    return findings


def _paired_findings(task: NativeTask, pre_agent_setup: Sequence[str]) -> list[Finding]:
    """Surfaces that can seed or observe the agent before the evaluated skill runs: unfair in a baseline."""
    findings: list[Finding] = []
    config, toml_path = task.config, task.path / TASK_FILE
    hint = (
        "; the baseline arm never gets them (--skip-with-skill and --baseline-skill too): they are allowed only in a "
        "with-skill-only run (--skip-baseline, or --arms with_skill)"
    )
    if config.environment.healthcheck is not None:
        findings.append(
            Finding(
                rule="paired-healthcheck",
                severity="error",
                message="[environment.healthcheck] is authored; a paired run rejects task healthchecks" + hint,
                path=toml_path,
            )
        )
    for step in config.steps or []:
        if step.healthcheck is not None:
            findings.append(
                Finding(
                    rule="paired-healthcheck",
                    severity="error",
                    message=f"step '{step.name}' has a healthcheck; a paired run rejects step healthchecks" + hint,
                    path=toml_path,
                )
            )
    for name, workdir in _step_dirs(task, "workdir"):
        if _non_empty_dir(workdir):
            findings.append(
                Finding(
                    rule="paired-step-workdir",
                    severity="error",
                    message=f"steps/{name}/workdir/ projects files before the agent runs; a paired run rejects it"
                    + hint,
                    path=workdir,
                )
            )
    if config.steps:
        trajectory = task.path / "steps" / config.steps[0].name / "trajectory.json"
    else:
        trajectory = task.path / "trajectory.json"
    if trajectory.exists():
        findings.append(
            Finding(
                rule="paired-prior-trajectory",
                severity="error",
                message=f"{trajectory.relative_to(task.path)} ships a prior trajectory; a paired run rejects it" + hint,
                path=trajectory,
            )
        )
    shipped = shipped_skills(task.path, task.config)
    if shipped:
        findings.append(
            Finding(
                rule="paired-shipped-skills",
                severity="error",
                message="the task ships its own skills (" + "; ".join(shipped) + "): its environment is the same in "
                "both arms, so the baseline would get the skill too and the comparison would measure nothing. Remove "
                "them (the plugin installs the skill under test into the with-skill arm only)" + hint,
                path=task.path / TASK_FILE,
            )
        )
    if list(pre_agent_setup):
        findings.append(
            Finding(
                rule="paired-pre-agent-setup",
                severity="error",
                message="harbor.pre_agent_setup / setup_commands run skill-owned commands before the agent; "
                "a paired run rejects them" + hint,
            )
        )
    return findings


def _entry_findings(task: NativeTask, mode: str, dataset_ids: AbstractSet[str] | None) -> list[Finding]:
    toml_path = task.path / TASK_FILE
    if dataset_ids is None:
        return [
            Finding(
                rule="missing-dataset",
                severity="error",
                message=(
                    f"grading mode {mode} needs evals/evals.json with an entry '{task.entry_id}' for native task "
                    f"'{task.case_id}' (or use custom_only)"
                ),
                path=toml_path,
            )
        ]
    if task.entry_id not in dataset_ids:
        source = "[metadata] entry_id" if "entry_id" in task.config.metadata else "the folder name"
        return [
            Finding(
                rule="entry-id-mismatch",
                severity="error",
                message=(
                    f"native task '{task.case_id}' has entry id '{task.entry_id}' (from {source}), which matches no "
                    f"entry id in the dataset; grading mode {mode} needs one (or use custom_only)"
                ),
                path=toml_path,
            )
        ]
    return []


def _annotation_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) in (typing.Union, list):
        for arg in typing.get_args(annotation):
            found = _annotation_model(arg)
            if found is not None:
                return found
    return None


_LEGACY_KEYS = {"TaskConfig": {"version"}, "EnvironmentConfig": {"memory", "storage"}}


def _unknown_keys(data: Any, model: type[BaseModel], prefix: str) -> list[str]:
    """Keys Harbor would silently drop (typos); `[metadata]` and env tables are free-form."""
    if not isinstance(data, dict):
        return []
    unknown: list[str] = []
    allowed = set(model.model_fields) | _LEGACY_KEYS.get(model.__name__, set())
    for key, value in data.items():
        if key not in allowed:
            unknown.append(f"{prefix}{key}")
            continue
        field = model.model_fields.get(key)
        sub = _annotation_model(field.annotation) if field is not None else None
        if sub is None:
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            unknown.extend(_unknown_keys(item, sub, f"{prefix}{key}."))
    return unknown


def _structure_findings(task: NativeTask) -> list[Finding]:
    findings: list[Finding] = []
    config, toml_path = task.config, task.path / TASK_FILE
    if config.environment.os == TaskOS.WINDOWS:
        findings.append(
            Finding(
                rule="windows-environment",
                severity="error",
                message="[environment] os = 'windows'; native task projection is POSIX-only",
                path=toml_path,
            )
        )
    if config.steps:
        for step in config.steps:
            if not (task.path / "steps" / step.name / "instruction.md").is_file():
                findings.append(
                    Finding(
                        rule="missing-instruction",
                        severity="error",
                        message=f"steps/{step.name}/instruction.md is missing",
                        path=task.path / "steps" / step.name,
                    )
                )
    elif not (task.path / "instruction.md").is_file():
        findings.append(
            Finding(rule="missing-instruction", severity="error", message="instruction.md is missing", path=task.path)
        )
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        raw = {}
    for key in _unknown_keys(raw, TaskConfig, ""):
        findings.append(
            Finding(
                rule="unknown-task-field",
                severity="warning",
                message=f"task.toml key '{key}' is not a Harbor task field; Harbor ignores it (typo?)",
                path=toml_path,
            )
        )
    return findings


def check_native_task(
    task: NativeTask,
    *,
    grading_mode: str,
    paired: bool,
    dataset_ids: AbstractSet[str] | None,
    staged_env: Iterable[str] = (),
    pre_agent_setup: Sequence[str] = (),
    env_mode: str | None = None,
) -> list[Finding]:
    """Every rule this task breaks for this run.

    `paired`: a baseline arm runs (a with-skill + baseline run, --skip-with-skill or --baseline-skill; False for
    --skip-baseline):
    the baseline's isolation rules apply. `dataset_ids`: the evals.json entry ids,
    None when there is no dataset. `staged_env`: the operator's `--pass-env` allowance, the only host variables a
    task may reference (and the only provider/judge names it may forward as an exact `${NAME}` in a verifier env
    table). `pre_agent_setup`: the config's commands. `env_mode`: the environment the run uses, when known.
    """
    mode = normalize_grading_mode(grading_mode)
    standard = mode in STANDARD_MODES
    findings = _structure_findings(task)
    findings += _verifier_findings(task, standard, mode)
    findings += _env_findings(task, standard, frozenset(staged_env))
    if paired:
        findings += _paired_findings(task, pre_agent_setup)
    if standard:
        findings += _entry_findings(task, mode, dataset_ids)
    if env_mode == "local" and (sidecars := compose_sidecars(task.path)):
        compose, services = sidecars
        findings.append(
            Finding(
                rule="local-without-sidecars",
                severity="warning",
                message=(
                    f"environment/{compose.name} starts {', '.join(services)} beside the agent, and --env-mode local "
                    "does not start them: the agent runs without them; run this task with --env-mode docker"
                ),
                path=compose,
            )
        )
    return findings


def check_native_tasks(tasks: Sequence[NativeTask], **kwargs: Any) -> list[Finding]:
    """`check_native_task` for each task, plus the cross-task rule: entry ids must be unique."""
    findings: list[Finding] = []
    owners: dict[str, NativeTask] = {}
    for task in tasks:
        findings += check_native_task(task, **kwargs)
        key = duplicate_key(task.entry_id)
        if key in owners:
            findings.append(
                Finding(
                    rule="duplicate-entry-id",
                    severity="error",
                    message=(
                        f"native tasks '{owners[key].case_id}' and '{task.case_id}' share entry id "
                        f"'{task.entry_id}'; results could not tell them apart"
                    ),
                    path=task.path / TASK_FILE,
                )
            )
        else:
            owners[key] = task
    return findings
