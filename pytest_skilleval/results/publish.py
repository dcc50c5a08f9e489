"""Write a run's human-facing files (report.html, BENCHMARK.md) from its folder, atomically and safely.

Called at the end of a session and by `skilleval view --render`; both read the run folder, never live state, except
that the session hands over the trials' drill-downs it built from the very bytes it wrote into their files (so its
end does not read every trial file back; the report is the same as one rendered from the folder later).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pytest_skilleval.results.benchmark_card import render_card
from pytest_skilleval.results.html_report import TrialDrillDown, render_report
from pytest_skilleval.results.records import TrialKey
from pytest_skilleval.results.run_folder import load_run
from pytest_skilleval.results.tree import atomic_write_bytes

__all__ = ["write_run_reports"]


def write_run_reports(run_dir: Path, known: Mapping[TrialKey, TrialDrillDown] | None = None) -> list[Path]:
    """Render report.html and BENCHMARK.md into `run_dir`; returns their paths (report first). `known`: drill-downs
    rendered from the bytes of trial files in this folder (`render_report`)."""
    run = load_run(run_dir)
    root = run.path.parent
    atomic_write_bytes(run.report_path, render_report(run, known).encode("utf-8"), root)
    atomic_write_bytes(run.card_path, render_card(run).encode("utf-8"), root)
    return [run.report_path, run.card_path]
