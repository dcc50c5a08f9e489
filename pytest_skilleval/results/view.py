"""`skilleval view [RUN]`: a finished run's terminal summary again, and where its report is.

Reads the run folder only. The report and card are rendered when missing (runs from before they existed) or on
`--render` (after an upgrade), so a person always gets a path that opens.
"""

from __future__ import annotations

import argparse
import shutil
import sys

from pytest_skilleval.results.publish import write_run_reports
from pytest_skilleval.results.run_folder import RESULT_FILE, RunFolderError, find_run, load_run
from pytest_skilleval.results.summary import render_summary
from pytest_skilleval.results.triggering import triggering_lines

__all__ = ["run_view_command"]


def run_view_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="skilleval view", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "run",
        nargs="?",
        metavar="RUN",
        help="a run folder, its result.json, a results root or a skill folder (their latest run); "
        "default: the current folder",
    )
    parser.add_argument("--render", action="store_true", help="re-render report.html and BENCHMARK.md first")
    args = parser.parse_args(argv)
    try:
        run = load_run(find_run(args.run))
    except RunFolderError as error:
        print(f"skilleval view: {error}", file=sys.stderr)
        return 2
    if args.render or not run.report_path.is_file() or not run.card_path.is_file():
        write_run_reports(run.path)
    width = shutil.get_terminal_size((80, 24)).columns
    lines = render_summary(
        run.document,
        str(run.path / RESULT_FILE),
        width=width,
        report_path=str(run.report_path),
        card_path=str(run.card_path),
    )
    # the trigger set's line, as the session's summary prints it after the skill's
    lines += triggering_lines(run.document.skill_name, run.document.triggering)
    print("\n".join(lines))
    return 0
