"""`skilleval view [RUN]`: a finished run's terminal summary again, and where its report is.

Reads the run folder only. The report and card are rendered when missing (runs from before they existed) or on
`--render` (after an upgrade), so a person always gets a path that opens. A folder of skills, or a `--results-dir`
of several skills, shows each skill's latest run, as the session that ran them printed them one after another.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from pytest_skilleval.results.publish import write_run_reports
from pytest_skilleval.results.run_folder import RESULT_FILE, RunFolder, RunFolderError, find_run, load_run
from pytest_skilleval.results.summary import render_summary
from pytest_skilleval.results.triggering import trigger_only_line, triggering_lines

__all__ = ["run_view_command"]


def run_view_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="skilleval view", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "run",
        nargs="?",
        metavar="RUN",
        help="a run folder, its result.json, a results root or a skill folder (their latest run), or a folder of "
        "skills or a --results-dir of several skills (each one's latest run); default: the current folder",
    )
    parser.add_argument("--render", action="store_true", help="re-render report.html and BENCHMARK.md first")
    args = parser.parse_args(argv)
    try:
        folders = [find_run(args.run)]
    except RunFolderError as error:
        folders = _skills_runs(Path(args.run) if args.run is not None else Path.cwd())
        if not folders:
            print(f"skilleval view: {error}", file=sys.stderr)
            return 2
    try:
        runs = [load_run(folder) for folder in folders]
    except RunFolderError as error:
        print(f"skilleval view: {error}", file=sys.stderr)
        return 2
    print("\n\n".join("\n".join(_summary(run, args.render)) for run in runs))
    return 0


def _skills_runs(path: Path) -> list[Path]:
    """Each skill's latest run one level below `path`: a folder of skills (`<skill>/evals/results`) or a results
    folder of several skills (`--results-dir`: `<skill>/<run-id>`), in name order; none for anything else."""
    if not path.is_dir() or path.is_symlink():
        return []
    found = []
    for child in sorted(entry for entry in path.iterdir() if entry.is_dir() and not entry.is_symlink()):
        try:
            found.append(find_run(child))
        except RunFolderError:
            continue
    return found


def _summary(run: RunFolder, render: bool) -> list[str]:
    """One run's summary lines, its report and card rendered first when asked or missing."""
    if render or not run.report_path.is_file() or not run.card_path.is_file():
        write_run_reports(run.path)
    doc = run.document
    if run.trigger_only:  # as the session summed it up
        head = [trigger_only_line(doc.skill_name, run.cases_planned, str(run.path / RESULT_FILE))]
        return [*head, f"Report: {run.report_path}", f"Card:   {run.card_path}"] + triggering_lines(
            doc.skill_name, doc.triggering
        )
    width = shutil.get_terminal_size((80, 24)).columns
    lines = render_summary(
        run.document,
        str(run.path / RESULT_FILE),
        width=width,
        report_path=str(run.report_path),
        card_path=str(run.card_path),
    )
    # the trigger set's line, as the session's summary prints it after the skill's
    return lines + triggering_lines(run.document.skill_name, run.document.triggering)
