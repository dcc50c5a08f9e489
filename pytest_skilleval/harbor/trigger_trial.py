"""One trigger item's trial: the query as the task, the skill installed through Harbor's skills mechanism among
distractor skills, a short turn budget, and the trigger verdict read back as a `TriggerRecord`.

Distractors are the skill's siblings (the folders with a SKILL.md next to its own folder) or the skills in
`--distractor-skills DIR`, so "triggered" means the agent chose this skill over the others it was shown. A folder
that is a link, that has the skill's own name or its SKILL.md, is never installed as a distractor.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from pytest_skilleval.harbor.credentials import runtime_env_values
from pytest_skilleval.harbor.docker_cleanup import compose_project, tracked
from pytest_skilleval.harbor.environments import EnvironmentModeError
from pytest_skilleval.harbor.images import ImageError
from pytest_skilleval.harbor.runner import (
    SkillEvalRunner,
    TrialError,
    agent_config,
    environment_config,
    run_trial,
    scrub_agent_kwarg_secrets,
)
from pytest_skilleval.harbor.staging import StagingError, entry_document, stage_dataset_task, stage_inputs, stage_skill
from pytest_skilleval.harbor.trigger_verifier import IMPORT_PATH as TRIGGER_VERIFIER_IMPORT_PATH
from pytest_skilleval.results.records import trial_logs
from pytest_skilleval.results.triggering import TriggerRecord
from pytest_skilleval.skill.folder import SkillFolder
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings
from pytest_skilleval.skill.skill_copy import run_output
from verifier import safe_io
from verifier.triggering import TRIGGER_FILE, TriggerVerdict

MAX_DISTRACTORS = 64
MAX_DISTRACTOR_BYTES = 32 * 1024 * 1024  # a skill is text and small scripts; a copy per run, not per trial
# Agents whose Harbor constructor takes a turn budget, and its name.
TURN_BUDGET_KWARGS = {"terminus-2": "max_turns", "claude-code": "max_turns"}


def distractor_dirs(skill: SkillFolder, settings: RunSettings) -> list[Path]:
    """The skills installed beside the one under test, by name, at most MAX_DISTRACTORS."""
    root = Path(settings.distractor_skills).resolve() if settings.distractor_skills else skill.path.parent
    if not root.is_dir():
        raise StagingError(f"--distractor-skills {settings.distractor_skills}: not a folder")
    own = (skill.path / "SKILL.md").read_bytes()
    found = []
    for candidate in sorted(root.iterdir(), key=lambda path: path.name):
        manifest = candidate / "SKILL.md"
        if candidate.is_symlink() or not candidate.is_dir() or manifest.is_symlink() or not manifest.is_file():
            continue
        if candidate.name == skill.path.name or candidate.resolve() == skill.path:
            continue
        if manifest.stat().st_size == len(own) and manifest.read_bytes() == own:
            continue  # the skill under test under another name
        if _larger_than(candidate, MAX_DISTRACTOR_BYTES):
            raise StagingError(
                f"distractor skill {candidate} holds more than {MAX_DISTRACTOR_BYTES // (1024 * 1024)} MiB; move it "
                "out of the skill's folder's parent, or pass --distractor-skills DIR with the skills to install"
            )
        found.append(candidate)
        if len(found) == MAX_DISTRACTORS:
            break
    return found


def _larger_than(folder: Path, limit: int) -> bool:
    """Whether the files under `folder` (links not followed, each counted by its own size) exceed `limit` bytes."""
    total = 0
    for current, dirs, files in os.walk(folder, followlinks=False):
        for name in files + dirs:
            total += os.lstat(os.path.join(current, name)).st_size
            if total > limit:
                return True
    return False


def _agent_config(runner_spec: TrialSpec, settings: RunSettings, skills: list[Path]) -> Any:
    config = agent_config(runner_spec, settings, skills[0], skills[1:])
    budget = TURN_BUDGET_KWARGS.get(runner_spec.agent)
    if budget and budget not in config.kwargs:
        config.kwargs[budget] = settings.trigger_max_turns
        if runner_spec.agent == "terminus-2":
            config.kwargs.setdefault("suppress_max_turns_warning", True)
    return config


async def run_trigger_trial(runner: SkillEvalRunner, spec: TrialSpec) -> TriggerRecord:
    """Stage, run and read one trigger trial; a trial without a verdict is an error record."""
    skill = runner.skill_of(spec)
    settings = skill.settings
    base: dict[str, Any] = {
        "skill": spec.skill_name,
        "skill_dir": str(spec.skill_dir),
        "query": spec.case_id,
        "agent": spec.agent,
        "attempt": spec.attempt,
        "nodeid": spec.nodeid,
        "should_trigger": bool(spec.entry.get("should_trigger")),
        "split": spec.entry.get("split"),
    }
    trial_name = f"skilleval-trigger-{spec.case_id[:40]}__{spec.agent_slug[:30]}__"
    trial_name += f"{spec.attempt}-{uuid.uuid4().hex[:6]}"
    project = compose_project(trial_name) if settings.env_mode == "docker" else None
    try:
        async with tracked(project):
            trial_dir, result, distractors = await _run(runner, spec, skill, trial_name)
    except (StagingError, ImageError, EnvironmentModeError) as refused:
        raise TrialError(str(refused)) from None
    base.update(trial_dir=str(trial_dir), distractors=distractors)
    timing = result.agent_execution
    if timing is not None and timing.started_at and timing.finished_at:
        base["agent_seconds"] = round((timing.finished_at - timing.started_at).total_seconds(), 3)
    if result.agent_result is not None and result.agent_result.cost_usd is not None:
        base["cost_usd"] = result.agent_result.cost_usd
    exception = result.exception_info
    error = f"{exception.exception_type}: {exception.exception_message}" if exception else None
    try:
        verdict = TriggerVerdict.model_validate_json(
            safe_io.read_text(trial_dir / "verifier", TRIGGER_FILE, max_bytes=4 * 1024 * 1024)
        )
    except (OSError, ValueError, safe_io.UnsafePathError, safe_io.FileTooLargeError):
        return TriggerRecord(
            **base,
            status="error",
            error=f"{error or 'no trigger verdict written'} ({trial_logs(trial_dir, settings.harbor_keep_jobs)})",
        )
    return TriggerRecord(
        **base,
        status="scored" if verdict.triggered is not None else "unscored",
        triggered=verdict.triggered,
        distractors_loaded=verdict.distractors_loaded,
        reason=verdict.reason,
        error=error,
    )


async def _run(
    runner: SkillEvalRunner, spec: TrialSpec, skill: SkillFolder, trial_name: str
) -> tuple[Path, Any, list[str]]:
    from harbor.models.trial.config import TaskConfig, TrialConfig, VerifierConfig

    environment = await runner.task_environment_async(skill)  # a docker build, once: not in the start gate
    async with runner.start_gate.entered() as leave_gate:  # harbor/start_gate.py, as a case's trial
        settings = skill.settings
        work = runner.run_dir / spec.skill_name / "_triggers" / spec.case_id / f"{spec.label.replace('/', '_')}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        inputs = stage_inputs(spec, work / "input")
        staging = runner.run_dir / "_skills"
        distractors = [
            stage_skill(path, staging / "_distractors", strict=False) for path in distractor_dirs(skill, settings)
        ]
        staged = stage_skill(spec.skill_dir, staging, exclude=run_output(skill))
        entry = entry_document(spec, "default", False, "isolated", [path.name for path in distractors])
        task_dir = stage_dataset_task(spec, work / "task", "default", None, environment, inputs, entry)
        names = [path.name for path in distractors]
        config = TrialConfig(
            task=TaskConfig(path=task_dir),
            trial_name=trial_name,
            trials_dir=work / "trials",
            agent=_agent_config(spec, settings, [staged, *distractors]),
            environment=environment_config(
                settings, runtime_env_values(settings.runtime_env, settings.pass_env, os.environ)
            ),
            verifier=VerifierConfig(
                import_path=TRIGGER_VERIFIER_IMPORT_PATH, kwargs={"skill": spec.skill_dir.name, "distractors": names}
            ),
            timeout_multiplier=settings.timeout_multiplier,
        )
        result = await run_trial(config, inputs, started=leave_gate)
        scrub_agent_kwarg_secrets(work / "trials" / trial_name, config.agent.kwargs)
        return work / "trials" / trial_name, result, names
