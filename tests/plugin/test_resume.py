"""--resume: an interrupted run finished in its own folder, with every trial run exactly once in all."""

from __future__ import annotations

import json
import shutil
import signal

import pytest

from pytest_skilleval.results.run_folder import run_folders
from tests.support import LOCAL_REPLAY, LOGGING_AGENT, SkillProject, simple_entries

INTERRUPT_CONFTEST = '''
import os, signal, time
from pathlib import Path

def pytest_runtest_logreport(report):
    """Ctrl+C after N trials, when asked to."""
    limit = int(os.environ.get("INTERRUPT_AFTER", "0") or 0)
    if limit and report.when == "call":
        done = int(os.environ.get("_DONE", "0")) + 1
        os.environ["_DONE"] = str(done)
        if done >= limit:
            raise KeyboardInterrupt

def pytest_runtest_logfinish(nodeid, location):
    """SIGKILL this pytest process, as `kill -9` would, once N items are done and their N trial files are in the
    run folder (a writer thread writes them), when asked to. No session end runs."""
    limit = int(os.environ.get("KILL_AFTER", "0") or 0)
    if not limit:
        return
    done = int(os.environ.get("_FINISHED", "0")) + 1
    os.environ["_FINISHED"] = str(done)
    if done < limit:
        return
    deadline = time.monotonic() + 60
    while len(list(Path("results").glob("demo/2*/*/*/trials/*.json"))) < limit and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGKILL)
'''

RUN = (
    "--agents",
    "logging_agent:LoggingAgent",
    "--env-mode",
    "local",
    "--ek",
    "sandbox=none",
    "--grading-mode",
    "custom_only",
    "--n-attempts",
    "2",
    "--n-concurrent",
    "1",
)


@pytest.fixture
def project(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> SkillProject:
    skill_project.pytester.makepyfile(logging_agent=LOGGING_AGENT)
    skill_project.pytester.makeconftest(INTERRUPT_CONFTEST)
    monkeypatch.setenv("PYTHONPATH", str(skill_project.root))
    monkeypatch.setenv("SKILLEVAL_TEST_LOG", str(skill_project.root / "agent.log"))
    monkeypatch.setenv("SKILLEVAL_TEST_SLEEP", "0")
    skill_project.make_skill("demo", simple_entries("c1", "c2", "c3"))
    return skill_project


def _starts(project: SkillProject) -> int:
    log = project.root / "agent.log"
    return sum(1 for line in log.read_text().splitlines() if '"start"' in line) if log.exists() else 0


def _comparable(result: dict) -> dict:
    return {key: result.get(key) for key in ("agents", "verdict", "coverage", "execution_status")}


def _strip_times(value):
    if isinstance(value, dict):
        return {
            k: _strip_times(v) for k, v in value.items() if "seconds" not in k and k not in ("run_dir", "trial_dir")
        }
    if isinstance(value, list):
        return [_strip_times(v) for v in value]
    return value


@pytest.mark.parametrize("stop", ["ctrl-c", "sigkill"])
def test_resume_finishes_an_interrupted_run(project: SkillProject, monkeypatch: pytest.MonkeyPatch, stop: str) -> None:
    """Ctrl+C ends the session (result.json says interrupted); SIGKILL leaves only what was written as trials
    finished. Either way `--resume latest` runs the rest, in the same folder."""
    monkeypatch.setenv("INTERRUPT_AFTER" if stop == "ctrl-c" else "KILL_AFTER", "5")
    first = project.run(*RUN)
    assert first.ret == (pytest.ExitCode.INTERRUPTED if stop == "ctrl-c" else -signal.SIGKILL)
    runs = sorted((project.root / "results" / "demo").glob("2*"))
    assert len(runs) == 1
    assert len(list(runs[0].glob("*/*/trials/*.json"))) == 5
    if stop == "ctrl-c":
        interrupted = json.loads((runs[0] / "result.json").read_text())
        assert interrupted["execution_status"] == "interrupted"
    else:
        assert not (runs[0] / "result.json").exists()  # an unfinished run folder, to every reader
        assert run_folders(project.root / "results" / "demo") == []
        killed_config = json.loads((runs[0] / "run_config.json").read_text())
    assert _starts(project) == 5

    monkeypatch.setenv("INTERRUPT_AFTER", "0")
    monkeypatch.setenv("KILL_AFTER", "0")
    resumed = project.run(*RUN, "--resume", "latest")
    resumed.assert_outcomes(passed=12)
    assert _starts(project) == 12  # the 5 finished trials were read back, not run again
    assert sorted((project.root / "results" / "demo").glob("2*")) == runs  # the same run folder
    finished = json.loads((runs[0] / "result.json").read_text())
    assert finished["execution_status"] == "succeeded"
    assert finished["coverage"]["publication_complete"] is True
    assert len(finished["trials"]) == 12

    # The same aggregate as a run that was never interrupted.
    (project.root / "agent.log").unlink()
    shutil.move(project.root / "results", project.root / "resumed-results")
    project.run(*RUN).assert_outcomes(passed=12)
    assert _starts(project) == 12
    fresh = project.result_json("demo")
    assert _strip_times(_comparable(fresh)) == _strip_times(_comparable(finished))
    if stop == "sigkill":  # what the killed run wrote first is what a whole run writes at its end
        assert killed_config == fresh["run_config"]


def test_resume_refuses_a_changed_dataset_or_settings(project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERRUPT_AFTER", "2")
    project.run(*RUN)
    monkeypatch.setenv("INTERRUPT_AFTER", "0")
    changed = project.run(*RUN[:-4], "--n-attempts", "3", "--n-concurrent", "1", "--resume", "latest")
    assert changed.ret == pytest.ExitCode.USAGE_ERROR
    assert "settings changed since that run: n_attempts" in changed.stderr.str()
    dataset = project.root / "skills" / "demo" / "evals" / "evals.json"
    data = json.loads(dataset.read_text())
    data["evals"][0]["prompt"] = "something else"
    dataset.write_text(json.dumps(data))
    edited = project.run(*RUN, "--resume", "latest")
    assert edited.ret == pytest.ExitCode.USAGE_ERROR
    assert "the dataset changed since that run" in edited.stderr.str()


def test_resume_of_an_unknown_run_is_a_usage_error(project: SkillProject) -> None:
    result = project.run(*RUN, "--resume", "20990101_000000_1_000000000000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no run 20990101_000000_1_000000000000" in result.stderr.str()


def test_a_resumed_run_never_starts_a_stored_trial_ahead(project: SkillProject) -> None:
    """The trials started ahead while an item waits (--n-concurrent) are only those that will run: a stored trial
    after one that runs is handed back, not run again in the background."""
    project.run(*RUN, "-k", "c2").assert_outcomes(passed=4)
    assert _starts(project) == 4
    resumed = project.run(*RUN[:-2], "--n-concurrent", "4", "--resume", "latest")
    resumed.assert_outcomes(passed=12)
    assert _starts(project) == 12  # c1 and c3 once each; c2's four trials read back


def test_a_resumed_runs_passing_attempt_stops_the_later_attempts(
    project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--stop-on-pass across a resume: an attempt that passed before the interruption skips the later attempts of
    its case, as in a run never interrupted (one trial per case and arm in all)."""
    monkeypatch.setenv("INTERRUPT_AFTER", "1")
    assert project.run(*RUN, "--stop-on-pass").ret == pytest.ExitCode.INTERRUPTED
    assert _starts(project) == 1
    monkeypatch.setenv("INTERRUPT_AFTER", "0")
    resumed = project.run(*RUN, "--stop-on-pass", "--resume", "latest")
    resumed.assert_outcomes(passed=6, skipped=6)
    assert _starts(project) == 6
    trials = json.loads(next((project.root / "results" / "demo").glob("2*/result.json")).read_text())["trials"]
    assert sorted((t["attempt"], t["status"]) for t in trials) == [(1, "scored")] * 6 + [(2, "skipped")] * 6


def test_a_virtualenv_made_in_the_skill_does_not_stop_its_resume(
    project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A skill author who makes (or updates) a .venv inside the skill folder between a run and its --resume changed
    nothing the agent is given (its copy leaves .venv out): the run resumes. An edit to SKILL.md is still refused."""
    monkeypatch.setenv("INTERRUPT_AFTER", "2")
    project.run(*RUN)
    monkeypatch.setenv("INTERRUPT_AFTER", "0")
    skill = project.root / "skills" / "demo"
    for venv in (skill / ".venv", skill / "evals" / ".venv"):
        (venv / "lib").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (venv / "lib" / "site.py").write_text("import os\n")
    resumed = project.run(*RUN, "--resume", "latest")
    assert resumed.ret == 0, resumed.stdout.str() + resumed.stderr.str()
    assert "reuses 2 of 12 planned trials" in " ".join(resumed.stdout.str().split())
    (skill / "SKILL.md").write_text((skill / "SKILL.md").read_text() + "\nOne more line.\n")
    edited = project.run(*RUN, "--resume", "latest")
    assert edited.ret == pytest.ExitCode.USAGE_ERROR
    assert "the skill's files changed since that run" in edited.stderr.str()


@pytest.mark.parametrize("extra", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_a_changed_dataset_refuses_its_skill_and_the_others_resume(
    skill_project: SkillProject, extra: tuple[str, ...]
) -> None:
    """Two skills, a partial run, then one skill's dataset edited: `--resume` stopped the whole session. The other
    skill finishes its run; the changed one is one error naming the fix, and its part of the run is left as it was.
    With every skill changed the session still stops at its start."""
    demo = skill_project.make_skill("demo", simple_entries("c1", "c2"))
    other = skill_project.make_skill("other", simple_entries("c1"))
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline", *extra, "skills")
    skill_project.run(*args, "-k", "not c2").assert_outcomes(passed=2)
    [run] = sorted((skill_project.root / "results" / "demo").glob("2*"))
    others_part = skill_project.root / "results" / "other" / run.name
    before = {path: path.read_bytes() for path in others_part.rglob("*") if path.is_file()}
    for skill in (other, demo):
        dataset = skill / "evals" / "evals.json"
        data = json.loads(dataset.read_text())
        data["evals"][0]["prompt"] = "something else"
        dataset.write_text(json.dumps(data))
        resumed = skill_project.run(*args, "--resume", run.name)
        if skill == demo:
            break
        said = " ".join(resumed.stdout.str().split())
        resumed.assert_outcomes(passed=2, errors=1)
        # The start says which skill runs nothing and why, beside the one that resumes.
        assert f"skilleval: other: no trials: --resume {run.name} (other): the dataset changed" in said, said
        assert "(its collection error below)" in said, said
        assert "skilleval: demo: --resume " in said and "reuses 1 of 2 planned trials, runs 1" in said, said
        [error] = [line for line in resumed.stdout.lines if line.startswith("ERROR ")]
        assert error.startswith("ERROR skills/other/evals/evals.json"), error
        assert (
            f"--resume {run.name} (other): the dataset changed since that run (its digest differs); run other in a new "
            "run (the same command without --resume, for its folder alone)" in said
        ), said
        finished = json.loads((run / "result.json").read_text())
        assert finished["execution_status"] == "succeeded"
        assert sorted(t["case"] for t in finished["trials"]) == ["c1", "c2"]
        assert {path: path.read_bytes() for path in others_part.rglob("*") if path.is_file()} == before
    assert resumed.ret == pytest.ExitCode.USAGE_ERROR
    assert "the dataset changed since that run" in resumed.stderr.str()
