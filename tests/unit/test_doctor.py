"""`skilleval doctor`: the preflight checks, each with PASS or FAIL, exit status 1 when one fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_skilleval.authoring.cli import main
from tests.support import HELLO_SKILL


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


def _tree(root: Path) -> list[Path]:
    return sorted(root.rglob("*"))


def test_the_results_folder_is_checked_as_the_session_checks_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """doctor said nothing of the results folder: a run whose --results-dir is a file passed every doctor check and
    then stopped in the session's preflight. Its line now names where the folder came from and the fix, in the
    session's own words, and it leaves nothing behind."""
    monkeypatch.delenv("SKILLEVAL_RESULTS_DIR", raising=False)
    skill = tmp_path / "skills" / "hello-skill"
    shutil.copytree(HELLO_SKILL, skill, ignore=shutil.ignore_patterns("results"))
    plain = tmp_path / "afile"
    plain.write_text("not a folder\n")
    base = ["doctor", "--env-mode", "local", "--agents", "replay", "--ek", "sandbox=none"]
    before = _tree(tmp_path)

    assert main([*base, str(skill), "--results-dir", str(plain)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert (
        f"FAIL  results folder: --results-dir {plain}: {plain} is a file, not a folder; pass a folder that can be "
        "written (it is made if missing)"
    ) in lines
    assert lines[-1] == "4 passed, 1 failed"

    monkeypatch.setenv("SKILLEVAL_RESULTS_DIR", str(plain))  # a folder of skills, as pytest is given it
    assert main([*base, str(tmp_path / "skills")]) == 1
    assert (
        f"FAIL  results folder: SKILLEVAL_RESULTS_DIR={plain}: {plain} is a file, not a folder; set it to a folder "
        "that can be written, or pass --results-dir DIR"
    ) in capsys.readouterr().out.splitlines()
    assert main(base) == 1  # no skill given: the folder the variable names, which each skill's folder goes in
    assert f"FAIL  results folder: SKILLEVAL_RESULTS_DIR={plain}: {plain} exists" in capsys.readouterr().out

    writable = tmp_path / "out"
    monkeypatch.setenv("SKILLEVAL_RESULTS_DIR", str(writable))
    assert main([*base, str(skill)]) == 0
    out = capsys.readouterr().out
    assert f"PASS  results folder (SKILLEVAL_RESULTS_DIR={writable}: {writable / 'hello-skill'})" in out
    monkeypatch.delenv("SKILLEVAL_RESULTS_DIR")
    assert main([*base, str(skill)]) == 0
    assert f"PASS  results folder (the default: {skill / 'evals' / 'results'})" in capsys.readouterr().out
    assert _tree(tmp_path) == before  # nothing made, not even the probe

    assert main([*base, str(tmp_path / "nothing")]) == 1
    assert f"FAIL  skill {tmp_path / 'nothing'}: {tmp_path / 'nothing'}: no skill here" in capsys.readouterr().out
