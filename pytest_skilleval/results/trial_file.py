"""One trial's file in the results tree: `<run>/<agent>/<arm>/trials/<case>.<attempt>.json`.

It holds the TrialRecord (so a run can be resumed or regraded from its folder alone) and what explains the score,
read from Harbor's trial folder: Harbor's reward and trial result, the host verifier's rich reward, the trajectory
and the grader's output. One file per trial rather than seven: creating files is most of what writing 20,000
trials costs (docs/performance.md). Building a trial's document and reading one back live here; writing it (safely,
atomically, redacted) is tree.py's job. Runs of the earlier layout (a folder per trial) are still read.

Pure except for the file system; imports neither pytest nor Harbor.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from hashlib import sha256
from pathlib import Path
from typing import Any

from pytest_skilleval.results.records import TrialKey, TrialRecord
from pytest_skilleval.results.redact import cap_text, redact_text, redact_value
from pytest_skilleval.results.trajectory_cap import MAX_TRAJECTORY_READ_BYTES, capped_trajectory, too_large_to_read
from verifier import safe_io
from verifier.reward import RICH_REWARD_NAME, WrittenFile
from verifier.trajectory import merged_trajectory

MAX_ARTIFACT_BYTES = 5 * 1024 * 1024
# A trial file holds up to five artifacts of MAX_ARTIFACT_BYTES each.
MAX_TRIAL_BYTES = 6 * MAX_ARTIFACT_BYTES
# What explains a score, written by the host verifier (verifier.reward's RICH_REWARD_NAME, and
# harbor/verifier_adapter.py's GRADER_OUTPUT_NAME, named here because results/ never imports Harbor-facing modules;
# a test keeps them equal). (key in the trial file, source inside Harbor's trial folder):
RICH_REWARD_SOURCE = f"verifier/{RICH_REWARD_NAME}"
GRADER_OUTPUT_SOURCE = "verifier/grader-output.txt"
TRIAL_PARTS: tuple[tuple[str, str], ...] = (
    ("reward", "verifier/reward.json"),
    ("rich_reward", RICH_REWARD_SOURCE),  # every evaluator's details, judges' included
    ("trajectory", "agent/trajectory.json"),
    ("harbor_result", "result.json"),
    ("grader_output", GRADER_OUTPUT_SOURCE),
)
TRIAL_FORMAT = "skilleval-trial/2"
# Runs written before TRIAL_FORMAT kept a folder per trial, `<run>/<agent>/<arm>/trials/<case>/<attempt>/`, with
# record.json and copies of the files above under these names; `--resume` and the readers still accept it.
TRIAL_RECORD_NAME = "record.json"
LEGACY_PARTS: tuple[tuple[str, str], ...] = (
    ("reward", "reward.json"),
    ("rich_reward", "skilleval_reward.json"),
    ("trajectory", "trajectory.json"),
    ("harbor_result", "result.json"),
    ("grader_output", "grader-output.txt"),
)
MAX_GRADER_OUTPUT_CHARS = 64 * 1024
_SAFE_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def safe_component(name: str) -> str:
    """A single, harmless path component for a case/agent name; altered names get a short hash to stay unique."""
    if _SAFE_COMPONENT.match(name) and name not in {".", ".."}:
        return name
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip("._")[:100] or "item"
    return f"{cleaned}-{sha256(name.encode()).hexdigest()[:8]}"


def _read_artifact(trial_dir: Path, rel: str, max_bytes: int, *, tail: bool = False) -> bytes | None:
    """A regular file under trial_dir, reached without any symlink (verifier.safe_io), under the size cap; else None.

    With `tail`, a larger file is not refused: its last `max_bytes` bytes are returned instead.
    """
    try:
        if tail:
            return safe_io.read_bytes(trial_dir, rel, tail_bytes=max_bytes)
        return safe_io.read_bytes(trial_dir, rel, max_bytes=max_bytes)
    except (OSError, safe_io.FileTooLargeError):
        return None


def _reward_from_record(record: TrialRecord) -> dict[str, Any]:
    """Our reward.json when Harbor left none: the scores we aggregated, unscored as null."""
    return {
        **record.metrics,
        "overall": record.overall,
        "custom_metrics": record.custom_metrics,
        "evaluation_status": record.status,
        "grading_mode": record.grading_mode,
        "judge_models": record.judge_models,
        "details": record.details,
        "trajectory_source": record.trajectory_source,
        "error": record.error,
    }


def trials_folder(run_dir: Path, agent: str, arm: str) -> Path:
    """`<run>/<agent>/<arm>/trials/`: the folder of one agent and arm's trial files."""
    return run_dir / safe_component(agent) / arm / "trials"


def trial_file_name(case: str, attempt: int) -> str:
    """`<case>.<attempt>.json`: one trial's file name in its `trials_folder`."""
    return f"{safe_component(case)}.{int(attempt)}.json"


def trial_file(run_dir: Path, key: TrialKey) -> Path:
    """`<run>/<agent>/<arm>/trials/<case>.<attempt>.json`: one trial's file (writer and readers agree)."""
    return trials_folder(run_dir, key.agent, key.arm) / trial_file_name(key.case, key.attempt)


def legacy_trial_folder(trials: Path, case: str, attempt: int) -> Path:
    """`<trials folder>/<case>/<attempt>/`: where runs of the earlier layout kept one trial's files."""
    return trials / safe_component(case) / str(int(attempt))


def trial_folder(run_dir: Path, key: TrialKey) -> Path:
    """`<run>/<agent>/<arm>/trials/<case>/<attempt>/`: where runs of the earlier layout kept one trial's files."""
    return legacy_trial_folder(trials_folder(run_dir, key.agent, key.arm), key.case, key.attempt)


def read_parts(
    folder: Path,
    parts: tuple[tuple[str, str], ...],
    max_bytes: int,
    written: Mapping[str, WrittenFile] | None = None,
) -> dict[str, tuple[Any, str]]:
    """The readable parts of a trial folder, by key: (JSON value, or the text when it is not JSON; source).

    Read through verifier.safe_io (no link followed, size capped); the grader's output keeps its tail. A part in
    `written` (source -> what this process wrote there: `TrialRecord.written`) is taken from it, as if read back.
    """
    sources = dict(parts)
    output = sources.get("grader_output")
    tails = {output: MAX_GRADER_OUTPUT_CHARS * 4} if output is not None else {}
    kept = {rel: written[rel] for rel in sources.values() if written is not None and rel in written}
    unread = [rel for rel in sources.values() if rel not in kept]
    raw = safe_io.read_files(folder, unread, max_bytes=max_bytes, tail_bytes=tails) if unread else {}
    found: dict[str, tuple[Any, str]] = {}
    for key, rel in parts:
        if rel in kept:
            value = _as_read(kept[rel], max_bytes, tails.get(rel))
            if value is not None:
                found[key] = (cap_text(redact_text(value), MAX_GRADER_OUTPUT_CHARS) if rel == output else value, rel)
            continue
        if key == "trajectory" and rel not in raw:
            trajectory = _large_trajectory(folder, rel, max_bytes)
            if trajectory is not None:
                found[key] = (trajectory, rel)
            continue
        if rel not in raw:
            continue
        text = raw[rel].decode("utf-8", errors="replace")
        if rel == output:
            found[key] = (cap_text(redact_text(text), MAX_GRADER_OUTPUT_CHARS), rel)
            continue
        try:
            found[key] = (json.loads(text), rel)
        except ValueError:
            found[key] = (text, rel)
    if isinstance(found.get("trajectory", (None,))[0], dict):
        trajectory, rel = found["trajectory"]
        found["trajectory"] = (_with_segments(folder, rel, trajectory, max_bytes), rel)
    return found


def _as_read(file: WrittenFile, max_bytes: int, tail: int | None) -> Any:
    """A file this process wrote, as `read_files` would give it back: its tail (text) when read by its tail, else
    its value when within `max_bytes`, else None."""
    if tail is not None:
        if file.size <= tail:
            return file.value
        return str(file.value).encode("utf-8")[-tail:].decode("utf-8", errors="replace")
    return file.value if file.size <= max_bytes else None


def _with_segments(folder: Path, rel: str, trajectory: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    """A trajectory that continues in other files (terminus-2's `linear_history`: `trajectory.cont-N.json` beside
    it) kept as one document (`verifier.trajectory.merged_trajectory`), so a regrade or a replay of the trial sees
    every segment; the segments together stay within one artifact's cap."""
    if not trajectory.get("continued_trajectory_ref"):
        return trajectory
    base = posixpath.dirname(rel)
    budget = [max_bytes]

    def read(name: str) -> str:
        data = _read_artifact(folder, posixpath.join(base, name), max(budget[0], 0))
        if data is None:
            raise FileNotFoundError(name)
        budget[0] -= len(data)
        return data.decode("utf-8", errors="replace")

    return merged_trajectory(trajectory, read)[0]


def _large_trajectory(folder: Path, rel: str, max_bytes: int) -> Any:
    """A trajectory file over the per-artifact cap, kept cut to fit (trajectory_cap.py); None when there is none."""
    try:
        size = safe_io.file_size(folder, rel)
    except OSError:
        return None
    if size is None or size <= max_bytes:
        return None  # missing, a link, or a file read_files already refused for another reason
    if size > MAX_TRAJECTORY_READ_BYTES:
        return too_large_to_read(size)
    data = _read_artifact(folder, rel, MAX_TRAJECTORY_READ_BYTES)
    return capped_trajectory(data, max_bytes) if data is not None else None


def trial_document(record: TrialRecord, found: dict[str, tuple[Any, str]]) -> dict[str, Any]:
    """One trial's file: its record and what explains its score (the rich reward falls back to the record's)."""
    rich = found.get("rich_reward")
    has_rich = rich is not None and isinstance(rich[0], dict)
    document: dict[str, Any] = {
        "format": TRIAL_FORMAT,
        "record": record.model_dump(mode="json"),
        "artifacts": {key: rel for key, (_, rel) in found.items() if key != "rich_reward" or has_rich},
        "rich_reward": redact_value(rich[0] if rich is not None and has_rich else _reward_from_record(record)),
    }
    for key, _ in TRIAL_PARTS:
        if key != "rich_reward":
            document[key] = found[key][0] if key in found else None
    return document


def stored_document(path: Path, legacy: Path, record: TrialRecord, max_bytes: int) -> dict[str, Any] | None:
    """A resumed trial's file as the run folder already holds it, with the record updated; None when absent.

    A run of the earlier folder-per-trial layout is read from that folder (already redacted when written).
    """
    data = _read_artifact(path.parent, path.name, MAX_TRIAL_BYTES)
    if data is not None:
        try:
            stored = json.loads(data)
        except ValueError:
            stored = None
        if isinstance(stored, dict):
            return {**stored, "record": record.model_dump(mode="json")}
    if _read_artifact(legacy, TRIAL_RECORD_NAME, max_bytes) is not None:
        return trial_document(record, read_parts(legacy, LEGACY_PARTS, max_bytes))
    return None


def _read_text(path: Path) -> str | None:
    """A file of the run folder: reached without a link (verifier.safe_io), bounded in size; None when unreadable."""
    data = _read_artifact(path.parent, path.name, MAX_TRIAL_BYTES)
    return data.decode("utf-8", errors="replace") if data is not None else None


def _read_json(path: Path) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return None


def read_trial(path: Path, legacy_folder: Path | None = None) -> dict[str, Any] | None:
    """One trial's file (`tree.trial_file`), or the same keys gathered from a folder of the earlier layout."""
    data = _read_json(path)
    if isinstance(data, dict):
        return data
    if legacy_folder is None or not legacy_folder.is_dir() or legacy_folder.is_symlink():
        return None
    document: dict[str, Any] = {"record": _read_json(legacy_folder / "record.json")}
    for key, name in LEGACY_PARTS:
        read = _read_text if key == "grader_output" else _read_json
        document[key] = read(legacy_folder / name)
    return document
