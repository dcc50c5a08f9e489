"""`--regrade RUN_ID`: grade a finished run's stored trials again with today's host-side graders, 0 agent runs.

This is how a skill author iterates on grading: the agent phase is paid once, then the standard checks and the
judges run again on each trial's stored trajectory (`trajectory` in `<run>/<agent>/<arm>/trials/<case>.<n>.json`). The
author's custom grader needs the trial's workspace. A run made with `--harbor-keep-jobs` recorded it (the agent's
final /workspace, as a Harbor artifact, in the kept trial folder): while that folder exists, the trial is regraded
through Harbor's own regrade (a fresh sandbox holding the recorded workspace and trajectory, today's task, grader,
checks and judges). Otherwise the stored custom reward is kept as it was and the trial's details say so. Results go
to a new run folder that records where they came from.

Only what this machine wrote is graded: the source run's trial files must carry its seal (results/run_seal.py), and
a kept trial folder is used only when it has the shape of one this plugin makes for that very trial
(`runner.own_trial_dir`), so no record, however it was written, points the regrade at another host folder.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_skilleval.harbor.runner import own_trial_dir
from pytest_skilleval.harbor.staging import entry_document
from pytest_skilleval.results.records import TrialRecord, record_from_reward
from pytest_skilleval.results.run_folder import TrialContent
from pytest_skilleval.results.run_seal import RunSeal
from pytest_skilleval.results.tree import MAX_TRIAL_BYTES, trial_file
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings
from verifier.custom import SanitizedReward
from verifier.reward import RICH_REWARD_NAME, RichReward, grade_on_host
from verifier.trajectory import TRAJECTORY_FILE

CUSTOM_KEPT = "the custom grader was not re-run (the run kept no workspace); its stored reward is kept as it was"
CHECKS_KEPT = "the case's checks were not re-run (the run kept no workspace); their stored results are kept"
CUSTOM_RERUN = "the custom grader was re-run on the trial's recorded workspace (kept by --harbor-keep-jobs)"
CHECKS_RERUN = "the case's checks were re-run on the trial's recorded workspace (kept by --harbor-keep-jobs)"
Rerun = Callable[[TrialSpec, Path], TrialRecord]


def _stored_custom(content: TrialContent, record: TrialRecord) -> SanitizedReward:
    stored = content.rich_reward() or RichReward()
    custom = stored.section("custom")
    details = custom.get("details")
    return SanitizedReward(
        custom_metrics=record.custom_metrics,
        overall=stored.custom_overall,
        details=details if isinstance(details, dict) else {},
        unscored_reason=stored.custom_unscored_reason,
    )


def stored_results_note(skill: str, records: Sequence[TrialRecord]) -> str | None:
    """The line a regrade's summary adds when some trials kept their stored check or custom-grader results (their
    run kept no workspace): an author who edited the checks or the grader would otherwise read those as today's."""
    notes = [record.details.get("regrade") for record in records]
    kept = [note for note in notes if isinstance(note, dict)]
    checks = sum(note.get("checks") == CHECKS_KEPT for note in kept)
    grader = sum(note.get("custom_grader") == CUSTOM_KEPT for note in kept)
    parts = [f"the case's checks of {checks} trial(s)"] * bool(checks)
    parts += [f"the custom grader's reward of {grader} trial(s)"] * bool(grader)
    if not parts:
        return None
    return (
        f"{skill}: --regrade kept {' and '.join(parts)} as that run stored them, not graded again (it kept no "
        "workspace): to grade edited checks or a changed grader, run with --harbor-keep-jobs, then --regrade"
    )


def kept_trial(stored: TrialRecord, spec: TrialSpec) -> Path | None:
    """The Harbor trial folder a --harbor-keep-jobs run left for this trial, while it still exists (pytest's temp
    folders rotate), with its result and recorded artifacts; Harbor's regrade checks the artifacts cover /workspace.
    Only a folder of this plugin's own naming for this trial counts (`own_trial_dir`)."""
    if not stored.trial_dir:
        return None
    path = Path(stored.trial_dir)
    if not own_trial_dir(path, spec) or not path.is_dir() or (path / "artifacts").is_symlink():
        return None
    return path if (path / "result.json").is_file() and (path / "artifacts").is_dir() else None


def scratch_trial(work: Path, trajectory: Any) -> Path:
    """`work` made afresh in the shape of Harbor's trial folder (`agent/`, `verifier/`), holding the stored trajectory
    (when it is a JSON object) for the graders to read: a regrade's stand-in for the trial folder."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "agent").mkdir(parents=True)
    (work / "verifier").mkdir()
    if isinstance(trajectory, dict):
        (work / "agent" / TRAJECTORY_FILE).write_text(json.dumps(trajectory, ensure_ascii=False) + "\n")
    return work


class Regrader:
    """Grades the stored trials of one source run into fresh records; the agent is never run."""

    def __init__(self, source_run: Path, work_dir: Path, rerun: Rerun | None = None) -> None:
        self.source_run = source_run
        self.work_dir = work_dir
        self.rerun = rerun
        self.seal = RunSeal.of_this_machine()

    def _stored(self, path: Path) -> tuple[dict[str, Any], str | None]:
        """The trial file's document, or {} and why not: only a file this machine sealed is read."""
        data = self.seal.read(self.source_run, path, MAX_TRIAL_BYTES)
        if data is None:
            if path.exists() or path.is_symlink():
                why = self.seal.foreign_reason(self.source_run, path.relative_to(self.source_run).as_posix())
                return {}, f"--regrade: {path} is not graded ({why})"
            return {}, f"--regrade: run {self.source_run.name} holds no stored trial for this item"
        try:
            document = json.loads(data)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            return {}, f"--regrade: {path} is not a trial file"
        return document, None

    def regrade(
        self, spec: TrialSpec, settings: RunSettings, judge: dict[str, Any] | None, has_grader: bool
    ) -> TrialRecord:
        document, problem = self._stored(trial_file(self.source_run, spec.key))
        content = TrialContent(document)
        base = dict(**spec.record_fields(), grading_mode=settings.grading_mode, source_run=None)
        raw = content.record()
        if raw is None:
            return TrialRecord(**base, status="error", error=problem or f"--regrade: {tuple(spec.key)} has no record")
        stored = TrialRecord.model_validate(raw)
        if stored.status in ("error", "skipped"):
            why = stored.error or stored.reason or stored.status
            return stored.model_copy(
                update={
                    "nodeid": spec.nodeid,
                    "source_run": None,
                    "trial_dir": None,  # the source run's folder: not this run's to delete
                    "reason": f"not regraded: the stored trial was {stored.status} ({why})",
                }
            )
        uses_grader = has_grader and settings.grading_mode in ("default_plus_custom", "custom_only")
        has_checks = bool(spec.entry.get("checks"))  # today's: an edited check is graded on the kept workspace
        needs_workspace = uses_grader or has_checks
        if needs_workspace and self.rerun is not None and (kept := kept_trial(stored, spec)) is not None:
            record = self.rerun(spec, kept)
            record.details["regrade"] = {
                "source_run": self.source_run.name,
                **({"custom_grader": CUSTOM_RERUN} if uses_grader else {}),
                **({"checks": CHECKS_RERUN} if has_checks else {}),
            }
            return record.model_copy(update={"tokens": stored.tokens, "agent_seconds": stored.agent_seconds})
        work = scratch_trial(
            self.work_dir / spec.case_id / f"{spec.agent_slug}-{spec.arm}-{spec.attempt}", content.trajectory()
        )
        custom = _stored_custom(content, stored) if uses_grader else None
        entry = entry_document(spec, settings.grading_mode, has_grader)
        reward = asyncio.run(grade_on_host(work / "agent", entry, settings.grading_mode, judge, custom))
        reward.set_checks(stored.checks)
        reward.workspace_diff = stored.workspace_diff
        reward.details["regrade"] = {
            "source_run": self.source_run.name,
            **({"custom_grader": CUSTOM_KEPT} if uses_grader else {}),
            **({"checks": CHECKS_KEPT} if stored.checks is not None else {}),
        }
        (work / "verifier" / RICH_REWARD_NAME).write_text(json.dumps(reward.document(), indent=2, default=str) + "\n")
        (work / "verifier" / "reward.json").write_text(json.dumps(reward.flat(), indent=2) + "\n")
        base.update(
            trial_dir=str(work),
            tokens=stored.tokens,
            agent_seconds=stored.agent_seconds,
            negative_control=stored.negative_control,
        )
        return record_from_reward(base, reward, settings.pass_threshold, None, work)
