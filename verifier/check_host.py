"""The host half of a case's checks, and the workspace diff they read.

The sandbox runner (`verifier.check_runner`) reports file and command checks; the checks that read what the host
already holds are decided here: the agent's last message and its shell commands (from the trajectory, through the
same command extraction the standard checks use) and the workspace diff (two snapshots of /workspace: paths, sizes,
hashes, never contents). `assemble` puts every check's result in the author's order.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from verifier.check_spec import CheckResult, CheckSpec, CheckStatus
from verifier.evidence import TrajectoryEvidence
from verifier.tools import command_text, is_exec_tool

MAX_DIFF_PATHS = 200
SNIPPET = 80


class SnapshotEntry(BaseModel):
    """One path of a workspace snapshot: [kind, size, sha256] as the runner prints it."""

    kind: Literal["file", "link", "other"]
    size: int = Field(ge=0)
    digest: str = Field(max_length=64)


class Snapshot(BaseModel):
    """A workspace snapshot as it comes back from the sandbox (validated, capped by the runner and the host)."""

    model_config = ConfigDict(extra="ignore")

    entries: dict[str, tuple[str, int, str]] = Field(default_factory=dict)
    truncated: bool = False
    error: str | None = None

    def typed(self) -> dict[str, SnapshotEntry]:
        out: dict[str, SnapshotEntry] = {}
        for path, (kind, size, digest) in self.entries.items():
            try:
                out[path] = SnapshotEntry(kind=kind, size=size, digest=digest)  # type: ignore[arg-type]
            except ValidationError:
                continue
        return out


class WorkspaceDiff(BaseModel):
    """What the agent changed under /workspace: created, modified and deleted paths (capped) with their counts."""

    created: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict, description="created/modified/deleted, before capping.")
    truncated: bool = Field(default=False, description="A list was capped, or a snapshot stopped at its entry limit.")

    def all_paths(self) -> list[str]:
        return [*self.created, *self.modified, *self.deleted]


def diff_snapshots(before: Snapshot, after: Snapshot) -> WorkspaceDiff:
    """Paths only in `after` are created, only in `before` deleted, in both with another kind/size/hash modified."""
    old, new = before.typed(), after.typed()
    created = sorted(set(new) - set(old))
    deleted = sorted(set(old) - set(new))
    modified = sorted(path for path in set(old) & set(new) if old[path] != new[path])
    lists = {"created": created, "modified": modified, "deleted": deleted}
    capped = any(len(paths) > MAX_DIFF_PATHS for paths in lists.values())
    return WorkspaceDiff(
        **{name: paths[:MAX_DIFF_PATHS] for name, paths in lists.items()},
        counts={name: len(paths) for name, paths in lists.items()},
        truncated=capped or before.truncated or after.truncated,
    )


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET else flat[: SNIPPET - 1] + "…"


def _matches(path: str, patterns: Sequence[str]) -> bool:
    """A glob matches a path or a folder holding it (`output` matches `output/a.txt`); `*` crosses folders."""
    for pattern in patterns:
        if pattern in ("**", "*") or fnmatch.fnmatchcase(path, pattern):
            return True
        if path.startswith(pattern.rstrip("/") + "/"):
            return True
    return False


def _diff_check(spec: Any, diff: WorkspaceDiff | None) -> tuple[CheckStatus, str]:
    if diff is None:
        return "error", "no workspace diff: the workspace could not be snapshotted before and after the agent"
    hits = [path for path in diff.all_paths() if _matches(path, spec.paths)]
    shown = ", ".join(hits[:5]) + (f" and {len(hits) - 5} more" if len(hits) > 5 else "")
    if spec.type == "workspace_changed":
        if hits:
            return "passed", f"changed: {shown}"
        return "failed", f"nothing matching {', '.join(spec.paths)} was created, modified or deleted"
    if hits:
        return "failed", f"changed, expected unchanged: {shown}"
    return "passed", f"nothing matching {', '.join(spec.paths)} changed"


def _final_message(spec: Any, evidence: TrajectoryEvidence | None) -> tuple[CheckStatus, str]:
    if evidence is None or not evidence.usable:
        return "error", "no trajectory to read the agent's last message from"
    final = evidence.final_response
    if spec.type == "final_message_contains":
        found = spec.text in final
        what = f"text '{_short(spec.text)}'"
    else:
        found = re.search(spec.regex, final) is not None
        what = f"regex '{_short(spec.regex)}'"
    if found:
        return "passed", f"the last message matches {what}"
    return (
        "failed",
        f"the last message lacks {what}; it was '{_short(final)}'" if final else "the last message is empty",
    )


def _no_command(spec: Any, evidence: TrajectoryEvidence | None) -> tuple[CheckStatus, str]:
    if evidence is None or not evidence.usable:
        return "error", "no trajectory to read the agent's commands from"
    pattern = re.compile(spec.regex)
    commands = [command_text(call.arguments) for call in evidence.tool_calls if is_exec_tool(call.tool)]
    for number, command in enumerate(commands):
        if command and pattern.search(command):
            return "failed", f"command {number + 1} matches '{_short(spec.regex)}': '{_short(command)}'"
    return "passed", f"none of {len(commands)} shell command(s) matches '{_short(spec.regex)}'"


def host_result(
    spec: Any, evidence: TrajectoryEvidence | None, diff: WorkspaceDiff | None
) -> tuple[CheckStatus, str] | None:
    """The verdict of a host-side check; None for a sandbox-side type."""
    if spec.type in ("final_message_contains", "final_message_matches"):
        return _final_message(spec, evidence)
    if spec.type == "no_command_matching":
        return _no_command(spec, evidence)
    if spec.type in ("workspace_changed", "workspace_unchanged"):
        return _diff_check(spec, diff)
    return None


def assemble(
    specs: Sequence[CheckSpec],
    sandbox: Mapping[int, tuple[CheckStatus, str]],
    evidence: TrajectoryEvidence | None,
    diff: WorkspaceDiff | None,
    sandbox_problem: str | None,
) -> list[CheckResult]:
    """Every check's result in the author's order: the sandbox's verdicts by index, the host's computed here. A
    sandbox check with no verdict is an error naming why (`sandbox_problem`)."""
    results: list[CheckResult] = []
    for index, spec in enumerate(specs):
        verdict = host_result(spec, evidence, diff)
        if verdict is None:
            verdict = sandbox.get(index) or ("error", sandbox_problem or "the sandbox returned no result for it")
        status, evidence_text = verdict
        results.append(
            CheckResult(name=spec.label(), type=spec.type, status=status, weight=spec.weight, evidence=evidence_text)
        )
    return results
