"""Ctrl+C during a Docker trial leaves nothing of ours behind.

Harbor names each trial's Compose project after the trial (`<trial name>__env`, sanitized); every trial name of
ours starts with `skilleval-`, so `docker ps -a --filter name=skilleval-` lists any container of ours. On an
interrupt, the trial's containers, networks and volumes are removed by their Compose project label; a second
Ctrl+C during that removal stops it and says what may be left and how to find it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

PROJECT_LABEL = "com.docker.compose.project"


def compose_project(trial_name: str) -> str:
    """The Compose project name Harbor's Docker environment uses for a trial."""
    from harbor.environments.docker.docker import _sanitize_docker_compose_project_name

    return _sanitize_docker_compose_project_name(f"{trial_name}__env")


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
    for kind, remove in (("container", ["rm", "-f", "-v"]), ("network", ["network", "rm"]),
                         ("volume", ["volume", "rm", "-f"])):
        ids = _ids(docker, kind, project)
        if ids:
            subprocess.run([docker, *remove, *ids], capture_output=True, timeout=60)


def how_to_find(project: str) -> str:
    where = f"--filter label={PROJECT_LABEL}={project}"
    return (f"docker ps -a {where}; docker network ls {where}; docker volume ls {where} "
            "(remove with docker rm -f / docker network rm / docker volume rm)")


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@contextmanager
def removing_leftovers(project: str | None, say: Callable[[str], None] = _stderr) -> Iterator[None]:
    """Around one trial: on KeyboardInterrupt, remove the trial's Docker resources before re-raising.

    `say` writes a line to the user's terminal (the pytest side passes one that gets past output capture).
    """
    try:
        yield
    except KeyboardInterrupt:
        if project is None:
            raise
        say(f"skilleval: interrupted; removing the Docker resources of {project} (Ctrl+C again to skip)")
        try:
            remove_project(project)
        except KeyboardInterrupt:
            left = (f"skilleval: cleanup skipped; containers, networks or volumes of {project} may be left. "
                    f"Find them with: {how_to_find(project)}")
            say(left)
            raise KeyboardInterrupt(left) from None
        say(f"skilleval: removed the Docker resources of {project}")
        raise
