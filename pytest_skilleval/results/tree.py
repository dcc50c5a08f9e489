"""The results tree on disk: `<results-root>/<run-id>/result.json` and friends, written atomically.

Why so careful: the default root lives inside the skill folder (`<skill>/evals/results/`), which comes from whoever
wrote the skill. A planted symlink there must not make us write outside the tree, so every directory and file we
write is checked with lstat and refused when it is a symlink; every file goes to a temp file in its directory and is
renamed into place, so readers never see half a JSON document; `latest` moves only after result.json is complete.
Artifacts copied from Harbor's trial folder must be regular files (no symlinks followed) under a size cap.

Pure except for the file system; imports neither pytest nor Harbor (Harbor's version is read from its metadata).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from hashlib import sha256
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import jsonschema

from pytest_skilleval.results.models import AggregateResult, ResultDocument
from pytest_skilleval.results.records import ARMS, TrialRecord
from pytest_skilleval.results.redact import cap_text, redact_text, redact_value
from verifier import safe_io
from verifier.redact import Redactor

__all__ = [
    "ENV_RESULTS_DIR",
    "MARKER_FILE",
    "MAX_ARTIFACT_BYTES",
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

ENV_RESULTS_DIR = "SKILLEVAL_RESULTS_DIR"
MARKER_FILE = ".skilleval-generated-output"
LATEST = "latest"
MAX_ARTIFACT_BYTES = 5 * 1024 * 1024
SCHEMA_ID = "https://pytest-skilleval.dev/schemas/result.schema.json"
# Harbor trial files copied per trial: (source inside trial_dir, name in our tree)
HARBOR_ARTIFACTS: tuple[tuple[str, str], ...] = (
    ("verifier/reward.json", "reward.json"),
    ("verifier/skilleval_reward.json", "skilleval_reward.json"),  # every evaluator's details, judges' included
    ("agent/trajectory.json", "trajectory.json"),
    ("result.json", "result.json"),
)
RUN_ID_PATTERN = re.compile(r"^\d{8}_\d{6}_\d+_[0-9a-f]{12}$")
# The whole TrialRecord of a trial, so a run can be resumed or regraded from its folder alone.
TRIAL_RECORD_NAME = "record.json"
# What explains a score, written by the host verifier (harbor/verifier_adapter.py: RICH_REWARD_NAME and
# GRADER_OUTPUT_NAME); named here because results/ never imports Harbor-facing modules; a test keeps them equal.
RICH_REWARD_SOURCE = "verifier/skilleval_reward.json"
GRADER_OUTPUT_SOURCE = "verifier/grader-output.txt"
RICH_REWARD_FILE = "skilleval_reward.json"
GRADER_OUTPUT_FILE = "grader-output.txt"
MAX_GRADER_OUTPUT_CHARS = 64 * 1024
_SAFE_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class UnsafeResultsPath(RuntimeError):
    """Refused to write: a path in the results tree is a symlink or otherwise not ours to write."""


# --------------------------------------------------------------------------------------------- naming


def new_run_id(now: datetime | None = None, pid: int | None = None) -> str:
    """`YYYYMMDD_HHMMSS_<pid>_<12 hex>` in UTC: sortable by time, unique across concurrent sessions."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%d_%H%M%S")
    return f"{stamp}_{os.getpid() if pid is None else pid}_{uuid.uuid4().hex[:12]}"


def resolve_results_root(skill_dir: str | Path, cli_results_dir: str | Path | None, env: Mapping[str, str]) -> Path:
    """`--results-dir D` -> D/<skill>; else SKILLEVAL_RESULTS_DIR=E -> E/<skill>; else <skill>/evals/results."""
    skill = Path(os.path.abspath(os.path.expanduser(str(skill_dir))))
    for base in (cli_results_dir, env.get(ENV_RESULTS_DIR)):
        if base is not None and str(base).strip():
            return Path(os.path.abspath(os.path.expanduser(str(base)))) / skill.name
    return skill / "evals" / "results"


def safe_component(name: str) -> str:
    """A single, harmless path component for a case/agent name; altered names get a short hash to stay unique."""
    if _SAFE_COMPONENT.match(name) and name not in {".", ".."}:
        return name
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip("._")[:100] or "item"
    return f"{cleaned}-{sha256(name.encode()).hexdigest()[:8]}"


# ---------------------------------------------------------------------------------------- safe writes


def _refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise UnsafeResultsPath(f"refusing to write through symlink {path}")


def _ensure_dir(path: Path, root: Path) -> Path:
    """Create `path` (inside `root`) one level at a time, refusing any symlinked level, including root itself."""
    _refuse_symlink(root)
    root.mkdir(parents=True, exist_ok=True)
    _refuse_symlink(root)
    rel = path.relative_to(root)
    current = root
    for part in rel.parts:
        current = current / part
        _refuse_symlink(current)
        try:
            current.mkdir()
        except FileExistsError:
            pass
        _refuse_symlink(current)
        if not current.is_dir():
            raise UnsafeResultsPath(f"{current} exists and is not a directory")
    return path


def atomic_write_bytes(path: Path, data: bytes, root: Path) -> Path:
    """Write via a temp file in the same directory and an atomic rename; never follows a symlink at `path`."""
    _ensure_dir(path.parent, root)
    _refuse_symlink(path)
    if path.exists() and not path.is_file():
        raise UnsafeResultsPath(f"{path} exists and is not a regular file")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_json(path: Path, data: Any, root: Path) -> Path:
    """Pretty, key-stable JSON (non-ASCII kept) written atomically."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return atomic_write_bytes(path, text.encode("utf-8"), root)


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


# --------------------------------------------------------------------------------------------- schema


def result_schema() -> dict[str, Any]:
    """The JSON Schema for result.json, generated from `ResultDocument`."""
    schema = ResultDocument.model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def render_result_schema() -> str:
    """The text shipped as `schemas/result.schema.json` (a unit test keeps the file in sync)."""
    return json.dumps(result_schema(), indent=2, sort_keys=True) + "\n"


@lru_cache(maxsize=1)
def _shipped_schema() -> dict[str, Any]:
    text = resources.files("pytest_skilleval").joinpath("schemas/result.schema.json").read_text("utf-8")
    return json.loads(text)


def validate_result(document: Mapping[str, Any]) -> None:
    """Raise jsonschema.ValidationError unless `document` matches the shipped result.json schema."""
    jsonschema.Draft202012Validator(_shipped_schema()).validate(document)


def harbor_version() -> str | None:
    try:
        return metadata.version("harbor")
    except metadata.PackageNotFoundError:
        return None


# --------------------------------------------------------------------------------------------- writer


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


def trial_folder(run_dir: Path, agent: str, arm: str, case: str, attempt: int) -> Path:
    """`<run>/<agent>/<arm>/trials/<case>/<attempt>/`: where one trial's files live (writer and readers agree)."""
    return run_dir / safe_component(agent) / arm / "trials" / safe_component(case) / str(int(attempt))


def _write_trial(run_dir: Path, record: TrialRecord, entry: dict[str, Any], max_bytes: int,
                 redactor: Redactor) -> None:
    tdir = trial_folder(run_dir, record.agent, record.arm, record.case, record.attempt)
    copied: dict[str, str] = {}
    if record.source_run is not None and (tdir / TRIAL_RECORD_NAME).is_file():
        # Resumed from this very folder: its artifacts are already here and the trial dir may be long gone.
        atomic_write_json(tdir / TRIAL_RECORD_NAME, redactor.value(_json_safe(record.model_dump(mode="json"))),
                          run_dir)
        return
    if record.trial_dir:
        for src, name in HARBOR_ARTIFACTS:
            data = _read_artifact(Path(record.trial_dir), src, max_bytes)
            if data is not None:
                atomic_write_bytes(tdir / name, redactor.json_bytes(data), run_dir)
                copied[name] = src
    if "reward.json" not in copied:
        atomic_write_json(tdir / "reward.json", redactor.value(_json_safe(_reward_from_record(record))), run_dir)
    _write_explanations(tdir, run_dir, record, copied, redactor)
    trial = {**entry, "artifacts": copied, "trial_dir": record.trial_dir}
    atomic_write_json(tdir / "trial.json", redactor.value(trial), run_dir)
    atomic_write_json(tdir / TRIAL_RECORD_NAME, redactor.value(_json_safe(record.model_dump(mode="json"))), run_dir)


def _rich_reward(record: TrialRecord) -> tuple[dict[str, Any], str | None]:
    """The host verifier's full reward (details, findings) when readable, else the one the record carries."""
    if record.trial_dir:
        data = _read_artifact(Path(record.trial_dir), RICH_REWARD_SOURCE, MAX_ARTIFACT_BYTES)
        if data is not None:
            try:
                rich = json.loads(data)
            except ValueError:
                rich = None
            if isinstance(rich, dict):
                return rich, RICH_REWARD_SOURCE
    return _reward_from_record(record), None


def _write_explanations(tdir: Path, run_dir: Path, record: TrialRecord, copied: dict[str, str],
                        redactor: Redactor) -> None:
    """What explains the score, kept beside it: the rich reward and the grader's output, both redacted."""
    rich, source = _rich_reward(record)
    atomic_write_json(tdir / RICH_REWARD_FILE, redactor.value(_json_safe(redact_value(rich))), run_dir)
    if source:
        copied[RICH_REWARD_FILE] = source
    if not record.trial_dir:
        return
    raw = _read_artifact(Path(record.trial_dir), GRADER_OUTPUT_SOURCE, MAX_GRADER_OUTPUT_CHARS * 4, tail=True)
    if raw is not None:
        text = cap_text(redactor.text(redact_text(raw.decode("utf-8", errors="replace"))), MAX_GRADER_OUTPUT_CHARS)
        atomic_write_bytes(tdir / GRADER_OUTPUT_FILE, text.encode("utf-8"), run_dir)
        copied[GRADER_OUTPUT_FILE] = GRADER_OUTPUT_SOURCE


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
) -> Path:
    """Write `<results_root>/<run_id>/...` and return the run directory.

    The run directory may already exist (staging may have created it); it must not be a symlink. result.json is
    written last among the run's files and validated against the shipped schema first; `latest` is moved after it,
    and not at all for an interrupted run. Every file passes through `redactor` (by default: the credential-looking
    values of this process's environment plus token patterns), so no secret reaches the tree.
    """
    redactor = redactor or Redactor.from_environment(os.environ)

    def write_json(path: Path, data: Any) -> None:
        atomic_write_json(path, redactor.value(data), results_root)

    results_root = Path(os.path.abspath(results_root))
    if not RUN_ID_PATTERN.match(run_id) and safe_component(run_id) != run_id:
        raise UnsafeResultsPath(f"unsafe run id {run_id!r}")
    run_dir = _ensure_dir(results_root / run_id, results_root)
    atomic_write_bytes(run_dir / MARKER_FILE, b"generated by pytest-skilleval; safe to delete\n", results_root)
    write_json(run_dir / "run_config.json", aggregate.run_config)
    write_json(run_dir / "attempt_policy.json", aggregate.attempt_policy.model_dump(mode="json"))
    if dataset_snapshot is not None:
        write_json(run_dir / "dataset_snapshot.json", _json_safe(dict(dataset_snapshot)))

    for name, agent in aggregate.agents.items():
        adir = run_dir / safe_component(name)
        for arm in ARMS:
            summary = getattr(agent, arm)
            if summary.execution_status != "skipped":
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

    entries = {(t.agent, t.arm, t.case, t.attempt): t.model_dump(mode="json") for t in aggregate.trials}
    for record in records:
        key = (record.agent, record.arm, record.case, record.attempt)
        _write_trial(run_dir, record, entries.get(key, {}), max_artifact_bytes, redactor)

    if aggregate.comparison is not None:
        write_json(run_dir / "comparison.json", aggregate.comparison)

    document = ResultDocument(
        **aggregate.model_dump(),
        run_id=run_id,
        plugin_version=aggregate.evaluator_version,
        harbor_version=harbor_version(),
        run_dir=str(run_dir),
    ).model_dump(mode="json")
    document = redactor.value(document)
    validate_result(document)
    atomic_write_json(run_dir / "result.json", document, results_root)
    if aggregate.execution_status != "interrupted":
        _publish_latest(results_root, run_id)
    return run_dir


if __name__ == "__main__":  # regenerate the shipped schema: python -m pytest_skilleval.results.tree
    target = Path(__file__).parents[1] / "schemas" / "result.schema.json"
    target.write_text(render_result_schema(), encoding="utf-8")
    print(f"wrote {target}")
