"""Docker for real: the demo skill and a native task run in containers built from the offline test image, with the
same per-case scores as the local environment; Ctrl+C leaves no container, network or volume of ours."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest

from tests.support import SkillProject, default_ctrl_c, simple_entries

pytestmark = pytest.mark.e2e
PROJECT_LABEL = "com.docker.compose.project"


def _scores(project: SkillProject, skill: str) -> dict[tuple[str, str], float | None]:
    return {(t["case"], t["arm"]): t["overall"] for t in project.result_json(skill)["trials"]}


def _run_both(project: SkillProject, skill: str, image: str, *args: str) -> tuple[dict, dict]:
    local = project.run("--agents", "replay", "--env-mode", "local", *args)
    local_scores = _scores(project, skill)
    for path in (project.root / "results" / skill).glob("2*"):
        path.rename(path.with_name("local-" + path.name))
    docker = project.run("--agents", "replay", "--env-mode", "docker", "--base-image", image, *args)
    assert docker.ret == local.ret, docker.stdout.str()[-3000:]
    return local_scores, _scores(project, skill)


def _ours(docker: str, kind: str, marker: str) -> list[str]:
    """Compose projects of ours (containing `marker`) that still own a container, network or volume."""
    argv = [docker, kind, "ls", "--format", f'{{{{.Label "{PROJECT_LABEL}"}}}}']
    if kind == "container":
        argv.insert(3, "-a")
    listed = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return [name for name in listed.stdout.split() if marker in name]


@pytest.mark.slow
def test_demo_skill_scores_the_same_in_docker_as_locally(
    skill_project: SkillProject, test_base_image: str, docker_available: str
) -> None:
    skill_project.copy_hello_skill()
    local, docker = _run_both(skill_project, "hello-skill", test_base_image)
    assert len(docker) == 8 and None not in docker.values()
    assert docker == local
    # The skill's image was built once for the run, then removed with the trial folders (base_image_mode disabled).
    images = subprocess.run(
        [docker_available, "image", "ls", "--format", "{{.Repository}}"], capture_output=True, text=True, timeout=60
    ).stdout.split()
    assert "skilleval/hello-skill" not in images
    assert not list(skill_project.root.glob("**/trials/skilleval-*"))


def test_native_task_scores_the_same_in_docker_as_locally(skill_project: SkillProject, test_base_image: str) -> None:
    skill = skill_project.make_skill("native", simple_entries("t1"), grader=False)
    task = skill / "evals" / "harbor" / "t1"
    (task / "tests").mkdir(parents=True)
    (task / "environment").mkdir()
    # The author's image (unreachable offline) is rebased onto --base-image by custom_dockerfile_mode rebase.
    (task / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nRUN mkdir -p /opt/marker\n")
    (task / "task.toml").write_text('schema_version = "1.4"\n[task]\nname = "demo/t1"\n')
    (task / "instruction.md").write_text("do t1\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    local, docker = _run_both(skill_project, "native", test_base_image, "-k", "task.toml")
    assert set(docker) == {("t1", "with_skill"), ("t1", "without_skill")}
    assert None not in docker.values() and docker == local


def test_ctrl_c_leaves_no_container_network_or_volume(
    skill_project: SkillProject, test_base_image: str, docker_available: str
) -> None:
    case = f"ctrlc-{uuid.uuid4().hex[:8]}"
    skill_project.make_skill("demo", simple_entries(case, f"{case}-b"))
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--skill-eval",
        "skills/demo",
        "--agents",
        "replay",
        "--env-mode",
        "docker",
        "--base-image",
        test_base_image,
        "--results-dir",
        "results",
    ]
    # A terminal's Ctrl+C reaches the whole foreground process group (docker compose included): do the same.
    proc = subprocess.Popen(
        argv,
        cwd=skill_project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=default_ctrl_c,
    )
    try:
        deadline = time.monotonic() + 180
        while not _ours(docker_available, "container", case):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "no container of ours appeared"
            time.sleep(0.2)
        seen = len(_ours(docker_available, "container", case))
        os.killpg(proc.pid, signal.SIGINT)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert seen >= 1
    assert re.search(r"skilleval: stopping; removing the Docker containers of \d+ running trial", output), output
    assert "skilleval: removed the Docker containers, networks and volumes of the stopped trials" in output
    for kind in ("container", "network", "volume"):
        assert _ours(docker_available, kind, case) == [], (kind, output[-2000:])


def test_a_skills_own_dockerfile_is_built_and_a_broken_one_is_an_error(
    skill_project: SkillProject, test_base_image: str
) -> None:
    skill = skill_project.make_skill("custom", simple_entries("c1"))
    env = skill / "evals" / "environment"
    env.mkdir()
    (env / "tool.txt").write_text("from the skill's image\n")
    # rebase (the default) swaps the registry image the author named for the offline --base-image.
    (env / "Dockerfile").write_text("FROM debian:12\nCOPY tool.txt /opt/tool.txt\nRUN test -f /opt/tool.txt\n")
    args = ("--agents", "replay", "--env-mode", "docker", "--base-image", test_base_image, "--skip-baseline")
    skill_project.run(*args).assert_outcomes(passed=1)
    (env / "Dockerfile").write_text("FROM debian:12\nRUN exit 7\n")
    broken = skill_project.run(*args)
    broken.assert_outcomes(errors=1)
    assert "docker build of skilleval/custom:" in broken.stdout.str() and "failed" in broken.stdout.str()
