"""`skilleval doctor`: the preflight checks, each with PASS or FAIL, exit status 1 when one fails."""

from __future__ import annotations

import pytest

from pytest_skilleval.authoring.cli import main


def test_all_pass_for_local_and_replay(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--env-mode", "local", "--agents", "replay", "--ek", "sandbox=none"]) == 0
    out = capsys.readouterr().out
    assert "PASS  agent replay (needs no credential)" in out and out.rstrip().endswith("4 passed, 0 failed")
    assert "PASS  open files (" in out and "PASS  processes (" in out


def test_missing_key_unknown_kwarg_and_unreachable_daemon_fail(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    assert main(["doctor", "--env-mode", "docker", "--agents", "codex", "--ek", "bogus=1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert "FAIL  environment kwargs: --ek bogus: unknown to the docker environment (it accepts: none)" in lines
    assert "FAIL  agent codex: no credential: set OPENAI_API_KEY (or CODEX_API_KEY) in the environment" in lines
    assert any(line.startswith("FAIL  docker") for line in lines)
    assert lines[-1].endswith("failed") and not lines[-1].endswith(" 0 failed")


def test_unknown_mode_is_a_fail_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--env-mode", "dokcer", "--agents", "replay"]) == 1
    assert "FAIL  environment: --env-mode dokcer: unknown" in capsys.readouterr().out


def test_terminus2_without_a_model_fails_and_with_one_passes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor said PASS for `--agents terminus-2` with no model, and then every trial of the run errored."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    base = ["doctor", "--env-mode", "local", "--ek", "sandbox=none", "--agents", "terminus-2", "--no-credential-check"]
    assert main(base) == 1
    assert "FAIL  agent terminus-2: terminus-2 needs a model and none is set" in capsys.readouterr().out
    assert main([*base, "--agent-model", "terminus-2=openai/scripted"]) == 0
    assert "needs a model" not in capsys.readouterr().out
