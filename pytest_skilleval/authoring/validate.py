"""`skilleval validate`'s checks of one skill folder: every rule a run would enforce, checked without running anything.

A broken dataset, config or native task is otherwise found only when `pytest --skill-eval` collects it, one problem
at a time, after the author has already set up agents and sandboxes. Validation reuses the very functions the
plugin calls (dataset loading, config model, native-task checks, input staging rules), so it cannot disagree with a
run, and reports all problems at once.

Severities: `error` (the run would refuse or fail), `warning` (the run works but probably not as intended; `--strict`
fails on these) and `info` (facts worth knowing, such as a missing replay, which never fail).
Exit codes: 0 ok, 1 findings fail the check, 2 usage (bad flags, not a skill folder).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_skilleval.authoring.case_warnings import check_anything_to_run, check_cases
from pytest_skilleval.authoring.findings import (
    SEVERITIES,
    Severity,
    UsageError,
    ValidationContext,
    ValidationFinding,
    ValidationReport,
)
from pytest_skilleval.authoring.harbor_contract import check_harbor_contract
from pytest_skilleval.authoring.validate_replays import check_replays
from pytest_skilleval.authoring.validate_triggers import check_trigger_set
from pytest_skilleval.skill.bounded_parse import read_author_file
from pytest_skilleval.skill.bounded_yaml import load_yaml
from pytest_skilleval.skill.case_ids import duplicate_key
from pytest_skilleval.skill.config_file import (
    MAX_CONFIG_BYTES,
    ConfigError,
    find_config,
    load_config,
    normalize_grading_mode,
)
from pytest_skilleval.skill.dataset import (
    DATASET_NAMES,
    DatasetError,
    EvalCase,
    entry_key_typos,
    entry_outcomes,
    find_dataset,
    load_dataset,
    read_entries,
    read_text,
)
from pytest_skilleval.skill.entry_keys import KeyTypo
from pytest_skilleval.skill.folder import GRADER_NAMES
from pytest_skilleval.skill.native_tasks import (
    HARBOR_DIR_NAME,
    IGNORED_NAMES,
    TASK_FILE,
    Finding,
    NativeTaskError,
    check_native_tasks,
    load_native_task,
)
from pytest_skilleval.skill.skill_names import name_mismatch, unnamed_skill_cases

SYNTAX_CHECK_TIMEOUT = 20


# ---------------------------------------------------------------------------------------------------------------
# config.yml


def _config_rule(field_name: str, message: str) -> str:
    if message.startswith("unknown key"):
        return "config-unknown-key"
    if "runtime_env" in field_name or "passthrough_env" in field_name:
        return "config-runtime-env"
    return "config-invalid"


def _lenient_mode(path: Path) -> str | None:
    """The grading mode an invalid config still states, so later checks judge the run the author meant."""
    try:
        data = load_yaml(read_author_file(path, MAX_CONFIG_BYTES).decode("utf-8"))
        return normalize_grading_mode(data["grading"]["mode"])
    except Exception:  # noqa: BLE001 - any unreadable shape simply means "not stated"
        return None


def _check_config(ctx: ValidationContext, mode_override: str | None) -> None:
    """Load config.yml with the run's own model; every problem it names becomes a finding."""
    stated: str | None = None
    try:
        ctx.config_path = find_config(ctx.evals_dir)
        ctx.config = load_config(ctx.evals_dir)
        stated = ctx.config.grading_mode if ctx.config is not None else None
    except ConfigError as error:
        for field_name, message in [(error.field, error.message), *error.more]:
            where = f"{field_name}: " if field_name else ""
            ctx.add(_config_rule(field_name, message), "error", where + message, error.path)
        stated = _lenient_mode(error.path)
        ctx.config_path = ctx.config_path or error.path
    ctx.grading_mode = mode_override or stated or "default"


# ---------------------------------------------------------------------------------------------------------------
# Dataset


def _dataset_rule(error: DatasetError) -> str:
    if error.field == "id" or (error.field or "").startswith("id."):
        return "dataset-id"
    return "dataset-entry" if error.entry is not None else "dataset-invalid"


def _entry_errors(path: Path) -> tuple[list[DatasetError], list[EvalCase], list[KeyTypo]]:
    """Every entry's problem, not just the first one `load_dataset` stops at, the entries that are valid, and the
    near-miss keys; the dataset module's own steps, so the per-entry rules are exactly the loader's."""
    try:
        _, skill_name, raw_entries = read_entries(path, read_text(path))
    except DatasetError:
        return [], [], []
    errors: list[DatasetError] = []
    cases: list[EvalCase] = []
    for outcome in entry_outcomes(path, skill_name, raw_entries):
        if isinstance(outcome, DatasetError):
            errors.append(outcome)
        else:
            cases.append(outcome)
    return errors, cases, entry_key_typos(raw_entries)


def _add_dataset_error(ctx: ValidationContext, error: DatasetError) -> None:
    where = ": ".join(part for part in (error.entry, f"field '{error.field}'" if error.field else None) if part)
    ctx.add(_dataset_rule(error), "error", f"{where}: {error.message}" if where else error.message, error.path)


def _check_dataset(ctx: ValidationContext) -> None:
    """The dataset loads exactly as a run loads it; all entry problems are listed, not only the first."""
    present = [ctx.evals_dir / name for name in DATASET_NAMES if (ctx.evals_dir / name).is_file()]
    if len(present) > 1:
        names = ", ".join(path.name for path in present)
        ctx.add("multiple-datasets", "error", f"more than one dataset file ({names}); keep exactly one", ctx.evals_dir)
    path = find_dataset(ctx.evals_dir)
    ctx.dataset_path = path
    if path is None:
        return
    try:
        ctx.dataset = load_dataset(path)
        ctx.valid_cases = list(ctx.dataset.cases)
        typos = ctx.dataset.key_typos
    except DatasetError as first:
        errors, ctx.valid_cases, typos = _entry_errors(path)
        for error in errors or [first]:
            _add_dataset_error(ctx, error)
    for typo in typos:
        ctx.add("dataset-key-typo", "warning", typo.message(), path)
    if ctx.dataset is None:
        return
    mismatch = name_mismatch(ctx.skill_dir, ctx.dataset.skill_name, path.name)
    if mismatch:
        ctx.add("skill-name-mismatch", "warning", mismatch, path)
    unnamed = unnamed_skill_cases(ctx.skill_dir, path.name, [case.entry_json() for case in ctx.dataset.cases])
    if unnamed:
        ctx.add("unnamed-skill-cases", "warning", unnamed, path)
    if ctx.dataset.shape == "legacy":
        ctx.add(
            "legacy-dataset-shape",
            "warning",
            'legacy dataset shape (a flat list of entries) is deprecated; use {"skill_name": ..., "evals": [...]} '
            "with prompt / expected_output / assertions",
            path,
        )


def _check_files(ctx: ValidationContext) -> None:
    """Each `files` entry obeys the staging rules; every bad entry is named, not only the first."""
    from pytest_skilleval.skill.case_inputs import StagingError, input_sources

    omitted = [case for case in ctx.valid_cases if not case.files_given]
    if omitted:
        try:
            input_sources(ctx.evals_dir, None, omitted[0].id)
        except StagingError as error:
            ctx.add("files-entry", "error", str(error), ctx.evals_dir / "files")
    for case in ctx.valid_cases:
        for item in case.files or []:
            try:
                input_sources(ctx.evals_dir, [item], case.id)
            except StagingError as error:
                ctx.add("files-entry", "error", str(error), ctx.dataset_path)
    if len(ctx.valid_cases) > 1 and omitted and (ctx.evals_dir / "files").is_dir():
        ids = ", ".join(case.id for case in omitted[:5]) + (" ..." if len(omitted) > 5 else "")
        ctx.add(
            "files-omitted",
            "warning",
            f"case(s) {ids} omit `files`, so each gets all of evals/files/; list each case's own inputs "
            "(or `files: []` for none)",
            ctx.dataset_path,
        )


def _check_custom_dockerfile(ctx: ValidationContext) -> None:
    """evals/environment/Dockerfile obeys the image rules (size, FROM first, COPY paths) a run checks at start."""
    from pytest_skilleval.harbor.images import CUSTOM_DOCKERFILE, custom_dockerfile_problems

    dockerfile = ctx.evals_dir / CUSTOM_DOCKERFILE
    if dockerfile.is_file():
        for problem in custom_dockerfile_problems(dockerfile):
            ctx.add("custom-dockerfile", "error", problem, dockerfile)


def _skill_scripts(skill_dir: Path) -> list[Path]:
    scripts = skill_dir / "scripts"
    return sorted(p for p in scripts.glob("*.py") if p.is_file()) if scripts.is_dir() else []


def _skill_file_names(skill_dir: Path) -> set[str]:
    """Names of the skill's own files (its evals/ excluded): what an expected_script can point at."""
    names: set[str] = set()
    for path in skill_dir.rglob("*"):
        relative = path.relative_to(skill_dir)
        if relative.parts[0] not in {"evals", ".git", "__pycache__"} and path.is_file():
            names.add(path.name)
    return names


def _check_expected_scripts(ctx: ValidationContext) -> None:
    """Script execution is only scored when a positive case names its script; a positive case that leaves the key
    out, in a skill with scripts, is warned about (an explicit null says it needs none)."""
    scripts = _skill_scripts(ctx.skill_dir)
    known = _skill_file_names(ctx.skill_dir) if any(case.expected_script for case in ctx.valid_cases) else set()
    for case in ctx.valid_cases:
        if case.expected_script:
            name = Path(case.expected_script.replace("\\", "/")).name
            if name not in known:
                ctx.add(
                    "expected-script-unknown",
                    "warning",
                    f"case {case.id!r}: expected_script {case.expected_script!r} matches no file in the skill",
                    ctx.dataset_path,
                )
        elif scripts and not case.is_negative and "expected_script" not in case.model_fields_set:
            # An explicit `"expected_script": null` says the case needs no script: nothing to warn about.
            listed = ", ".join(p.name for p in scripts[:3])
            ctx.add(
                "expected-script-missing",
                "warning",
                f"case {case.id!r} has no expected_script while the skill has scripts/*.py ({listed}); "
                f'script execution is not checked for it: name the script it should run ("expected_script": '
                f'"{scripts[0].name}"), or write "expected_script": null if the case needs none',
                ctx.dataset_path,
            )


def _check_skill_copy(ctx: ValidationContext) -> None:
    """The copy of the skill a run gives the agent (skill/skill_copy.py): every link it cannot hold, the caps."""
    from pytest_skilleval.skill.skill_copy import plan_skill_copy

    for problem in plan_skill_copy(ctx.skill_dir).problems:
        ctx.add(problem.rule, "error", problem.message, problem.path)


def _check_front_matter(ctx: ValidationContext) -> None:
    """SKILL.md's name and description against the Agent Skills rules: an error when no agent could list the skill
    (no front matter, unreadable YAML, no name or description), a warning for a rule only some agents enforce."""
    from pytest_skilleval.skill.skill_md import front_matter_problems

    for problem in front_matter_problems(ctx.skill_dir):
        ctx.add(problem.rule, "error" if problem.fatal else "warning", problem.message, ctx.skill_dir / "SKILL.md")


def _check_skill_code(ctx: ValidationContext) -> None:
    from pytest_skilleval.skill.host_code import skill_code_findings

    for rule, severity, message, path in skill_code_findings(ctx.skill_dir):
        ctx.add(rule, severity, message, path)


# ---------------------------------------------------------------------------------------------------------------
# Graders


def _syntax_problem(grader: Path) -> str | None:
    """Parse the grader without running it: Python's compiler, or `bash -n` for shell graders."""
    if grader.suffix == ".py":
        try:
            compile(grader.read_bytes(), str(grader), "exec", dont_inherit=True)
        except SyntaxError as error:
            return f"is not valid Python (line {error.lineno}: {error.msg})"
        except (OSError, ValueError) as error:
            return f"cannot be read: {error}"
        return None
    bash = shutil.which("bash")
    if bash is None:
        return None
    try:
        done = subprocess.run(
            [bash, "-n", str(grader)], capture_output=True, text=True, timeout=SYNTAX_CHECK_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["syntax error"])[0]
        return f"is not valid bash: {first}"
    return None


def _check_grader_file(ctx: ValidationContext, grader: Path) -> bool:
    """A grader must be a regular file (never a symlink) that parses; True when it is usable."""
    if grader.is_symlink():
        ctx.add("grader-symlink", "error", f"{grader.name} is a symbolic link; graders must be regular files", grader)
        return False
    if not grader.is_file():
        ctx.add("grader-not-file", "error", f"{grader.name} exists but is not a regular file", grader)
        return False
    problem = _syntax_problem(grader)
    if problem:
        ctx.add("grader-syntax", "error", f"{grader.name} {problem}", grader)
        return False
    return True


def _check_graders(ctx: ValidationContext) -> None:
    present = [
        ctx.evals_dir / name
        for name in GRADER_NAMES
        if (ctx.evals_dir / name).exists() or (ctx.evals_dir / name).is_symlink()
    ]
    usable = [grader for grader in present if _check_grader_file(ctx, grader)]
    if len(usable) > 1:
        ctx.add("grader-shadowed", "warning", "both grader.py and grader.sh exist; only grader.py is used", usable[1])
    if usable and ctx.grading_mode == "default":
        ctx.add(
            "grader-ignored",
            "warning",
            f"{usable[0].name} is ignored in grading mode default; set grading.mode: default_plus_custom or "
            "custom_only in evals/config.yml",
            usable[0],
        )
    if ctx.grading_mode == "custom_only" and ctx.usable_grader() is None and ctx.dataset_path is not None:
        ctx.add(
            "grader-missing",
            "error",
            "grading mode custom_only scores dataset cases with evals/grader.py or grader.sh, and there is none "
            "(skilleval init-custom-grader writes one)",
            ctx.evals_dir,
        )
    if ctx.grading_mode == "default_plus_custom" and not present and ctx.valid_cases:
        ctx.add(
            "grader-absent",
            "warning",
            "grading mode default_plus_custom adds a grader's custom metrics, but there is no evals/grader.py or "
            "grader.sh, so dataset cases get standard scores only",
            ctx.evals_dir,
        )
    for task in ctx.tasks:
        for name in GRADER_NAMES:
            candidate = task.path / "tests" / name
            if candidate.exists() or candidate.is_symlink():
                _check_grader_file(ctx, candidate)


# ---------------------------------------------------------------------------------------------------------------
# Native tasks


def _task_folders(root: Path) -> Iterator[Path]:
    """The folders discovery looks at, in its order."""
    for child in sorted(root.iterdir(), key=lambda p: p.name):
        if child.name.startswith((".", "_")) or child.name in IGNORED_NAMES or not child.is_dir():
            continue
        yield child


def _load_tasks(ctx: ValidationContext) -> None:
    """Load every native task, reporting each unreadable one (discovery itself stops at the first)."""
    root = ctx.evals_dir / HARBOR_DIR_NAME
    if not root.is_dir():
        return
    seen: dict[str, str] = {}
    for child in _task_folders(root):
        if not (child / TASK_FILE).exists() and not (child / TASK_FILE).is_symlink():
            ctx.add("native-task-no-toml", "warning", f"{child.name}/ has no task.toml and is not a case", child)
            continue
        try:
            task = load_native_task(child)
        except NativeTaskError as error:
            ctx.add("native-task-invalid", "error", str(error).removeprefix(f"{child}: "), child)
            continue
        key = duplicate_key(task.case_id)
        if key in seen:
            ctx.add(
                "native-task-duplicate",
                "error",
                f"case folder '{task.case_id}' differs from '{seen[key]}' only in letter case",
                child,
            )
            continue
        seen[key] = task.case_id
        ctx.tasks.append(task)


def _from_native(ctx: ValidationContext, finding: Finding) -> ValidationFinding:
    path = finding.path
    if path is None and finding.rule.startswith("paired-pre-agent-setup"):
        path = ctx.config_path
    return ValidationFinding(finding.rule, finding.severity, finding.message, path)


def _check_native(ctx: ValidationContext) -> None:
    """The plugin's own native-task rules, for the run validate assumes (paired unless --skip-baseline)."""
    if not ctx.tasks:
        return
    dataset_ids = {case.id for case in ctx.valid_cases} if ctx.dataset_path is not None else None
    pre_agent_setup = (ctx.config.setting("pre_agent_setup") or []) if ctx.config is not None else []
    findings = check_native_tasks(
        ctx.tasks,
        grading_mode=ctx.grading_mode,
        paired=ctx.paired,
        dataset_ids=dataset_ids,
        pre_agent_setup=list(pre_agent_setup),
        staged_env=ctx.pass_env,
    )
    ctx.findings.extend(_from_native(ctx, finding) for finding in findings)


# ---------------------------------------------------------------------------------------------------------------
# Entry points


def check_skill_dir(skill_dir: Path) -> Path:
    """The folder must be a skill (holds SKILL.md); anything else is a usage error."""
    skill_dir = Path(skill_dir)
    if not skill_dir.is_dir():
        raise UsageError(f"{skill_dir}: not a directory")
    if not (skill_dir / "SKILL.md").is_file():
        raise UsageError(f"{skill_dir}: not a skill folder (no SKILL.md)")
    return skill_dir


def validate_skill(
    skill_dir: Path,
    *,
    harbor_contract: bool = False,
    skip_baseline: bool = False,
    grading_mode: str | None = None,
    pass_env: Sequence[str] = (),
) -> ValidationReport:
    """Every check for one skill folder. `grading_mode` overrides config.yml, as `--grading-mode` does in a run;
    `pass_env` is the run's `--pass-env` allowance (host variables native tasks may reference)."""
    skill_dir = check_skill_dir(skill_dir).resolve()
    ctx = ValidationContext(
        skill_dir=skill_dir, grading_mode="default", paired=not skip_baseline, pass_env=list(pass_env)
    )
    mode = normalize_grading_mode(grading_mode) if grading_mode else None
    _check_front_matter(ctx)
    _check_config(ctx, mode)
    _check_dataset(ctx)
    check_cases(ctx)
    triggers = check_trigger_set(ctx)
    _load_tasks(ctx)
    check_anything_to_run(ctx, triggers)
    _check_files(ctx)
    _check_custom_dockerfile(ctx)
    _check_expected_scripts(ctx)
    _check_graders(ctx)
    _check_native(ctx)
    if harbor_contract:
        check_harbor_contract(ctx)
    check_replays(ctx, triggers or [])
    _check_skill_copy(ctx)
    _check_skill_code(ctx)
    return ValidationReport(skill_dir=skill_dir, findings=ctx.findings)


def display_path(path: Path | None, report: ValidationReport, shown_as: Path) -> str:
    """A finding's path as the user spelled the skill folder, so it is short and clickable."""
    if path is None:
        return str(shown_as)
    try:
        relative = Path(path).resolve().relative_to(report.skill_dir)
    except ValueError:
        return str(path)
    return str(shown_as / relative) if relative.parts else str(shown_as)


def report_json(report: ValidationReport, strict: bool, shown_as: Path) -> dict[str, Any]:
    def listed(severity: Severity) -> list[dict[str, Any]]:
        return [f.as_json(display_path(f.path, report, shown_as)) for f in report.of(severity)]

    return {
        "skill": report.skill_dir.name,
        "ok": report.ok(strict),
        "strict": strict,
        "errors": listed("error"),
        "warnings": listed("warning"),
        "info": listed("info"),
    }


_CASE_PREFIX = re.compile(r"""^(case|trigger query) ('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"): (.+)$""", re.S)
_PLURAL = {"case": "cases", "trigger query": "trigger queries"}


def report_lines(report: ValidationReport, strict: bool, shown_as: Path) -> list[str]:
    """One line per finding, except that one rule's findings for several cases (or trigger queries) that say the
    same thing share a line (`cases 'a', 'b': ...`): a skill of 40 cases, none with checks, is one warning to read,
    not 40."""
    entries: list[tuple[str, str, list[str]]] = []  # (the line after the label, what is labelled, the labels)
    by_text: dict[str, list[str]] = {}
    for severity in SEVERITIES:
        for f in report.of(severity):
            head = f"{f.severity}: {display_path(f.path, report, shown_as)}: [{f.rule}] "
            match = _CASE_PREFIX.match(f.message)
            if match is None:
                entries.append((head + f.message, "", []))
                continue
            kind = match.group(1)
            text = f"{head}\0{kind}\0{match.group(3)}"
            if text not in by_text:
                by_text[text] = []
                entries.append((text, kind, by_text[text]))
            by_text[text].append(match.group(2))
    lines = []
    for text, kind, labels in entries:
        if labels:
            named = f"{kind} {labels[0]}" if len(labels) == 1 else f"{_PLURAL[kind]} {', '.join(labels)}"
            head, _, rest = text.split("\0", 2)
            text = f"{head}{named}: {rest}"
        lines.append(text)
    counts = f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)"
    verdict = "ok" if report.ok(strict) else "FAILED" + ("" if report.errors else " (--strict: warnings fail)")
    lines.append(f"{report.skill_dir.name}: {verdict}: {counts}")
    return lines
