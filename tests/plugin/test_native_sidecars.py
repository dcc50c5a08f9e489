"""A native task whose Compose file starts sidecars says, under --env-mode local, that they will not start."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.skill.native_sidecars import compose_sidecars
from tests.support import LOCAL_REPLAY, SkillProject, simple_entries

COMPOSE = """services:
  main:
    environment:
      DB_URL: postgres://db:5432/app
  db:
    image: postgres:16
  cache:
    image: redis:7
"""


def native_task(skill: Path, case: str, compose: str | None) -> Path:
    task = skill / "evals" / "harbor" / case
    (task / "tests").mkdir(parents=True)
    (task / "environment").mkdir()
    (task / "task.toml").write_text(f'schema_version = "1.4"\n[task]\nname = "demo/{case}"\n')
    (task / "instruction.md").write_text(f"do {case}\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    if compose is not None:
        (task / "environment" / "docker-compose.yaml").write_text(compose)
    replays = skill / "evals" / "replays"
    (replays / f"{case}.json").write_bytes(next(replays.glob("*.json")).read_bytes())
    return task


def test_local_run_says_the_sidecars_do_not_start(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("other"), grader=False)
    native_task(skill, "t1", COMPOSE)
    native_task(skill, "t2", None)
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "--grading-mode", "custom_only", subprocess=False)
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert (
        "[local-without-sidecars] environment/docker-compose.yaml starts cache, db beside the agent, and --env-mode "
        "local does not start them" in output
    )
    assert "evals/harbor/t1/task.toml::t1[replay-with_skill-1]" in output
    assert output.count("local-without-sidecars") == 1  # t2 has no Compose file


@pytest.mark.parametrize(
    ("compose", "expected"),
    [
        (COMPOSE, ["cache", "db"]),
        ("services:\n  main:\n    environment:\n      A: b\n", None),  # only Harbor's own service
        ("services: [unclosed\n", None),  # Harbor reports a broken file when it runs the task
        ("just text\n", None),
    ],
)
def test_compose_sidecars(tmp_path: Path, compose: str, expected: list[str] | None) -> None:
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "docker-compose.yaml").write_text(compose)
    found = compose_sidecars(tmp_path)
    assert (found[1] if found else None) == expected


def test_a_linked_compose_file_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.yaml").write_text(COMPOSE)
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment" / "docker-compose.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    assert compose_sidecars(tmp_path) is None
