"""Trials in flight inside one pytest process: --n-concurrent, --max-agents, -x, --stop-on-pass.

Concurrency is observed, not timed: a test agent logs when each trial's agent phase starts and ends, and the tests
count how many were open at once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support import FIXTURES, LOCAL_REPLAY, SkillProject, logging_agent_log, simple_entries


@pytest.fixture
def agent_log(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    return logging_agent_log(skill_project, monkeypatch)


def _events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _open_at_once(events: list[dict]) -> int:
    count = peak = 0
    for event in sorted(events, key=lambda e: (e["t"], e["event"] == "start")):
        count += 1 if event["event"] == "start" else -1
        peak = max(peak, count)
    return peak


def _agents_at_once(events: list[dict]) -> int:
    running: dict[str, int] = {}
    peak = 0
    for event in sorted(events, key=lambda e: (e["t"], e["event"] == "start")):
        running[event["agent"]] = running.get(event["agent"], 0) + (1 if event["event"] == "start" else -1)
        peak = max(peak, sum(1 for n in running.values() if n > 0))
    return peak


RUN = ("--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only", "--skip-baseline")


@pytest.mark.parametrize("n_concurrent, expected", [(1, 1), (4, 4)])
def test_n_concurrent_bounds_the_trials_in_flight(
    skill_project: SkillProject, agent_log: Path, n_concurrent: int, expected: int
) -> None:
    skill_project.make_skill("demo", simple_entries(*[f"c{i}" for i in range(8)]))
    result = skill_project.run("--agents", "logging_agent:LoggingAgent", *RUN, "--n-concurrent", str(n_concurrent))
    result.assert_outcomes(passed=8)
    events = _events(agent_log)
    assert len(events) == 16
    assert _open_at_once(events) == expected


def test_concurrent_results_equal_serial_results(skill_project: SkillProject) -> None:
    """Every item's outcome and every trial's scores are what a one-at-a-time run gives."""
    skill_project.copy_hello_skill(
        cases=["explicit-greeting", "negative-arithmetic"]
    )  # a case that uses the skill and one that must not: 8 items
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--n-attempts", "2")
    serial = skill_project.run(*args, "--n-concurrent", "1", "-v")
    serial_result = skill_project.result_json("hello-skill")
    shutil.rmtree(skill_project.root / "results")
    concurrent = skill_project.run(*args, "--n-concurrent", "6", "-v")
    concurrent_result = skill_project.result_json("hello-skill")

    def outcome_lines(run: pytest.RunResult) -> list[str]:
        return sorted(line for line in run.stdout.lines if "PASSED" in line or "FAILED" in line or "ERROR" in line)

    def scores(result: dict) -> list[tuple]:
        return sorted(
            (t["case"], t["arm"], t["attempt"], t["overall"], json.dumps(t.get("metrics"), sort_keys=True))
            for t in result["trials"]
        )

    assert outcome_lines(serial) == outcome_lines(concurrent)
    assert scores(serial_result) == scores(concurrent_result)


def test_concurrency_composes_with_xdist(skill_project: SkillProject, agent_log: Path) -> None:
    skill_project.make_skill("demo", simple_entries(*[f"c{i}" for i in range(8)]))
    result = skill_project.run("--agents", "logging_agent:LoggingAgent", *RUN, "--n-concurrent", "2", "-n", "2")
    result.assert_outcomes(passed=8)
    assert _open_at_once(_events(agent_log)) > 2  # two workers, each with two in flight
    assert len(_events(agent_log)) == 16  # no trial ran twice


def test_max_agents_limits_agents_at_once(skill_project: SkillProject, agent_log: Path) -> None:
    skill_project.make_skill("demo", simple_entries(*[f"c{i}" for i in range(4)]))
    result = skill_project.run(
        "--agents",
        "logging_agent:LoggingAgent,logging_agent:OtherAgent",
        *RUN,
        "--n-concurrent",
        "4",
        "--max-agents",
        "1",
    )
    result.assert_outcomes(passed=8)
    events = _events(agent_log)
    assert len(events) == 16
    assert _agents_at_once(events) == 1
    assert _open_at_once(events) > 1  # trials of the same agent still overlap


def test_exitfirst_stops_launching_trials(skill_project: SkillProject, agent_log: Path) -> None:
    skill = skill_project.make_skill("demo", simple_entries(*[f"c{i}" for i in range(12)]))
    shutil.copy2(FIXTURES / "graders" / "scores_low.py", skill / "evals" / "grader.py")
    result = skill_project.run("--agents", "logging_agent:LoggingAgent", *RUN, "--n-concurrent", "3", "-x")
    result.assert_outcomes(failed=1)
    starts = [e for e in _events(agent_log) if e["event"] == "start"]
    assert 1 <= len(starts) <= 3  # the failing trial and at most the look-ahead already in flight


@pytest.mark.parametrize("n_concurrent", ["1", "4"])
def test_stop_on_pass_skips_remaining_attempts(skill_project: SkillProject, agent_log: Path, n_concurrent: str) -> None:
    """At the default concurrency too: attempt 2 starts only after attempt 1 ended without a pass, and the window
    holds the other cases' first attempts meanwhile."""
    skill_project.make_skill("demo", simple_entries("c1", "c2", "c3", "c4"))
    result = skill_project.run(
        "--agents",
        "logging_agent:LoggingAgent",
        *RUN,
        "--n-attempts",
        "3",
        "--stop-on-pass",
        "--n-concurrent",
        n_concurrent,
        "-rs",
    )
    result.assert_outcomes(passed=4, skipped=8)
    assert "--stop-on-pass: attempt 1 of this case already passed" in result.stdout.str()
    events = _events(agent_log)
    assert len([e for e in events if e["event"] == "start"]) == 4
    assert _open_at_once(events) == int(n_concurrent)  # the four first attempts fill the window
    res = skill_project.result_json("demo")
    assert res["coverage"]["publication_complete"] is True
    assert (res["coverage"]["run_trials"], res["coverage"]["expected_trials"]) == (4, 4)
    assert "4/4 trials run" in result.stdout.str()
    assert result.ret == 0


def test_stop_on_pass_needs_more_than_one_attempt(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run(*LOCAL_REPLAY, "--stop-on-pass")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--stop-on-pass needs --n-attempts above 1" in result.stderr.str()


def test_plan_line_before_the_first_trial(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1", "c2"))
    result = skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "--n-attempts", "2")
    result.stdout.fnmatch_lines(["skilleval: demo: 8 trials planned (2 cases x 1 agent x 2 arms x 2 attempts)"])
    result = skill_project.run("--agents", "codex,replay", "--env-mode", "local", "--co")
    result.stdout.fnmatch_lines(["*calls models through codex*"])


def test_max_cases_counts_native_tasks_in_staged_order(skill_project: SkillProject) -> None:
    """Dataset order first, then native tasks by folder name; the snapshot covers only what is selected."""
    skill = skill_project.make_skill("demo", simple_entries("c1", "c2"), grader=False)
    for name in ("n-b", "n-a"):
        task = skill / "evals" / "harbor" / name
        (task / "tests").mkdir(parents=True)
        (task / "task.toml").write_text(f'schema_version = "1.4"\n[task]\nname = "demo/{name}"\n')
        (task / "instruction.md").write_text(f"do {name}\n")
        (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    result = skill_project.run(
        *LOCAL_REPLAY, "--grading-mode", "custom_only", "--skip-baseline", "--max-cases", "3", "--co", "-q"
    )
    ids = [line for line in result.stdout.lines if "::" in line]
    assert [line.split("::")[1].split("[")[0] for line in ids] == ["c1", "c2", "n-a"]
