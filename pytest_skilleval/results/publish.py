"""Write a run's human-facing files (report.html, BENCHMARK.md) from its folder, atomically and safely.

Called at the end of a session and by `skilleval view --render`; both read the run folder, never live state.
"""

from __future__ import annotations

from pathlib import Path

from pytest_skilleval.results.benchmark_card import render_card
from pytest_skilleval.results.html_report import render_report
from pytest_skilleval.results.run_folder import load_run
from pytest_skilleval.results.tree import atomic_write_bytes

__all__ = ["write_run_reports"]


def write_run_reports(run_dir: Path) -> list[Path]:
    """Render report.html and BENCHMARK.md into `run_dir`; returns their paths (report first)."""
    run = load_run(run_dir)
    root = run.path.parent
    atomic_write_bytes(run.report_path, render_report(run).encode("utf-8"), root)
    atomic_write_bytes(run.card_path, render_card(run).encode("utf-8"), root)
    return [run.report_path, run.card_path]
