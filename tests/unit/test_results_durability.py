"""The results tree is written in one batch: no fsync per file, one sync pass, then result.json last (issue 13).

A run folder is complete (result.json present) or incomplete (what an interrupted writer leaves: no result.json),
and every reader treats the second as not a finished run.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_skilleval.results import tree as results
from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.models import RunPlan
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.run_folder import RunFolderError, load_run, run_folders
from pytest_skilleval.results.tree import UnsafeResultsPath, write_results_tree
from verifier.redact import Redactor

RUN_ID = "20250102_030405_42_0123456789ab"


def _records(n_cases: int = 3) -> tuple[Any, list[TrialRecord]]:
    records = [
        TrialRecord(
            skill="s",
            case=f"c{i}",
            agent="codex",
            arm=arm,
            attempt=1,
            status="scored",  # type: ignore[arg-type]
            overall=0.7,
            metrics={"security": 1.0},
            details={"security": {"reason": "ok"}},
        )
        for i in range(n_cases)
        for arm in ("with_skill", "without_skill")
    ]
    plan = RunPlan(
        skill="s", cases=[f"c{i}" for i in range(n_cases)], agents=["codex"], evaluated_at="2025-01-02T03:04:05Z"
    )
    return aggregate(records, plan), records


def _trace(monkeypatch: pytest.MonkeyPatch, syncfs_works: bool) -> list[str]:
    """Record fsyncs, the sync pass and each rename into place, in order."""
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append("fsync")
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        events.append(f"replace {Path(dst).name}")
        real_replace(src, dst)

    def syncfs(path: Path) -> bool:
        events.append("syncfs")
        return syncfs_works

    monkeypatch.setattr(results.os, "fsync", fsync)
    monkeypatch.setattr(results.os, "replace", replace)
    monkeypatch.setattr(results, "_syncfs", syncfs)
    return events


def test_one_sync_pass_then_result_json_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agg, records = _records()
    events = _trace(monkeypatch, syncfs_works=True)
    write_results_tree(agg, records, tmp_path, RUN_ID)
    sync_at = events.index("syncfs")
    result_at = events.index("replace result.json")
    assert events.count("syncfs") == 1
    assert "fsync" not in events[:sync_at]  # no per-file fsync for the trial files
    assert sync_at < result_at and events[result_at - 1] == "fsync"  # result.json itself is fsynced
    renamed = [e for e in events if e.startswith("replace ")]
    assert renamed[-2:] == ["replace result.json", "replace latest"]  # result.json last, then `latest` moves
    assert sum(e.startswith("replace c") and e.endswith(".1.json") for e in renamed) == len(records)  # trial files


def test_without_syncfs_every_file_is_fsynced_before_result_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agg, records = _records()
    events = _trace(monkeypatch, syncfs_works=False)
    write_results_tree(agg, records, tmp_path, RUN_ID)
    before_result = events[: events.index("replace result.json")]
    files_written = sum(e.startswith("replace ") for e in before_result)
    assert before_result.count("fsync") >= files_written  # one fsync each, in the fallback pass
    first_fsync = before_result.index("fsync")
    assert all(not e.startswith("replace ") for e in before_result[first_fsync:])  # all after the writes


def test_early_trial_files_are_fsynced_by_path_when_syncfs_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files written as trials finish wait for the session end's sync pass; the batch keeps their paths as plain
    strings (a Path keeps its parsed parts too: memory per trial) and the fallback fsyncs each by that path."""
    agg, records = _records()
    early = results.EarlyTrialFiles(tmp_path, RUN_ID, Redactor())
    for record in records:
        early.write(record)
    waiting = list(early.batch.unsynced)  # the trial files (and the run folder's marker file)
    assert all(type(path) is str and Path(path).is_file() for path in waiting)
    assert sum(path.endswith(".1.json") for path in waiting) == len(records)
    opened: list[str] = []
    real_open = results.os.open

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    events = _trace(monkeypatch, syncfs_works=False)
    monkeypatch.setattr(results.os, "open", open_)
    write_results_tree(agg, records, tmp_path, RUN_ID, early=early)
    assert set(waiting) <= set(opened)  # each early file opened again for its fsync
    assert "replace c0.1.json" not in events  # not written twice
    assert events.count("fsync") >= len(waiting) + 1  # theirs, then result.json's own


def test_the_early_files_start_on_their_way_to_disk_when_the_trials_end_and_the_end_still_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`presync` flushes the results root's file system in a thread of its own (while the session's end
    aggregates); the tree's own sync pass still runs before result.json, on the session's thread."""
    agg, records = _records()
    early = results.EarlyTrialFiles(tmp_path, RUN_ID, Redactor())
    assert early.presync() is None  # nothing written: nothing to flush
    for record in records:
        early.write(record)
    synced: list[tuple[str, Path]] = []
    monkeypatch.setattr(results, "_syncfs", lambda path: synced.append((threading.current_thread().name, path)))
    thread = early.presync()
    assert thread is not None and thread.daemon
    thread.join(10)
    assert synced == [("skilleval-presync", Path(tmp_path))]
    events = _trace(monkeypatch, syncfs_works=True)
    write_results_tree(agg, records, tmp_path, RUN_ID, early=early)
    assert events.count("syncfs") == 1 and events.index("syncfs") < events.index("replace result.json")


def test_the_early_writer_makes_what_resume_compares_durable_before_the_first_trial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed outright (no session end) can still be resumed: run_config.json and dataset_digest.json are each
    fsynced (the file, then its folder) before the first trial file, which is left to the end's one sync pass."""
    events = _trace(monkeypatch, syncfs_works=True)
    start = results.RunStart({"n_attempts": 1}, "d")
    early = results.EarlyTrialFiles(tmp_path, RUN_ID, Redactor.from_environment({}), start=start)
    _, records = _records()
    early.write(records[0])
    config, digest = f"replace {results.RUN_CONFIG_FILE}", f"replace {results.DATASET_DIGEST_FILE}"
    assert events == [
        f"replace {results.MARKER_FILE}",
        "fsync",
        config,
        "fsync",
        "fsync",  # its seal, appended to the run folder's seal log
        "fsync",
        digest,
        "fsync",
        "fsync",
        "replace c0.1.json",
    ]
    early.write(records[1])
    assert events.count(config) == 1 and len(events) == 11  # once per run folder, not per trial


def test_interrupted_writer_leaves_a_folder_readers_call_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agg, records = _records()
    complete = write_results_tree(agg, records, tmp_path, "20240101_000000_1_aaaaaaaaaaaa")
    real = results.atomic_write_bytes

    def crash_at_result(path: Path, data: bytes, root: Path) -> Path:
        if path.name == "result.json":
            raise KeyboardInterrupt  # the session killed while finishing
        return real(path, data, root)

    monkeypatch.setattr(results, "atomic_write_bytes", crash_at_result)
    with pytest.raises(KeyboardInterrupt):
        write_results_tree(agg, records, tmp_path, RUN_ID)
    partial = tmp_path / RUN_ID
    assert (partial / "codex" / "with_skill" / "trials" / "c0.1.json").is_file()
    assert not (partial / "result.json").exists()
    assert not list(partial.glob(".result.json.*"))  # no temp file left behind either
    with pytest.raises(RunFolderError, match="no result.json"):
        load_run(partial)
    assert run_folders(tmp_path) == [complete]
    assert os.readlink(tmp_path / "latest") == complete.name


def test_batch_still_refuses_a_symlink_planted_in_a_trial_folder(tmp_path: Path) -> None:
    agg, records = _records()
    outside = tmp_path / "outside"
    outside.mkdir()
    trials = tmp_path / "root" / RUN_ID / "codex" / "with_skill" / "trials"
    trials.mkdir(parents=True)
    (trials / "c1.1.json").symlink_to(outside / "planted.json")
    with pytest.raises(UnsafeResultsPath, match="symlink"):
        write_results_tree(agg, records, tmp_path / "root", RUN_ID)
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "root" / RUN_ID / "result.json").exists()


def test_trial_shapes_are_each_validated(tmp_path: Path) -> None:
    agg, records = _records()
    run = write_results_tree(agg, records, tmp_path, RUN_ID)
    document = load_run(run).document.model_dump(mode="json")
    results.validate_result(document, every_trial=False)
    odd = {**document["trials"][1], "attempt": "one"}  # one trial of a shape no other trial has
    broken = {**document, "trials": [*document["trials"], odd]}
    with pytest.raises(jsonschema.ValidationError):
        results.validate_result(broken, every_trial=False)


def test_a_trial_differing_only_inside_a_nested_value_is_validated(tmp_path: Path) -> None:
    agg, records = _records()
    run = write_results_tree(agg, records, tmp_path, RUN_ID)
    document = load_run(run).document.model_dump(mode="json")
    odd = {**document["trials"][1], "dimensions": {**document["trials"][1]["dimensions"], "security": "high"}}
    broken = {**document, "trials": [*document["trials"], odd]}
    with pytest.raises(jsonschema.ValidationError, match="high"):
        results.validate_result(broken, every_trial=False)


def test_entries_of_a_mapping_subclass_are_told_apart_by_their_contents(tmp_path: Path) -> None:
    from collections import OrderedDict

    agg, records = _records()
    run = write_results_tree(agg, records, tmp_path, RUN_ID)
    document = load_run(run).document.model_dump(mode="json")
    good = OrderedDict(document["trials"][0])
    odd = OrderedDict({**document["trials"][1], "attempt": "one"})
    with pytest.raises(jsonschema.ValidationError, match="one"):
        results.validate_result({**document, "trials": [good, odd]}, every_trial=False)


def test_the_end_keeps_the_marker_the_run_folder_was_opened_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run folder opened at the start already holds its marker: the session's end does not write it again (one
    create and rename less while the file system is busiest); a marker that is not ours is written anew."""
    agg, records = _records()
    early = results.EarlyTrialFiles(tmp_path, RUN_ID, Redactor.from_environment({}))
    early.write(records[0])
    marker = tmp_path / RUN_ID / results.MARKER_FILE
    opened = marker.stat().st_ino
    events = _trace(monkeypatch, syncfs_works=True)
    write_results_tree(agg, records, tmp_path, RUN_ID, early=early)
    assert f"replace {results.MARKER_FILE}" not in events and marker.stat().st_ino == opened
    marker.write_text("something else\n")
    write_results_tree(agg, records, tmp_path, RUN_ID)
    assert marker.read_text() == "generated by pytest-skilleval; safe to delete\n"


def test_a_marker_replaced_by_a_link_is_refused_at_the_end(tmp_path: Path) -> None:
    agg, records = _records()
    early = results.EarlyTrialFiles(tmp_path, RUN_ID, Redactor.from_environment({}))
    early.write(records[0])
    marker = tmp_path / RUN_ID / results.MARKER_FILE
    target = tmp_path / "elsewhere"
    target.write_bytes(marker.read_bytes())  # the very bytes: only the link gives it away
    marker.unlink()
    marker.symlink_to(target)
    with pytest.raises(UnsafeResultsPath, match="symlink"):
        write_results_tree(agg, records, tmp_path, RUN_ID, early=early)
    assert target.read_bytes() == b"generated by pytest-skilleval; safe to delete\n"


def test_per_case_pass_at_k_shapes_are_each_validated(tmp_path: Path) -> None:
    agg, records = _records()
    run = write_results_tree(agg, records, tmp_path, RUN_ID)
    document = load_run(run).document.model_dump(mode="json")
    cases = document["agents"]["codex"]["with_skill"]["pass_at_k"]["cases"]
    assert len(cases) == 3
    cases["c2"] = {**cases["c2"], "attempts_used": "two"}  # one case entry of a shape no other has
    with pytest.raises(jsonschema.ValidationError, match="two"):
        results.validate_result(document, every_trial=False)
