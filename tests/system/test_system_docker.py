"""Docker as the tests use it: a daemon, the Compose v2 plugin Harbor drives, and the offline test image."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support import require_system
from tests.system_parts import INSTALL_DOCKER

pytestmark = pytest.mark.e2e


def test_a_container_from_the_test_image_runs_python_in_bash(docker_available: str, test_base_image: str) -> None:
    done = subprocess.run(
        [
            docker_available,
            "run",
            "--rm",
            "--network",
            "none",
            test_base_image,
            "bash",
            "-c",
            "python3 -c 'print(1)' && tmux -V",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "1"
    assert done.stdout.splitlines()[1].startswith("tmux ")


def test_compose_v2_builds_on_the_test_image_and_runs_it(
    docker_available: str, test_base_image: str, tmp_path: Path
) -> None:
    """What Harbor's docker environment does: `docker compose` builds a task image FROM a local base, runs it."""
    version = subprocess.run(
        [docker_available, "compose", "version", "--short"], capture_output=True, text=True, timeout=60
    )
    assert version.returncode == 0, version.stderr
    assert int(version.stdout.strip().lstrip("v").split(".")[0]) >= 2
    (tmp_path / "Dockerfile").write_text(
        f"FROM {test_base_image}\nWORKDIR /workspace\nRUN echo built-$((6*7)) > /workspace/marker\n"
    )
    name = f"skilleval-smoke-{uuid.uuid4().hex[:8]}"
    (tmp_path / "compose.yaml").write_text(
        f"services:\n  main:\n    build: .\n    image: {name}:latest\n"
        '    command: ["bash", "-c", "cat /workspace/marker && pwd"]\n'
    )
    project = ["--project-name", name, "--project-directory", str(tmp_path)]
    try:
        up = subprocess.run(
            [docker_available, "compose", *project, "up", "--build", "--abort-on-container-exit"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert up.returncode == 0, up.stderr
        assert "built-42" in up.stdout and "/workspace" in up.stdout
    finally:
        subprocess.run(
            [docker_available, "compose", *project, "down", "--volumes", "--rmi", "all"],
            capture_output=True,
            timeout=180,
        )
    assert subprocess.run([docker_available, "image", "inspect", name], capture_output=True).returncode != 0


def test_buildx_builds_an_image_the_way_harbor_calls_it(
    docker_available: str, test_base_image: str, tmp_path: Path
) -> None:
    """Harbor builds helper images with `docker buildx build --output=type=docker`; a recent CLI needs buildx
    for any `docker build`."""
    if subprocess.run([docker_available, "buildx", "version"], capture_output=True, timeout=60).returncode != 0:
        require_system("The Docker buildx plugin", INSTALL_DOCKER)
    (tmp_path / "Dockerfile").write_text(f"FROM {test_base_image}\nRUN echo buildx-ok > /marker\n")
    name = f"skilleval-smoke-{uuid.uuid4().hex[:8]}:latest"
    built = subprocess.run(
        [
            docker_available,
            "buildx",
            "build",
            f"--file={tmp_path / 'Dockerfile'}",
            "--platform=linux/amd64",
            f"--output=type=docker,name={name}",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        assert built.returncode == 0, built.stderr
        ran = subprocess.run(
            [docker_available, "run", "--rm", name, "cat", "/marker"], capture_output=True, text=True, timeout=120
        )
        assert ran.stdout.strip() == "buildx-ok", ran.stderr
    finally:
        subprocess.run([docker_available, "rmi", "-f", name], capture_output=True, timeout=120)
