"""Ctrl+C around a Docker trial: the trial's Compose project is removed; a second Ctrl+C says what may be left."""

from __future__ import annotations

import pytest

from pytest_skilleval.harbor import docker_cleanup
from pytest_skilleval.harbor.docker_cleanup import compose_project, removing_leftovers


def test_project_name_is_harbors_for_the_trial() -> None:
    assert compose_project("skilleval-Case.1__replay-with-skill-1__abc123") == (
        "skilleval-case-1__replay-with-skill-1__abc123__env")


def test_interrupt_removes_the_project_then_re_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    removed, said = [], []
    monkeypatch.setattr(docker_cleanup, "remove_project", removed.append)
    with pytest.raises(KeyboardInterrupt):
        with removing_leftovers("p1", said.append):
            raise KeyboardInterrupt
    assert removed == ["p1"]
    assert said[0].startswith("skilleval: interrupted; removing the Docker resources of p1")


def test_second_interrupt_says_what_may_be_left_and_how_to_find_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(project: str) -> None:
        raise KeyboardInterrupt

    said: list[str] = []
    monkeypatch.setattr(docker_cleanup, "remove_project", interrupted)
    with pytest.raises(KeyboardInterrupt, match="may be left"):
        with removing_leftovers("p1", said.append):
            raise KeyboardInterrupt
    assert "docker ps -a --filter label=com.docker.compose.project=p1" in said[-1]
    assert "docker network ls" in said[-1] and "docker volume ls" in said[-1]


def test_no_project_means_no_cleanup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docker_cleanup, "remove_project", lambda project: pytest.fail("must not run"))
    with pytest.raises(KeyboardInterrupt):
        with removing_leftovers(None):
            raise KeyboardInterrupt
