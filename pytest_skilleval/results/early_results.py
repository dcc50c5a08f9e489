"""Each trial's file goes to its run folder when its item is done, and the trial's Harbor folders are deleted then.

Why: done at the session's end, writing every trial file and deleting every job folder is time no trial overlaps.
Handed over as each item finishes (its teardown report; on the controller under xdist) to one writer thread, the
work overlaps the trials still running. Not on pytest's main thread, which runs the trials' event loop while it
waits for an item: written there, the trials' Python side would pause for every write and delete (figures in
docs/performance.md). The session's end writes what is not there yet (resumed trials; a trial whose record it
changed), syncs everything once and writes result.json last. The run folder's first write also puts there what
--resume compares (run_config.json, dataset_digest.json), so a run killed outright (SIGKILL), which leaves its
finished trials' files but no result.json, can be resumed.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the writer and the models: imported once a trial is handed over (never by `--co`)
    from pytest_skilleval.results.records import TrialRecord
    from pytest_skilleval.results.tree import EarlyTrialFiles, RunStart
    from pytest_skilleval.results.triggering import TriggerRecord
    from verifier.redact import Redactor


def warm_up_reports() -> threading.Thread:
    """Import the report writers (Jinja, pygal, the schema) and load the report's template in the background while
    trials run, so the session's end does not wait for them after the last trial."""

    def load() -> None:
        try:
            import jsonschema  # noqa: F401 - what the session's end validates result.json with

            import pytest_skilleval.results.publish  # noqa: F401 - what the session's end imports
            from pytest_skilleval.results.html_report import load_template

            load_template()
        except Exception:  # noqa: BLE001 - the session's end imports them again and reports what fails
            pass

    thread = threading.Thread(target=load, name="skilleval-warm-up", daemon=True)
    thread.start()
    return thread


def job_folder(record: TrialRecord | TriggerRecord) -> Path | None:
    """The folder holding one trial's staged task and Harbor's trial folder (`<scratch>/<skill>/<case>/<slug>/`).

    None for a trial this session did not run (read back by --resume): its stored path is never acted on."""
    if not record.trial_dir or record.source_run is not None:
        return None
    work = Path(record.trial_dir).parent.parent
    return work if work.name != "trials" and (work / "trials").is_dir() else None


def remove_job_folder(record: TrialRecord | TriggerRecord) -> None:
    work = job_folder(record)
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)


# Job folders the writer thread deletes at once, with one `rm -rf`, while it is behind (else each as it comes).
REMOVE_BATCH = 32


def remove_folders(folders: list[Path]) -> None:
    """Delete job folders with one `rm -rf` process (it never follows a link), then `shutil.rmtree` what is left.

    Why a process: beside the event loop, which holds the interpreter lock while trials run, a thread's
    `shutil.rmtree` waits for the lock again after each of its system calls (a job folder is some 30 entries, about
    a hundred calls): measured, a tree of 2,000 files took 3.5 s beside a busy thread against 0.4 s alone, and the
    writer fell seconds behind the trials, all of it paid after the last one."""
    if not folders:
        return
    try:
        subprocess.run(
            ["rm", "-rf", "--", *map(str, folders)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    except OSError:  # no `rm` to run: the rmtree below does it all
        pass
    for folder in folders:
        if os.path.lexists(folder):
            shutil.rmtree(folder, ignore_errors=True)


class EarlyResults:
    """The session's early writers, one per skill, fed to one writer thread; `failed` after any error, leaving the
    rest to the session's end (which writes every trial not written here, and reports what goes wrong)."""

    def __init__(
        self,
        results_root: Callable[[Path], Path],
        run_id: Callable[[Path], str],
        redactor: Redactor,
        keep_jobs: Callable[[], bool],
        run_start: Callable[[Path], RunStart],
    ) -> None:
        self._results_root = results_root
        self._run_id = run_id
        self._run_start = run_start
        self._redactor = redactor
        self._keep_jobs = keep_jobs
        self._writers: dict[str, EarlyTrialFiles] = {}
        self._done: dict[str, TrialRecord] = {}  # node id -> record, from its setup report to its teardown report
        self._queue: queue.SimpleQueue[tuple[EarlyTrialFiles, TrialRecord, bool] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.failed = False
        self.warm_up = False  # set: the report writers are imported in the background when the first item is done

    def open_runs(self, skill_dirs: Iterable[Path]) -> None:
        """Make each skill's run folder (run_config.json and the dataset digest in it) before any trial starts, so an
        interrupt at any moment leaves a run that `--resume` continues; a folder that cannot be made is left to the
        session's end to report."""
        for skill_dir in skill_dirs:
            try:
                self._writer(str(skill_dir)).open()
            except Exception:  # noqa: BLE001 - the session's end writes the run and reports the problem
                self.failed = True
                return

    def opened(self) -> list[str]:
        """The skill folders whose run folder exists (opened at start, or by a trial file)."""
        return sorted(skill_dir for skill_dir, writer in self._writers.items() if writer.run_dir is not None)

    def _writer(self, skill_dir: str) -> EarlyTrialFiles:
        writer = self._writers.get(skill_dir)
        if writer is None:
            from pytest_skilleval.results.tree import EarlyTrialFiles

            path = Path(skill_dir)
            writer = EarlyTrialFiles(
                self._results_root(path), self._run_id(path), self._redactor, start=self._run_start(path)
            )
            self._writers[skill_dir] = writer
        return writer

    def seen(self, nodeid: str, record: TrialRecord) -> None:
        self._done[nodeid] = record

    def item_done(self, nodeid: str) -> None:
        """The item's last report: nothing of this session reads its trial folder any more."""
        record = self._done.pop(nodeid, None)
        if self.warm_up:
            self.warm_up = False
            warm_up_reports()
        if record is None or self.failed or record.source_run is not None:
            return
        try:
            writer = self._writer(record.skill_dir)
        except Exception:  # noqa: BLE001 - the session's end writes this trial and reports the problem
            self.failed = True
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._write_each, name="skilleval-results", daemon=True)
            self._thread.start()
        self._queue.put((writer, record, not self._keep_jobs()))

    def _write_each(self) -> None:
        folders: list[Path] = []  # written trials' job folders, deleted REMOVE_BATCH at a time and at the end
        while (job := self._queue.get()) is not None:
            writer, record, remove = job
            if self.failed:
                continue
            try:
                writer.write(record)
            except Exception:  # noqa: BLE001 - as in item_done: the session's end writes it
                self.failed = True
                continue
            work = job_folder(record) if remove else None
            if work is not None:
                folders.append(work)
            if len(folders) >= REMOVE_BATCH or self._queue.empty():  # a batch while behind, else at once
                remove_folders(folders)
                folders = []
        remove_folders(folders)

    def finish(self) -> None:
        """Wait until every trial handed over is written (the session's end reads what was)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def writer(self, skill_dir: str) -> EarlyTrialFiles | None:
        return self._writers.get(skill_dir)
