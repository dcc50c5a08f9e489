"""Real Harbor trials through the plugin: local environment + replay agent, both arms, both sandbox modes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pytest_skilleval.harbor.sandbox.bwrap import usable_bwrap
from tests.support import FIXTURES, LOCAL_REPLAY, LOGGING_AGENT, SkillProject, require_system, simple_entries

SANDBOXES = ["bwrap", "none"]
CUSTOM = ("--grading-mode", "custom_only")


def _trials(result: dict) -> dict[tuple[str, str, str, int], dict]:
    return {(t["case"], t["agent"], t["arm"], t["attempt"]): t for t in result["trials"]}


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_hello_skill_runs_both_arms_and_the_skill_wins(skill_project: SkillProject, sandbox: str) -> None:
    if sandbox == "bwrap" and usable_bwrap()[0] is None:
        require_system(f"bubblewrap ({usable_bwrap()[1]})", "apt-get install bubblewrap (or run .ci/run)")
    skill_project.copy_hello_skill()
    result = skill_project.run(*LOCAL_REPLAY, "--ek", f"sandbox={sandbox}", "--n-attempts", "2", "-v")
    result.assert_outcomes(passed=16)
    summary = result.stdout.str()
    assert "Results by Case" in summary
    assert re.search(r"explicit-greeting\s+with skill\s+1\.0000\s+2/2\s+2 passed", summary)
    assert "Results by Dimension" in summary and "pass@k (k=2" in summary
    trials = _trials(skill_project.result_json("hello-skill"))
    assert len(trials) == 16
    for case in ("explicit-greeting", "implicit-greeting", "contextual-greeting"):
        with_skill = trials[(case, "replay", "with_skill", 1)]
        without = trials[(case, "replay", "without_skill", 1)]
        assert with_skill["status"] == "scored"
        assert with_skill["overall"] > without["overall"], case
    # The user's skill folder is never written to: results went to --results-dir.
    assert not (skill_project.root / "skills" / "hello-skill" / "evals" / "results").exists()


def test_grader_runs_inside_the_sandbox_and_sees_the_entry(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run(*LOCAL_REPLAY, *CUSTOM, "-v")
    result.assert_outcomes(passed=2)
    trials = _trials(skill_project.result_json("demo"))
    assert trials[("c1", "replay", "with_skill", 1)]["overall"] == 1.0
    assert trials[("c1", "replay", "with_skill", 1)]["custom_metrics"] == {"saw_entry": 1.0}


def test_with_skill_below_threshold_fails_and_baseline_never_fails(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    shutil.copy2(FIXTURES / "graders" / "scores_low.py", skill / "evals" / "grader.py")
    result = skill_project.run(*LOCAL_REPLAY, *CUSTOM, "-v")
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str()
    assert "c1[replay-with_skill-1] FAILED" in output
    assert "c1[replay-without_skill-1] PASSED (0.30)" in output
    assert "overall 0.3000 < pass threshold 0.50" in output


def test_pass_threshold_option(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    shutil.copy2(FIXTURES / "graders" / "scores_low.py", skill / "evals" / "grader.py")
    result = skill_project.run(*LOCAL_REPLAY, *CUSTOM, "--skip-baseline", "--pass-threshold", "0.25")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("grader", "message"),
    [("crashes.py", "grader.py exited with code 1"), ("writes_nothing.py", "wrote neither reward.json nor reward.txt")],
)
def test_grader_problems_are_item_errors_naming_the_logs(
    skill_project: SkillProject, grader: str, message: str
) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    shutil.copy2(FIXTURES / "graders" / grader, skill / "evals" / "grader.py")
    result = skill_project.run(*LOCAL_REPLAY, *CUSTOM, "--skip-baseline")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert message in output
    assert "trial logs:" in output
    assert "Traceback" not in output
    # The folder it names is gone once the run ends (no --harbor-keep-jobs), and the error says so and how to keep
    # it, rather than pointing an author at a path that no longer exists.
    named = Path(re.search(r"trial logs: (\S+?);", output)[1])  # type: ignore[index]
    assert not named.exists()
    assert "removed once its results are written: rerun with --harbor-keep-jobs to read them" in output
    assert "Harbor's result, and --harbor-keep-jobs keeps its logs" in " ".join(output.split())
    kept = skill_project.run(*LOCAL_REPLAY, *CUSTOM, "--skip-baseline", "--harbor-keep-jobs")
    kept.assert_outcomes(errors=1)
    assert Path(re.search(r"trial logs: (\S+?)\)", kept.stdout.str())[1]).is_dir()  # type: ignore[index]
    assert "rerun with --harbor-keep-jobs" not in kept.stdout.str()


def test_missing_replay_is_an_error_naming_the_paths(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    shutil.rmtree(skill / "evals" / "replays")
    result = skill_project.run(*LOCAL_REPLAY, *CUSTOM, "--skip-baseline")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert "c1.with-skill.json" in output and "c1.json" in output


def test_inputs_are_staged_into_workspace_input(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1", files=["files/data.txt"]))
    (skill / "evals" / "files").mkdir()
    (skill / "evals" / "files" / "data.txt").write_text("payload\n")
    (skill / "evals" / "grader.py").write_text(
        "import json, os\nfrom pathlib import Path\n"
        "ok = Path('/workspace/input/data.txt').read_text() == 'payload\\n'\n"
        "Path(os.environ['HARBOR_REWARD_JSON']).write_text(json.dumps({'overall': 1.0 if ok else 0.0}))\n"
    )
    result = skill_project.run(
        *LOCAL_REPLAY, *CUSTOM, "--skip-baseline", "--ek", "sandbox=bwrap" if usable_bwrap()[0] else "sandbox=none"
    )
    result.assert_outcomes(passed=1)


def test_bad_files_entry_is_a_collection_error_naming_the_case(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1", files=["../SKILL.md"]))
    result = skill_project.run("--collect-only", *LOCAL_REPLAY, *CUSTOM, "--skip-baseline", subprocess=False)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "case 'c1': files entry '../SKILL.md' must not contain '..'" in result.stdout.str()


def test_skill_files_listed_as_inputs_say_why_they_are_refused(skill_project: SkillProject) -> None:
    """Public datasets list the skill's own files as inputs; the refusal says what staging them would do."""
    skill = skill_project.make_skill("demo", simple_entries("c1", files=["SKILL.md", "scripts/extract.py"]))
    (skill / "scripts").mkdir()
    (skill / "scripts" / "extract.py").write_text("print('x')\n")
    result = skill_project.run("--collect-only", *LOCAL_REPLAY, *CUSTOM, "--skip-baseline", subprocess=False)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert "case 'c1': files entry 'SKILL.md' is part of the skill itself (demo/SKILL.md)" in out
    assert "would hand the skill to the baseline arm" in out and "installed already" in out
    assert "does not exist" not in out


def _comparable(result: dict) -> list[tuple]:
    return sorted((t["case"], t["agent"], t["arm"], t["attempt"], t["status"], t["overall"]) for t in result["trials"])


def test_xdist_gives_the_same_results(skill_project: SkillProject) -> None:
    skill_project.copy_hello_skill(cases=["explicit-greeting", "negative-arithmetic"])
    plain = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none")
    plain.assert_outcomes(passed=4)
    first = skill_project.result_json("hello-skill")
    shutil.rmtree(skill_project.root / "results")
    parallel = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "-n", "2")
    parallel.assert_outcomes(passed=4)
    second = skill_project.result_json("hello-skill")
    assert _comparable(first) == _comparable(second)
    assert len({Path(p).name for p in (skill_project.root / "results" / "hello-skill").glob("2*")}) == 1


# An agent that logs one WARNING naming its case through its own logger (a child of Harbor's per-trial logger, as
# terminus-2's errors are) and then fails; c1's agent is the slowest, so the others log while c1's item waits.
FAILING_AGENT = '''
import asyncio, re
from logging_agent import LoggingAgent

class Failing(LoggingAgent):
    async def run(self, instruction, environment, context):
        case = re.search(r"do (c[0-9])", instruction)[1]
        await asyncio.sleep(1.5 if case == "c1" else 0.1)
        self.logger.warning("MARK-%s the agent gave up", case)
        raise RuntimeError("gave up")
'''


def test_each_error_item_shows_only_its_own_trials_harbor_log(
    skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trials run in flight together: pytest's capture filed each Harbor record under whichever item was in setup,
    so c1's ERROR listed c2's and c3's lines. Each item's "Captured log setup" now holds its own trial's lines."""
    skill_project.make_skill("demo", simple_entries("c1", "c2", "c3"))
    skill_project.pytester.makepyfile(logging_agent=LOGGING_AGENT, failing_agent=FAILING_AGENT)
    monkeypatch.setenv("PYTHONPATH", str(skill_project.root))
    result = skill_project.run(
        "--agents", "failing_agent:Failing", "--env-mode", "local", "--ek", "sandbox=none", *CUSTOM,
        "--skip-baseline", "--n-concurrent", "3",
    )  # fmt: skip
    result.assert_outcomes(errors=3)
    out = result.stdout.str()
    sections = re.split(r"_+ ERROR at setup of ", out)[1:]
    assert len(sections) == 3, out
    for section in sections:
        case = section.split(" ", 1)[0]
        assert "Captured log setup" in section, section
        assert re.findall(r"MARK-(c\d)", section) == [case], section
