"""The results tree on disk: `<results-root>/<run-id>/result.json` and friends, written atomically.

Why so careful: the default root lives inside the skill folder (`<skill>/evals/results/`), which comes from whoever
wrote the skill. A planted symlink there must not make us write outside the tree, so every directory and file we
write is checked with lstat and refused when it is a symlink; every file goes to a temp file in its directory and is
renamed into place, so readers never see half a JSON document; `latest` moves only after result.json is complete.
Artifacts copied from Harbor's trial folder must be regular files (no symlinks followed) under a size cap.

Pure except for the file system; imports neither pytest nor Harbor (Harbor's version is read from its metadata).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import stat
import sys
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_skilleval.results.models import AggregateResult
from pytest_skilleval.results.records import ALL_ARMS, TrialKey, TrialRecord
from pytest_skilleval.results.result_schema import render_result_schema, result_schema, validate_result
from pytest_skilleval.results.run_paths import (
    DATASET_DIGEST_FILE,
    ENV_RESULTS_DIR,
    LATEST,
    MARKER_FILE,
    MARKER_TEXT,
    RUN_CONFIG_FILE,
    RUN_ID_PATTERN,
    new_run_id,
    resolve_results_root,
)
from pytest_skilleval.results.run_seal import SEAL_FILE, RunSeal
from pytest_skilleval.results.trial_file import (
    GRADER_OUTPUT_SOURCE,
    LEGACY_PARTS,
    MAX_ARTIFACT_BYTES,
    MAX_GRADER_OUTPUT_CHARS,
    MAX_TRIAL_BYTES,
    RICH_REWARD_SOURCE,
    TRIAL_FORMAT,
    TRIAL_PARTS,
    TRIAL_RECORD_NAME,
    read_parts,
    safe_component,
    stored_document,
    trial_document,
    trial_file,
    trial_folder,
)
from verifier import safe_io
from verifier.redact import Redactor

__all__ = [
    "DATASET_DIGEST_FILE",
    "LATEST",
    "RUN_ID_PATTERN",
    "ENV_RESULTS_DIR",
    "GRADER_OUTPUT_SOURCE",
    "LEGACY_PARTS",
    "MAX_GRADER_OUTPUT_CHARS",
    "MAX_TRIAL_BYTES",
    "RICH_REWARD_SOURCE",
    "TRIAL_FORMAT",
    "TRIAL_PARTS",
    "TRIAL_RECORD_NAME",
    "safe_component",
    "trial_file",
    "MARKER_FILE",
    "MAX_ARTIFACT_BYTES",
    "RUN_CONFIG_FILE",
    "RunStart",
    "UnsafeResultsPath",
    "atomic_write_json",
    "create_run_dir",
    "harbor_version",
    "new_run_id",
    "render_result_schema",
    "resolve_results_root",
    "result_schema",
    "trial_folder",
    "validate_result",
    "write_results_tree",
]


class UnsafeResultsPath(RuntimeError):
    """Refused to write: a path in the results tree is a symlink or otherwise not ours to write."""


# ---------------------------------------------------------------------------------------- safe writes


@dataclass
class _Batch:
    """One tree write in progress: directories already checked and created, and whether files still need syncing.

    Inside a batch each file is written without its own fsync; `_sync_tree` makes them all durable in one pass
    before result.json (written last, with its own fsync) marks the run folder complete.
    """

    root: Path
    checked: set[Path] = field(default_factory=set)
    # Plain strings: a Path keeps its parsed parts too (more memory per file, for as long as the run lasts).
    unsynced: list[str] = field(default_factory=list)
    seal_logs: set[str] = field(default_factory=set)  # each run folder's seal log, synced once with the rest


_BATCH: ContextVar[_Batch | None] = ContextVar("skilleval_tree_batch", default=None)


@contextlib.contextmanager
def _write_batch(root: Path) -> Iterator[_Batch]:
    batch = _Batch(root)
    token = _BATCH.set(batch)
    try:
        yield batch
    finally:
        _BATCH.reset(token)


def _syncfs(path: Path) -> bool:
    """Flush the file system holding `path` in one call (Linux syncfs(2)); False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except (OSError, AttributeError):
        return False
    try:
        return libc.syncfs(fd) == 0
    finally:
        os.close(fd)


def _sync_tree(batch: _Batch) -> None:
    """Make every file of the batch durable: one syncfs over the run folder's file system, else one fsync each."""
    if batch.unsynced and not _syncfs(batch.root):
        for path in batch.unsynced:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    batch.unsynced.clear()


def _fsync_dir(path: Path) -> None:
    """Make a rename inside `path` durable (best effort: not every platform can open a directory)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise UnsafeResultsPath(f"refusing to write through symlink {path}")


def _ensure_dir(path: Path, root: Path) -> Path:
    """Create `path` (inside `root`) one level at a time, refusing any symlinked level, including root itself.

    Inside a write batch a directory checked once is not walked again (the batch created or vetted it).
    """
    batch = _BATCH.get()
    checked = batch.checked if batch is not None else set()
    if path in checked:
        return path
    if root not in checked:
        _refuse_symlink(root)
        root.mkdir(parents=True, exist_ok=True)
        _checked_dir(root)
        checked.add(root)
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if current in checked:
            continue
        _refuse_symlink(current)
        try:
            current.mkdir()
        except FileExistsError:
            pass
        _checked_dir(current)
        checked.add(current)
    return path


def _checked_dir(path: Path) -> None:
    """One lstat: a real directory (not a symlink to one, not a file), else refuse."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        raise UnsafeResultsPath(f"refusing to write through symlink {path}")
    if not stat.S_ISDIR(mode):
        raise UnsafeResultsPath(f"{path} exists and is not a directory")


def atomic_write_bytes(path: Path, data: bytes, root: Path) -> Path:
    """Write via a temp file in the same directory and an atomic rename; never follows a symlink at `path`.

    Outside a write batch the file is fsynced before the rename; inside one, the batch syncs all its files at once.
    """
    _ensure_dir(path.parent, root)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISLNK(mode):
        raise UnsafeResultsPath(f"refusing to write through symlink {path}")
    if mode is not None and not stat.S_ISREG(mode):
        raise UnsafeResultsPath(f"{path} exists and is not a regular file")
    batch = _BATCH.get()
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if batch is None:
                os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), 0o644)
        os.replace(tmp, path)
        if batch is not None:
            batch.unsynced.append(os.fspath(path))
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def json_bytes(data: Any) -> bytes:
    """Pretty, key-stable JSON (non-ASCII kept); non-finite floats become null."""
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError:  # NaN or infinity somewhere: rare, so not looked for in every document first
        text = json.dumps(_json_safe(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return text.encode("utf-8")


def atomic_write_json(path: Path, data: Any, root: Path) -> Path:
    """`json_bytes(data)` written atomically."""
    return atomic_write_bytes(path, json_bytes(data), root)


def write_sealed_json(run_dir: Path, path: Path, data: Any, root: Path, seal: RunSeal, durable: bool = False) -> bytes:
    """A run folder's file that --resume or --regrade reads back: written atomically, then sealed with this
    machine's key (run_seal.py), so a run folder someone else wrote is never taken for one of ours. Returns the
    bytes written."""
    body = json_bytes(data)
    batch = _BATCH.get()
    if durable:
        token = _BATCH.set(None)
        try:
            atomic_write_bytes(path, body, root)
        finally:
            _BATCH.reset(token)
        _fsync_dir(path.parent)
    else:
        atomic_write_bytes(path, body, root)
    seal.seal(run_dir, path, body, durable=durable or batch is None)
    if batch is not None and not durable:
        log = os.fspath(run_dir / SEAL_FILE)
        if log not in batch.seal_logs:
            batch.seal_logs.add(log)
            batch.unsynced.append(log)
    return body


# -------------------------------------------------------------------------------------------- run dir


def create_run_dir(results_root: Path, run_id: str | None = None, tries: int = 100) -> tuple[str, Path]:
    """Create `<root>/<run-id>/` atomically (mkdir fails if it exists); a fresh id is drawn on collision."""
    _ensure_dir(results_root, results_root)
    for _ in range(tries):
        rid = run_id or new_run_id()
        path = results_root / rid
        try:
            path.mkdir()
        except FileExistsError:
            if run_id is not None:
                raise
            continue
        return rid, path
    raise FileExistsError(f"could not create a unique run directory under {results_root}")


def _publish_latest(results_root: Path, run_id: str) -> bool:
    """Point `latest` at run_id through a temp link and an atomic rename; leave a non-link `latest` alone."""
    latest = results_root / LATEST
    if latest.exists() and not latest.is_symlink():
        return False
    tmp = results_root / f".{LATEST}.{secrets.token_hex(6)}.tmp"
    try:
        os.symlink(run_id, tmp)
        os.replace(tmp, latest)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


def harbor_version() -> str | None:
    try:
        return metadata.version("harbor")
    except metadata.PackageNotFoundError:
        return None


# --------------------------------------------------------------------------------------------- writer


@dataclass(frozen=True)
class RunStart:
    """What `--resume` compares a stored run with: the settings as run (run_config.json) and the dataset's digest
    (dataset_digest.json, its key as in result.json). Written with the run folder's first trial file, so a run
    killed before its end (SIGKILL, power loss) still says what it measured; written again at the end."""

    run_config: Mapping[str, Any]
    dataset_digest: str | None

    def write(self, run_dir: Path, root: Path, redactor: Redactor, seal: RunSeal, durable: bool = False) -> None:
        """`durable`: each file fsynced now (before any trial file), not left to the end's sync pass."""
        write_sealed_json(
            run_dir, run_dir / RUN_CONFIG_FILE, redactor.scrub(dict(self.run_config)), root, seal, durable
        )
        digest = {"dataset_digest": self.dataset_digest}
        write_sealed_json(run_dir, run_dir / DATASET_DIGEST_FILE, digest, root, seal, durable)


class EarlyTrialFiles:
    """Trial files written into a run folder as trials finish, before the run's end writes the rest.

    Each file is written as the run's end would write it (same document, same redaction, atomic, no fsync of its
    own); the run's end then skips it, makes every file durable in its one sync pass and writes result.json last,
    so a run folder is still complete only once result.json is there. `start` is written, durably, first.
    """

    def __init__(
        self,
        results_root: Path,
        run_id: str,
        redactor: Redactor,
        max_artifact_bytes: int = MAX_ARTIFACT_BYTES,
        start: RunStart | None = None,
    ) -> None:
        self.results_root = Path(os.path.abspath(results_root))
        self.run_id = run_id
        self.redactor = redactor
        self.max_artifact_bytes = max_artifact_bytes
        self.start = start
        self.batch = _Batch(self.results_root)
        self.seal = RunSeal.of_this_machine()
        self.written: set[TrialKey] = set()
        self._run_dir: Path | None = None
        self._made = False

    @property
    def run_dir(self) -> Path | None:
        """The run folder once opened (by `open` or the first trial file), else None."""
        return self._run_dir

    def open(self) -> Path:
        """Make the run folder and write `start` into it, durably, once: a run interrupted before any trial ended
        still leaves a folder that `--resume` continues."""
        if self._run_dir is None:
            token = _BATCH.set(self.batch)
            try:
                self._made = not os.path.lexists(self.results_root / self.run_id)
                run_dir = _open_run_dir(self.results_root, self.run_id)
                if self.start is not None:
                    self.start.write(run_dir, self.results_root, self.redactor, self.seal, durable=True)
            finally:
                _BATCH.reset(token)
            self._run_dir = run_dir
        return self._run_dir

    def presync(self) -> threading.Thread | None:
        """Start flushing the file system of the trial files written so far, in a thread (syncfs(2) holds no
        interpreter lock), while the session's end aggregates; its own sync pass before result.json then waits only
        for what was written since. None when there is nothing to flush."""
        if not self.batch.unsynced:
            return None
        thread = threading.Thread(target=_syncfs, args=(self.results_root,), name="skilleval-presync", daemon=True)
        thread.start()
        return thread

    def discard_unused(self) -> bool:
        """Remove the run folder again when this session made it and wrote nothing else into it (its skill's items
        were all deselected); True when removed. A folder with anything more in it is kept."""
        run_dir = self._run_dir
        if run_dir is None or not self._made or self.written:
            return False
        ours = {MARKER_FILE, RUN_CONFIG_FILE, DATASET_DIGEST_FILE, SEAL_FILE}
        if {entry.name for entry in os.scandir(run_dir)} - ours:
            return False
        for name in ours:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(run_dir / name)
        os.rmdir(run_dir)
        self._run_dir = None
        return True

    def write(self, record: TrialRecord) -> bytes:
        """Write one trial's file; returns its bytes (what a reader of the file gets)."""
        run_dir = self.open()
        token = _BATCH.set(self.batch)
        try:
            body = _write_trial(run_dir, record, self.max_artifact_bytes, self.redactor, self.seal)
        finally:
            _BATCH.reset(token)
        self.written.add(record.key)
        return body


def _write_trial(
    run_dir: Path, record: TrialRecord, max_bytes: int, redactor: Redactor, seal: RunSeal, stored: bool = False
) -> bytes:
    """One trial's file; `stored`: the run folder already holds it (resumed, or written early) and only the record
    in it is replaced (the trial's own folder may be gone)."""
    path = trial_file(run_dir, record.key)
    document = None
    if stored or record.source_run is not None:
        document = stored_document(path, trial_folder(run_dir, record.key), record, max_bytes)
    if document is None:
        # A record read back from a run folder (source_run) names a folder this session did not make: never read.
        ours = record.trial_dir if record.source_run is None else None
        found = read_parts(Path(ours), TRIAL_PARTS, max_bytes, record.written) if ours else {}
        document = trial_document(record, found)
        document["trial_dir"] = record.trial_dir
    return write_sealed_json(run_dir, path, redactor.scrub(document), run_dir, seal)


def _json_safe(value: Any) -> Any:
    """Replace non-finite floats (which JSON cannot carry) with null."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def write_results_tree(
    aggregate: AggregateResult,
    records: Sequence[TrialRecord],
    results_root: Path,
    run_id: str,
    *,
    dataset_snapshot: Mapping[str, Any] | None = None,
    max_artifact_bytes: int = MAX_ARTIFACT_BYTES,
    redactor: Redactor | None = None,
    early: EarlyTrialFiles | None = None,
    altered: Collection[TrialKey] = (),
) -> Path:
    """Write `<results_root>/<run_id>/...` and return the run directory.

    The run directory may already exist (staging may have created it); it must not be a symlink. Every file but
    result.json is written in one batch (no fsync each, each directory walked once) and made durable in one sync
    pass; only then is result.json, validated against the shipped schema, written and fsynced. A run folder without
    result.json is therefore what an interrupted writer leaves, and readers treat it as incomplete (run_folder.py).
    `latest` is moved after result.json, and not at all for an interrupted run. Trial files `early` already wrote
    are not written again, except the `altered` ones (their record changed since: only the record is replaced);
    they are made durable in the same sync pass. Every file passes through
    `redactor` (by default: the credential-looking values of this process's environment plus token patterns), so
    no secret reaches the tree.
    """
    redactor = redactor or Redactor.from_environment(os.environ)
    results_root = Path(os.path.abspath(results_root))
    with _write_batch(results_root) as batch:
        return _write_tree(
            aggregate,
            records,
            results_root,
            run_id,
            batch,
            redactor,
            dataset_snapshot=dataset_snapshot,
            max_artifact_bytes=max_artifact_bytes,
            early=early,
            altered=altered,
        )


def _open_run_dir(results_root: Path, run_id: str) -> Path:
    """The run folder, made (every level checked, none a link) and marked as ours."""
    if not RUN_ID_PATTERN.match(run_id) and safe_component(run_id) != run_id:
        raise UnsafeResultsPath(f"unsafe run id {run_id!r}")
    run_dir = _ensure_dir(results_root / run_id, results_root)
    try:  # opened at the start: not written again at the end
        ours = safe_io.read_bytes(run_dir, MARKER_FILE, max_bytes=len(MARKER_TEXT)) == MARKER_TEXT
    except (OSError, safe_io.FileTooLargeError):
        ours = False
    if not ours:
        atomic_write_bytes(run_dir / MARKER_FILE, MARKER_TEXT, results_root)
    return run_dir


def _write_tree(
    aggregate: AggregateResult,
    records: Sequence[TrialRecord],
    results_root: Path,
    run_id: str,
    batch: _Batch,
    redactor: Redactor,
    *,
    dataset_snapshot: Mapping[str, Any] | None = None,
    max_artifact_bytes: int = MAX_ARTIFACT_BYTES,
    early: EarlyTrialFiles | None = None,
    altered: Collection[TrialKey] = (),
) -> Path:
    def write_json(path: Path, data: Any) -> None:
        atomic_write_json(path, redactor.scrub(data), results_root)

    run_dir = _open_run_dir(results_root, run_id)
    seal = early.seal if early is not None else RunSeal.of_this_machine()
    RunStart(aggregate.run_config, aggregate.dataset_digest).write(run_dir, results_root, redactor, seal)
    write_json(run_dir / "attempt_policy.json", aggregate.attempt_policy.model_dump(mode="json"))
    if dataset_snapshot is not None:
        write_json(run_dir / "dataset_snapshot.json", _json_safe(dict(dataset_snapshot)))

    for name, agent in aggregate.agents.items():
        adir = run_dir / safe_component(name)
        for arm in ALL_ARMS:
            summary = getattr(agent, arm)
            if summary is not None and summary.execution_status != "skipped":
                body = {"agent": name, "model": agent.model, "grading_mode": aggregate.grading_mode}
                body.update(summary.model_dump(mode="json"))
                write_json(adir / arm / "summary.json", body)
        lift_body = {"agent": name, "available": agent.lift is not None, "reason": agent.lift_omitted_reason}
        lift = agent.lift.model_dump(mode="json") if agent.lift else {}
        write_json(adir / "lift.json", {**lift_body, **lift})
        if agent.custom_lift is not None:
            custom = {k: v.model_dump(mode="json") for k, v in agent.custom_lift.items()}
            write_json(adir / "custom_lift.json", custom)
        if agent.lift is not None:
            write_json(adir / "pass_at_k_lift.json", lift["pass_at_k"])
        if agent.baseline_skill is not None:
            edit = agent.edit_lift.model_dump(mode="json") if agent.edit_lift else {}
            head = {"agent": name, "baseline_version": aggregate.baseline_version, "verdict": agent.edit_verdict}
            write_json(adir / "edit_lift.json", {**head, "reason": agent.edit_lift_omitted_reason, **edit})

    if early is not None and (early.results_root, early.run_id) != (results_root, run_id):
        early = None  # written into another run folder: nothing of this one is there yet
    written = early.written if early is not None else set()
    for record in records:
        key = record.key
        if key not in written:
            _write_trial(run_dir, record, max_artifact_bytes, redactor, seal)
        elif key in altered:
            _write_trial(run_dir, record, max_artifact_bytes, redactor, seal, stored=True)
    if early is not None:
        batch.unsynced.extend(early.batch.unsynced)

    if aggregate.comparison is not None:
        write_json(run_dir / "comparison.json", aggregate.comparison)

    # ResultDocument as JSON, in its field order: the aggregate's fields, then the writer's (building the model from
    # the aggregate's dump would validate every trial again; the schema check below holds the document to it).
    document = {
        **aggregate.model_dump(mode="json"),
        "run_id": run_id,
        "plugin_version": aggregate.evaluator_version,
        "harbor_version": harbor_version(),
        "run_dir": str(run_dir),
    }
    document = redactor.scrub(document)
    validate_result(document, every_trial=False)
    _sync_tree(batch)  # every other file is durable before result.json says the run folder is complete
    write_sealed_json(run_dir, run_dir / "result.json", document, results_root, seal, durable=True)
    if aggregate.execution_status == "succeeded":  # an interrupted or failed run (a regrade too) never is `latest`
        _publish_latest(results_root, run_id)
    return run_dir
