"""`--agent-runtime-preflight`: one real, agent-only trial per agent before the evaluation, so a route the
credential check could not prove (a gateway, NVIDIA Build, an agent's own login) fails in one trial, not in the
whole matrix.

Each agent runs the first dataset case of the first skill, with the skill installed and grading disabled, in a
throwaway job folder. Its outcome (the agent's own error, redacted and capped) is kept per agent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from pytest_skilleval.harbor.runner import SkillEvalRunner
from pytest_skilleval.skill.dataset import DatasetError, find_dataset
from pytest_skilleval.skill.folder import SkillFolder
from pytest_skilleval.skill.plan import TrialSpec
from verifier.redact import Redactor

ERROR_CAP = 500


class PreflightOutcome(BaseModel):
    """One agent's runtime preflight, as run_config.credential_validation.runtime_preflight keeps it."""

    agent: str
    skill: str
    case: str | None
    status: str  # passed | failed | skipped
    error: str | None = None
    seconds: float | None = None

    def line(self) -> str:
        return f"agent {self.agent} ({self.skill}, case {self.case}): {self.error}"


def preflight_spec(skill: SkillFolder, agent: str) -> TrialSpec | None:
    """The first dataset case of the skill as a with-skill trial of `agent`, or None without a readable dataset."""
    path = find_dataset(skill.evals_dir)
    if path is None:
        return None
    try:
        dataset = skill.load_dataset(path)
    except DatasetError:
        return None
    if not dataset.cases:
        return None
    case = dataset.cases[0]
    return TrialSpec(
        skill_dir=skill.path,
        skill_name=skill.name,
        case_id=case.id,
        source="dataset",
        entry=skill.entries(dataset)[0],
        files=case.files if case.files_given else None,
        agent=agent,
        arm="with_skill",
        attempt=1,
        nodeid=f"runtime-preflight::{agent}",
    )


def _clean(text: str) -> str:
    flat = " ".join(Redactor.from_environment(os.environ).text(text).split())
    return flat if len(flat) <= ERROR_CAP else flat[: ERROR_CAP - 3] + "..."


def run_runtime_preflight(skills: dict[Path, SkillFolder], agents: list[str], run_id: str) -> list[PreflightOutcome]:
    """One agent-only trial per agent, one after another, in a job folder removed afterwards."""
    first = next(iter(sorted(skills.items())), None)
    if first is None:
        return []
    skill = first[1]
    work = Path(tempfile.mkdtemp(prefix="skilleval-runtime-preflight-"))
    try:
        runner = SkillEvalRunner(work, skills, run_id)
        outcomes = []
        for agent in agents:
            spec = preflight_spec(skill, agent)
            if spec is None:
                outcomes.append(
                    PreflightOutcome(
                        agent=agent,
                        skill=skill.name,
                        case=None,
                        status="skipped",
                        error="no dataset case to run (native tasks are not preflighted)",
                    )
                )
                continue
            started = time.monotonic()
            error = runner.agent_only(spec)
            outcomes.append(
                PreflightOutcome(
                    agent=agent,
                    skill=skill.name,
                    case=spec.case_id,
                    status="failed" if error else "passed",
                    error=_clean(error) if error else None,
                    seconds=round(time.monotonic() - started, 3),
                )
            )
        return outcomes
    finally:
        shutil.rmtree(work, ignore_errors=True)
