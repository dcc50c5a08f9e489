"""`skilleval init-custom-grader` and `skilleval init-harbor-task`: keyless starters for BYOG and BYOT.

Each writes a working starter into the skill's `evals/` (never anything else), checks every target before writing
so a refusal leaves the tree untouched, and refuses to overwrite an existing file unless forced. The templates live
in `pytest_skilleval/templates/` and use only bash or the Python standard library, so they run in any sandbox.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from pytest_skilleval.results.natural_order import natural_key
from pytest_skilleval.skill.case_ids import CaseIdError, canonical_case_id
from pytest_skilleval.skill.config_file import (
    CONFIG_FILE_NAMES,
    ConfigError,
    find_config,
    load_config,
    normalize_grading_mode,
    parse_config,
)
from pytest_skilleval.skill.dataset import DatasetError, find_dataset, load_dataset
from pytest_skilleval.skill.native_tasks import RESERVED_CASE_NAMES, STANDARD_MODES

LANGUAGES = {"python": "grader.py", "shell": "grader.sh"}
GRADER_MODES = ("default_plus_custom", "custom_only")
DEFAULT_CASE_ID = "case-001"
_ORG_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class ScaffoldError(Exception):
    """The scaffold refused or failed; the message says why and how to proceed."""


@dataclass(frozen=True)
class _Planned:
    path: Path
    content: str
    executable: bool = False


def _template(name: str) -> str:
    return resources.files("pytest_skilleval.authoring").joinpath("templates", name).read_text(encoding="utf-8")


def _evals_dir(skill_dir: Path) -> Path:
    skill_dir = Path(skill_dir)
    if not skill_dir.is_dir():
        raise ScaffoldError(f"{skill_dir}: not a directory")
    if not (skill_dir / "SKILL.md").is_file():
        raise ScaffoldError(f"{skill_dir}: no SKILL.md here; point at the skill's folder")
    evals = skill_dir / "evals"
    if evals.exists() and not evals.is_dir():
        raise ScaffoldError(f"{evals}: exists and is not a directory")
    return evals


def _check_targets(planned: Sequence[_Planned], force: bool) -> None:
    for item in planned:
        if item.path.is_symlink():
            raise ScaffoldError(f"{item.path}: is a symbolic link; refusing to write through it")
        if item.path.exists() and not item.path.is_file():
            raise ScaffoldError(f"{item.path}: exists and is not a regular file")
        if item.path.exists() and not force:
            raise ScaffoldError(f"{item.path}: already exists; use --force to overwrite")


def _write(planned: Sequence[_Planned]) -> list[Path]:
    written: list[Path] = []
    for item in planned:
        item.path.parent.mkdir(parents=True, exist_ok=True)
        item.path.write_text(item.content, encoding="utf-8")
        if item.executable:
            item.path.chmod(0o755)
        written.append(item.path)
    return written


def _config_plan(evals: Path, mode: str, force: bool) -> _Planned | None:
    """The config file to write for `mode`, None when it already says so. An existing file is only updated (other
    settings kept) and only with force; it must stay valid."""
    try:
        existing = find_config(evals) if evals.is_dir() else None
    except ConfigError as exc:
        raise ScaffoldError(str(exc)) from None
    if existing is None:
        return _Planned(evals / CONFIG_FILE_NAMES[0], _template("config.yml.tmpl").replace("__MODE__", mode))
    try:
        current = load_config(evals)
        data = yaml.safe_load(existing.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ConfigError) as exc:
        raise ScaffoldError(f"{existing}: cannot update an invalid config ({exc}); fix it first") from None
    if current is not None and current.grading_mode == mode:
        return None
    if not force:
        raise ScaffoldError(
            f"{existing}: grading.mode is {(current and current.grading_mode) or 'unset'}, not {mode}; "
            "use --force to change it"
        )
    assert isinstance(data, dict)
    grading: dict[str, Any] = dict(data.get("grading") or {})
    grading["mode"] = mode
    data["grading"] = grading
    parse_config(existing, data)
    return _Planned(existing, yaml.safe_dump(data, sort_keys=False))


def init_custom_grader(
    skill_dir: Path, language: str = "python", mode: str | None = None, force: bool = False
) -> list[Path]:
    """Write `evals/grader.py` (or `grader.sh`) and, when `mode` is given, `evals/config.yml`. Returns the paths."""
    if language not in LANGUAGES:
        raise ScaffoldError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    if mode is not None:
        mode = normalize_grading_mode(mode)
        if mode not in GRADER_MODES:
            raise ScaffoldError(f"--mode must be default_plus_custom or custom_only; {mode} ignores a custom grader")
    evals = _evals_dir(skill_dir)
    name = LANGUAGES[language]
    other = evals / ("grader.sh" if name == "grader.py" else "grader.py")
    if other.exists():
        # grader.py is picked before grader.sh, so two graders would silently hide one of them.
        raise ScaffoldError(f"{other}: another grader already exists; remove it first (only one grader is used)")
    planned = [_Planned(evals / name, _template(f"{name}.tmpl"), executable=True)]
    if mode is not None:
        config = _config_plan(evals, mode, force)
        if config is not None:
            planned.append(config)
    _check_targets(planned[:1], force)
    return _write(planned)


def _task_name(skill_dir: Path, case_id: str) -> str:
    """Harbor wants `org/name`; the skill's folder name is the natural org when it fits the pattern."""
    org = Path(skill_dir).resolve().name
    if not _ORG_PART.fullmatch(org) or ".." in org:
        org = "skilleval"
    return f"{org}/{case_id}"


def configured_grading_mode(evals: Path) -> tuple[str, str]:
    """The grading mode a run takes from the skill's evals/config.yml (`default` without one), and where from."""
    try:
        existing = find_config(evals) if evals.is_dir() else None
        config = load_config(evals) if existing is not None else None
    except ConfigError as exc:
        raise ScaffoldError(str(exc)) from None
    if existing is None or config is None or config.grading_mode is None:
        return "default", "no grading.mode in evals/config.yml"
    return normalize_grading_mode(config.grading_mode), f"grading.mode in {existing}"


def _check_entry_id(evals: Path, case_id: str) -> None:
    """In a standard grading mode a native task is graded as the dataset entry with its id (collection's
    `entry-id-mismatch` and `missing-dataset` rules): refuse a task that no entry matches, before writing it."""
    mode, source = configured_grading_mode(evals)
    if mode not in STANDARD_MODES:
        return
    other_way = "or pass --with-config to grade the task by its own tests/test.sh (custom_only)"
    dataset = find_dataset(evals) if evals.is_dir() else None
    if dataset is None:
        raise ScaffoldError(
            f"grading mode {mode} ({source}) grades a native task as the dataset entry with its id, and "
            f"{evals} has no evals.json: add one with an entry {case_id!r}, {other_way}"
        )
    try:
        ids = sorted(load_dataset(dataset).ids(), key=natural_key)
    except DatasetError as exc:
        raise ScaffoldError(f"{exc}; fix the dataset first") from None
    if case_id not in ids:
        known = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
        raise ScaffoldError(
            f"--case-id {case_id!r} matches no entry of {dataset}, and grading mode {mode} ({source}) grades a "
            f"native task as the entry with its id: pass --case-id with one of {known or '(none yet)'}, add an "
            f"entry {case_id!r} to the dataset, {other_way}"
        )


def init_harbor_task(
    skill_dir: Path, case_id: str = DEFAULT_CASE_ID, with_config: bool = False, force: bool = False
) -> list[Path]:
    """Write a runnable native task under `evals/harbor/<case_id>/` (and, with `with_config`, a custom_only
    config). Returns the paths written. Without `with_config`, in a standard grading mode, the case id must be a
    dataset entry's, as a run requires."""
    try:
        case_id = canonical_case_id(case_id)
    except CaseIdError as exc:
        raise ScaffoldError(f"--case-id {case_id!r} is not a valid case id: {exc}") from None
    if case_id.casefold() in RESERVED_CASE_NAMES:
        raise ScaffoldError(f"--case-id {case_id!r} is a reserved name")
    evals = _evals_dir(skill_dir)
    if not with_config:
        _check_entry_id(evals, case_id)
    task_dir = evals / "harbor" / case_id

    def fill(template: str) -> str:
        text = _template(template).replace("__TASK_NAME__", _task_name(skill_dir, case_id))
        return text.replace("__CASE_ID__", case_id)

    planned = [
        _Planned(task_dir / "task.toml", fill("harbor_task.toml.tmpl")),
        _Planned(task_dir / "instruction.md", fill("harbor_instruction.md.tmpl")),
        _Planned(task_dir / "environment" / "Dockerfile", fill("harbor_Dockerfile.tmpl")),
        _Planned(task_dir / "tests" / "test.sh", fill("harbor_test.sh.tmpl"), executable=True),
    ]
    _check_targets(planned, force)
    if with_config:
        config = _config_plan(evals, "custom_only", force)
        if config is not None:
            planned.append(config)
    return _write(planned)


# ---------------------------------------------------------------------------------------------------------------
# Command line


def add_init_custom_grader_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("skill_dir", type=Path, help="the skill's folder (holds SKILL.md)")
    parser.add_argument("--language", choices=sorted(LANGUAGES), default="python", help="grader language")
    parser.add_argument(
        "--mode",
        choices=[*GRADER_MODES, "aces_plus_custom"],
        default=None,
        help="also write evals/config.yml with this grading mode",
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    return parser


def add_init_harbor_task_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("skill_dir", type=Path, help="the skill's folder (holds SKILL.md)")
    parser.add_argument(
        "--case-id", default=DEFAULT_CASE_ID, help=f"case id and folder name (default {DEFAULT_CASE_ID})"
    )
    parser.add_argument(
        "--with-config", action="store_true", help="also write evals/config.yml with grading.mode: custom_only"
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    return parser


def _report(written: list[Path], notes: Sequence[str]) -> None:
    for path in written:
        print(f"wrote {path}")
    if not written:
        print("nothing to write: everything is already in place")
    for note in notes:
        print(note)


def _execute(prog: str, action: Any, args: argparse.Namespace) -> int:
    try:
        written, notes = action(args)
    except ScaffoldError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    _report(written, notes)
    return 0


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace | int:
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors and 0 on --help
        return int(exc.code or 0)


def _custom_grader_action(args: argparse.Namespace) -> tuple[list[Path], list[str]]:
    written = init_custom_grader(args.skill_dir, args.language, args.mode, args.force)
    notes = [f"Replace the starter checks with your scoring, then run: pytest --skill-eval {args.skill_dir}"]
    if args.mode is None:
        notes.append("No --mode given: set grading.mode (or pass --grading-mode); the default mode ignores graders.")
    return written, notes


def _harbor_task_action(args: argparse.Namespace) -> tuple[list[Path], list[str]]:
    written = init_harbor_task(args.skill_dir, args.case_id, args.with_config, args.force)
    notes = ["Edit task.toml, instruction.md, environment/Dockerfile and tests/test.sh for your task."]
    if not args.with_config:
        mode, source = configured_grading_mode(_evals_dir(args.skill_dir))
        if mode in STANDARD_MODES:
            graders = "the standard grader" + (" and the custom grader" if mode == "default_plus_custom" else "")
            notes.append(
                f"The grading mode is {mode} ({source}): the task is graded as dataset entry "
                f"{written[0].parent.name!r} by {graders}; tests/test.sh is not run (custom_only runs it)."
            )
        else:
            notes.append(f"The grading mode is {mode} ({source}): a grader, else tests/test.sh, grades the task.")
    return written, notes


def handle_init_custom_grader(args: argparse.Namespace) -> int:
    """Run `init-custom-grader` from parsed arguments; exit 0 written, 1 refused or failed."""
    return _execute("skilleval init-custom-grader", _custom_grader_action, args)


def handle_init_harbor_task(args: argparse.Namespace) -> int:
    """Run `init-harbor-task` from parsed arguments; exit 0 written, 1 refused or failed."""
    return _execute("skilleval init-harbor-task", _harbor_task_action, args)


def run_init_custom_grader(argv: Sequence[str] | None = None) -> int:
    """`skilleval init-custom-grader ARGS`; exit 0 written, 1 refused or failed, 2 usage."""
    parser = add_init_custom_grader_arguments(
        argparse.ArgumentParser(prog="skilleval init-custom-grader", description="Write a starter custom grader.")
    )
    args = _parse(parser, argv)
    return args if isinstance(args, int) else handle_init_custom_grader(args)


def run_init_harbor_task(argv: Sequence[str] | None = None) -> int:
    """`skilleval init-harbor-task ARGS`; exit 0 written, 1 refused or failed, 2 usage."""
    parser = add_init_harbor_task_arguments(
        argparse.ArgumentParser(prog="skilleval init-harbor-task", description="Write a starter native Harbor task.")
    )
    args = _parse(parser, argv)
    return args if isinstance(args, int) else handle_init_harbor_task(args)


def add_init_commands(subparsers: Any) -> None:
    """Register both commands on an argparse subparsers object; each sets `handler(args: Namespace) -> int`."""
    grader = subparsers.add_parser("init-custom-grader", help="write a starter custom grader (BYOG)")
    add_init_custom_grader_arguments(grader)
    grader.set_defaults(handler=handle_init_custom_grader)
    task = subparsers.add_parser("init-harbor-task", help="write a starter native Harbor task (BYOT)")
    add_init_harbor_task_arguments(task)
    task.set_defaults(handler=handle_init_harbor_task)
