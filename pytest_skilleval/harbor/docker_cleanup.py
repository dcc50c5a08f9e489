"""Ctrl+C during a Docker trial leaves nothing of ours behind.

Harbor names each trial's Compose project after the trial (`<trial name>__env`, sanitized); every trial name of
ours starts with `skilleval-`, so `docker ps -a --filter name=skilleval-` lists any container of ours. On an
interrupt, the trial's containers, networks and volumes are removed by their Compose project label; a second
Ctrl+C during that removal stops it and says what may be left and how to find it (`dispatch.shutdown`).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

PROJECT_LABEL = "com.docker.compose.project"
_ACTIVE: set[str] = set()
_LOCK = threading.Lock()


def compose_project(trial_name: str) -> str:
    """The Compose project name Harbor's Docker environment uses for a trial."""
    from pytest_skilleval.harbor.compat import docker_compose_project_name

    return docker_compose_project_name(f"{trial_name}__env")


def _ids(docker: str, kind: str, project: str) -> list[str]:
    argv = [docker, kind, "ls", "-q", "--filter", f"label={PROJECT_LABEL}={project}"]
    if kind == "container":
        argv.insert(3, "-a")
    listed = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return listed.stdout.split() if listed.returncode == 0 else []


def remove_project(project: str) -> None:
    """Remove a Compose project's containers (killed), then its networks and volumes."""
    docker = shutil.which("docker")
    if docker is None:
        return
    for kind, remove in (
        ("container", ["rm", "-f", "-v"]),
        ("network", ["network", "rm"]),
        ("volume", ["volume", "rm", "-f"]),
    ):
        ids = _ids(docker, kind, project)
        if ids:
            subprocess.run([docker, *remove, *ids], capture_output=True, timeout=60)


def how_to_find(project: str) -> str:
    where = f"--filter label={PROJECT_LABEL}={project}"
    return (
        f"docker ps -a {where}; docker network ls {where}; docker volume ls {where} "
        "(remove with docker rm -f / docker network rm / docker volume rm)"
    )


def active_projects() -> list[str]:
    """Compose projects of trials running in this process right now."""
    with _LOCK:
        return sorted(_ACTIVE)


@asynccontextmanager
async def tracked(project: str | None) -> AsyncIterator[None]:
    """Around one Docker trial: known while it runs; when it is cancelled (Ctrl+C, -x), whatever Harbor's own
    clean-up left of its Compose project is removed before the cancellation goes on."""
    if project is None:
        yield
        return
    with _LOCK:
        _ACTIVE.add(project)
    try:
        yield
    except asyncio.CancelledError:
        remove_project(project)  # blocking on purpose: the loop is shutting down, and this takes about a second
        raise
    finally:
        with _LOCK:
            _ACTIVE.discard(project)


def leftovers_message(projects: list[str]) -> str:
    """What a skipped clean-up may leave, and how to find it."""
    lines = [f"skilleval: clean-up skipped; containers, networks or volumes of {len(projects)} trial(s) may be left:"]
    lines += [f"  {how_to_find(project)}" for project in projects]
    lines.append("  (every container of ours: docker ps -a --filter name=skilleval-)")
    return "\n".join(lines)
