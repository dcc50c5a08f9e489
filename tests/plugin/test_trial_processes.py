"""--trial-processes N: the scheduler's trials run in N processes beside pytest's, with the records a run inside the
pytest process gives; -x and a dead trial process end cleanly."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support import FIXTURES, LOCAL_REPLAY, LOGGING_AGENT, SkillProject, logging_agent_log, simple_entries

RUN = ("--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only", "--skip-baseline")

# An agent that ends the process it runs in: in a trial process, that process; its trials must error, not hang.
EXITING_AGENT = (
    LOGGING_AGENT
    + '''
class ExitingAgent(LoggingAgent):
    async def run(self, instruction, environment, context):
        await super().run(instruction, environment, context)
        import sys
        sys.stderr.write("about to exit, holding " + os.environ["SKILLEVAL_TEST_TOKEN"] + "\\n")
        sys.stderr.flush()
        os._exit(3)
'''
)


@pytest.fixture
def agent_log(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> Path:
    return logging_agent_log(skill_project, monkeypatch, EXITING_AGENT)


def _starts(log: Path) -> list[dict]:
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [event for event in events if event["event"] == "start"]


def _trial_processes_in(folder: Path) -> list[int]:
    """Live trial processes working in `folder` (a run's trial processes start in its directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if b"pytest_skilleval.harbor.trial_driver" in argv and cwd.is_relative_to(folder):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("processes", [1, 2])
def test_trials_run_in_the_trial_processes_with_the_records_a_run_in_pytest_gives(
    skill_project: SkillProject, processes: int
) -> None:
    """Replayed trials of the hello skill: every item's outcome and every trial's scores are those of a run inside
    the pytest process, and the trials ran in `processes` other processes."""
    skill_project.copy_hello_skill(cases=["explicit-greeting", "negative-arithmetic"])
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--n-attempts", "2", "--n-concurrent", "6", "-v")
    inside = skill_project.run(*args)
    inside_result = skill_project.result_json("hello-skill")
    shutil.rmtree(skill_project.root / "results")
    beside = skill_project.run(*args, "--trial-processes", str(processes))
    beside_result = skill_project.result_json("hello-skill")

    def outcome_lines(run: pytest.RunResult) -> list[str]:
        return sorted(line for line in run.stdout.lines if " PASSED" in line or " FAILED" in line or "ERROR" in line)

    def scores(result: dict) -> list[tuple]:
        return sorted(
            (t["case"], t["arm"], t["attempt"], t["status"], t["overall"], json.dumps(t.get("metrics"), sort_keys=True))
            for t in result["trials"]
        )

    assert len(outcome_lines(inside)) == 8
    assert outcome_lines(inside) == outcome_lines(beside)
    assert scores(inside_result) == scores(beside_result)
    assert beside_result["run_config"]["trial_processes"] == processes


def test_each_trial_process_runs_its_share_and_none_is_left(skill_project: SkillProject, agent_log: Path) -> None:
    skill_project.make_skill("demo", simple_entries(*[f"c{i}" for i in range(8)]))
    result = skill_project.run(
        "--agents", "logging_agent:LoggingAgent", *RUN, "--n-concurrent", "4", "--trial-processes", "2"
    )
    result.assert_outcomes(passed=8)
    starts = _starts(agent_log)
    assert len(starts) == 8
    runners = {start["pid"] for start in starts}
    parents = {start["ppid"] for start in starts}
    assert len(runners) == 2  # two trial processes, both used
    assert len(parents) == 1 and not parents & runners  # children of the pytest process, which ran none itself


def test_auto_starts_one_trial_process_per_core(skill_project: SkillProject, agent_log: Path) -> None:
    """`--trial-processes auto` on this machine: one per core it may run on (at most as many as trials in flight
    here: 4), or, on a single core, none (the trials then run in the pytest process)."""
    skill_project.make_skill("demo", simple_entries(*[f"c{i}" for i in range(8)]))
    result = skill_project.run(
        "--agents", "logging_agent:LoggingAgent", *RUN, "--n-concurrent", "4", "--trial-processes", "auto"
    )
    result.assert_outcomes(passed=8)
    starts = _starts(agent_log)
    runners = {start["pid"] for start in starts}
    parents = {start["ppid"] for start in starts}
    cores = len(os.sched_getaffinity(0))
    if cores >= 2:
        assert len(runners) == min(cores, 4) and len(parents) == 1 and not parents & runners
    else:
        assert len(runners) == 1  # the pytest process itself
    assert skill_project.result_json("demo")["run_config"]["trial_processes"] == "auto"


def test_trial_processes_compose_with_xdist(skill_project: SkillProject, agent_log: Path) -> None:
    skill_project.make_skill("demo", simple_entries(*[f"c{i}" for i in range(8)]))
    result = skill_project.run(
        "--agents", "logging_agent:LoggingAgent", *RUN, "--n-concurrent", "2", "-n", "2", "--trial-processes", "1"
    )
    result.assert_outcomes(passed=8)
    starts = _starts(agent_log)
    assert len(starts) == 8  # no trial ran twice
    assert len({start["ppid"] for start in starts}) == 2  # each worker's own trial process
    assert len({start["pid"] for start in starts}) == 2


def test_exitfirst_cancels_the_trials_in_flight_in_the_trial_process(
    skill_project: SkillProject, agent_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = skill_project.make_skill("demo", simple_entries(*[f"c{i}" for i in range(12)]))
    shutil.copy2(FIXTURES / "graders" / "scores_low.py", skill / "evals" / "grader.py")
    monkeypatch.setenv("SKILLEVAL_TEST_SLEEP", "0.4")
    result = skill_project.run(
        "--agents",
        "logging_agent:LoggingAgent",
        *RUN,
        "--n-concurrent",
        "3",
        "--trial-processes",
        "1",
        "-x",
    )
    result.assert_outcomes(failed=1)
    assert 1 <= len(_starts(agent_log)) <= 3  # the failing trial and at most the look-ahead already in flight
    assert _trial_processes_in(skill_project.root) == []  # ended with the session


def test_a_trial_process_that_dies_errors_its_trials_with_its_exit_status(
    skill_project: SkillProject, agent_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its last lines are shown, redacted: a credential it printed never reaches the terminal."""
    token = "sk-proj-" + "Q7x9" * 10
    monkeypatch.setenv("SKILLEVAL_TEST_TOKEN", token)
    monkeypatch.setenv("OPENAI_API_KEY", token)
    skill_project.make_skill("demo", simple_entries("c1", "c2"))
    result = skill_project.run(
        "--agents", "logging_agent:ExitingAgent", *RUN, "--n-concurrent", "1", "--trial-processes", "1", "-rE"
    )
    result.assert_outcomes(errors=2)
    assert len(_starts(agent_log)) == 1  # the second trial was never started in a dead process
    assert result.stdout.str().count("trial process 0 (pid ") >= 2
    assert "exited with status 3" in result.stdout.str()
    assert "about to exit, holding [REDACTED]" in result.stdout.str()
    assert token not in result.stdout.str() + result.stderr.str()


def test_a_docker_skill_runs_its_trials_in_the_pytest_process() -> None:
    """Docker trials stay where their Ctrl+C clean-up lives, whatever --trial-processes says; another skill's trials
    in the same session still go to the trial processes, each skill decided once."""
    import asyncio

    from pytest_skilleval.dispatch import _routed
    from pytest_skilleval.skill.plan import TrialSpec
    from pytest_skilleval.skill.settings import RunSettings

    def spec(skill: str, attempt: int) -> TrialSpec:
        return TrialSpec(
            skill_dir=Path("/") / skill,
            skill_name=skill,
            case_id="c",
            source="dataset",
            agent="a",
            arm="with_skill",
            attempt=attempt,
        )

    ran: list[str] = []
    asked: list[Path] = []

    class Runner:
        async def run_async(self, spec: TrialSpec) -> str:
            ran.append(f"{spec.skill_name} here")
            return "record"

    class Processes:
        async def run(self, spec: TrialSpec) -> str:
            ran.append(f"{spec.skill_name} beside")
            return "record"

    class Skill:
        def __init__(self, mode: str) -> None:
            self.settings = RunSettings(env_mode=mode, trial_processes=2)

    class State:
        config = None  # not an xdist worker

        def skill(self, path: Path) -> Skill:
            asked.append(path)
            return Skill("docker" if path.name == "boxed" else "local")

    run = _routed(Runner(), State(), Processes())  # type: ignore[arg-type]

    async def all_of_them() -> None:
        for attempt in (1, 2):
            await run(spec("boxed", attempt))
            await run(spec("plain", attempt))

    asyncio.run(all_of_them())
    assert ran == ["boxed here", "plain beside", "boxed here", "plain beside"]
    assert asked == [Path("/boxed"), Path("/plain")]
