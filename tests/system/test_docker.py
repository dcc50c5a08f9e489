"""Docker as the tests use it: a daemon, the Compose v2 plugin Harbor drives, and the offline test image."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_a_container_from_the_test_image_runs_python_in_bash(docker_available: str, test_base_image: str) -> None:
    done = subprocess.run(
        [docker_available, "run", "--rm", "--network", "none", test_base_image,
         "bash", "-c", "python3 -c 'print(1)' && tmux -V"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "1"
    assert done.stdout.splitlines()[1].startswith("tmux ")


def test_compose_v2_runs_a_service_from_the_test_image(
    docker_available: str, test_base_image: str, tmp_path: Path
) -> None:
    version = subprocess.run([docker_available, "compose", "version", "--short"],
                             capture_output=True, text=True, timeout=60)
    assert version.returncode == 0, version.stderr
    assert int(version.stdout.strip().lstrip("v").split(".")[0]) >= 2
    compose = tmp_path / "compose.yaml"
    compose.write_text(f"services:\n  main:\n    image: {test_base_image}\n"
                       "    command: [\"bash\", \"-c\", \"echo compose-ok-$$((6*7))\"]\n")
    project = ["--project-name", f"skilleval-smoke-{uuid.uuid4().hex[:8]}", "-f", str(compose)]
    try:
        up = subprocess.run([docker_available, "compose", *project, "up", "--abort-on-container-exit"],
                            capture_output=True, text=True, timeout=180)
        assert up.returncode == 0, up.stderr
        assert "compose-ok-42" in up.stdout
    finally:
        subprocess.run([docker_available, "compose", *project, "down", "--volumes"],
                       capture_output=True, timeout=180)
