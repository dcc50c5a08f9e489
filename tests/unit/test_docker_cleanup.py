"""Ctrl+C around Docker trials: a cancelled trial's Compose project is removed; what a skipped clean-up may leave is
named with the commands that find it."""

from __future__ import annotations

import asyncio

import pytest

from pytest_skilleval.harbor import docker_cleanup
from pytest_skilleval.harbor.docker_cleanup import active_projects, compose_project, leftovers_message, tracked


def test_project_name_is_harbors_for_the_trial() -> None:
    assert compose_project("skilleval-Case.1__replay-with-skill-1__abc123") == (
        "skilleval-case-1__replay-with-skill-1__abc123__env"
    )


def test_a_running_trial_is_known_and_a_cancelled_one_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    removed: list[str] = []
    monkeypatch.setattr(docker_cleanup, "remove_project", removed.append)
    seen: list[list[str]] = []

    async def trial() -> None:
        async with tracked("p1"):
            seen.append(active_projects())
            await asyncio.sleep(30)

    async def main() -> None:
        task = asyncio.create_task(trial())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == [["p1"]] and removed == ["p1"] and active_projects() == []


def test_a_finished_trial_is_not_removed_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docker_cleanup, "remove_project", lambda project: pytest.fail("Harbor already removed it"))

    async def trial() -> None:
        async with tracked("p2"):
            pass
        async with tracked(None):
            pass

    asyncio.run(trial())
    assert active_projects() == []


def test_leftovers_message_says_how_to_find_them() -> None:
    text = leftovers_message(["p1", "p2"])
    assert "2 trial(s) may be left" in text
    for project in ("p1", "p2"):
        assert f"docker ps -a --filter label=com.docker.compose.project={project}" in text
    assert "docker network ls" in text and "docker volume ls" in text and "--filter name=skilleval-" in text


def test_a_second_ctrl_c_names_the_docker_resources_still_being_removed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_skilleval.signals import SignalGuard

    monkeypatch.setattr(docker_cleanup, "_ACTIVE", {"skilleval-c1__replay-with-skill-1__abc123__env"})
    SignalGuard()._on_repeat(2, None)
    err = capsys.readouterr().err
    assert "already stopping" in err and "if you stop now, containers, networks or volumes of 1 trial(s)" in err
    assert (
        "docker ps -a --filter label=com.docker.compose.project=skilleval-c1__replay-with-skill-1__abc123__env" in err
    )
