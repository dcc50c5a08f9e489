"""Running one item's Harbor trial through Harbor's Python API and reading back a `TrialRecord`.

`SkillEvalRunner` is what the session fixture `skilleval_runner` returns; a conftest can override that fixture with
anything that has the same `run(spec) -> TrialRecord` method.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import threading
import uuid
import warnings
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_skilleval.harbor.agent_model_env import claude_code_model_env
from pytest_skilleval.harbor.case_checks import BEFORE_NAME, take_snapshot
from pytest_skilleval.harbor.compat import create_trial
from pytest_skilleval.harbor.credentials import agent_env, runtime_env_values
from pytest_skilleval.harbor.docker_cleanup import compose_project, tracked
from pytest_skilleval.harbor.environments import (
    EnvironmentModeError,
    resolve_mode,
    trial_environment_config,
)
from pytest_skilleval.harbor.images import ImageError, ensure_image, image_plan
from pytest_skilleval.harbor.native_staging import native_environment, stage_native
from pytest_skilleval.harbor.nv_route import nv_route, nvidia_base_url, route_kind
from pytest_skilleval.harbor.preflight import pinned_version
from pytest_skilleval.harbor.pricing import priced
from pytest_skilleval.harbor.process_env import forget_logger, quiet_harbor_deprecations
from pytest_skilleval.harbor.staged_tasks import StagedTasks
from pytest_skilleval.harbor.staging import (
    ARM_SLUG,
    SKILLED_ARMS,
    StagingError,
    case_entry,
    entry_document,
    stage_dataset_task,
    stage_inputs,
    stage_skill,
    stage_trial_tests,
    workspace_skill_dirs,
)
from pytest_skilleval.harbor.start_gate import StartGate
from pytest_skilleval.harbor.task_environment import TaskEnvironment
from pytest_skilleval.harbor.verifier_adapter import IMPORT_PATH as HOST_VERIFIER_IMPORT_PATH
from pytest_skilleval.harbor.verifier_adapter import NATIVE_IMPORT_PATH as NATIVE_VERIFIER_IMPORT_PATH
from pytest_skilleval.results.records import TokenUsage, TrialRecord, record_from_reward, trial_logs
from pytest_skilleval.skill.baseline import BaselineError, export_baseline
from pytest_skilleval.skill.folder import SkillFolder
from pytest_skilleval.skill.kwarg_values import kwarg_leaves
from pytest_skilleval.skill.plan import TrialSpec, baseline_version
from pytest_skilleval.skill.settings import RunSettings
from pytest_skilleval.skill.skill_copy import run_output
from verifier import safe_io
from verifier.checks.skill_execution import should_trigger
from verifier.reward import own_test_reward, read_rich_reward, take_written

REPLAY_AGENT_IMPORT_PATH = "pytest_skilleval.harbor.replay_agent:ReplayAgent"
INPUT_DIR = "/workspace/input"


class TrialError(Exception):
    """The trial could not produce a score: Harbor, the agent or the grader failed. Reported as an ERROR."""


def agent_config(
    spec: TrialSpec,
    settings: RunSettings,
    staged_skill: Path | None,
    workspace_skills: Sequence[Path] = (),
    bridge_url: str | None = None,
) -> Any:
    """Harbor's AgentConfig for one trial: the skill only in the with-skill arm, the model from --agent-model, the
    constructor settings from --agent-kwarg (the endpoint and key stay in the host's provider variables; on the
    NVIDIA single-key route, NVIDIA Build's or the bridge's at `bridge_url`)."""
    from harbor.models.trial.config import AgentConfig

    skills: list[str | Path] = [str(staged_skill)] if spec.arm in SKILLED_ARMS and staged_skill is not None else []
    skills += [str(path) for path in workspace_skills]
    agent, model = settings.variant(spec.agent)[1:]
    kwargs: dict[str, Any] = dict(settings.agent_kwargs.get(agent, {}))
    if agent == "replay":
        kwargs.update(replay_dir=str(spec.skill_dir / "evals" / "replays"), case_id=spec.case_id, arm=spec.arm)
        return AgentConfig(import_path=REPLAY_AGENT_IMPORT_PATH, model_name=model, kwargs=kwargs, skills=skills)
    if ":" in agent:
        return AgentConfig(import_path=agent, model_name=model, kwargs=kwargs, skills=skills)
    # The agent's own provider credential from the host, as a template Harbor resolves (never written out).
    env = agent_env(agent, model, os.environ)
    route = nv_route(agent, model, settings.env_mode, os.environ, bridge_url)
    if route is not None:  # one NVIDIA_API_KEY: NVIDIA Build itself (opencode) or the bridge (codex, claude-code)
        model, env = route.harbor_model, dict(route.env)
        kwargs = {**route.kwargs, **kwargs}
    if agent == "claude-code":  # the model it asks for, the same on Harbor 0.24 and 0.25 (the bridge's too)
        env.update(claude_code_model_env(model, {**os.environ, **env}))
    kwargs = comparable_agent_kwargs(agent, kwargs, pin=settings.local_sandbox is None)
    if agent == "opencode":  # Harbor's own would `npm i -g opencode-ai@latest` even when the CLI is there
        from pytest_skilleval.harbor.preinstalled import IMPORT_PATH_OPENCODE

        # Its start fetches models.dev's catalog (seconds, offline); the catalog it ships names the models.
        env.setdefault("OPENCODE_DISABLE_MODELS_FETCH", "1")
        return AgentConfig(import_path=IMPORT_PATH_OPENCODE, model_name=model, kwargs=kwargs, skills=skills, env=env)
    return AgentConfig(name=agent, model_name=model, kwargs=kwargs, skills=skills, env=env)


def comparable_agent_kwargs(agent: str, kwargs: dict[str, Any], *, pin: bool = True) -> dict[str, Any]:
    """What keeps runs comparable across Harbor and CLI releases, unless the operator set it: the pinned CLI version
    (`pin`: where Harbor installs the CLI it installs that one, never the latest; the `local` environment uses the
    CLIs under `--ek tools`, which preflight checks are not older) and codex's reasoning effort `high`."""
    chosen = dict(kwargs)
    version = pinned_version(agent)
    if pin and version is not None:
        chosen.setdefault("version", version)
    if agent == "codex":
        chosen.setdefault("reasoning_effort", "high")
    return chosen


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
# In a trial's folder: its own /tests (the task's tests/ with the trial's own entry.json; the checks' runner).
TRIAL_TESTS = "tests"


class SkillEvalRunner:
    """Stages and runs trials under one run directory, one Harbor trial per call."""

    def __init__(self, run_dir: Path, skills: dict[Path, SkillFolder], run_id: str = "run") -> None:
        self.run_dir = run_dir
        self.run_id = run_id
        self._skills = skills
        self._environments: dict[Path, TaskEnvironment | ImageError | EnvironmentModeError] = {}
        self._environments_lock = threading.Lock()
        self.staged = StagedTasks()
        self.start_gate = StartGate()
        self._case_tasks: dict[tuple[str, ...], tuple[Path, Path | None]] = {}
        self._case_tasks_lock = threading.Lock()

    def _skill(self, spec: TrialSpec) -> SkillFolder:
        return self._skills[spec.skill_dir]

    def skill_of(self, spec: TrialSpec) -> SkillFolder:
        """The skill a trial belongs to, as the session read it."""
        return self._skill(spec)

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
                    image = ensure_image(
                        plan,
                        self.run_id,
                        rebuild=settings.base_image_mode == "rebuild",
                        run_only=settings.base_image_mode == "disabled",
                    )
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

    def _staged_skill(self, spec: TrialSpec, skill: SkillFolder) -> Path | None:
        """The skill the arm's agent is given: the version under test, the baseline version (exported from git
        once per process, staged under its own folder so nothing of the version under test reaches it), or none."""
        if spec.arm == "with_skill":
            return self._stage_skill(spec.skill_dir, self.run_dir / "_skills", exclude=run_output(skill))
        if spec.arm != "baseline_skill":
            return None
        try:
            version = baseline_version(skill)
            if version is None:
                raise BaselineError("the baseline_skill arm runs only with --baseline-skill")
            folder = skill.once("baseline_export", lambda: export_baseline(version, skill.path))
        except BaselineError as error:
            raise TrialError(str(error)) from None
        return self._stage_skill(folder, self.run_dir / "_baseline_skills", name=skill.path.name)

    def _stage_skill(
        self, skill_dir: Path, staging_root: Path, name: str | None = None, exclude: tuple[Path, ...] = ()
    ) -> Path:
        staged = stage_skill(skill_dir, staging_root, name, exclude)
        self.staged.add_skill(staged)
        return staged

    def _case_task(
        self,
        spec: TrialSpec,
        skill: SkillFolder,
        mode: str,
        environment: TaskEnvironment,
        entry: dict[str, Any],
        separate_verifier: bool,
    ) -> tuple[Path, Path | None]:
        """The Harbor task (and the inputs) of the trial's case and arm: staged by the first trial that needs it and
        shared by every trial whose task would be the same (its agents and attempts), so Harbor builds and hashes it
        once (`StagedTasks`). Never changed once staged: a trial's own entry.json lives in the trial's folder."""
        shared = case_entry(entry)
        key = (
            str(spec.skill_dir),
            spec.case_id,
            spec.arm,
            mode,
            str(skill.grader),
            str(separate_verifier),
            json.dumps([shared, spec.files], sort_keys=True, default=str),
        )
        with self._case_tasks_lock:
            found = self._case_tasks.get(key)
            if found is None:
                folder = self.run_dir / "_tasks" / spec.skill_name / spec.case_id / str(len(self._case_tasks))
                shutil.rmtree(folder, ignore_errors=True)
                inputs = stage_inputs(spec, folder / "input")
                task_dir = stage_dataset_task(
                    spec,
                    folder / "task",
                    mode,
                    skill.grader,
                    environment,
                    inputs,
                    shared,
                    separate_verifier=separate_verifier,
                )
                found = self._case_tasks[key] = (task_dir, inputs)
                self.staged.add_folder(task_dir)
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
        trial_name = f"{_trial_prefix(spec)}{uuid.uuid4().hex[:6]}"
        project = compose_project(trial_name) if settings.env_mode == "docker" else None
        try:
            async with tracked(project):
                trial_dir, result = await self._run_trial(spec, skill, mode, trial_name, source_trial)
        except (StagingError, ImageError, EnvironmentModeError) as error:
            raise TrialError(str(error)) from None
        return self._record(base, spec, settings, trial_dir, result)

    def agent_only(self, spec: TrialSpec) -> str | None:
        """One real trial with grading disabled (the runtime preflight): the agent's own error, or None."""
        skill = self._skill(spec)
        trial_name = f"{_trial_prefix(spec)}{uuid.uuid4().hex[:6]}"
        with warnings.catch_warnings():
            quiet_harbor_deprecations()
            try:
                _, result = asyncio.run(
                    self._run_trial(spec, skill, skill.settings.grading_mode, trial_name, agent_only=True)
                )
            except (StagingError, ImageError, EnvironmentModeError) as error:
                return str(error)
        exception = result.exception_info
        return f"{exception.exception_type}: {exception.exception_message}" if exception else None

    async def _run_trial(
        self,
        spec: TrialSpec,
        skill: SkillFolder,
        mode: str,
        trial_name: str,
        source_trial: Path | None = None,
        *,
        agent_only: bool = False,
    ) -> tuple[Path, Any]:
        """One trial staged and run. The start gate (harbor/start_gate.py) holds it from staging until its trial is
        created, or until its sandbox has started when that start is this host's work (`run_trial`)."""
        from harbor.models.task.config import ArtifactConfig
        from harbor.models.trial.config import SourceTrialConfig, TaskConfig, TrialConfig, VerifierConfig

        environment = await self.task_environment_async(skill)  # a docker build, once: not in the start gate
        async with self.start_gate.entered() as leave_gate:
            settings = skill.settings
            work = self.run_dir / spec.skill_name / spec.case_id / _slug(spec)
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            workspace = [self._stage_skill(path, self.run_dir / "_skills") for path in workspace_skill_dirs(skill)]
            entry = entry_document(
                spec, mode, skill.grader is not None, settings.skill_workspace_mode, [path.name for path in workspace]
            )
            trial_tests: Path | None = None
            if spec.source == "native":
                inputs = stage_inputs(spec, work / "input")
                task_dir, grader = stage_native(spec, work / "task", mode, skill.grader)
                native_environment(task_dir, environment, settings)
            else:
                task_dir, inputs = self._case_task(spec, skill, mode, environment, entry, source_trial is not None)
                trial_tests = stage_trial_tests(task_dir / "tests", work / TRIAL_TESTS, entry)
                grader = skill.grader
            staged_skill = self._staged_skill(spec, skill)
            bridge_url = await self._bridge_url(spec, settings)
            if agent_only:
                verifier = VerifierConfig(disable=True)
            elif mode == "custom_only" and grader is None:
                # A native task's own tests/test.sh, under Harbor's reward contract, once the agent phase is over.
                verifier = VerifierConfig(import_path=NATIVE_VERIFIER_IMPORT_PATH)
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
                        "workspace_before": str(work / BEFORE_NAME),
                        "trial_tests": str(trial_tests) if trial_tests is not None else None,
                    },
                )
            allowance = settings.pass_env
            config = TrialConfig(
                task=TaskConfig(path=task_dir),
                trial_name=trial_name,
                trials_dir=work / "trials",
                agent=agent_config(spec, settings, staged_skill, workspace, bridge_url),
                environment=environment_config(
                    settings, runtime_env_values(settings.runtime_env, allowance, os.environ)
                ),
                verifier=verifier,
                timeout_multiplier=settings.timeout_multiplier,
                # Kept runs record the agent's final /workspace, so --regrade can run a changed grader on it later.
                artifacts=[ArtifactConfig(source=WORKSPACE_ARTIFACT)]
                if settings.harbor_keep_jobs or source_trial
                else [],
                source_trial=(
                    SourceTrialConfig(action="regrade", type="local", path=source_trial)
                    if source_trial is not None
                    else None
                ),
            )

            async def snapshot_workspace(trial: Any) -> None:
                # The workspace as the agent finds it (inputs staged): the "before" of the trial's workspace diff.
                snapshot = await take_snapshot(trial.agent_environment)
                if snapshot is not None:
                    safe_io.write_text(work, BEFORE_NAME, snapshot.model_dump_json())

            result = await run_trial(
                config,
                inputs,
                at_agent_start=snapshot_workspace if source_trial is None else None,
                staged=self.staged,
                started=leave_gate,
            )
            scrub_agent_kwarg_secrets(work / "trials" / trial_name, config.agent.kwargs)
            return work / "trials" / trial_name, result

    async def _bridge_url(self, spec: TrialSpec, settings: RunSettings) -> str | None:
        """Where the trial's agent reaches the NVIDIA bridge (started on first use), or None when it does not."""
        from pytest_skilleval.harbor.nv_bridge import BridgeError, bridge_host, shared_bridge

        if route_kind(settings.variant(spec.agent).agent, settings.env_mode, os.environ) != "bridge":
            return None
        try:
            host = bridge_host(settings.env_mode)
            bridge = await asyncio.to_thread(shared_bridge, self.run_dir, nvidia_base_url(os.environ), host)
        except BridgeError as error:
            raise TrialError(str(error)) from None
        return bridge.url

    def _record(
        self, base: dict[str, Any], spec: TrialSpec, settings: RunSettings, trial_dir: Path, result: Any
    ) -> TrialRecord:
        # What the host verifier wrote, as it handed it over in this process (else read from the trial folder).
        written = take_written(trial_dir / "verifier")
        reward = read_rich_reward(trial_dir / "verifier", written)
        exception = result.exception_info
        if reward is None and result.verifier_result is not None:
            reward = own_test_reward(trial_dir / "verifier")
        base.update(
            trial_dir=str(trial_dir),
            tokens=priced(_tokens(result.agent_result), settings.variant(spec.agent).model, settings.model_prices),
            agent_seconds=_seconds(result.agent_execution),
        )
        if reward is None:
            what = f"{exception.exception_type}: {exception.exception_message}" if exception else "no reward written"
            logs = trial_logs(trial_dir, settings.harbor_keep_jobs)
            return TrialRecord(**base, status="error", error=f"{what} ({logs})")
        error = f"{exception.exception_type}: {exception.exception_message}" if exception else None
        record = record_from_reward(
            base, reward, settings.pass_threshold, error, trial_dir, logs_kept=settings.harbor_keep_jobs
        )
        if written is not None:
            record.keep_written({f"verifier/{name}": file for name, file in written.items()})
        return record


async def run_trial(
    config: Any,
    inputs: Path | None,
    at_agent_start: Callable[[Any], Awaitable[None]] | None = None,
    staged: StagedTasks | None = None,
    started: Callable[[], None] | None = None,
) -> Any:
    """One Harbor trial from its config: the case's inputs uploaded when the agent starts (then `at_agent_start`,
    given the trial), the replay agent's own record restored before verification, Harbor's per-trial logger
    released after. With `staged`, what Harbor builds from a staged task folder is built once per folder.
    `started` (the start gate's release) is called once the trial is created, or, when its sandbox's start is this
    host's work, by the sandbox once that start is over."""
    from harbor.trial.hooks import TrialEvent
    from harbor.trial.trial import Trial

    trial = await (create_trial(config, staged) if staged is not None else Trial.create(config))
    if started is not None:
        hand_over = getattr(trial.agent_environment, "release_after_start", None)
        if not (callable(hand_over) and hand_over(started)):
            started()

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
    if at_agent_start is not None:
        hook = at_agent_start

        async def agent_start(_event: Any) -> None:
            await hook(trial)

        trial.add_hook(TrialEvent.AGENT_START, agent_start)
    try:
        return await trial.run()
    finally:
        # Harbor's per-trial logger (and its agent's, environment's and verifier's) would live as long as the
        # process, for every trial. Only a logger named after this trial goes, never a shared one.
        if trial.logger.name.endswith(f".{config.trial_name}"):
            forget_logger(trial.logger.name)


def scrub_agent_kwarg_secrets(trial_dir: Path, kwargs: dict[str, Any]) -> None:
    """Harbor writes the agent's kwargs into the trial's config.json and result.json, and scrubs only secrets it
    knows from the environment; a credential passed with --agent-kwarg is scrubbed here, from every file, streamed.
    Runs only when a kwarg is a secret (a credential name or a token shape; a path like `replay_dir` is not)."""
    from verifier.redact import kwarg_secrets
    from verifier.redact_files import scrub_tree

    secrets = kwarg_secrets(dict(kwarg_leaves(kwargs)))
    if secrets:
        scrub_tree(trial_dir, secrets)


def _slug(spec: TrialSpec) -> str:
    return f"{spec.agent_slug}-{ARM_SLUG[spec.arm]}-{spec.attempt}"


def _trial_prefix(spec: TrialSpec) -> str:
    return f"skilleval-{spec.case_id[:40]}__{_slug(spec)[:40]}__"


# The runner's scratch folder: `tmp_path_factory.mktemp("skilleval")` (plugin.py).
_SCRATCH_NAME = re.compile(r"skilleval\d+")


def own_trial_dir(path: Path, spec: TrialSpec) -> bool:
    """Whether `path` has the shape of a Harbor trial folder this runner made for `spec`:
    `<basetemp>/skilleval<N>/<skill>/<case>/<slug>/trials/skilleval-<case>__<slug>__<6 hex>`, absolute, reached
    through no link. A path that does not is never used, whatever record names it."""
    name = path.name
    prefix = _trial_prefix(spec)
    parents = path.parents
    return (
        path.is_absolute()
        and len(parents) > 6
        and name.startswith(prefix)
        and re.fullmatch(r"[0-9a-f]{6}", name[len(prefix) :]) is not None
        and [parents[i].name for i in range(4)] == ["trials", _slug(spec), spec.case_id, spec.skill_name]
        and _SCRATCH_NAME.fullmatch(parents[4].name) is not None
        and os.path.realpath(path) == str(path)
    )
