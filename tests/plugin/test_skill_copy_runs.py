"""The skill copy the with-skill agent is given (skill/skill_copy.py), proven from inside the sandbox: a results
folder inside the skill (this run's, or any earlier run folder) never reaches it, a relative link that stays inside
works there, and a link leaving the skill folder is one collection error for that skill while another still runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_skilleval.authoring.validate import validate_skill
from pytest_skilleval.pytest_outputs import pytest_outputs
from tests.support import LOCAL_REPLAY, SkillProject, grow_sparse, shell_replay

CASE = "explicit-greeting"
# What the agent sees of its skill: every path of the installed copy, then the text of a linked script.
LISTING = "find {skills_dir}/hello-skill | sort; echo LINKED:; head -c 200 {skills_dir}/hello-skill/scripts/alias.py"


def _listing_skill(project: SkillProject) -> Path:
    skill = project.copy_hello_skill(cases=[CASE])
    replay = skill / "evals" / "replays" / f"{CASE}.with-skill.json"
    replay.write_text(json.dumps(shell_replay(LISTING)))
    os.symlink("greet.py", skill / "scripts" / "alias.py")  # a relative link inside the skill: kept as a link
    return skill


def _seen_by_agent(results_root: Path) -> str:
    """The recorded trajectory of the newest run's with-skill trial: what the listing printed in the sandbox."""
    runs = sorted(path for path in results_root.glob("2*") if path.is_dir())
    trial = runs[-1] / "replay" / "with_skill" / "trials" / f"{CASE}.1.json"
    return json.dumps(json.loads(trial.read_text())["trajectory"])


def _run(project: SkillProject, results_dir: Path, *more: str) -> str:
    result = project.run(*LOCAL_REPLAY, "--skip-baseline", "--results-dir", str(results_dir), *more)
    outcomes = result.parseoutcomes()  # the listing replay need not pass: its trial file is what is checked
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1 and "errors" not in outcomes, outcomes
    return result.stdout.str()


def test_results_inside_the_skill_never_reach_the_agent(skill_project: SkillProject) -> None:
    skill = _listing_skill(skill_project)
    inside = skill / "out"  # a --results-dir inside the skill, as a skill at a repository root with the README's CI
    _run(skill_project, inside)
    output = _run(skill_project, inside)  # the audit's repro: the second run's agent saw the first run's answers
    assert len(list((inside / "hello-skill").glob("2*/result.json"))) == 2
    seen = _seen_by_agent(inside / "hello-skill")
    assert "hello-skill/SKILL.md" in seen and "hello-skill/scripts/greet.py" in seen  # the listing did run
    for leaked in ("out", "dataset_snapshot.json", "result.json", f"{CASE}.1.json", "run_config.json"):
        assert f"hello-skill/{leaked}" not in seen and f"/{leaked}" not in seen.replace("/SKILL.md", ""), leaked
    assert "two-line welcome greeting" in seen.rsplit("LINKED:", 1)[1]  # the inside link resolved in the sandbox
    # said once, naming the folder and the fix
    notes = [line for line in output.splitlines() if "results lie inside the skill folder" in line]
    assert len(notes) == 1 and "(out/)" in notes[0] and "--results-dir a folder outside" in notes[0]
    # the results written inside the skill do not count as a change of the skill: --resume still finishes the run
    assert "digest differs" not in _run(skill_project, inside, "--resume", "latest")

    # a run that writes elsewhere: the run folders left inside (an earlier --results-dir) are found by their marker
    outside = skill_project.root / "elsewhere"
    output = _run(skill_project, outside)
    seen = _seen_by_agent(outside / "hello-skill")
    assert "hello-skill/SKILL.md" in seen and "hello-skill/out" not in seen and "result.json" not in seen
    assert "(out/hello-skill/)" in output
    assert len(list((inside / "hello-skill").glob("2*/result.json"))) == 2  # the user's folders are left as they were
    assert (skill / "scripts" / "alias.py").is_symlink()


def test_a_link_leaving_the_skill_is_one_collection_error_and_the_other_skill_runs(
    skill_project: SkillProject,
) -> None:
    elsewhere = skill_project.root / "elsewhere"
    elsewhere.mkdir()
    broken = skill_project.copy_hello_skill("broken-skill", cases=[CASE])
    (elsewhere / "SKILL.md").write_text((broken / "SKILL.md").read_text())
    (broken / "SKILL.md").unlink()
    os.symlink(elsewhere / "SKILL.md", broken / "SKILL.md")
    skill_project.copy_hello_skill("hello-skill", cases=[CASE])

    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline")  # one broken skill: the others still run
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    lines = [line for line in output.splitlines() if "broken-skill/SKILL.md: a symbolic link to" in line]
    assert len(lines) == 1, output
    assert "leaving the skill folder" in lines[0] and "copy the file into the skill folder" in lines[0]
    assert skill_project.result_json("hello-skill")["trials"]
    assert not list((skill_project.root / "results").glob("broken-skill/*/result.json"))

    findings = [f for f in validate_skill(broken).findings if f.rule == "skill-link"]
    assert [f.severity for f in findings] == ["error"] and findings[0].path == broken.resolve() / "SKILL.md"


def test_files_the_pytest_session_writes_inside_the_skill_never_reach_the_agent(skill_project: SkillProject) -> None:
    """pytest's own output pointed inside the skill (a JUnit report, the cache of a run whose rootdir is the skill
    folder, in its default place or another `cache_dir`) is neither in the agent's copy nor in the skill's digest."""
    skill = _listing_skill(skill_project)
    results = skill_project.root / "results"
    session_args = (
        *LOCAL_REPLAY,
        "--skill-eval",
        "--skip-baseline",
        "--results-dir",
        str(results),
        "--rootdir",
        str(skill),
        "--junitxml",
        str(skill / "junit.xml"),
        "--log-file",
        str(skill / "logs" / "pytest.log"),
    )

    def run(*more: str) -> str:
        result = skill_project.pytester.runpytest_subprocess(*session_args, *more, str(skill), timeout=300)
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1 and "errors" not in outcomes, outcomes
        return result.stdout.str()

    run()
    run("-o", "cache_dir=pytest-cache")
    assert (skill / "junit.xml").is_file() and (skill / ".pytest_cache").is_dir() and (skill / "pytest-cache").is_dir()
    assert (skill / "logs" / "pytest.log").is_file()
    # the third run's agent, in a trial process beside pytest's: every file the first two wrote is there
    output = run("-o", "cache_dir=pytest-cache", "--trial-processes", "1")
    seen = _seen_by_agent(results / "hello-skill")
    assert "hello-skill/SKILL.md" in seen and "hello-skill/scripts/greet.py" in seen  # the listing did run
    for leaked in ("junit.xml", ".pytest_cache", "pytest-cache", "pytest.log"):
        assert leaked not in seen, (leaked, seen)
    assert "results lie inside the skill folder" not in output
    # what the session wrote at its end does not count as a change of the skill: --resume finishes the run
    assert "digest differs" not in run("-o", "cache_dir=pytest-cache", "--resume", "latest")


class _ReportPlugins:
    """The options pytest-reportlog, pytest-html and pytest-json-report declare (none is installed here)."""

    @staticmethod
    def pytest_addoption(parser: pytest.Parser) -> None:
        parser.addoption("--report-log", dest="report_log")
        parser.addoption("--html", dest="htmlpath")
        parser.addoption("--json-report", dest="json_report", action="store_true")
        parser.addoption("--json-report-file", dest="json_report_file", default=".report.json")


def test_pytest_outputs_names_every_report_option(pytester: pytest.Pytester) -> None:
    pytester.plugins.append(_ReportPlugins())
    root = pytester.path.resolve()
    config = pytester.parseconfig(
        "--junitxml=out/junit.xml", "--report-log=log.jsonl", "--html=~/report.html", "-o", "cache_dir=cache"
    )
    basetemp = Path(config.option.basetemp).resolve()  # pytester's own --basetemp
    assert pytest_outputs(config) == (
        root / "out" / "junit.xml",
        basetemp,
        root / "log.jsonl",
        Path.home().resolve() / "report.html",
        config.rootpath.resolve() / "cache",
    )
    config = pytester.parseconfig("--json-report", "-p", "no:cacheprovider", "-o", "log_file=run.log")
    assert pytest_outputs(config) == (basetemp, root / "run.log", root / ".report.json")


def test_a_fifo_or_huge_file_in_evals_does_not_stall_the_run(skill_project: SkillProject) -> None:
    """The skill's digest covers evals/, which no copy cap covers: a FIFO there blocked the run before its first
    trial (the digest opened it and waited for a writer), and a huge file was read whole into memory."""
    skill = skill_project.copy_hello_skill(cases=[CASE])
    os.mkfifo(skill / "evals" / "notes.fifo")
    grow_sparse(skill / "evals" / "big.bin")
    before = {path: os.lstat(path).st_mtime_ns for path in skill.rglob("*")}
    argv = ["--skill-eval", "-p", "no:cacheprovider", "--results-dir", str(skill_project.root / "results")]
    result = skill_project.pytester.runpytest_subprocess(*argv, *LOCAL_REPLAY, "--skip-baseline", timeout=120)
    result.assert_outcomes(passed=1)
    assert {path: os.lstat(path).st_mtime_ns for path in skill.rglob("*")} == before
