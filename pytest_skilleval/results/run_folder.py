"""Reading a finished run back from its folder: result.json plus each trial's files.

Everything downstream of a run (report.html, BENCHMARK.md, `skilleval view`, `skilleval compare`) reads the run
folder, never the live session, so a report can be re-rendered later or elsewhere. Per-trial files are read one trial
at a time when asked for, which keeps rendering linear in the number of trials.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_skilleval.results.models import ResultDocument, TrialEntry
from pytest_skilleval.results.run_paths import ENV_RESULTS_DIR, resolve_results_root
from pytest_skilleval.results.tree import LATEST
from pytest_skilleval.results.trial_file import (
    MAX_TRIAL_BYTES,
    legacy_trial_folder,
    read_trial,
    trial_file_name,
    trials_folder,
)
from verifier import safe_io
from verifier.reward import RichReward, rich_reward_of
from verifier.safe_paths import FileTooLargeError

RESULT_FILE = "result.json"
# A result.json larger than this is not ours to parse (a run of 10,000 cases writes a few MiB).
MAX_RESULT_BYTES = 128 * 1024 * 1024
REPORT_FILE = "report.html"
CARD_FILE = "BENCHMARK.md"
# What one trial's drill-down may read of a file: larger files are shown as "too large", not loaded.
MAX_TRIAL_FILE_BYTES = MAX_TRIAL_BYTES

__all__ = [
    "CARD_FILE",
    "REPORT_FILE",
    "RunFolder",
    "RunFolderError",
    "TrialContent",
    "TrialFiles",
    "find_run",
    "load_run",
    "read_trial",
    "run_roots",
]


class RunFolderError(ValueError):
    """The path is not a run folder we can read (no result.json, or one that does not parse)."""


@dataclass(frozen=True)
class TrialContent:
    """What explains one trial's score, as its trial file holds it."""

    document: dict[str, Any]

    def _part(self, key: str, kind: type) -> Any:
        value = self.document.get(key)
        return value if isinstance(value, kind) else None

    def record(self) -> dict[str, Any] | None:
        return self._part("record", dict)

    def rich_reward(self) -> RichReward | None:
        return rich_reward_of(self.document.get("rich_reward"))

    def trajectory(self) -> dict[str, Any] | None:
        return self._part("trajectory", dict)

    def grader_output(self) -> str | None:
        return self._part("grader_output", str)


@dataclass(frozen=True)
class TrialFiles:
    """One trial's entry from result.json and where its file is; read when asked (one trial at a time, so a
    report over 20,000 trials never holds them all)."""

    entry: TrialEntry
    path: Path

    @property
    def legacy_folder(self) -> Path:
        """Where a run of the earlier layout kept this trial's files (`trial_file.trial_folder`)."""
        return legacy_trial_folder(self.path.parent, self.entry.case, self.entry.attempt)

    def content(self) -> TrialContent:
        return TrialContent(read_trial(self.path, self.legacy_folder) or {})


@dataclass(frozen=True)
class RunFolder:
    path: Path
    document: ResultDocument

    def trials(self) -> list[TrialFiles]:
        """Each trial's entry and file (`trial_file.trial_file`'s path; each agent and arm's folder made once)."""
        folders: dict[tuple[str, str], Path] = {}
        found = []
        for entry in self.document.trials:
            folder = folders.get((entry.agent, entry.arm))
            if folder is None:
                folder = folders[(entry.agent, entry.arm)] = trials_folder(self.path, entry.agent, entry.arm)
            found.append(TrialFiles(entry, folder / trial_file_name(entry.case, entry.attempt)))
        return found

    @property
    def trigger_only(self) -> bool:
        """The run's only trials were its trigger set's (a skill with no cases, or none selected: `-m
        skilleval_trigger`): its summary, report and card show the trigger set, not a failed case run."""
        doc = self.document
        return not doc.trials and bool(doc.triggering) and not doc.coverage.interrupted

    @property
    def cases_planned(self) -> bool:
        """The skill has cases (dataset entries or native tasks), whether or not this run selected any."""
        summary = self.document.dataset_summary
        return bool(summary.get("n_dataset_cases") or summary.get("n_native_tasks"))

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
    try:  # never through a link, never past the cap: a run folder is untrusted (a 3 GB one took 12 GB of memory)
        root = Path(os.path.realpath(run_dir))  # the folder named (`latest` is a link to it); nothing below it is
        data = safe_io.read_bytes(root, RESULT_FILE, max_bytes=MAX_RESULT_BYTES, label=str(run_dir))
        document = ResultDocument.model_validate_json(data)
    except FileTooLargeError:
        raise RunFolderError(
            f"{path}: not a skilleval result.json (larger than {MAX_RESULT_BYTES // (1024 * 1024)} MiB)"
        ) from None
    except (OSError, ValidationError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RunFolderError(f"{path}: not a skilleval result.json ({first})") from None
    return RunFolder(Path(run_dir), document)


def run_folders(results_root: Path) -> list[Path]:
    """The run folders under a results root, oldest first (run ids sort by time); `latest` is not listed twice."""
    if not results_root.is_dir():
        return []
    found = [
        p for p in results_root.iterdir() if p.name != LATEST and not p.is_symlink() and (p / RESULT_FILE).is_file()
    ]
    return sorted(found, key=lambda p: p.name)


def run_roots(path: Path, env: Mapping[str, str] | None = None) -> list[Path]:
    """Where the runs of what a person typed lie: the folder itself (a results root), and for a skill folder where a
    session writes them, `SKILLEVAL_RESULTS_DIR/<skill>` when that is set (as `skilleval doctor` resolves it), then
    `<skill>/evals/results`."""
    env = os.environ if env is None else env
    roots = [path]
    if (path / "SKILL.md").is_file() and env.get(ENV_RESULTS_DIR, "").strip():
        roots.append(resolve_results_root(path, None, env))
    return [*roots, path / "evals" / "results"]


def find_run(target: str | Path | None) -> Path:
    """A run folder from what a person types: a run folder, its result.json, a results root or a skill folder
    (their `latest` run, else the newest one), or nothing (the current folder, taken the same way)."""
    path = Path(target) if target is not None else Path.cwd()
    if path.is_file() and path.name == RESULT_FILE:
        return path.parent
    if (path / RESULT_FILE).is_file():
        return path
    roots = run_roots(path)
    for root in roots:
        latest = root / LATEST
        if (latest / RESULT_FILE).is_file():
            return latest.resolve()
        runs = run_folders(root)
        if runs:
            return runs[-1]
    looked = "".join(f", {root}" for root in roots[1:-1])
    elsewhere = ""
    if (path / "SKILL.md").is_file():
        elsewhere = f"; a run written with --results-dir DIR is under DIR/{path.resolve().name}: name that folder"
    raise RunFolderError(
        f"{path}: no skilleval run here (looked for result.json, latest/ and evals/results/{looked}){elsewhere}"
    )
