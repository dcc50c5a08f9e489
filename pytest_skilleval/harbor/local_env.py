"""Harbor ``local`` environment: a trial sandbox made of host folders, no Docker.

Why: skill evals must run on a laptop or CI runner with no container engine and no API
key (the ``replay`` agent plus this environment). Each trial gets its own folder tree
``<trial_dir>/local-sandbox/rootfs/`` whose top-level folders stand for container paths
(``rootfs/workspace`` is ``/workspace``, ``rootfs/logs`` is ``/logs``, ``rootfs/runtime/skills``
is Harbor's skills dir, and so on). Any absolute path Harbor uploads to outside the host's
system folders simply becomes another folder under ``rootfs/``.

Two modes, chosen by the ``sandbox`` kwarg (``--ek sandbox=auto|bwrap|none``):

* ``bwrap``: every ``exec`` runs under bubblewrap with an empty tmpfs root, the host's
  system folders read-only, fresh ``/proc`` and ``/dev``, each ``rootfs/`` folder bound
  read-write at its container path, new PID/IPC/UTS namespaces, the network unshared
  unless the task's network policy is ``public``, and a scrubbed environment. Container
  paths in commands work as they do in Docker.
* ``none``: commands run on the host with ``bash -c``; container paths in the command
  string, the cwd and env values are rewritten into ``rootfs/``. Nothing is isolated, and
  absolute paths hidden inside scripts are not rewritten: graders should use the
  ``HARBOR_*`` variables, which point into the sandbox. A warning is logged once per process.

``auto`` (the default) picks ``bwrap`` when it is on PATH and actually works here.

Task inputs: when the task's ``environment/`` folder holds ``workspace/``, its contents are
copied to ``/workspace`` at start (what ``COPY workspace/ /workspace/`` does in a Dockerfile).

Exec semantics: ``cwd`` defaults to the task's ``workdir`` or ``/workspace``; ``user`` is
ignored (commands run as the invoking host user); a timeout returns exit code 124 with the
output so far; on timeout or cancellation the whole process group is SIGKILLed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import posixpath
import re
import shutil
import signal
import stat
import subprocess
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.task.config import NetworkMode, NetworkPolicy
from harbor.models.trial.paths import EnvironmentPaths

from verifier import safe_io

LOCAL_ENV_IMPORT_PATH = "pytest_skilleval.harbor.local_env:LocalEnvironment"

SandboxMode = Literal["auto", "bwrap", "none"]
_MODES: tuple[str, ...] = ("auto", "bwrap", "none")

WORKSPACE = "/workspace"
SANDBOX_DIRNAME = "local-sandbox"
TIMEOUT_EXIT_CODE = 124
_MAX_STREAM_BYTES = 32 * 1024 * 1024
_CONTAINER_PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Host folders shown read-only inside bwrap; also the paths no upload may target.
SYSTEM_DIRS: tuple[str, ...] = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
)
_RESERVED_TOP = {"proc", "dev", "sys", *(d.strip("/") for d in SYSTEM_DIRS)}

_log = logging.getLogger(__name__)
_warned_unisolated = False


def harbor_variables(
    logs_dir: str = "/logs", tests_dir: str = "/tests", workspace_dir: str = WORKSPACE
) -> dict[str, str]:
    """The grader-facing ``HARBOR_*`` variables (SPEC section 1) for the given roots.

    ``HARBOR_WORKSPACE_DIR`` is our addition: graders need it in sandbox=none mode, where
    ``/workspace`` inside a script is not rewritten.
    """
    agent = f"{logs_dir}/agent"
    verifier = f"{logs_dir}/verifier"
    return {
        "HARBOR_LOGS_DIR": logs_dir,
        "HARBOR_AGENT_LOGS_DIR": agent,
        "HARBOR_ATIF_PATH": f"{agent}/trajectory.json",
        "HARBOR_VERIFIER_DIR": verifier,
        "HARBOR_REWARD_JSON": f"{verifier}/reward.json",
        "HARBOR_REWARD_TXT": f"{verifier}/reward.txt",
        "HARBOR_TESTS_DIR": tests_dir,
        "HARBOR_ENTRY_JSON": f"{tests_dir}/entry.json",
        "HARBOR_GRADER": f"{tests_dir}/grader.py",
        "HARBOR_GRADER_SH": f"{tests_dir}/grader.sh",
        "HARBOR_WORKSPACE_DIR": workspace_dir,
    }


def _system_dir_args() -> list[str]:
    """bwrap arguments exposing the host's system folders read-only (symlinks kept)."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


@functools.cache
def bwrap_available() -> bool:
    """Whether bubblewrap is on PATH and can build the sandbox we need (probed once)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    argv = [
        exe, "--die-with-parent", "--unshare-pid", "--unshare-net",
        *_system_dir_args(), "--proc", "/proc", "--dev", "/dev", "--", "/bin/sh", "-c", "true",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, env={"PATH": _CONTAINER_PATH_ENV})
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def resolve_sandbox_mode(requested: str) -> Literal["bwrap", "none"]:
    """Turn the ``sandbox`` kwarg into a concrete mode, failing loudly on a bad request."""
    if requested not in _MODES:
        raise ValueError(f"sandbox must be one of {', '.join(_MODES)}; got {requested!r}")
    if requested == "none":
        return "none"
    if bwrap_available():
        return "bwrap"
    if requested == "bwrap":
        raise RuntimeError(
            "sandbox='bwrap' was requested but bubblewrap is not on PATH or cannot create "
            "namespaces here; install bubblewrap or use sandbox=none (no isolation)"
        )
    return "none"


def _warn_unisolated() -> None:
    global _warned_unisolated
    if not _warned_unisolated:
        _warned_unisolated = True
        _log.warning(
            "local environment runs with sandbox=none: commands execute directly on this "
            "host with no isolation (no filesystem, process or network separation)"
        )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_capped(handle: Any) -> str:
    return safe_io.read_capped(handle, _MAX_STREAM_BYTES)


async def run_process_tree(
    argv: list[str], *, cwd: str, env: dict[str, str], timeout_sec: float | None
) -> ExecResult:
    """Run ``argv`` in its own session; kill the whole group on timeout/cancel/exit.

    Output goes to unnamed temp files, not pipes: asyncio's ``wait()`` would otherwise block
    until every background child holding the pipe exits.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=err,
            start_new_session=True,
        )
        timed_out = False
        try:
            if timeout_sec:
                await asyncio.wait_for(proc.wait(), timeout=timeout_sec)
            else:
                await proc.wait()
        except TimeoutError:
            timed_out = True
        except BaseException:
            _kill_group(proc.pid)
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), timeout=5)
            except BaseException:
                pass
            raise
        # Leftover background children would otherwise outlive the command.
        _kill_group(proc.pid)
        await proc.wait()
        stdout, stderr = _read_capped(out), _read_capped(err)
    if timed_out:
        stderr += f"\nCommand timed out after {timeout_sec} seconds"
        return ExecResult(stdout=stdout, stderr=stderr, return_code=TIMEOUT_EXIT_CODE)
    code = proc.returncode or 0
    return ExecResult(stdout=stdout, stderr=stderr, return_code=128 - code if code < 0 else code)


def _make_writable_and_retry(func: Any, path: str, _exc: BaseException) -> None:
    """rmtree helper: agents may leave read-only folders behind."""
    parent = os.path.dirname(path)
    for target in (parent, path):
        try:
            os.chmod(target, os.stat(target).st_mode | stat.S_IRWXU)
        except OSError:
            pass
    func(path)


class LocalEnvironment(BaseEnvironment):
    """Per-trial host folder sandbox, optionally isolated with bubblewrap."""

    def __init__(self, *args: Any, sandbox: str = "auto", **kwargs: Any) -> None:
        # Resolved before super().__init__: the base class reads ``capabilities`` there.
        self.sandbox_mode: Literal["bwrap", "none"] = resolve_sandbox_mode(str(sandbox).strip().lower())
        if kwargs.get("mounts"):
            raise ValueError("the local environment does not support extra mounts")
        super().__init__(*args, **kwargs)
        self.sandbox_dir = (Path(self.trial_paths.trial_dir) / SANDBOX_DIRNAME).resolve()
        self.rootfs = self.sandbox_dir / "rootfs"
        self.env_paths = EnvironmentPaths.for_os(self.os)
        self.skills_dir = self.task_env_config.skills_dir or self.env_paths.default_skills_dir.as_posix()
        self.default_cwd = self.task_env_config.workdir or WORKSPACE
        if self.sandbox_mode == "none":
            _warn_unisolated()

    # ---- Harbor identity and capabilities -------------------------------------------

    @staticmethod
    def type() -> str:
        return "local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # Each exec is a fresh bwrap, so a per-phase network switch is free and real.
        isolated = getattr(self, "sandbox_mode", "none") == "bwrap"
        return EnvironmentCapabilities(
            mounted=False, disable_internet=isolated, dynamic_network_policy=isolated
        )

    def _validate_definition(self) -> None:
        """Nothing to build: no Dockerfile or image is needed."""

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        """Nothing to do: the next exec reads ``self.network_policy``."""

    # ---- path mapping --------------------------------------------------------------

    def container_dirs(self) -> list[str]:
        """Container folders every trial starts with."""
        paths = self.env_paths
        return [
            WORKSPACE, f"{WORKSPACE}/input", f"{WORKSPACE}/output",
            paths.agent_dir.as_posix(), paths.verifier_dir.as_posix(), paths.artifacts_dir.as_posix(),
            paths.tests_dir.as_posix(), paths.solution_dir.as_posix(), "/tmp",
            self.skills_dir, self.default_cwd,
        ]

    @staticmethod
    def _normalize(container_path: str | PurePosixPath) -> str:
        text = str(container_path)
        if not text.startswith("/"):
            text = posixpath.join(WORKSPACE, text)
        return posixpath.normpath(text).replace("//", "/")

    def host_path(self, container_path: str | PurePosixPath) -> Path:
        """Host location of a sandbox path; system folders are refused (read-only)."""
        norm = self._normalize(container_path)
        top = norm.strip("/").split("/", 1)[0]
        if not top:
            raise ValueError("the sandbox root '/' itself cannot be mapped")
        if top in _RESERVED_TOP:
            raise PermissionError(f"{norm} is a read-only host system path in the local environment")
        return self.rootfs / norm.lstrip("/")

    def _cwd_on_host(self, cwd: str) -> str:
        norm = self._normalize(cwd)
        top = norm.strip("/").split("/", 1)[0]
        return norm if top in _RESERVED_TOP else str(self.rootfs / norm.lstrip("/"))

    def _top_level_dirs(self) -> list[str]:
        if not self.rootfs.is_dir():
            return []
        return sorted(p.name for p in self.rootfs.iterdir() if p.is_dir() and p.name not in _RESERVED_TOP)

    def rewrite_paths(self, text: str) -> str:
        """none mode: point container paths in ``text`` at the sandbox folders."""
        tops = self._top_level_dirs()
        if not tops:
            return text
        alternatives = "|".join(re.escape(t) for t in sorted(tops, key=len, reverse=True))
        pattern = re.compile(rf"(?<![\w.~/])/({alternatives})(?=/|$|[^\w.-])")
        root = str(self.rootfs)
        return pattern.sub(lambda m: f"{root}/{m.group(1)}", text)

    # ---- lifecycle ------------------------------------------------------------------

    async def start(self, force_build: bool) -> None:
        for path in self.container_dirs():
            self.host_path(path).mkdir(parents=True, exist_ok=True)
        # Local stand-in for a Dockerfile's ``COPY workspace/ /workspace/``: task inputs.
        seed = Path(self.environment_dir) / "workspace"
        if seed.is_dir():
            await self.upload_dir(seed, WORKSPACE)
        await self._upload_environment_dir_after_start()

    async def stop(self, delete: bool) -> None:
        if delete and self.sandbox_dir.exists():
            await asyncio.to_thread(shutil.rmtree, self.sandbox_dir, onexc=_make_writable_and_retry)

    # ---- exec -----------------------------------------------------------------------

    def _bwrap_argv(self, command: str, cwd: str) -> list[str]:
        exe = shutil.which("bwrap") or "bwrap"
        argv = [exe, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
        if self.network_policy.network_mode != NetworkMode.PUBLIC:
            argv.append("--unshare-net")
        argv += _system_dir_args()
        argv += ["--proc", "/proc", "--dev", "/dev"]
        for top in self._top_level_dirs():
            argv += ["--bind", str(self.rootfs / top), f"/{top}"]
        argv += ["--chdir", cwd, "--", "/bin/bash", "-c", command]
        return argv

    def _exec_env(self, env: dict[str, str] | None) -> dict[str, str]:
        merged = self._merge_env(env) or {}
        if self.sandbox_mode == "bwrap":
            base = {"PATH": _CONTAINER_PATH_ENV, "HOME": WORKSPACE, "TMPDIR": "/tmp", "LANG": "C.UTF-8",
                    "TERM": "dumb", **harbor_variables(self.env_paths.logs_dir.as_posix(),
                                                        self.env_paths.tests_dir.as_posix())}
            return {**base, **merged}
        defaults = {**harbor_variables(self.env_paths.logs_dir.as_posix(), self.env_paths.tests_dir.as_posix()),
                    "TMPDIR": "/tmp"}
        sandboxed = {key: self.rewrite_paths(value) for key, value in {**defaults, **merged}.items()}
        return {**os.environ, **sandboxed}

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        container_cwd = self._normalize(cwd or self.default_cwd)
        host_cwd = self._cwd_on_host(container_cwd)
        if not os.path.isdir(host_cwd):
            return ExecResult(stdout="", stderr=f"cwd does not exist in the sandbox: {container_cwd}", return_code=1)
        exec_env = self._exec_env(env)
        if self.sandbox_mode == "bwrap":
            argv = self._bwrap_argv(command, container_cwd)
            run_cwd = str(self.sandbox_dir)
        else:
            argv = ["/bin/bash", "-c", self.rewrite_paths(command)]
            run_cwd = host_cwd
        return await run_process_tree(argv, cwd=run_cwd, env=exec_env, timeout_sec=timeout_sec)

    # ---- file transfer --------------------------------------------------------------
    # Everything under rootfs/ is the sandbox's: verifier.safe_io walks it without following links, so a link the
    # agent planted is reported, never read or written through (docs/security.md, "Artifacts from the sandbox").

    def _rootfs_rel(self, container_path: str) -> str:
        return self.host_path(container_path).relative_to(self.rootfs).as_posix()

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        source, rel = Path(source_path), self._rootfs_rel(target_path)
        await asyncio.to_thread(safe_io.copy_file, source.parent, source.name, self.rootfs, rel, dst_label="/")

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        rel = self._rootfs_rel(target_dir)
        refused = await asyncio.to_thread(safe_io.copy_tree, Path(source_dir), "", self.rootfs, rel, links="copy",
                                          dst_label="/")
        if refused:
            raise safe_io.UnsafePathError(f"upload to {target_dir} refused: " + "; ".join(refused))

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        target = Path(target_path)
        await asyncio.to_thread(safe_io.copy_file, self.rootfs, self._rootfs_rel(source_path), target.parent,
                                target.name, label="/")

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        refused = await asyncio.to_thread(safe_io.copy_tree, self.rootfs, self._rootfs_rel(source_dir),
                                          Path(target_dir), label="/")
        if refused:
            raise safe_io.UnsafePathError(f"download of {source_dir} left out: " + "; ".join(refused))
