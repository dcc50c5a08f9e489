"""Trigger trials in the run folder: `<run>/<agent>/triggers/<query>.<attempt>.json`, one file per trigger trial.

A trigger trial's file holds its `TriggerRecord` (so `--resume` keeps it and `--regrade` recomputes its verdict from
the run folder alone), the detector's verdict and what explains it, read from Harbor's trial folder as a case trial's
file is: the agent's trajectory and Harbor's trial result. Written like case trials' files (atomic, redacted, sealed
with this machine's key); read back only when sealed.

Pure except for the file system; imports neither pytest nor Harbor.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_skilleval.results.keys import TriggerKey
from pytest_skilleval.results.run_seal import RunSeal
from pytest_skilleval.results.tree import write_sealed_json
from pytest_skilleval.results.trial_file import MAX_ARTIFACT_BYTES, MAX_TRIAL_BYTES, read_parts
from pytest_skilleval.results.triggering import TriggerRecord, trigger_file_name
from verifier.redact import Redactor
from verifier.triggering import TRIGGER_FILE

TRIGGER_TRIAL_FORMAT = "skilleval-trigger-trial/1"
# (key in the trigger trial's file, source inside Harbor's trial folder)
TRIGGER_PARTS: tuple[tuple[str, str], ...] = (
    ("verdict", f"verifier/{TRIGGER_FILE}"),
    ("trajectory", "agent/trajectory.json"),
    ("harbor_result", "result.json"),
)
FINISHED = frozenset({"scored", "unscored"})


def trigger_file(run_dir: Path, record: TriggerRecord) -> Path:
    """Where one trigger trial's file goes (the writer and readers agree)."""
    return run_dir / trigger_file_name(record.agent, record.query, record.attempt)


def trigger_document(record: TriggerRecord) -> dict[str, Any]:
    """The file's content: the record, and what the trial folder holds of its verdict, trajectory and result."""
    folder = Path(record.trial_dir) if record.trial_dir and record.source_run is None else None
    found = read_parts(folder, TRIGGER_PARTS, MAX_ARTIFACT_BYTES) if folder is not None else {}
    document: dict[str, Any] = {
        "format": TRIGGER_TRIAL_FORMAT,
        "record": record.model_dump(mode="json"),
        "artifacts": {key: rel for key, (_, rel) in found.items()},
        "trial_dir": record.trial_dir,
    }
    for key, _ in TRIGGER_PARTS:
        document[key] = found[key][0] if key in found else None
    return document


def write_trigger_files(
    results_root: Path, run_id: str, records: Sequence[TriggerRecord], redactor: Redactor, seal: RunSeal | None = None
) -> None:
    """Each trigger trial's file into `<results_root>/<run_id>/` (no level of it a link); a record `--resume` kept
    (its file is already there) is not written again. Raises UnsafeResultsPath as the results tree's writer does."""
    seal = seal or RunSeal.of_this_machine()
    run_dir = results_root / run_id
    for record in records:
        path = trigger_file(run_dir, record)
        if record.source_run is not None and path.is_file():
            continue
        write_sealed_json(run_dir, path, redactor.scrub(trigger_document(record)), results_root, seal)


def read_trigger_document(run_dir: Path, path: Path, seal: RunSeal) -> dict[str, Any] | None:
    """A trigger trial's file, when this machine sealed it; else None."""
    data = seal.read(run_dir, path, MAX_TRIAL_BYTES)
    try:
        document = json.loads(data) if data is not None else None
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def stored_trigger_records(run_dir: Path, seal: RunSeal | None = None) -> dict[TriggerKey, TriggerRecord]:
    """The finished trigger trials a run folder holds, by (query, agent, attempt): sealed files only; a trial that
    ended in an error is not finished (it runs again)."""
    seal = seal or RunSeal.of_this_machine()
    found: dict[TriggerKey, TriggerRecord] = {}
    for path in sorted(run_dir.glob("*/triggers/*.json")):
        document = read_trigger_document(run_dir, path, seal)
        try:
            record = TriggerRecord.model_validate(document.get("record") if document else None)
        except ValueError:
            continue
        if record.status in FINISHED and path == trigger_file(run_dir, record):
            found.setdefault((record.query, record.agent, record.attempt), record)
    return found
