"""The sandbox image recipe: default base, --base-image as is, the skill's own Dockerfile (preserve/rebase), our
layers, content-addressed names; and the generated task's environment/ and [environment] table."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pytest_skilleval.harbor.images import (
    DEFAULT_BASE_IMAGE,
    MAX_CUSTOM_DOCKERFILE_BYTES,
    SKILL_DISCOVERY_DIRS,
    ImageError,
    adapt_native_dockerfile,
    image_plan,
    write_context,
)
from pytest_skilleval.harbor.staging import stage_dataset_task
from pytest_skilleval.harbor.task_environment import TaskEnvironment
from pytest_skilleval.skill.plan import TrialSpec


def _skill(tmp_path: Path, name: str = "demo") -> Path:
    skill = tmp_path / name
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {name}\n---\nsecret skill body\n")
    return skill


def _instructions(dockerfile: str) -> list[str]:
    return [
        line.split()[0].upper()
        for line in dockerfile.splitlines()
        if line.strip() and not line.startswith("#") and not line.startswith(" ")
    ]


def test_default_image_is_python_slim_with_the_seed_tools(tmp_path: Path) -> None:
    plan = image_plan(_skill(tmp_path), base_image=None)
    assert plan.dockerfile.startswith(f"FROM {DEFAULT_BASE_IMAGE}\n")
    assert "apt-get install -y --no-install-recommends bash curl git jq ripgrep" in plan.dockerfile
    assert plan.dockerfile.rstrip().endswith("STOPSIGNAL SIGKILL")
    assert "WORKDIR /workspace" in plan.dockerfile
    for folder in SKILL_DISCOVERY_DIRS:
        assert folder in plan.dockerfile
    assert "SKILL.md" not in plan.dockerfile and "secret skill body" not in plan.dockerfile


def test_every_folder_a_trial_installs_skills_into_is_emptied_in_the_image(tmp_path: Path) -> None:
    """One list of skill folders: each one the grader credits a load from (every agent's copy included) is also one
    the image empties, so a base image's planted skill never sits where an installed one would."""
    from verifier.skill_folders import DEFAULT_SKILLS_DIRS

    plan = image_plan(_skill(tmp_path), base_image="offline:1")
    run_line = next(line for line in plan.dockerfile.splitlines() if line.startswith("RUN rm -rf "))
    emptied = set(run_line.removeprefix("RUN rm -rf ").split(" && ", 1)[0].split())
    assert set(DEFAULT_SKILLS_DIRS) <= emptied, sorted(set(DEFAULT_SKILLS_DIRS) - emptied)
    assert {"/root/.copilot/skills", "/root/.kimi/skills", "/tmp/hermes/skills", "/etc/codex/skills"} <= emptied


def test_base_image_is_used_as_is_with_only_our_layers(tmp_path: Path) -> None:
    plan = image_plan(_skill(tmp_path), base_image="offline:1")
    assert plan.dockerfile.startswith("FROM offline:1\n")
    assert "apt-get" not in plan.dockerfile and "pip" not in plan.dockerfile
    assert _instructions(plan.dockerfile) == ["FROM", "RUN", "WORKDIR", "STOPSIGNAL"]


def test_tag_names_the_skill_and_changes_with_the_recipe(tmp_path: Path) -> None:
    skill = _skill(tmp_path, "My_Skill")
    one = image_plan(skill, base_image="a:1")
    assert one.tag.startswith("skilleval/my_skill:") and len(one.tag.split(":")[1]) == 12
    assert one.tag == image_plan(skill, base_image="a:1").tag
    assert one.tag != image_plan(skill, base_image="b:1").tag


def _custom(skill: Path, text: str) -> Path:
    env = skill / "evals" / "environment"
    env.mkdir(parents=True, exist_ok=True)
    (env / "Dockerfile").write_text(text)
    (env / "tool.sh").write_text("echo tool\n")
    (env / "input").mkdir(exist_ok=True)
    (env / "input" / "answer.txt").write_text("reserved\n")
    return env


def test_custom_dockerfile_rebase_swaps_the_first_from_for_the_base_image(tmp_path: Path) -> None:
    skill = _skill(tmp_path)
    _custom(skill, "# mine\nARG V=1\nFROM ubuntu:24.04 AS build\nCOPY tool.sh /usr/local/bin/\nFROM debian:12\n")
    rebased = image_plan(skill, base_image="offline:1", custom_mode="rebase").dockerfile
    assert "FROM offline:1 AS build" in rebased and "FROM debian:12" in rebased and "ubuntu" not in rebased
    preserved = image_plan(skill, base_image="offline:1", custom_mode="preserve").dockerfile
    assert "FROM ubuntu:24.04 AS build" in preserved and "offline:1" not in preserved
    assert preserved.rstrip().endswith("STOPSIGNAL SIGKILL")
    # Without a base image, rebase has nothing to swap in: the author's FROM stays.
    assert "FROM ubuntu:24.04" in image_plan(skill, base_image=None, custom_mode="rebase").dockerfile


def test_custom_dockerfile_context_is_copied_without_the_reserved_input_folder(tmp_path: Path) -> None:
    skill = _skill(tmp_path)
    _custom(skill, "FROM debian:12\nCOPY tool.sh /t.sh\n")
    plan = image_plan(skill, base_image=None)
    context = write_context(plan, tmp_path / "ctx")
    assert (context / "tool.sh").is_file() and not (context / "input").exists()
    assert (context / "Dockerfile").read_text() == plan.dockerfile
    before = plan.digest
    (skill / "evals" / "environment" / "tool.sh").write_text("echo changed\n")
    assert image_plan(skill, base_image=None).digest != before


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("RUN echo no from\n", "first instruction must be FROM"),
        ("FROM debian:12\nCOPY environment/x /x\n", "drop the 'environment/' prefix"),
        ("FROM debian:12\n" + "# pad\n" * (MAX_CUSTOM_DOCKERFILE_BYTES // 6 + 1), "at most 20000"),
    ],
)
def test_bad_custom_dockerfiles_are_refused_naming_the_file(tmp_path: Path, text: str, problem: str) -> None:
    skill = _skill(tmp_path)
    _custom(skill, text)
    with pytest.raises(ImageError, match=problem) as error:
        image_plan(skill, base_image=None)
    assert "evals/environment/Dockerfile" in str(error.value)


def test_native_task_dockerfile_is_rebased_and_gets_our_layers(tmp_path: Path) -> None:
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM ubuntu:24.04\nRUN true\n")
    adapt_native_dockerfile(env, "offline:1", "rebase")
    text = (env / "Dockerfile").read_text()
    assert text.startswith("FROM offline:1\nRUN true\n") and "STOPSIGNAL SIGKILL" in text


def _spec(skill: Path, arm: str = "without_skill") -> TrialSpec:
    return TrialSpec(
        skill_dir=skill,
        skill_name=skill.name,
        case_id="c1",
        source="dataset",
        entry={"id": "c1", "prompt": "do it"},
        agent="replay",
        arm=arm,
        attempt=1,
    )


def test_generated_task_names_the_prebuilt_image_and_applies_config(tmp_path: Path) -> None:
    skill = _skill(tmp_path)
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "name.txt").write_text("Ada\n")
    environment = TaskEnvironment(
        plan=image_plan(skill, "offline:1"),
        image="skilleval/demo:abc",
        workdir="/srv/work",
        resources={"cpus": 1, "memory_mb": 512},
        pre_agent_setup=("echo ready", "test -d /srv/work"),
    )
    task = stage_dataset_task(_spec(skill), tmp_path / "task", "default", None, environment, inputs)
    table = tomllib.loads((task / "task.toml").read_text())["environment"]
    assert table["docker_image"] == "skilleval/demo:abc"
    assert (table["workdir"], table["cpus"], table["memory_mb"]) == ("/srv/work", 1, 512)
    assert table["healthcheck"]["retries"] == 1 and table["healthcheck"]["timeout_sec"] == 120.0
    command = table["healthcheck"]["command"]
    assert "set -euo pipefail" in command and "test -d /srv/work" in command
    dockerfile = (task / "environment" / "Dockerfile").read_text()
    assert dockerfile == "FROM skilleval/demo:abc\nCOPY input/ /workspace/input/\n"
    assert (task / "environment" / "input" / "name.txt").read_text() == "Ada\n"


def test_without_a_prebuilt_image_the_task_dockerfile_is_the_whole_recipe(tmp_path: Path) -> None:
    skill = _skill(tmp_path)
    environment = TaskEnvironment(plan=image_plan(skill, None))
    task = stage_dataset_task(_spec(skill, "with_skill"), tmp_path / "task", "default", None, environment, None)
    dockerfile = (task / "environment" / "Dockerfile").read_text()
    assert dockerfile == environment.plan.dockerfile and "COPY input" not in dockerfile
    table = tomllib.loads((task / "task.toml").read_text())["environment"]
    assert table["workdir"] == "/workspace"
    assert "docker_image" not in table and "healthcheck" not in table and "cpus" not in table
    assert not any("secret skill body" in p.read_text() for p in (task / "environment").rglob("*") if p.is_file())


def _fake_docker(tmp_path: Path) -> tuple[str, Path]:
    """A `docker` stand-in: `image inspect` succeeds once an image was built; every call is logged."""
    log = tmp_path / "calls.log"
    script = tmp_path / "docker"
    script.write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> {log}\n'
        f'if [ "$1 $2" = "image inspect" ]; then [ -f {tmp_path}/built ]; exit; fi\n'
        f'if [ "$1" = "build" ]; then touch {tmp_path}/built; exit 0; fi\n'
    )
    script.chmod(0o755)
    return str(script), log


def test_image_is_built_once_per_run_and_reused_or_rebuilt_by_mode(tmp_path: Path) -> None:
    from pytest_skilleval.harbor.images import ensure_image

    docker, log = _fake_docker(tmp_path)
    import uuid

    plan = image_plan(_skill(tmp_path, f"once-{uuid.uuid4().hex[:8]}"), base_image="offline:1")
    tag = ensure_image(plan, "run1", docker=docker)
    assert tag == plan.tag
    assert ensure_image(plan, "run1", docker=docker) == tag
    builds = [line for line in log.read_text().splitlines() if line.startswith("build")]
    assert len(builds) == 1 and f"-t {tag}" in builds[0] and "org.skilleval.run=run1" in builds[0]
    ensure_image(plan, "run2", docker=docker)  # reuse: an existing image is used as is
    assert sum(line.startswith("build") for line in log.read_text().splitlines()) == 1
    ensure_image(plan, "run3", rebuild=True, docker=docker)  # rebuild: once per run, without the layer cache
    ensure_image(plan, "run3", rebuild=True, docker=docker)
    builds = [line for line in log.read_text().splitlines() if line.startswith("build")]
    assert len(builds) == 2 and "--no-cache" in builds[1]


def test_a_run_only_image_is_tagged_for_its_run_so_a_concurrent_run_never_loses_it(tmp_path: Path) -> None:
    """base_image_mode disabled removes the run's image at its end; two runs with one recipe must not share it."""
    from pytest_skilleval.harbor.images import ensure_image

    script, log = tmp_path / "docker", tmp_path / "calls.log"
    script.write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> {log}\n'
        f'if [ "$1 $2" = "image inspect" ]; then [ -f "{tmp_path}/built-${{3//[\\/:]/_}}" ]; exit; fi\n'
        f'if [ "$1" = "build" ]; then touch "{tmp_path}/built-${{3//[\\/:]/_}}"; exit 0; fi\n'
    )
    script.chmod(0o755)
    plan = image_plan(_skill(tmp_path, "shared-recipe"), base_image="offline:1")
    first = ensure_image(plan, "20261202_000000_1_aaaa", docker=str(script), run_only=True)
    second = ensure_image(plan, "20261202_000000_2_bbbb", docker=str(script), run_only=True)
    assert first == f"{plan.tag}-20261202_000000_1_aaaa" and second == f"{plan.tag}-20261202_000000_2_bbbb"
    assert ensure_image(plan, "20261202_000000_2_bbbb", docker=str(script), run_only=True) == second
    builds = [line for line in log.read_text().splitlines() if line.startswith("build")]
    assert len(builds) == 2 and f"-t {first} " in builds[0] and f"-t {second} " in builds[1]
