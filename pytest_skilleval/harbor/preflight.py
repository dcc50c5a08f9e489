"""Checks that run before any image build or trial: one line per problem, in seconds.

The session runs them at start and stops on the first report; `skilleval doctor` prints the same checks with a
pass/fail line each. Nothing here starts a container or calls a model.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilleval.harbor.credentials import credential_names, needs_credential
from pytest_skilleval.harbor.environments import EnvironmentMode, EnvironmentModeError, kwarg_problems, resolve_mode
from pytest_skilleval.harbor.images import (
    CUSTOM_DOCKERFILE,
    DEFAULT_BASE_IMAGE,
    custom_dockerfile_problems,
    image_exists,
    image_plan,
)
from pytest_skilleval.harbor.nv_route import NVIDIA_KEY_VAR, route_kind
from pytest_skilleval.skill.settings import AGENT_ALIASES, RunSettings

DOCKER_HOW = "start the daemon (e.g. `dockerd &` or `systemctl start docker`) or point DOCKER_HOST at one"


@dataclass(frozen=True)
class Check:
    """One preflight check's outcome; `problem` is None when it passed."""

    name: str
    problem: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.problem is None

    def line(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'}  {self.name}" + (
            f": {self.problem}" if self.problem else (f" ({self.detail})" if self.detail else "")
        )


def _run(argv: list[str], timeout: float = 15) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def docker_checks(base_image: str | None = None) -> list[Check]:
    """The docker CLI, a daemon that answers, the Compose v2 plugin Harbor drives, and a local --base-image."""
    docker = shutil.which("docker")
    if docker is None:
        return [Check("docker", "the docker CLI is not on PATH; install Docker (Debian: apt-get install docker.io)")]
    info = _run([docker, "info", "--format", "{{.ServerVersion}}"])
    if info is None or info.returncode != 0:
        said = (info.stderr.strip().splitlines() or [""])[-1] if info is not None else "no answer within 15 s"
        host = os.environ.get("DOCKER_HOST", "the default socket")
        return [Check("docker daemon", f"unreachable at {host} ({said}); {DOCKER_HOW}")]
    checks = [Check("docker daemon", detail=f"server {info.stdout.strip()}")]
    compose = _run([docker, "compose", "version", "--short"])
    if compose is None or compose.returncode != 0:
        checks.append(Check("docker compose", "the Compose v2 plugin (`docker compose`) is missing; Harbor needs it"))
    else:
        checks.append(Check("docker compose", detail=compose.stdout.strip()))
    if base_image:
        found = _run([docker, "image", "inspect", base_image])
        if found is None or found.returncode != 0:
            checks.append(
                Check(
                    "base image",
                    f"--base-image {base_image} is not in the local image store "
                    f"(docker pull {base_image}, or build it, first)",
                )
            )
        else:
            checks.append(Check("base image", detail=base_image))
    return checks


def default_base_checks(settings: RunSettings, skill_dirs: Iterable[Path] | None) -> list[Check]:
    """Under Docker without --base-image, the default base image is local or the registry has it, unless every
    skill brings its own Dockerfile or its image is already built (an offline machine otherwise fails mid-run).
    `skill_dirs=None` (doctor: no skill at hand) checks the base image regardless."""
    docker = shutil.which("docker")
    try:
        is_docker = resolve_mode(settings.env_mode).is_docker
    except EnvironmentModeError:
        return []
    if settings.base_image or docker is None or not is_docker:
        return []
    if skill_dirs is not None and not [
        skill
        for skill in skill_dirs
        if not (skill / "evals" / CUSTOM_DOCKERFILE).is_file() and not image_exists(image_plan(skill, None).tag, docker)
    ]:
        return []
    if image_exists(DEFAULT_BASE_IMAGE, docker):
        return [Check("default base image", detail=f"{DEFAULT_BASE_IMAGE} (local)")]
    remote = _run([docker, "manifest", "inspect", DEFAULT_BASE_IMAGE], timeout=20)
    if remote is not None and remote.returncode == 0:
        return [Check("default base image", detail=f"{DEFAULT_BASE_IMAGE} (pullable)")]
    said = (remote.stderr.strip().splitlines() or ["no answer"])[-1] if remote is not None else "no answer within 20 s"
    return [
        Check(
            "default base image",
            f"{DEFAULT_BASE_IMAGE} is not in the local image store and the registry did not answer ({said[:200]}); "
            f"`docker pull {DEFAULT_BASE_IMAGE}` where a registry is reachable, or pass --base-image IMAGE "
            "(an image already in the local store)",
        )
    ]


def environment_checks(settings: RunSettings) -> list[Check]:
    """The mode exists and can take our task bundle, its --ek keys are known, its backend is reachable."""
    try:
        mode = resolve_mode(settings.env_mode)
    except EnvironmentModeError as error:
        return [Check("environment", str(error))]
    checks = [Check("environment kwargs", line) for line in kwarg_problems(mode, settings.env_kwargs)]
    if mode.is_docker:
        checks += docker_checks(settings.base_image)
    elif not mode.is_local:
        checks += _backend_preflight(mode)
    return checks or [Check("environment", detail=mode.name)]


def _backend_preflight(mode: EnvironmentMode) -> list[Check]:
    """A backend's Harbor extra is installed (its SDK), and Harbor's own preflight for it passes (its credentials,
    its CLI): each a line of its own, so a fresh machine learns both at once."""
    from pytest_skilleval.harbor.environments import missing_extra

    extra = missing_extra(mode)
    checks = [Check(f"environment {mode.name} extra", extra)] if extra is not None else []
    return checks + [_harbor_preflight(mode)]


def _harbor_preflight(mode: EnvironmentMode) -> Check:
    from pytest_skilleval.harbor.environments import environment_class

    try:
        environment_class(mode).preflight()
    except SystemExit as error:
        return Check(f"environment {mode.name}", str(error.code))
    except Exception as error:  # noqa: BLE001 - ImportError for a missing extra, or the backend's own complaint
        return Check(f"environment {mode.name}", str(error).splitlines()[0])
    return Check(f"environment {mode.name}", detail="Harbor preflight passed")


def known_agent_names() -> list[str]:
    """Every name `--agents` takes, sorted: Harbor's agents, ours (`replay`) and the aliases."""
    from harbor.models.agent.name import AgentName

    return sorted({str(name.value) for name in AgentName} | {"replay"} | set(AGENT_ALIASES))


def unknown_agent_problem(agent: str) -> str | None:
    """One line for an agent name nobody knows: the nearest names first, then every name in order."""
    import difflib

    names = known_agent_names()
    if agent in names:
        return None
    near = difflib.get_close_matches(agent, names, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(near)}? " if near else ""
    return f"unknown agent {agent!r}: {hint}known agents: {', '.join(names)} (or a module:Class import path)"


# The npm CLI each Harbor agent drives, and the pinned package that provides it (docs/agents.md).
AGENT_CLIS = {
    "codex": ("codex", "@openai/codex@0.171.0"),
    "claude-code": ("claude", "@anthropic-ai/claude-code@2.1.332"),
    "opencode": ("opencode", "opencode-ai@1.18.33"),
}


def pinned_version(agent: str) -> str | None:
    """The CLI version runs of `agent` use (Harbor installs it, or `--ek tools` must hold at least it)."""
    found = AGENT_CLIS.get(agent)
    return found[1].rsplit("@", 1)[1] if found else None


def _version_tuple(text: str) -> tuple[int, ...] | None:
    parts = text.strip().split("-", 1)[0].split(".")
    return tuple(int(part) for part in parts) if all(part.isdigit() for part in parts) else None


def tools_cli_version(tools: Path, package: str) -> str | None:
    """The version npm recorded for `package` under `--ek tools=DIR` (its package.json), read, never run."""
    import json

    manifest = tools / "node_modules" / package / "package.json"
    try:
        if manifest.is_symlink() or manifest.stat().st_size > 1_000_000:
            return None
        version = json.loads(manifest.read_text()).get("version")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None


def too_old_problem(agent: str, tools: Path) -> str | None:
    """One line when the CLI under --ek tools is older than the pinned version runs are compared at."""
    command, spec = AGENT_CLIS[agent]
    package, wanted = spec.rsplit("@", 1)
    found = tools_cli_version(tools, package)
    have, need = _version_tuple(found or ""), _version_tuple(wanted)
    if found is None or have is None or need is None or have >= need:
        return None
    return (
        f"--ek tools={tools} has {package} {found}, older than the pinned {wanted} that runs are compared at; "
        f"run `npm install --prefix {tools} {spec}`"
    )


# Where the local sandbox finds programs besides `--ek tools=DIR`: the host's system folders, shown read-only.
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"


def local_cli_checks(settings: RunSettings) -> list[Check]:
    """Under the `local` environment an agent's CLI must already be there (the sandbox cannot apt-get or npm
    install it); say which is missing and how to provide it, instead of the install script's raw failure."""
    if settings.local_sandbox is None:
        return []
    tools = settings.env_kwargs.get("tools")
    checks = []
    for agent in settings.agents:
        if agent not in AGENT_CLIS:
            continue
        command, package = AGENT_CLIS[agent]
        folders = [Path(tools) / "node_modules" / ".bin", Path(tools) / "bin"] if tools else []
        if any((folder / command).is_file() for folder in folders) or shutil.which(command, path=SANDBOX_PATH):
            old = too_old_problem(agent, Path(tools)) if tools else None
            checks.append(Check(f"agent {agent} CLI", old, detail=command))
            continue
        where = f"--ek tools={tools} has no {command}" if tools else f"no {command} CLI is available"
        checks.append(
            Check(
                f"agent {agent} CLI",
                f"{where}: the local sandbox cannot install it; run `npm install --prefix DIR {package}` once and "
                "pass --ek tools=DIR (see docs/agents.md)",
            )
        )
    return checks


def agent_checks(settings: RunSettings, environ: Mapping[str, str]) -> list[Check]:
    """Each agent's own provider credential is set on the host (never from the skill)."""
    checks = []
    for name, agent, model in settings.variants:
        if not needs_credential(agent):
            checks.append(Check(f"agent {name}", detail="needs no credential"))
            continue
        kind = route_kind(agent, settings.env_mode, environ)
        if kind is not None:  # the NVIDIA single-key route: NVIDIA_API_KEY, whatever the agent's own key is
            via = "NVIDIA Build" if kind == "direct" else "the NVIDIA bridge"
            if environ.get(NVIDIA_KEY_VAR, "").strip():
                checks.append(Check(f"agent {name}", detail=f"{NVIDIA_KEY_VAR} set ({via})"))
            else:
                checks.append(Check(f"agent {name}", f"no credential: set {NVIDIA_KEY_VAR} in the environment ({via})"))
            continue
        try:
            keys, _ = credential_names(agent, model)
        except ValueError as error:
            checks.append(Check(f"agent {name}", unknown_agent_problem(agent) or str(error).splitlines()[0]))
            continue
        if keys and not any(environ.get(key, "").strip() for key in keys):
            also = f" (or {', '.join(keys[1:])})" if keys[1:] else ""
            checks.append(Check(f"agent {name}", f"no credential: set {keys[0]}{also} in the environment"))
        else:
            checks.append(Check(f"agent {name}", detail="credential set" if keys else "needs no credential"))
    return checks


# Harbor's host-side agents whose constructor raises ValueError without a model (Harbor 0.24 and 0.25): without this
# check every trial of the run is an ERROR with a long traceback ending "model_name is required for Terminus 2".
MODEL_REQUIRED = frozenset({"terminus-2", "computer-1"})


def model_checks(settings: RunSettings, config: Path | None = None) -> list[Check]:
    """An agent that cannot start without a model has one (from --agent-model, or `config`, the skill's
    evals/config.yml, whose harbor.agents.<agent>.model the skill's settings already hold)."""
    where = f" or set harbor.agents.{{agent}}.model in {config}" if config is not None else ""
    return [
        Check(
            f"agent {variant.name}",
            f"{variant.agent} needs a model and none is set: pass --agent-model {variant.agent}=PROVIDER/NAME "
            f"(any litellm model name, e.g. {variant.agent}=openai/gpt-5){where.format(agent=variant.agent)}",
        )
        for variant in settings.variants
        if variant.model is None and variant.agent in MODEL_REQUIRED
    ]


def skills_refused(agent: str, arms: Iterable[str]) -> str | None:
    """Why `agent` cannot run the arms that install a skill, or None: Harbor refuses skills to an agent class whose
    `capabilities.skills` is false (its `nop` and `oracle`) at the trial's start, after the run has begun."""
    from pytest_skilleval.harbor.staging import SKILLED_ARMS

    arms = list(arms)
    skilled = [arm for arm in arms if arm in SKILLED_ARMS]
    if not skilled or agent == "replay":
        return None
    from harbor.agents.factory import AgentFactory
    from harbor.models.trial.config import AgentConfig

    try:
        config = AgentConfig(import_path=agent) if ":" in agent else AgentConfig(name=agent)
        capabilities = getattr(AgentFactory.get_agent_class_from_config(config), "capabilities", None)
    except Exception:  # noqa: BLE001 - an unknown or unloadable agent has its own line (agent_checks, the trial)
        return None
    if capabilities is None or getattr(capabilities, "skills", True):
        return None
    others = [arm for arm in arms if arm not in SKILLED_ARMS] or ["without_skill"]
    return (
        f"does not support skills (Harbor's capabilities.skills is false), so its {' and '.join(skilled)} arm "
        f"cannot run; use --arms {','.join(others)}, or an agent that takes skills"
    )


def skill_checks(
    skill_dir: Path, settings: RunSettings, environ: Mapping[str, str], pass_env: Iterable[str] = ()
) -> list[Check]:
    """What a skill's evals/config.yml and evals/environment/ ask for, checked before anything runs."""
    name = skill_dir.name
    checks = model_checks(settings, skill_dir / "evals" / "config.yml")
    for agent in dict.fromkeys(variant.agent for variant in settings.variants):
        refused = skills_refused(agent, settings.arms)
        if refused:
            checks.append(Check(f"agent {agent}", refused))
    if settings.baseline_skill and "baseline_skill" in settings.arms:
        from pytest_skilleval.skill.baseline import BaselineError, resolve_baseline

        try:
            version = resolve_baseline(settings.baseline_skill, skill_dir)
            checks.append(Check(f"{name} baseline skill", detail=version.label))
        except BaselineError as error:
            checks.append(Check(f"{name} baseline skill", str(error)))
    allowed = set(pass_env)
    for var, value in settings.runtime_env.items():
        from pytest_skilleval.skill.config_file import referenced_env_names
        from pytest_skilleval.skill.host_env import is_passable_name, unpassable_reference_message

        for ref in referenced_env_names(value):
            if ref not in allowed:
                where = f"{skill_dir}/evals/config.yml: harbor.runtime_env {var}"
                why = (
                    f"{where} references the host variable {ref}; pass it with --pass-env {ref}"
                    if is_passable_name(ref)
                    else unpassable_reference_message(where, ref)
                )
                checks.append(Check(f"{name} runtime_env", why))
            elif ref not in environ:
                checks.append(
                    Check(
                        f"{name} runtime_env",
                        f"{skill_dir}/evals/config.yml: harbor.runtime_env {var} references {ref}, which is not set",
                    )
                )
    if settings.pre_agent_setup and settings.comparison_arm_runs:
        checks.append(
            Check(
                f"{name} pre_agent_setup",
                f"{skill_dir}/evals/config.yml: harbor.pre_agent_setup runs skill-owned commands before the agent; "
                "a paired run refuses it, and so does --skip-with-skill (the baseline arm never runs them; use "
                "--skip-baseline) and --baseline-skill (the version under test's commands would run in the "
                "baseline_skill arm; use --arms with_skill)",
            )
        )
    custom = skill_dir / "evals" / CUSTOM_DOCKERFILE
    if custom.is_file():
        checks += [
            Check(f"{name} Dockerfile", f"{custom}: {problem}") for problem in custom_dockerfile_problems(custom)
        ]
    for include in settings.skill_workspace_include:
        path = (skill_dir / include).resolve()
        if not (path / "SKILL.md").is_file():
            checks.append(
                Check(
                    f"{name} skill_workspace",
                    f"{skill_dir}/evals/config.yml: skill_workspace.include "
                    f"{include!r} is not a skill folder (no SKILL.md at {path})",
                )
            )
    return checks


@dataclass(frozen=True)
class _Limit:
    """A per-process resource limit that trials in flight use up: what a failure line names and says to raise."""

    name: str  # what is counted, e.g. "open files"
    rlimit: str  # the `resource` constant, e.g. "RLIMIT_NOFILE"
    at_rest: int  # held by the pytest process before any trial
    per_trial: int  # more per trial in flight
    holder: str  # "this process may open"
    ulimit: str  # the shell's `ulimit` flag
    unlimited: str  # the detail when there is no limit to meet
    scope: str = ""  # what else the limit counts

    def check(self, n_concurrent: int, limit: int | None, exempt: bool = False) -> Check:
        """`n_concurrent` trials in flight fit under the limit (its soft value unless `limit` is given; `exempt`: the
        kernel does not hold this process to it); else one line saying which limit, how to raise it and the
        concurrency that fits, before a trial fails mid-run."""
        import resource

        if limit is None:
            limit = resource.getrlimit(getattr(resource, self.rlimit))[0]
        needed = self.at_rest + self.per_trial * n_concurrent
        if exempt or limit == resource.RLIM_INFINITY or limit >= needed:
            allowed = self.unlimited if exempt or limit == resource.RLIM_INFINITY else f"{limit} allowed"
            return Check(self.name, detail=f"{allowed}, about {needed} needed")
        most = max(1, (limit - self.at_rest) // self.per_trial)
        return Check(
            self.name,
            f"--n-concurrent {n_concurrent} needs about {needed} {self.name} and {self.holder} {limit} "
            f"({self.rlimit}, hard limit{self.scope}): raise it (`ulimit {self.ulimit} {needed}` in the shell that "
            f"runs pytest, as root or within /etc/security/limits.conf; Limit{self.rlimit.removeprefix('RLIMIT_')}= "
            f"for a systemd service) or use --n-concurrent {most} or less",
        )


# Open files of the pytest process per trial in flight (its sandbox's socket and pipes, an exec's pipes, Harbor's log
# files): about 4 measured at 40 and 120 in flight (docs/performance.md), with a margin; plus what it holds at rest.
FILES_PER_TRIAL = 6
FILES_AT_REST = 64
_OPEN_FILES = _Limit(
    "open files", "RLIMIT_NOFILE", FILES_AT_REST, FILES_PER_TRIAL, "this process may open", "-n", "no limit"
)


def open_file_checks(settings: RunSettings, limit: int | None = None) -> list[Check]:
    """`--n-concurrent` trials in flight fit under the open-file limit (its soft value, already raised to the hard
    one at start); else one line saying which limit and how to raise it, before a trial fails mid-run with EMFILE."""
    return [_OPEN_FILES.check(settings.n_concurrent, limit)]


# Processes (threads included, as RLIMIT_NPROC counts them) per trial in flight: about 4 measured at 100 and 200 in
# flight (bench_scale.py: 402 and 802 at the peak), with a margin; plus the pytest process's own threads at rest.
PROCESSES_PER_TRIAL = 5
PROCESSES_AT_REST = 64
_PROCESSES = _Limit(
    "processes",
    "RLIMIT_NPROC",
    PROCESSES_AT_REST,
    PROCESSES_PER_TRIAL,
    "this user may run",
    "-u",
    "not limited",
    "; every process of the user counts",
)


def process_checks(settings: RunSettings, limit: int | None = None, exempt: bool | None = None) -> list[Check]:
    """`--n-concurrent` trials in flight fit under this user's process limit (its soft value, already raised to the
    hard one at start; root is not held to it: `exempt`); else one line saying which limit and how to raise it,
    before a sandbox fails to start mid-run. The limit counts every process of the user, this run's and others'."""
    if settings.env_mode != "local":  # the sandboxes run elsewhere: under dockerd, or on a provider's machines
        return []
    return [_PROCESSES.check(settings.n_concurrent, limit, os.geteuid() == 0 if exempt is None else exempt)]


def problems(checks: Iterable[Check]) -> list[str]:
    """`<check>: <problem>` for each failed check (a problem that already names its file stands alone)."""
    return [
        check.problem if check.problem.startswith("/") else f"{check.name}: {check.problem}"
        for check in checks
        if check.problem is not None
    ]


def session_problems(
    settings: RunSettings,
    skills: Mapping[Path, Any],
    environ: Mapping[str, str] | None = None,
    pass_env: Iterable[str] = (),
) -> list[str]:
    """Every problem, one line each: the environment, the agents, then each skill's own settings."""
    environ = os.environ if environ is None else environ
    found = problems(environment_checks(settings)) + problems(agent_checks(settings, environ))
    found += problems(local_cli_checks(settings)) + problems(open_file_checks(settings))
    found += problems(process_checks(settings))
    if not found:  # the base image is asked about only once the daemon answers
        found += problems(default_base_checks(settings, list(skills)))
    for skill_dir, skill_settings in skills.items():
        found += problems(skill_checks(skill_dir, skill_settings, environ, pass_env))
    return list(dict.fromkeys(found))
