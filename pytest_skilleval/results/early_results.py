"""Each trial's file goes to its run folder when its item is done, and the trial's Harbor folders are deleted then.

Why: done at the session's end, writing every trial file and deleting every job folder is time no trial overlaps.
Each file is written as its item finishes (its teardown report; on the controller under xdist), on pytest's main
thread, between two items, where the trials' event loop also runs: a thread of its own would hold the interpreter
lock for the same work and wait for it again after each system call while the loop holds it, which made it fall
seconds behind the trials, all paid after the last one (figures in docs/performance.md). What waits on the disk
without Python, deleting the job folders, runs in `rm` processes that are not waited for (`FolderRemover`). The
bytes of each file written are also made into its drill-down for report.html (`trial_evidence`), so the session's
end renders the report without reading every trial file back. The session's end writes what is not there yet
(resumed trials; a trial whose record it changed), syncs everything once and writes result.json last. The run
folder's first write also puts there what --resume compares (run_config.json, dataset_digest.json), so a run
killed outright (SIGKILL), which leaves its finished trials' files but no result.json, can be resumed.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the writer and the models: imported once a trial is handed over (never by `--co`)
    from pytest_skilleval.results.html_report import TrialDrillDown
    from pytest_skilleval.results.models import TrialEntry
    from pytest_skilleval.results.records import TrialKey, TrialRecord
    from pytest_skilleval.results.tree import EarlyTrialFiles, RunStart
    from pytest_skilleval.results.trial_evidence import TrialEvidence
    from pytest_skilleval.results.triggering import TriggerRecord
    from verifier.redact import Redactor

WARM_UP_WAIT_SECONDS = 30.0  # imports and a template: seconds at most, even on a loaded machine


def warm_up_reports(
    ready: Callable[[Callable[[TrialEvidence], TrialDrillDown]], None] | None = None,
) -> threading.Thread:
    """Import the report writers (Jinja, pygal, the schema) and load the report's templates in the background while
    trials run, so the session's end does not wait for them after the last trial; then hand `ready` the renderer of
    a trial's drill-down, so each trial's is rendered as it ends rather than all of them at the end."""

    def load() -> None:
        try:
            import jsonschema  # noqa: F401 - what the session's end validates result.json with

            import pytest_skilleval.results.aggregate  # what the session's end imports: the aggregate, the summary,
            import pytest_skilleval.results.publish  # the reports, the results tree
            import pytest_skilleval.results.summary
            import pytest_skilleval.results.tree  # noqa: F401
            from pytest_skilleval.results.html_report import drill_down, load_template

            load_template()
        except Exception:  # noqa: BLE001 - the session's end imports them again and reports what fails
            return
        if ready is not None:
            ready(drill_down)

    thread = threading.Thread(target=load, name="skilleval-warm-up", daemon=True)
    thread.start()
    return thread


def job_folder(record: TrialRecord | TriggerRecord) -> Path | None:
    """The folder holding one trial's own files and Harbor's trial folder (`<scratch>/<skill>/<case>/<slug>/`).

    None for a trial this session did not run (read back by --resume): its stored path is never acted on."""
    if not record.trial_dir or record.source_run is not None:
        return None
    work = Path(record.trial_dir).parent.parent
    return work if work.name != "trials" and (work / "trials").is_dir() else None


def remove_job_folder(record: TrialRecord | TriggerRecord) -> None:
    work = job_folder(record)
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)


class _Rm:
    """An `rm -rf` of some folders (it never follows a link), started with `posix_spawn` and reaped by its pid.

    Why not `subprocess.Popen`: this runs once per trial on the thread that drives every trial, and Popen's Python
    side (its error pipe, its bookkeeping) cost about 0.45 ms of the process's CPU a call against 0.17 ms."""

    _path: str | None = None

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.ended = False

    @classmethod
    def start(cls, folders: list[Path]) -> _Rm | None:
        """Started and not waited for; None when it cannot start (no `rm` on PATH, no process left)."""
        if cls._path is None:
            cls._path = shutil.which("rm") or ""
        if not cls._path:
            return None
        try:
            devnull = os.open(os.devnull, os.O_RDWR)
        except OSError:
            return None
        try:
            redirect = [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)]
            argv = ["rm", "-rf", "--", *map(os.fspath, folders)]
            return cls(os.posix_spawn(cls._path, argv, {"PATH": os.defpath}, file_actions=redirect))
        except OSError:
            return None
        finally:
            os.close(devnull)

    def poll(self) -> bool:
        """Whether it has ended (reaped here)."""
        if not self.ended:
            try:
                self.ended = os.waitpid(self.pid, os.WNOHANG)[0] != 0
            except ChildProcessError:  # reaped by someone else
                self.ended = True
        return self.ended

    def wait(self) -> None:
        while not self.ended:
            try:
                os.waitpid(self.pid, 0)
            except InterruptedError:
                continue
            except ChildProcessError:
                pass
            self.ended = True


def _rmtree_left(folders: list[Path]) -> None:
    """What an `rm` left (or could not start for), removed here."""
    for folder in folders:
        if os.path.lexists(folder):
            shutil.rmtree(folder, ignore_errors=True)


def remove_folders(folders: list[Path]) -> None:
    """Delete job folders with one `rm -rf` process, waited for, then `shutil.rmtree` what is left."""
    if folders:
        process = _Rm.start(folders)
        if process is not None:
            process.wait()
        _rmtree_left(folders)


class FolderRemover:
    """Deletes job folders in `rm -rf` processes nobody waits for: one at a time, each taking every folder handed
    over while the one before ran, checked (and what it left removed) when the next folder comes or at `finish`.
    An `rm` starts once `batch` folders wait or the oldest has waited `linger` seconds.

    Why a process: beside the trials' event loop, which holds the interpreter lock while trials run, a thread's
    `shutil.rmtree` waits for the lock again after each of its system calls (a job folder is some 30 entries, about
    a hundred calls): measured, a tree of 2,000 files took 3.5 s beside a busy thread against 0.4 s alone. Why not
    waited for: the main thread, which hands the folders over, is the one running the trials. Why in batches:
    `posix_spawn` holds the interpreter lock until the child has replaced itself with `rm`, about 1 ms a start on
    the thread that drives every trial; one start per folder was 2.5% of that thread's time at 100 in flight."""

    def __init__(self, batch: int = 16, linger: float = 2.0) -> None:
        self._waiting: list[Path] = []
        self._first_waiting = 0.0  # time.monotonic() when the oldest of `_waiting` was handed over
        self._running: tuple[_Rm, list[Path]] | None = None
        self._hurried: list[tuple[_Rm, list[Path]]] = []
        self._batch = batch
        self._linger = linger

    def remove(self, folder: Path) -> None:
        if not self._waiting:
            self._first_waiting = time.monotonic()
        self._waiting.append(folder)
        if len(self._waiting) < self._batch and time.monotonic() - self._first_waiting < self._linger:
            return  # a few more first: one `rm` for many folders
        if self._running is not None:
            process, folders = self._running
            if not process.poll():
                return  # still deleting: this folder goes with the next batch
            self._running = None
            _rmtree_left(folders)
        self._start()

    def _start(self) -> None:
        folders, self._waiting = self._waiting, []
        process = _Rm.start(folders)
        if process is None:
            _rmtree_left(folders)
        else:
            self._running = (process, folders)

    def hurry(self) -> None:
        """Start deleting what waits now, beside the `rm` still running (the trials are over: nothing else paces
        it), so the folders of the last trials go while the results are written instead of after them."""
        if self._waiting:
            folders, self._waiting = self._waiting, []
            process = _Rm.start(folders)
            if process is None:
                _rmtree_left(folders)
            else:
                self._hurried.append((process, folders))

    def finish(self) -> None:
        """Wait until every folder handed over is gone."""
        started = [self._running] if self._running is not None else []
        self._running = None
        for process, folders in [*started, *self._hurried]:
            process.wait()
            _rmtree_left(folders)
        self._hurried = []
        remove_folders(self._waiting)
        self._waiting = []


class EarlyResults:
    """The session's early writers, one per skill; `failed` after any error, leaving the rest to the session's end
    (which writes every trial not written here, and reports what goes wrong)."""

    def __init__(
        self,
        results_root: Callable[[Path], Path],
        run_id: Callable[[Path], str],
        redactor: Redactor,
        keep_jobs: Callable[[], bool],
        run_start: Callable[[Path], RunStart],
        entry_of: Callable[[TrialRecord], tuple[TrialEntry, float]] | None = None,
    ) -> None:
        self._results_root = results_root
        self._run_id = run_id
        self._run_start = run_start
        self._entry_of = (
            entry_of  # a trial's result.json entry and pass threshold, for its report block (entries_ahead)
        )
        self._redactor = redactor
        self._keep_jobs = keep_jobs
        self._writers: dict[str, EarlyTrialFiles] = {}
        self._done: dict[str, TrialRecord] = {}  # node id -> record, from its setup report to its teardown report
        # skill folder -> its trials' drill-downs, rendered once the report's templates are loaded (`warm_up`)
        self._evidence: dict[str, dict[TrialKey, TrialEvidence | TrialDrillDown]] = {}
        self._render: Callable[[TrialEvidence], TrialDrillDown] | None = None
        self._remover = FolderRemover()
        self._handed_over: set[str] = set()  # the trial folders whose job folder went to the remover
        self.failed = False
        self.warm_up = False  # set: the report writers are imported in the background when the first item is done
        self._warming: threading.Thread | None = None

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
            self._warming = warm_up_reports(self._renderer_ready)
        if record is None or self.failed or record.source_run is not None:
            return
        try:
            body = self._writer(record.skill_dir).write(record)
        except Exception:  # noqa: BLE001 - the session's end writes this trial and reports the problem
            self.failed = True
            return
        self._keep_evidence(record, body)
        work = job_folder(record) if not self._keep_jobs() else None
        if work is not None:
            self._remover.remove(work)
            self._handed_over.add(str(record.trial_dir))  # set: the job folder is found from it

    def _renderer_ready(self, render: Callable[[TrialEvidence], TrialDrillDown]) -> None:
        self._render = render

    def _keep_evidence(self, record: TrialRecord, body: bytes) -> None:
        """The trial's drill-down for report.html, from the bytes its file holds (as a reader of the file gets
        them: one over the readers' size cap is left to the report, which shows it as unreadable); rendered now
        once the report's templates are loaded (the first trials' are rendered with the report)."""
        from pytest_skilleval.results.trial_evidence import trial_evidence
        from pytest_skilleval.results.trial_file import MAX_TRIAL_BYTES

        if len(body) > MAX_TRIAL_BYTES:
            return
        try:
            document = json.loads(body)
            evidence = trial_evidence(document if isinstance(document, dict) else {})
            kept = evidence if self._render is None else self._render(evidence)
        except Exception:  # noqa: BLE001 - the report reads this trial's file back instead
            return
        if self._render is not None and self._entry_of is not None:
            kept = self._with_block(record, kept, self._entry_of)  # type: ignore[arg-type]  # rendered: a TrialDrillDown
        self._evidence.setdefault(record.skill_dir, {})[record.key] = kept

    def _with_block(
        self, record: TrialRecord, drill: TrialDrillDown, entry_of: Callable[[TrialRecord], tuple[TrialEntry, float]]
    ) -> TrialDrillDown:
        """The drill-down with the trial's whole report block rendered ahead (entries_ahead); as it was when the
        entry cannot be made (the report then renders the block itself)."""
        from pytest_skilleval.results.html_report import trial_file_text, with_block

        writer = self._writers.get(record.skill_dir)
        if writer is None or writer.run_dir is None:
            return drill
        try:
            entry, threshold = entry_of(record)
            return with_block(drill, entry, trial_file_text(writer.run_dir, entry), threshold)
        except Exception:  # noqa: BLE001 - only a head start: the report renders the block itself
            return drill

    def trials_over(self) -> None:
        """The last trial has ended: the deletion of the job folders handed over since the last `rm` started is
        started now, and each run folder's trial files begin their way to the disk (`EarlyTrialFiles.presync`),
        both while the session's end computes and writes the results. First the warm-up's imports are let finish:
        the session's end imports the same modules, and two threads importing modules that import each other can
        each get the other's half-made module."""
        if self._warming is not None:
            self._warming.join(timeout=WARM_UP_WAIT_SECONDS)
        try:
            self._remover.hurry()
            for writer in self._writers.values():
                writer.presync()
        except Exception:  # noqa: BLE001 - only a head start (no thread or process left to start): `finish` does it
            pass

    def finish(self) -> None:
        """Wait until every job folder handed over is deleted."""
        self._remover.finish()

    def removed(self, record: TrialRecord | TriggerRecord) -> bool:
        """Whether this trial's job folder was deleted here (after `finish`): the session's end skips it."""
        return record.trial_dir in self._handed_over

    def writer(self, skill_dir: str) -> EarlyTrialFiles | None:
        return self._writers.get(skill_dir)

    def evidence(self, skill_dir: str, run_dir: Path) -> Mapping[TrialKey, TrialDrillDown]:
        """The rendered drill-downs of the trial files written into `run_dir` (none when the skill's run went
        elsewhere); those of the trials that ended before the templates were loaded are rendered now."""
        writer = self._writers.get(skill_dir)
        if writer is None or writer.run_dir is None or os.path.abspath(writer.run_dir) != os.path.abspath(run_dir):
            return {}
        from pytest_skilleval.results.html_report import TrialDrillDown, drill_down

        kept = self._evidence.get(skill_dir, {})
        return {key: v if isinstance(v, TrialDrillDown) else drill_down(v) for key, v in kept.items()}
