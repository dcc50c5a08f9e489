"""Reading a finished run back from its folder: result.json plus each trial's files.

Everything downstream of a run (report.html, BENCHMARK.md, `skilleval view`, `skilleval compare`) reads the run
folder, never the live session, so a report can be re-rendered later or elsewhere. Per-trial files are read one trial
at a time when asked for, which keeps rendering linear in the number of trials.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_skilleval.results.models import ResultDocument, TrialEntry
from pytest_skilleval.results.tree import GRADER_OUTPUT_FILE, LATEST, RICH_REWARD_FILE, trial_folder

RESULT_FILE = "result.json"
REPORT_FILE = "report.html"
CARD_FILE = "BENCHMARK.md"
# What one trial's drill-down may read of a file: larger files are shown as "too large", not loaded.
MAX_TRIAL_FILE_BYTES = 5 * 1024 * 1024

__all__ = ["CARD_FILE", "REPORT_FILE", "RunFolder", "RunFolderError", "TrialFiles", "find_run", "load_run"]


class RunFolderError(ValueError):
    """The path is not a run folder we can read (no result.json, or one that does not parse)."""


@dataclass(frozen=True)
class TrialFiles:
    """One trial's entry from result.json and lazy access to the files in its folder."""

    entry: TrialEntry
    folder: Path

    def _json(self, name: str) -> dict[str, Any] | None:
        path = self.folder / name
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_TRIAL_FILE_BYTES:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def rich_reward(self) -> dict[str, Any] | None:
        return self._json(RICH_REWARD_FILE)

    def trajectory(self) -> dict[str, Any] | None:
        return self._json("trajectory.json")

    def grader_output(self) -> str | None:
        path = self.folder / GRADER_OUTPUT_FILE
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_TRIAL_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")


@dataclass(frozen=True)
class RunFolder:
    path: Path
    document: ResultDocument

    def trials(self) -> list[TrialFiles]:
        doc = self.document
        return [TrialFiles(t, trial_folder(self.path, t.agent, t.arm, t.case, t.attempt)) for t in doc.trials]

    @property
    def report_path(self) -> Path:
        return self.path / REPORT_FILE

    @property
    def card_path(self) -> Path:
        return self.path / CARD_FILE


def load_run(run_dir: Path) -> RunFolder:
    """The run in `run_dir`; a clear error naming the file when result.json is missing or not ours."""
    path = Path(run_dir) / RESULT_FILE
    if not path.is_file():
        raise RunFolderError(f"{run_dir}: no {RESULT_FILE} here (not a finished skilleval run folder)")
    try:
        document = ResultDocument.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RunFolderError(f"{path}: not a skilleval result.json ({first})") from None
    return RunFolder(Path(run_dir), document)


def run_folders(results_root: Path) -> list[Path]:
    """The run folders under a results root, oldest first (run ids sort by time); `latest` is not listed twice."""
    if not results_root.is_dir():
        return []
    found = [p for p in results_root.iterdir() if p.name != LATEST and not p.is_symlink() and (p / RESULT_FILE).is_file()]
    return sorted(found, key=lambda p: p.name)


def find_run(target: str | Path | None) -> Path:
    """A run folder from what a person types: a run folder, its result.json, a results root or a skill folder
    (their `latest` run, else the newest one), or nothing (the current folder, taken the same way)."""
    path = Path(target) if target is not None else Path.cwd()
    if path.is_file() and path.name == RESULT_FILE:
        return path.parent
    if (path / RESULT_FILE).is_file():
        return path
    for root in (path, path / "evals" / "results"):
        latest = root / LATEST
        if (latest / RESULT_FILE).is_file():
            return latest.resolve()
        runs = run_folders(root)
        if runs:
            return runs[-1]
    raise RunFolderError(f"{path}: no skilleval run here (looked for result.json, latest/ and evals/results/)")
