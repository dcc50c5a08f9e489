"""`--resume RUN_ID`: finish an interrupted or partial run in its own folder.

Trials that finished (scored, unscored or skipped) are read back from the run's results tree and not run again; the
rest run; the aggregate covers both. A run whose dataset, skill or settings changed since is refused with the reason,
because mixing trials of two different evaluations would publish numbers neither of them measured. Trials that ended
in an error are run again: an error says nothing about the agent.

Only a run folder this machine wrote is resumed (or regraded): its run_config.json must carry this machine's seal
(results/run_seal.py), and only sealed trial files are read back. A folder shipped inside a skill, however it is
named, is refused with one line saying so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilleval.results.records import TrialKey, TrialRecord
from pytest_skilleval.results.run_seal import RunSeal
from pytest_skilleval.results.tree import DATASET_DIGEST_FILE, MAX_TRIAL_BYTES, RUN_CONFIG_FILE, RUN_ID_PATTERN

FINISHED = frozenset({"scored", "unscored", "skipped"})


class ResumeError(Exception):
    """The run cannot be resumed; the message says why."""


def resolve_run_dir(results_root: Path, requested: str, seal: RunSeal | None = None) -> Path:
    """The run folder: `latest` is the newest run folder this machine wrote, finished or not (an interrupted run
    never moves the `latest` link, and it is the one worth resuming). A folder it did not write is refused."""
    seal = seal or RunSeal.of_this_machine()
    if requested == "latest":
        runs = sorted(
            p for p in results_root.glob("*") if RUN_ID_PATTERN.match(p.name) and p.is_dir() and not p.is_symlink()
        )
        if not runs:
            raise ResumeError(f"no run folder under {results_root}")
        for run in reversed(runs):  # newest first: older folders' seal logs are not read at all
            if _ours(run, seal):
                return run
        raise ResumeError(_foreign(runs[-1], seal))
    if not RUN_ID_PATTERN.match(requested):
        raise ResumeError(f"{requested!r} is not a run id (e.g. 20261130_183629_19121_fee4e83f56fa) or 'latest'")
    run_dir = results_root / requested
    if not run_dir.is_dir() or run_dir.is_symlink():
        raise ResumeError(f"no run {requested} under {results_root}")
    if not _ours(run_dir, seal):
        raise ResumeError(_foreign(run_dir, seal))
    return run_dir


def run_absent(results_root: Path, requested: str) -> bool:
    """Whether a skill has no part at all in the run `--resume` names: no folder of that id under its results root
    (for `latest`, no run folder at all), as when the interrupted session collected none of its trials."""
    if requested == "latest":
        return not any(RUN_ID_PATTERN.match(path.name) for path in results_root.glob("*"))
    return RUN_ID_PATTERN.match(requested) is not None and not os.path.lexists(results_root / requested)


def latest_finished_run(results_root: Path, seal: RunSeal) -> Path:
    """The newest run folder this machine wrote whose result.json (sealed) says its execution succeeded."""
    runs = sorted(
        p for p in results_root.glob("*") if RUN_ID_PATTERN.match(p.name) and p.is_dir() and not p.is_symlink()
    )
    ours = [run for run in reversed(runs) if _ours(run, seal)]
    for run in ours:
        result = _json_object(run, "result.json", seal)
        if result is not None and result.get("execution_status") == "succeeded":
            return run
    if runs and not ours:
        raise ResumeError(_foreign(runs[-1], seal))
    raise ResumeError(f"no finished run under {results_root} whose trials all ran (a regrade needs one)")


def is_our_run(run_dir: Path, seal: RunSeal) -> bool:
    """Whether this machine wrote the run folder (its run_config.json carries our seal)."""
    return _ours(run_dir, seal)


def _ours(run_dir: Path, seal: RunSeal) -> bool:
    return seal.read(run_dir, run_dir / RUN_CONFIG_FILE, MAX_TRIAL_BYTES) is not None


def _foreign(run_dir: Path, seal: RunSeal) -> str:
    return (
        f"{run_dir} is not a run this machine wrote ({seal.foreign_reason(run_dir, RUN_CONFIG_FILE)}); "
        "its trials are not trusted: move that folder out of the results folder, or start a new run without it"
    )


def _measured(run_config: Mapping[str, Any], unmeasured: Collection[str]) -> dict[str, Any]:
    return {key: value for key, value in run_config.items() if key not in unmeasured}


def _json_object(run_dir: Path, name: str, seal: RunSeal) -> dict[str, Any] | None:
    """A JSON object the run folder holds at `name`, when this machine sealed it."""
    document = _parsed(seal.read(run_dir, run_dir / name, MAX_TRIAL_BYTES))
    return document if isinstance(document, dict) else None


def resume_problem(
    run_dir: Path,
    run_config: Mapping[str, Any],
    dataset_digest: str | None,
    seal: RunSeal | None = None,
    *,
    unmeasured: Collection[str],
    as_current: Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]] | None = None,
) -> str | None:
    """Why the stored run and this session are not the same evaluation, or None when they are.

    `unmeasured` names the settings that change how fast or where a run goes, never what it measures (the
    settings declared `measured=False`); they may differ.

    The stored side is run_config.json and the dataset's digest, both written with the run folder's first trial file
    (dataset_digest.json), so a run killed before its end compares like a finished one (result.json holds the digest
    too). Only files this machine sealed count. `as_current` reads a run_config an earlier release wrote in this
    release's shape (given this session's run_config) before the two are compared.
    """
    seal = seal or RunSeal.of_this_machine()
    stored_config = _json_object(run_dir, RUN_CONFIG_FILE, seal)
    stored = _json_object(run_dir, DATASET_DIGEST_FILE, seal) or _json_object(run_dir, "result.json", seal)
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
    if as_current is not None:
        stored_config = dict(as_current(stored_config, run_config))
    before, now = _measured(stored_config, unmeasured), _measured(run_config, unmeasured)
    changed = sorted(key for key in set(before) | set(now) if before.get(key) != now.get(key) and key != "skill_digest")
    if changed:
        return f"settings changed since that run: {', '.join(changed)}"
    return None


def stored_records(run_dir: Path, seal: RunSeal | None = None) -> dict[TrialKey, TrialRecord]:
    """The finished trials a run folder holds, by (case, agent, arm, attempt): trial files (`<case>.<attempt>.json`)
    this machine sealed. Any other file (planted, edited since, of the earlier folder-per-trial layout) is not read:
    its trial runs again."""
    seal = seal or RunSeal.of_this_machine()
    found: dict[TrialKey, TrialRecord] = {}
    for path in run_dir.glob("*/*/trials/*.json"):
        document = _parsed(seal.read(run_dir, path, MAX_TRIAL_BYTES))
        try:
            record = TrialRecord.model_validate(document.get("record") if isinstance(document, dict) else None)
        except ValueError:
            continue
        if record.status in FINISHED:
            found.setdefault(record.key, record)
    return found


@dataclass(frozen=True)
class UnrunTrials:
    """What a finished run's own result.json says it left unrun: the planned trials it lists as missing (a -k, -m or
    --max-cases run, or one stopped early) and, for trigger queries, every trial its triggering section does not
    list (errored ones are listed). --regrade has nothing to grade there, and nothing went wrong."""

    missing: frozenset[str]  # coverage.missing_trials: agent/arm/case/attempt
    trigger_trials: frozenset[tuple[str, str, int]]  # (agent, query id, attempt) the triggering section lists

    def case_trial(self, agent: str, arm: str, case: str, attempt: int) -> bool:
        return f"{agent}/{arm}/{case}/{attempt}" in self.missing

    def trigger_trial(self, agent: str, query: str, attempt: int) -> bool:
        return (agent, query, attempt) not in self.trigger_trials


def unrun_trials(run_dir: Path, seal: RunSeal | None = None) -> UnrunTrials | None:
    """The run's `UnrunTrials`, from its sealed result.json; None when there is none to read."""
    result = _json_object(run_dir, "result.json", seal or RunSeal.of_this_machine())
    if result is None:
        return None
    coverage = result.get("coverage")
    missing = coverage.get("missing_trials") if isinstance(coverage, dict) else None
    sections = result.get("triggering")
    trigger_trials: set[tuple[str, str, int]] = {
        (str(agent), str(trial.get("query")), int(trial["attempt"]))
        for agent, section in (sections.items() if isinstance(sections, dict) else ())
        if isinstance(section, dict)
        for trial in section.get("trials") or ()
        if isinstance(trial, dict) and isinstance(trial.get("attempt"), int)
    }
    return UnrunTrials(frozenset(m for m in missing or () if isinstance(m, str)), frozenset(trigger_trials))


def _parsed(data: bytes | None) -> Any:
    """The JSON of a file's bytes, or None when there are none or they do not parse."""
    try:
        return json.loads(data) if data is not None else None
    except ValueError:
        return None
