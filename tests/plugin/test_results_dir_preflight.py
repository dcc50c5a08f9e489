"""A results folder that cannot be written stops the run in the preflight, one line naming where it was given and
the fix, before any trial is run and paid for; one that stops being writable during the run costs one line at the
end, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import LOCAL_REPLAY, SkillProject

RUN = (*LOCAL_REPLAY, "--skip-baseline", "--n-concurrent", "1")


@pytest.fixture
def project(skill_project: SkillProject) -> SkillProject:
    skill_project.copy_hello_skill(cases=["explicit-greeting"])
    return skill_project


def _tree(root: Path) -> list[str]:
    """Every path under the project but pytester's own (its basetemp and captured output)."""
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if not path.relative_to(root).parts[0].startswith(("runpytest", "stdout", "stderr"))
    )


def _preflight_line(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert "preflight failed (nothing was started)" in output and "PASSED" not in output
    [line] = [line.strip() for line in output.splitlines() if "results" in line.lower() and "folder" in line]
    return line


@pytest.mark.parametrize("source", ["flag", "ini", "env"])
def test_a_results_dir_that_is_a_file_stops_the_run_at_once(
    project: SkillProject, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    plain = project.root / "afile"
    plain.write_text("not a folder\n")
    before = _tree(project.root)
    argv = ["--skill-eval", "-p", "no:cacheprovider", *RUN]
    if source == "flag":
        argv += ["--results-dir", str(plain)]
    elif source == "ini":
        argv += ["-o", f"skilleval_results_dir={plain}"]
    else:
        monkeypatch.setenv("SKILLEVAL_RESULTS_DIR", str(plain))
    line = _preflight_line(project.pytester.runpytest_subprocess(*argv, timeout=300))
    given = {
        "flag": f"--results-dir {plain}",
        "ini": f"ini skilleval_results_dir = {plain}",
        "env": f"SKILLEVAL_RESULTS_DIR={plain}",
    }[source]
    assert line.startswith(f"{given}: {plain} is a file, not a folder; ")
    assert ("pass a folder" if source == "flag" else "or pass --results-dir DIR") in line
    assert plain.read_text() == "not a folder\n"
    assert _tree(project.root) == before  # nothing made, not even a probe


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_a_results_dir_where_no_folder_can_be_made_stops_the_run(project: SkillProject) -> None:
    argv = ("--skill-eval", "-p", "no:cacheprovider", *RUN, "--results-dir", "/proc/skilleval-nowhere")
    line = _preflight_line(project.pytester.runpytest_subprocess(*argv, timeout=300))
    assert line.startswith("--results-dir /proc/skilleval-nowhere: no folder can be made in /proc (")


def test_a_missing_results_dir_is_made_by_the_run_and_not_by_the_preflight(project: SkillProject) -> None:
    """A folder that does not exist yet is fine (the run makes it); a preflight that stops for another reason leaves
    none behind."""
    target = project.root / "new" / "deeper"
    argv = ("--skill-eval", "-p", "no:cacheprovider", *RUN, "--results-dir", str(target), "--ek", "no-such-key=1")
    result = project.pytester.runpytest_subprocess(*argv, timeout=300)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "no-such-key" in result.stdout.str() + result.stderr.str()
    assert not (project.root / "new").exists()
    project.pytester.runpytest_subprocess(*argv[:-2], timeout=300).assert_outcomes(passed=1)
    assert list((target / "hello-skill").glob("2*/result.json"))


def test_a_results_folder_that_stops_being_writable_costs_one_line_at_the_end(project: SkillProject) -> None:
    """The preflight found it writable; by the run's end it is a file: the outcomes stand, the summary says in one
    line that nothing was written and why, and the session ends without a traceback."""
    results = project.root / "results"
    project.pytester.makeconftest(
        f"""
import shutil
from pathlib import Path

def pytest_runtest_teardown(item):
    results = Path({str(results)!r})
    if results.is_dir():
        shutil.move(results, results.with_name("moved"))
    results.write_text("a file now\\n")
"""
    )
    result = project.run(*RUN)
    result.assert_outcomes(passed=1)
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    [line] = [line for line in output.splitlines() if "no results written" in line]
    assert line.startswith("skilleval: hello-skill: no results written: Not a directory at ")
    assert "make it a writable folder, or pass --results-dir DIR" in line
    assert results.read_text() == "a file now\n"
