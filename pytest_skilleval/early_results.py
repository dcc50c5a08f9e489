"""Each trial's file goes to its run folder when its item is done, and the trial's Harbor folders are deleted then.

Why: the session's end used to write every trial file and delete every job folder after the last trial, about 2 ms
a trial that nothing overlapped (most of the session's end at 20,000 trials). Done as each item finishes (its
teardown report: on the controller under xdist, on the main thread while the scheduler's loop runs the next trials
otherwise), the work overlaps the trials still running. The session's end writes what is not there yet (resumed
trials; a trial whose record it changed), syncs everything once and writes result.json last, as before. A run killed
outright (SIGKILL) now leaves its finished trials' files, but no result.json: --resume does not take such a folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.tree import EarlyTrialFiles
from verifier.redact import Redactor


def job_folder(record: TrialRecord) -> Path | None:
    """The folder holding one trial's staged task and Harbor's trial folder (`<scratch>/<skill>/<case>/<slug>/`)."""
    if not record.trial_dir:
        return None
    work = Path(record.trial_dir).parent.parent
    return work if work.name != "trials" and (work / "trials").is_dir() else None


def remove_job_folder(record: TrialRecord) -> None:
    work = job_folder(record)
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)


class EarlyResults:
    """The session's early writers, one per skill; `failed` after any error, leaving the rest to the session's end
    (which writes every trial not written here, and reports what goes wrong)."""

    def __init__(self, results_root: Callable[[Path], Path], run_id: Callable[[Path], str], redactor: Redactor,
                 keep_jobs: Callable[[], bool]) -> None:
        self._results_root = results_root
        self._run_id = run_id
        self._redactor = redactor
        self._keep_jobs = keep_jobs
        self._writers: dict[str, EarlyTrialFiles] = {}
        self._done: dict[str, TrialRecord] = {}  # node id -> record, from its setup report to its teardown report
        self.failed = False

    def seen(self, nodeid: str, record: TrialRecord) -> None:
        self._done[nodeid] = record

    def item_done(self, nodeid: str) -> None:
        """The item's last report: nothing of this session reads its trial folder any more."""
        record = self._done.pop(nodeid, None)
        if record is None or self.failed or record.source_run is not None:
            return
        try:
            writer = self._writers.get(record.skill_dir)
            if writer is None:
                skill_dir = Path(record.skill_dir)
                writer = EarlyTrialFiles(self._results_root(skill_dir), self._run_id(skill_dir), self._redactor)
                self._writers[record.skill_dir] = writer
            writer.write(record)
        except Exception:  # noqa: BLE001 - the session's end writes this trial and reports the problem
            self.failed = True
            return
        if not self._keep_jobs():
            remove_job_folder(record)

    def writer(self, skill_dir: str) -> EarlyTrialFiles | None:
        return self._writers.get(skill_dir)
