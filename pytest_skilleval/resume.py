"""`--resume RUN_ID`: finish an interrupted or partial run in its own folder.

Trials that finished (scored, unscored or skipped) are read back from the run's results tree and not run again; the
rest run; the aggregate covers both. A run whose dataset, skill or settings changed since is refused with the reason,
because mixing trials of two different evaluations would publish numbers neither of them measured. Trials that ended
in an error are run again: an error says nothing about the agent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_skilleval.results.records import TrialKey, TrialRecord
from pytest_skilleval.results.run_folder import read_trial
from pytest_skilleval.results.tree import (
    DATASET_DIGEST_FILE,
    RUN_CONFIG_FILE,
    RUN_ID_PATTERN,
    TRIAL_RECORD_NAME,
)

FINISHED = frozenset({"scored", "unscored", "skipped"})
# Settings that change how fast or where a run goes, never what it measures.
NOT_MEASURED = frozenset(
    {
        "n_concurrent",
        "max_agents",
        "results_dir",
        "harbor_keep_jobs",
        "block_on_agent_eval",
        "base_image_mode",
        "resume",
        "regrade",
        "stop_on_pass",
        "max_cases",
    }
)


class ResumeError(Exception):
    """The run cannot be resumed; the message says why."""


def resolve_run_dir(results_root: Path, requested: str) -> Path:
    """The run folder: `latest` is the newest run folder, finished or not (an interrupted run never moves the
    `latest` link, and it is the one worth resuming)."""
    if requested == "latest":
        runs = sorted(
            p for p in results_root.glob("*") if RUN_ID_PATTERN.match(p.name) and p.is_dir() and not p.is_symlink()
        )
        if not runs:
            raise ResumeError(f"no run folder under {results_root}")
        return runs[-1]
    if not RUN_ID_PATTERN.match(requested):
        raise ResumeError(f"{requested!r} is not a run id (e.g. 20261130_183629_19121_fee4e83f56fa) or 'latest'")
    run_dir = results_root / requested
    if not run_dir.is_dir() or run_dir.is_symlink():
        raise ResumeError(f"no run {requested} under {results_root}")
    return run_dir


def _measured(run_config: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in run_config.items() if key not in NOT_MEASURED}


def _json_object(path: Path) -> dict[str, Any] | None:
    document = _read_json(path)
    return document if isinstance(document, dict) else None


def resume_problem(run_dir: Path, run_config: Mapping[str, Any], dataset_digest: str | None) -> str | None:
    """Why the stored run and this session are not the same evaluation, or None when they are.

    The stored side is run_config.json and the dataset's digest, both written with the run folder's first trial file
    (dataset_digest.json), so a run killed before its end compares like a finished one; runs written before that
    file existed have the digest in result.json only.
    """
    stored_config = _json_object(run_dir / RUN_CONFIG_FILE)
    stored = _json_object(run_dir / DATASET_DIGEST_FILE) or _json_object(run_dir / "result.json")
    if stored_config is None or stored is None:
        missing = [
            name
            for name, found in ((RUN_CONFIG_FILE, stored_config), (f"{DATASET_DIGEST_FILE} (or result.json)", stored))
            if found is None
        ]
        return f"{run_dir} has no readable {' or '.join(missing)}: not a run folder this plugin can resume"
    if stored.get("dataset_digest") != dataset_digest:
        return "the dataset changed since that run (its digest differs)"
    if stored_config.get("skill_digest") != run_config.get("skill_digest"):
        return "the skill's files changed since that run (its digest differs)"
    before, now = _measured(stored_config), _measured(run_config)
    changed = sorted(key for key in set(before) | set(now) if before.get(key) != now.get(key) and key != "skill_digest")
    if changed:
        return f"settings changed since that run: {', '.join(changed)}"
    return None


def stored_records(run_dir: Path) -> dict[TrialKey, TrialRecord]:
    """The finished trials a run folder holds, by their key."""
    found: dict[TrialKey, TrialRecord] = {}
    # Trial files (`<case>.<attempt>.json`), then the record.json of runs written with a folder per trial.
    for path in [*run_dir.glob("*/*/trials/*.json"), *run_dir.glob(f"*/*/trials/*/*/{TRIAL_RECORD_NAME}")]:
        if path.is_symlink():
            continue
        document = read_trial(path) if path.name != TRIAL_RECORD_NAME else {"record": _read_json(path)}
        try:
            record = TrialRecord.model_validate((document or {}).get("record"))
        except ValueError:
            continue
        if record.status in FINISHED:
            found.setdefault(record.key, record)
    return found


def _read_json(path: Path) -> Any:
    """The file's JSON, or None when it cannot be read or parsed."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
