"""A case's checks and the workspace snapshots, run in the trial's own sandbox through Harbor's environment API.

The runner script (`verifier/check_runner.py`, standard library only) goes to /tests with the checks it runs, after
the grading seal ended the agent phase; before the agent starts it runs once more, inline, to snapshot /workspace.
What it prints is the sandbox's word and is read as hostile input: the output is size-capped before it is parsed,
parsed into pydantic models (anything else is an error naming why), and evidence is truncated by the result model
and redacted with the rest of the reward. A runner that cannot run makes every sandbox check an `error`: unscored,
never a failure of the agent.
"""

from __future__ import annotations

import ast
import functools
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pytest_skilleval.skill.bounded_parse import ParseLimitError
from pytest_skilleval.skill.bounded_yaml import load_yaml
from verifier import check_runner, safe_io
from verifier.check_host import Snapshot
from verifier.check_spec import CHECK_LIST, SANDBOX_TYPES, CheckSpec, CheckStatus, parse_json_path

RUNNER_NAME = "skilleval_check_runner.py"
SPEC_NAME = "skilleval_checks.json"
BEFORE_NAME = "workspace-before.json"
MAX_OUTPUT_CHARS = 16 * 1024 * 1024
SNAPSHOT_TIMEOUT_SEC = 120
RUNNER_OVERHEAD_SEC = 120
MAX_RUNNER_SEC = 3600

Verdict = tuple[CheckStatus, str]


class RawVerdict(BaseModel):
    """One sandbox check as the runner reports it."""

    model_config = ConfigDict(extra="ignore")

    index: int
    status: Literal["passed", "failed", "error", "host"]
    evidence: str = ""
    yaml_text: str | None = None


class RunnerOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    results: list[RawVerdict] = Field(default_factory=list)
    snapshot: Snapshot | None = None


class SandboxChecks(BaseModel):
    """What the sandbox said: verdicts by check index, the after-snapshot, and why nothing came back (if so)."""

    verdicts: dict[int, Verdict] = Field(default_factory=dict)
    snapshot: Snapshot | None = None
    problem: str | None = None


def case_checks(entry: dict[str, Any]) -> list[CheckSpec] | None:
    """The case's checks from its entry.json (validated at collection; read again here through the same model)."""
    raw = entry.get("checks")
    if not raw:
        return None
    return CHECK_LIST.validate_python(raw)


@functools.cache
def runner_source() -> str:
    """The check runner's source, read once per process: every trial with checks stages it in its /tests."""
    return Path(check_runner.__file__).read_text(encoding="utf-8")


def _defined(node: ast.stmt) -> str | None:
    if isinstance(node, ast.FunctionDef):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


@functools.cache
def snapshot_program() -> str:
    """The runner's snapshot walk alone (`check_runner.SNAPSHOT_PARTS`, cut from its source): a fifth of the runner to
    compile and four standard modules to import, twice a trial, where the whole runner's compile and imports cost
    more than the interpreter's own start."""
    source = runner_source()
    wanted = check_runner.SNAPSHOT_PARTS
    parts = [ast.get_source_segment(source, node) or "" for node in ast.parse(source).body if _defined(node) in wanted]
    ending = 'sys.stdout.write("\\n" + MARKER + to_json({"snapshot": snapshot()}) + "\\n")'
    return "\n\n".join(["from __future__ import annotations", check_runner.SNAPSHOT_IMPORTS, *parts, ending]) + "\n"


@functools.cache
def snapshot_command() -> str:
    """The snapshot as one command: `-I -S` make it a bare interpreter start (no site, no environment), and the
    `local` environment starts it without a shell (plain and single-quoted words)."""
    return f"python3 -I -S -c {shlex.quote(snapshot_program())}"


def sandbox_specs(checks: Sequence[CheckSpec]) -> list[dict[str, Any]]:
    """The checks the sandbox runs, as the runner reads them (by index in the case's list)."""
    specs: list[dict[str, Any]] = []
    for index, check in enumerate(checks):
        if check.type not in SANDBOX_TYPES:
            continue
        spec = check.model_dump(mode="json")
        spec["index"] = index
        if check.type == "json_path":
            spec["steps"] = parse_json_path(check.json_path)
            spec["mode"] = check.mode()
            spec["expected"] = check.contains if spec["mode"] == "contains" else check.equals
        specs.append(spec)
    return specs


def stage_runner(tests_dir: Path, checks: Sequence[CheckSpec]) -> None:
    """Put the runner and its checks in the task's tests/ (our staged copy), uploaded to /tests by the seal."""
    safe_io.write_text(tests_dir, RUNNER_NAME, runner_source())
    safe_io.write_text(tests_dir, SPEC_NAME, json.dumps(sandbox_specs(checks)))


def runner_timeout(checks: Sequence[CheckSpec]) -> int:
    total = sum(check.timeout_sec for check in checks if check.type == "command") + RUNNER_OVERHEAD_SEC
    return int(min(total, MAX_RUNNER_SEC))


def parse_output(stdout: str | None) -> RunnerOutput:
    """The runner's JSON line, size-capped and validated; raises ValueError saying what was wrong."""
    text = stdout or ""
    if len(text) > MAX_OUTPUT_CHARS:
        raise ValueError(f"the check runner's output is {len(text)} characters; the limit is {MAX_OUTPUT_CHARS}")
    at = text.rfind(check_runner.MARKER)
    if at < 0:
        raise ValueError("the check runner printed no result")
    line = text[at + len(check_runner.MARKER) :].split("\n", 1)[0]
    try:
        return RunnerOutput.model_validate_json(line)
    except ValidationError as error:
        raise ValueError(f"the check runner's result is malformed: {error.errors()[0]['msg']}") from None


def _failure(result: Any) -> str:
    output = ((result.stderr or "") + (result.stdout or "")).strip()
    return f"the check runner could not run in the sandbox (exit code {result.return_code}): {output[-200:]}"


async def take_snapshot(environment: Any) -> Snapshot | None:
    """/workspace's paths, sizes and hashes (no contents), or None when the sandbox cannot say (no python3).

    An environment whose sandbox folders the host sees (the `local` one) reads them itself (`workspace_snapshot`,
    the runner's own walk, links never followed): a python3 start in the sandbox saved twice a trial. Elsewhere the
    runner's walk alone runs in the sandbox (`snapshot_command`)."""
    on_host = getattr(environment, "workspace_snapshot", None)
    if callable(on_host):
        try:
            document = await on_host()
            if document is not None:
                read = Snapshot.model_validate(document)
                return read if read.error is None else None
        except Exception:  # noqa: BLE001 - as in the sandbox: a snapshot that fails leaves the diff unknown
            return None
    try:
        result = await environment.exec(snapshot_command(), timeout_sec=SNAPSHOT_TIMEOUT_SEC)
        if result.return_code != 0:
            return None
        found = parse_output(result.stdout).snapshot
    except Exception:  # noqa: BLE001 - a snapshot that fails leaves the diff unknown, never the trial broken
        return None
    return found if found is not None and found.error is None else None


def _yaml_verdict(check: CheckSpec, spec: dict[str, Any], text: str) -> Verdict:
    """json_path on a YAML file the sandbox could not parse (no PyYAML there): parsed here, within limits."""
    try:
        document = load_yaml(text)
    except ParseLimitError as error:
        return "error", f"/workspace/{spec['path']} is refused: {error.message}"
    except Exception as error:  # noqa: BLE001 - yaml.YAMLError and its kin: the agent's file is not YAML
        return "failed", f"/workspace/{spec['path']} is not valid YAML: {str(error).splitlines()[0][:120]}"
    verdict = check_runner.json_path_verdict(spec, document)
    return verdict["status"], verdict["evidence"]


async def run_in_sandbox(environment: Any, checks: Sequence[CheckSpec], tests_dir: str) -> SandboxChecks:
    """Run the staged runner in the sealed sandbox (cwd /workspace); every verdict it printed, and its snapshot."""
    command = f"python3 {shlex.quote(f'{tests_dir}/{RUNNER_NAME}')} checks {shlex.quote(f'{tests_dir}/{SPEC_NAME}')}"
    try:
        result = await environment.exec(command, cwd="/workspace", timeout_sec=runner_timeout(checks))
    except Exception as error:  # noqa: BLE001 - any environment failure: the checks are unscored, with the reason
        return SandboxChecks(problem=f"the check runner did not finish: {type(error).__name__}: {error}"[:300])
    if result.return_code != 0:
        return SandboxChecks(problem=_failure(result))
    try:
        output = parse_output(result.stdout)
    except ValueError as error:
        return SandboxChecks(problem=str(error))
    specs = {spec["index"]: spec for spec in sandbox_specs(checks)}
    verdicts: dict[int, Verdict] = {}
    for raw in output.results:
        spec = specs.get(raw.index)
        if spec is None or raw.index in verdicts:
            continue
        if raw.status == "host":
            if raw.yaml_text is None or spec["type"] != "json_path":
                continue
            verdicts[raw.index] = _yaml_verdict(checks[raw.index], spec, raw.yaml_text)
        else:
            verdicts[raw.index] = (raw.status, raw.evidence)
    return SandboxChecks(verdicts=verdicts, snapshot=output.snapshot)


def read_before(path: Path) -> Snapshot | None:
    """The before-snapshot the runner kept in the trial's work folder (ours, never the sandbox's)."""
    try:
        return Snapshot.model_validate_json(safe_io.read_bytes(path.parent, path.name, max_bytes=MAX_OUTPUT_CHARS))
    except (OSError, ValueError):
        return None
