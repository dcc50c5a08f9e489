"""`skilleval validate PATH...`: the command line over `validate_skill`.

A path is a skill folder, or a folder of skills (a repository of them): each skill below it is found as
`pytest --skill-eval` finds them (`skills_below`), so one command checks everything one run would collect, and a
bare skill (SKILL.md, no evals/) is a finding rather than a usage error. One skill prints as it always has (its
lines, or one JSON object); several print each skill's lines and a last line counting them (JSON: one object with
every skill's report). Exit codes: 0 ok, 1 a skill's findings fail, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_skilleval.authoring.findings import UsageError, ValidationReport
from pytest_skilleval.authoring.validate import report_json, report_lines, validate_skill
from pytest_skilleval.skill.config_file import normalize_grading_mode
from pytest_skilleval.skill.folder import skills_below
from pytest_skilleval.skill.host_env import pass_env_names


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="skilleval validate",
        description="Check a skill's dataset, evals/config.yml, native Harbor tasks and grader without running them.",
    )
    parser.add_argument(
        "paths",
        type=Path,
        nargs="+",
        metavar="PATH",
        help="a skill's folder (holds SKILL.md), or a folder of skills: every skill below it is checked",
    )
    parser.add_argument(
        "--harbor-contract",
        action="store_true",
        help="also load native and generated tasks with Harbor's own task loader",
    )
    parser.add_argument("--strict", action="store_true", help="warnings fail too")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    parser.add_argument(
        "--skip-baseline",
        action="store_true",
        help="validate for a with-skill-only run (paired-run rules do not apply)",
    )
    parser.add_argument(
        "--grading-mode",
        default=None,
        help="override grading.mode from evals/config.yml (default, default_plus_custom, custom_only)",
    )
    parser.add_argument(
        "--pass-env",
        action="append",
        default=[],
        metavar="NAME",
        help="a host variable the run passes to native tasks (repeatable), as pytest --pass-env",
    )
    return parser


def skill_folders(path: Path) -> list[Path]:
    """The skill `path` is, or every skill folder below it, spelled as the user spelled `path`."""
    if not path.is_dir():
        raise UsageError(f"{path}: not a directory")
    if (path / "SKILL.md").is_file():
        return [path]
    found = skills_below(path)
    if not found:
        raise UsageError(f"{path}: not a skill folder (no SKILL.md here or in any folder below it)")
    return found


def _skills(paths: Sequence[Path]) -> list[Path]:
    """Every skill the paths name, each once (by where it really is), in the order given."""
    seen: dict[Path, Path] = {}
    for path in paths:
        for skill in skill_folders(path):
            seen.setdefault(skill.resolve(), skill)
    return list(seen.values())


def _output(reports: list[tuple[Path, ValidationReport]], strict: bool, as_json: bool, many: bool) -> str:
    if not many:
        shown_as, report = reports[0]
        if as_json:
            return json.dumps(report_json(report, strict, shown_as), ensure_ascii=False)
        return "\n".join(report_lines(report, strict, shown_as))
    ok = all(report.ok(strict) for _, report in reports)
    if as_json:
        skills: list[dict[str, Any]] = [report_json(report, strict, shown_as) for shown_as, report in reports]
        return json.dumps({"ok": ok, "strict": strict, "skills": skills}, ensure_ascii=False)
    lines = [line for shown_as, report in reports for line in report_lines(report, strict, shown_as)]
    failed = [str(shown_as) for shown_as, report in reports if not report.ok(strict)]
    verdict = f"{len(reports) - len(failed)} ok" + (f", {len(failed)} FAILED: {', '.join(failed)}" if failed else "")
    return "\n".join([*lines, f"{len(reports)} skills: {verdict}"])


def run_validate_command(argv: Sequence[str]) -> int:
    """`skilleval validate`: 0 ok, 1 findings fail, 2 usage."""
    try:
        args = _parser().parse_args(list(argv))
        if args.grading_mode is not None:
            try:
                normalize_grading_mode(args.grading_mode)
            except ValueError as error:
                raise UsageError(f"--grading-mode: {error}") from None
        try:
            pass_env = pass_env_names(args.pass_env)
        except ValueError as error:
            raise UsageError(str(error)) from None
        skills = _skills(args.paths)
        reports = [
            (
                skill,
                validate_skill(
                    skill,
                    harbor_contract=args.harbor_contract,
                    skip_baseline=args.skip_baseline,
                    grading_mode=args.grading_mode,
                    pass_env=pass_env,
                ),
            )
            for skill in skills
        ]
    except UsageError as error:
        print(f"skilleval validate: error: {error}", file=sys.stderr)
        return 2
    except SystemExit as stop:  # --help
        return int(stop.code or 0)
    many = len(args.paths) > 1 or not (args.paths[0] / "SKILL.md").is_file()
    text = _output(reports, args.strict, args.json, many)
    sys.stdout.write(text + "\n")  # a reader that left early: the `skilleval` command ends quietly (cli.main)
    return 0 if all(report.ok(args.strict) for _, report in reports) else 1
