"""Running one item's Harbor trial through Harbor's Python API and reading back a `TrialRecord`.

`SkillEvalRunner` is what the session fixture `skilleval_runner` returns; a conftest can override that fixture with
anything that has the same `run(spec) -> TrialRecord` method.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilleval.harbor.credentials import agent_env, runtime_env_values
from pytest_skilleval.harbor.docker_cleanup import compose_project, tracked
from pytest_skilleval.harbor.environments import (
    EnvironmentModeError,
    resolve_mode,
    trial_environment_config,
)
from pytest_skilleval.harbor.images import ImageError, adapt_native_dockerfile, ensure_image, image_plan
from pytest_skilleval.harbor.process_env import forget_logger
from pytest_skilleval.harbor.staging import (
    ARM_SLUG,
    StagingError,
    entry_document,
    stage_dataset_task,
    stage_inputs,
    stage_skill,
)
from pytest_skilleval.harbor.task_environment import TaskEnvironment
from pytest_skilleval.harbor.verifier_adapter import IMPORT_PATH as HOST_VERIFIER_IMPORT_PATH
from pytest_skilleval.harbor.verifier_adapter import RICH_REWARD_NAME
from pytest_skilleval.results.records import TokenUsage, TrialRecord
from pytest_skilleval.skill.folder import SkillFolder
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings, kwarg_leaves
from verifier import safe_io
from verifier.checks.skill_execution import should_trigger
from verifier.scoring import clean_score, passes

REPLAY_AGENT_IMPORT_PATH = "pytest_skilleval.harbor.replay_agent:ReplayAgent"
INPUT_DIR = "/workspace/input"
MAX_RICH_REWARD_BYTES = 64 * 1024 * 1024


class TrialError(Exception):
    """The trial could not produce a score: Harbor, the agent or the grader failed. Reported as an ERROR."""


class TrialFailed(AssertionError):
    """The with-skill score is below the pass threshold."""


def agent_config(
    spec: TrialSpec, settings: RunSettings, staged_skill: Path | None, workspace_skills: Sequence[Path] = ()
) -> Any:
    """Harbor's AgentConfig for one trial: the skill only in the with-skill arm, the model from --agent-model, the
    constructor settings from --agent-kwarg (the endpoint and key stay in the host's provider variables)."""
    from harbor.models.trial.config import AgentConfig

    skills: list[str | Path] = [str(staged_skill)] if spec.arm == "with_skill" and staged_skill is not None else []
    skills += [str(path) for path in workspace_skills]
    model = settings.agent_models.get(spec.agent)
    kwargs: dict[str, Any] = dict(settings.agent_kwargs.get(spec.agent, {}))
    if spec.agent == "replay":
        kwargs.update(replay_dir=str(spec.skill_dir / "evals" / "replays"), case_id=spec.case_id, arm=spec.arm)
        return AgentConfig(import_path=REPLAY_AGENT_IMPORT_PATH, model_name=model, kwargs=kwargs, skills=skills)
    if ":" in spec.agent:
        return AgentConfig(import_path=spec.agent, model_name=model, kwargs=kwargs, skills=skills)
    # The agent's own provider credential from the host, as a template Harbor resolves (never written out).
    env = agent_env(spec.agent, model, os.environ)
    return AgentConfig(name=spec.agent, model_name=model, kwargs=kwargs, skills=skills, env=env)


def environment_config(settings: RunSettings, env: dict[str, str] | None = None) -> Any:
    """Harbor's EnvironmentConfig for the run's --env-mode and --ek (containers are always deleted after a trial)."""
    try:
        mode = resolve_mode(settings.env_mode)
    except EnvironmentModeError as error:
        raise TrialError(str(error)) from None
    return trial_environment_config(mode, settings.env_kwargs, env)


def _seconds(timing: Any) -> float | None:
    if timing is None or timing.started_at is None or timing.finished_at is None:
        return None
    return round((timing.finished_at - timing.started_at).total_seconds(), 3)


def _tokens(agent_result: Any) -> TokenUsage | None:
    if agent_result is None:
        return None
    usage = TokenUsage(
        prompt=agent_result.n_input_tokens,
        completion=agent_result.n_output_tokens,
        cache=agent_result.n_cache_tokens,
        cost_usd=agent_result.cost_usd,
    )
    return None if usage == TokenUsage() else usage


WORKSPACE_ARTIFACT = "/workspace"


class SkillEvalRunner:
    """Stages and runs trials under one run directory, one Harbor trial per call."""

    def __init__(self, run_dir: Path, skills: dict[Path, SkillFolder], run_id: str = "run") -> None:
        self.run_dir = run_dir
        self.run_id = run_id
        self._skills = skills
        self._environments: dict[Path, TaskEnvironment | ImageError | EnvironmentModeError] = {}
        self._environments_lock = threading.Lock()

    def _skill(self, spec: TrialSpec) -> SkillFolder:
        return self._skills[spec.skill_dir]

    def task_environment(self, skill: SkillFolder) -> TaskEnvironment:
        """The skill's sandbox recipe; under Docker its image is built here, once per skill and run (trials in
        flight ask from worker threads at once: the lock keeps them from building the same image twice)."""
        with self._environments_lock:
            return self._task_environment(skill)

    async def task_environment_async(self, skill: SkillFolder) -> TaskEnvironment:
        """task_environment for a trial on the loop: once known, at once; else (a Docker build) in a worker thread."""
        found = self._environments.get(skill.path)
        if isinstance(found, TaskEnvironment):
            return found
        return await asyncio.to_thread(self.task_environment, skill)

    def _task_environment(self, skill: SkillFolder) -> TaskEnvironment:
        if skill.path not in self._environments:
            settings = skill.settings
            try:
                plan = image_plan(skill.path, settings.base_image, settings.custom_dockerfile_mode)
                image = None
                if resolve_mode(settings.env_mode).is_docker:
                    image = ensure_image(plan, self.run_id, rebuild=settings.base_image_mode == "rebuild")
            except (ImageError, EnvironmentModeError) as error:
                self._environments[skill.path] = error  # a failed build is not retried by every trial
                raise
            self._environments[skill.path] = TaskEnvironment(
                plan=plan,
                image=image,
                workdir=settings.agent_workdir,
                resources=dict(settings.resources),
                pre_agent_setup=tuple(settings.pre_agent_setup),
            )
        found = self._environments[skill.path]
        if isinstance(found, Exception):
            raise found
        return found

    def run(self, spec: TrialSpec, source_trial: Path | None = None) -> TrialRecord:
        """One trial, start to finish, on its own event loop (the serial path)."""
        with warnings.catch_warnings():
            quiet_harbor_deprecations()
            return asyncio.run(self.run_async(spec, source_trial))

    def regrade(self, spec: TrialSpec, source_trial: Path) -> TrialRecord:
        """Today's task and graders (the custom one included) on a kept trial's recorded workspace and trajectory,
        through Harbor's own regrade (the agent is not run). Serial: regrades run one per item."""
        return self.run(spec, source_trial)

    async def run_async(self, spec: TrialSpec, source_trial: Path | None = None) -> TrialRecord:
        """One trial as a coroutine, so a scheduler can keep several in flight on one event loop."""
        skill = self._skill(spec)
        settings = skill.settings
        mode = settings.grading_mode
        base = dict(**spec.record_fields(), grading_mode=mode, negative_control=should_trigger(spec.entry) is False)
        if mode == "custom_only" and skill.grader is None and spec.source == "dataset":
            raise TrialError(f"{spec.skill_dir}/evals: grading mode custom_only needs evals/grader.py or grader.sh")
        trial_name = f"skilleval-{spec.case_id[:40]}__{_slug(spec)[:40]}__{uuid.uuid4().hex[:6]}"
        project = compose_project(trial_name) if settings.env_mode == "docker" else None
        try:
            async with tracked(project):
                trial_dir, result = await self._run_trial(spec, skill, mode, trial_name, source_trial)
        except (StagingError, ImageError, EnvironmentModeError) as error:
            raise TrialError(str(error)) from None
        return self._record(base, spec, settings, trial_dir, result)

    async def _run_trial(
        self, spec: TrialSpec, skill: SkillFolder, mode: str, trial_name: str, source_trial: Path | None = None
    ) -> tuple[Path, Any]:
        from harbor.models.task.config import ArtifactConfig
        from harbor.models.trial.config import SourceTrialConfig, TaskConfig, TrialConfig, VerifierConfig
        from harbor.trial.hooks import TrialEvent
        from harbor.trial.trial import Trial

        settings = skill.settings
        work = self.run_dir / spec.skill_name / spec.case_id / _slug(spec)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        inputs = stage_inputs(spec, work / "input")
        workspace = [stage_skill(path, self.run_dir / "_skills") for path in workspace_skill_dirs(skill)]
        entry = entry_document(
            spec, mode, skill.grader is not None, settings.skill_workspace_mode, [path.name for path in workspace]
        )
        if spec.source == "native":
            task_dir, grader = stage_native(spec, work / "task", mode, skill.grader)
            native_environment(task_dir, await self.task_environment_async(skill), settings)
        else:
            environment = await self.task_environment_async(skill)  # a docker build, once
            task_dir = stage_dataset_task(
                spec,
                work / "task",
                mode,
                skill.grader,
                environment,
                inputs,
                entry,
                separate_verifier=source_trial is not None,
            )
            grader = skill.grader
        staged_skill = stage_skill(spec.skill_dir, self.run_dir / "_skills") if spec.arm == "with_skill" else None
        if mode == "custom_only" and grader is None:
            # A native task's own tests/test.sh, under Harbor's reward contract.
            verifier = VerifierConfig()
        else:
            from pytest_skilleval.results.tree import resolve_results_root
            from pytest_skilleval.skill.judging import verifier_judge_kwargs

            root = resolve_results_root(spec.skill_dir, settings.results_dir, os.environ)
            verifier = VerifierConfig(
                import_path=HOST_VERIFIER_IMPORT_PATH,
                kwargs={
                    "grading_mode": mode,
                    "grader": grader.name if grader else None,
                    "judge": verifier_judge_kwargs(settings, root) if mode != "custom_only" else None,
                },
            )
        allowance = settings.pass_env
        config = TrialConfig(
            task=TaskConfig(path=task_dir),
            trial_name=trial_name,
            trials_dir=work / "trials",
            agent=agent_config(spec, settings, staged_skill, workspace),
            environment=environment_config(settings, runtime_env_values(settings.runtime_env, allowance, os.environ)),
            verifier=verifier,
            timeout_multiplier=settings.timeout_multiplier,
            # Kept runs record the agent's final /workspace, so --regrade can run a changed grader on it later.
            artifacts=[ArtifactConfig(source=WORKSPACE_ARTIFACT)] if settings.harbor_keep_jobs or source_trial else [],
            source_trial=(
                SourceTrialConfig(action="regrade", type="local", path=source_trial)
                if source_trial is not None
                else None
            ),
        )
        trial = await Trial.create(config)

        async def keep_agent_record(_event: Any) -> None:
            # The replay agent's own record beats any trajectory.json the sandbox wrote.
            restore = getattr(trial.agent, "restore_record", None)
            if callable(restore):
                restore()

        trial.add_hook(TrialEvent.VERIFICATION_START, keep_agent_record)
        if inputs is not None:

            async def upload_inputs(_event: Any) -> None:
                await trial.agent_environment.upload_dir(inputs, INPUT_DIR)

            trial.add_hook(TrialEvent.AGENT_START, upload_inputs)
        try:
            result = await trial.run()
        finally:
            # Harbor's per-trial logger (and its agent's, environment's and verifier's) would live as long as the
            # process, for every trial. Only a logger named after this trial goes, never a shared one.
            if trial.logger.name.endswith(f".{trial_name}"):
                forget_logger(trial.logger.name)
        scrub_agent_kwarg_secrets(work / "trials" / trial_name, config.agent.kwargs)
        return work / "trials" / trial_name, result

    def _record(
        self, base: dict[str, Any], spec: TrialSpec, settings: RunSettings, trial_dir: Path, result: Any
    ) -> TrialRecord:
        rich = read_rich_reward(trial_dir / "verifier")
        exception = result.exception_info
        if not rich and result.verifier_result is not None:
            rich = own_test_reward(trial_dir / "verifier")
        base.update(
            trial_dir=str(trial_dir),
            tokens=_tokens(result.agent_result),
            agent_seconds=_seconds(result.agent_execution),
        )
        if not rich:
            what = f"{exception.exception_type}: {exception.exception_message}" if exception else "no reward written"
            return TrialRecord(**base, status="error", error=f"{what} (trial logs: {trial_dir})")
        error = f"{exception.exception_type}: {exception.exception_message}" if exception else None
        return record_from_rich(base, rich, settings.pass_threshold, error, trial_dir)


def record_from_rich(
    base: dict[str, Any], rich: dict[str, Any], pass_threshold: float, error: str | None, trial_dir: Path
) -> TrialRecord:
    """A trial's record from its rich reward (the verifier's, or a regrade's)."""
    from pytest_skilleval.skill.judging import judge_failure_reason, judge_failures_of, judge_models_of

    metrics = {name: clean_score(value) for name, value in rich.get("metrics", {}).items()}
    overall = clean_score(rich.get("overall"))
    execution = rich.get("details", {}).get("skill_execution", {})
    activation = execution.get("activation", {}) if isinstance(execution, dict) else {}
    record = TrialRecord(
        **base,
        judge_models=judge_models_of(rich),
        judge_failures=judge_failures_of(rich),
        status="scored" if overall is not None else "unscored",
        overall=overall,
        metrics=metrics,
        custom_metrics=rich.get("custom_metrics", {}),
        details=rich.get("details", {}),
        activation=clean_score(activation.get("score")) if isinstance(activation, dict) else None,
        trajectory_source=rich.get("trajectory_source"),
        passed=passes(overall, pass_threshold),
        error=error,
    )
    if overall is None:
        custom = record.details.get("custom", {}) if isinstance(record.details.get("custom"), dict) else {}
        why = judge_failure_reason(rich) or custom.get("unscored_reason") or "the trial produced no score"
        record.reason = f"{why} (grading mode {base['grading_mode']}; trial logs: {trial_dir})"
    return record


def scrub_agent_kwarg_secrets(trial_dir: Path, kwargs: dict[str, Any]) -> None:
    """Harbor writes the agent's kwargs into the trial's config.json and result.json, and scrubs only secrets it
    knows from the environment; a credential passed with --agent-kwarg is scrubbed here, from every file, streamed.
    Runs only when a kwarg is a secret (a credential name or a token shape; a path like `replay_dir` is not)."""
    from verifier.redact import kwarg_secrets
    from verifier.redact_files import scrub_tree

    secrets = kwarg_secrets(dict(kwarg_leaves(kwargs)))
    if secrets:
        scrub_tree(trial_dir, secrets)


def stage_native(spec: TrialSpec, task_dir: Path, mode: str, skill_grader: Path | None) -> tuple[Path, Path | None]:
    """Copy a native task for one arm (never touching the source) and give it the entry and grader it needs."""
    from pytest_skilleval.harbor.native_staging import stage_native_task
    from pytest_skilleval.skill.native_tasks import NativeTaskError, load_native_task

    assert spec.native_task_dir is not None  # set for every spec whose source is "native"
    try:
        staged = stage_native_task(load_native_task(spec.native_task_dir), task_dir, spec.arm)
    except NativeTaskError as error:
        raise StagingError(str(error)) from None
    tests = staged / "tests"
    tests.mkdir(exist_ok=True)
    grader = next((tests / name for name in ("grader.py", "grader.sh") if (tests / name).is_file()), None)
    if grader is None and skill_grader is not None:
        grader = tests / skill_grader.name
        shutil.copy2(skill_grader, grader)
    entry = entry_document(spec, mode, grader is not None)
    (tests / "entry.json").write_text(json.dumps(entry, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return staged, grader


def read_rich_reward(verifier_dir: Path) -> dict[str, Any]:
    """What the host verifier wrote (never a link, never a file the sandbox left: the adapter removes those)."""
    try:
        data = json.loads(safe_io.read_text(verifier_dir, RICH_REWARD_NAME, max_bytes=MAX_RICH_REWARD_BYTES))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def own_test_reward(verifier_dir: Path) -> dict[str, Any]:
    """Score what a native task's own test.sh wrote, with the same sanitizing as any custom grader (custom_only)."""
    from verifier.custom import read_grader_reward

    sanitized = read_grader_reward(verifier_dir / "reward.json", verifier_dir / "reward.txt", "custom_only")
    if sanitized.errors:
        return {"overall": None, "details": {"custom": {"errors": sanitized.errors}}}
    return {
        "grading_mode": "custom_only",
        "overall": sanitized.overall,
        "custom_metrics": sanitized.custom_metrics,
        "metrics": {},
        "details": {"custom": sanitized.model_dump(mode="json", exclude={"custom_metrics", "overall"})},
    }


def native_environment(task_dir: Path, environment: TaskEnvironment, settings: RunSettings) -> None:
    """A native task's sandbox: its own Dockerfile rebased like a skill's (plus our layers); none at all (no
    Dockerfile, compose file or image) gets the skill's generated one, so it runs under Docker too."""
    env_dir = task_dir / "environment"
    own = [env_dir / name for name in ("Dockerfile", "docker-compose.yaml")]
    if any(path.exists() for path in own) or _native_image(task_dir):
        adapt_native_dockerfile(env_dir, settings.base_image, settings.custom_dockerfile_mode)
    else:
        environment.write(env_dir, None)


def _native_image(task_dir: Path) -> bool:
    import tomllib

    table = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8")).get("environment", {})
    return bool(isinstance(table, dict) and table.get("docker_image"))


def _slug(spec: TrialSpec) -> str:
    return f"{spec.agent.replace(':', '_').replace('/', '_')}-{ARM_SLUG[spec.arm]}-{spec.attempt}"


def workspace_skill_dirs(skill: SkillFolder) -> list[Path]:
    """skill_workspace.include (group mode): other skills installed beside the evaluated one, in both arms.

    A skill that is the evaluated one under another name (same SKILL.md) would leak it into the baseline, so it is
    refused.
    """
    settings = skill.settings
    if settings.skill_workspace_mode != "group":
        return []
    target = (skill.path / "SKILL.md").read_bytes()
    dirs = []
    for include in settings.skill_workspace_include:
        path = (skill.path / include).resolve()
        manifest = path / "SKILL.md"
        if not manifest.is_file():
            raise StagingError(f"{skill.evals_dir}/config.yml: skill_workspace.include {include!r}: no SKILL.md")
        if path == skill.path or path.name == skill.name or manifest.read_bytes() == target:
            raise StagingError(
                f"{skill.evals_dir}/config.yml: skill_workspace.include {include!r} is the "
                "evaluated skill itself; the baseline must not see it"
            )
        dirs.append(path)
    return dirs


@dataclass(frozen=True)
class TrialOutcome:
    """What the `skilleval_trial` fixture hands the call phase."""

    record: TrialRecord
    pass_threshold: float


def judge(outcome: TrialOutcome) -> None:
    """The call phase: with-skill trials must reach the threshold; baseline trials only report their score."""
    record, threshold = outcome.record, outcome.pass_threshold
    if record.arm == "without_skill" or record.passed:
        return
    raise TrialFailed(
        f"{record.case} [{record.agent}-{record.arm}-{record.attempt}]: overall {record.overall:.4f} "
        f"< pass threshold {threshold:.2f}" + _weakest(record)
    )


def _weakest(record: TrialRecord) -> str:
    scored = {k: v for k, v in {**record.metrics, **record.custom_metrics}.items() if v is not None}
    if not scored:
        return ""
    lowest = sorted(scored.items(), key=lambda kv: kv[1])[:2]
    return " (lowest: " + ", ".join(f"{name} {value:.2f}" for name, value in lowest) + ")"


def quiet_harbor_deprecations() -> None:
    """Harbor warns about its own API churn on every trial; that is not the skill author's concern."""
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"harbor\.")
