"""The local sandbox as the session sees it: checked at start-up, `none` only when asked for, and said so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, require_system, simple_entries


def _error_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stderr.lines + result.stdout.lines if line.startswith("ERROR")]


@pytest.mark.parametrize(
    ("ek", "says"),
    [
        ("sandbox=bogus", "ERROR: --ek sandbox must be one of auto, bwrap, none (got 'bogus')"),
        ("tools=/no/such/dir", "ERROR: --ek tools must be a directory (got '/no/such/dir')"),
        (
            "sandbx=none",
            "ERROR: --ek sandbx is not a setting of the local environment (known: sandbox, tools, remote_latency_ms)",
        ),
    ],
)
def test_bad_ek_is_a_usage_error_at_start(skill_project: SkillProject, ek: str, says: str) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run(*LOCAL_REPLAY, "--ek", ek)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert _error_lines(result) == [says]
    assert not (skill_project.root / "results").exists()


@pytest.mark.parametrize("requested", ["auto", "bwrap"])
def test_no_working_bwrap_stops_the_session_and_names_the_way_out(
    skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, requested: str
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("SKILLEVAL_BWRAP", str(fake))
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run(*LOCAL_REPLAY, "--ek", f"sandbox={requested}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = _error_lines(result)
    assert "No permissions to create new namespace" in line
    assert line.endswith("--ek sandbox=none runs without isolation")
    assert not (skill_project.root / "results").exists()


def test_none_is_printed_in_the_summary_and_recorded(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline")
    result.assert_outcomes(passed=1)
    assert "Sandbox: NONE (--ek sandbox=none)" in result.stdout.str()
    assert skill_project.result_json("demo")["run_config"]["sandbox"] == "none"
    run_dirs = sorted((skill_project.root / "results" / "demo").glob("2*/run_config.json"))
    assert '"sandbox": "none"' in run_dirs[-1].read_text()


def test_auto_runs_in_bwrap_and_records_it(skill_project: SkillProject) -> None:
    from pytest_skilleval.harbor.local_env import bwrap_available

    if not bwrap_available():
        require_system("bubblewrap that can create namespaces", "the kernel must allow user namespaces")
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline")
    result.assert_outcomes(passed=1)
    assert "Sandbox: NONE" not in result.stdout.str()
    assert skill_project.result_json("demo")["run_config"]["sandbox"] == "bwrap"
