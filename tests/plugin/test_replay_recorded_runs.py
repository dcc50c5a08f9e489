"""A recorded terminus-2 run replays: the replay agent types its keystrokes into tmux (raw_content plans too) in a
local bwrap trial, and the trial scores what the recorded run scored, custom grader included."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skilleval.authoring.cli import main
from pytest_skilleval.harbor.sandbox.bwrap import usable_bwrap
from pytest_skilleval.results.trajectory_out import as_replay
from tests.support import FIXTURES, LOCAL_REPLAY, SkillProject, require_system

RECORDED = FIXTURES / "trajectories" / "terminus-2-recorded"
CASE = "explicit-greeting"
ARMS = {"with_skill": "with-skill", "without_skill": "without-skill"}
STANDARD = ("security", "skill_execution", "skill_efficiency")


def _graded_now(trajectory: Path, dataset: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    argv = ["grade", "--trajectory", str(trajectory), "--dataset", str(dataset), "--case-id", CASE]
    capsys.readouterr()  # what the plugin run printed
    assert main([*argv, "--metrics", ",".join(STANDARD)]) == 0
    return json.loads(capsys.readouterr().out)["metrics"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["tool-calls", "raw-content"])
def test_a_recorded_terminus2_run_replays_to_the_same_scores(
    skill_project: SkillProject, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    if usable_bwrap()[0] is None:
        require_system(f"bubblewrap ({usable_bwrap()[1]})", "apt-get install bubblewrap (or run .ci/run)")
    if shutil.which("tmux") is None:
        require_system("tmux (the replay types terminus-2's keystrokes into tmux)", "apt-get install tmux")
    skill = skill_project.copy_hello_skill()
    for arm, spelled in ARMS.items():
        recorded = json.loads((RECORDED / mode / arm / "trajectory.json").read_text(encoding="utf-8"))
        replay = skill / "evals" / "replays" / f"{CASE}.{spelled}.json"
        replay.write_text(json.dumps(as_replay(recorded), indent=2), encoding="utf-8")
    result = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=bwrap", "-k", CASE)
    trials = {t["arm"]: t for t in skill_project.result_json("hello-skill")["trials"]}
    assert set(trials) == set(ARMS), result.stdout.str()[-2000:]
    for arm in ARMS:
        scores = json.loads((RECORDED / mode / arm / "recorded-scores.json").read_text(encoding="utf-8"))
        expected = _graded_now(RECORDED / mode / arm / "trajectory.json", skill / "evals" / "evals.json", capsys)
        replayed = trials[arm]
        assert replayed["custom_metrics"] == scores["custom_metrics"], (arm, replayed["custom_metrics"])
        assert {name: replayed["metrics"][name] for name in STANDARD} == expected, arm
    # The skill's script really ran again: the with-skill greeting is right, the hand-written baseline's is not.
    assert trials["with_skill"]["custom_metrics"]["greeting_correct"] == 1.0
    assert trials["without_skill"]["custom_metrics"]["greeting_correct"] == 0.0


RECORDED_AGENTS = FIXTURES / "trajectories" / "recorded"
# Where each CLI found the skill when it was recorded; a replay finds it in the trial's skills folder instead.
AGENT_SKILLS = {"codex": "/root/.agents/skills", "claude-code": "/logs/agent/sessions/skills"}


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_recorded_file_edits_replay_to_the_same_scores(
    skill_project: SkillProject, capsys: pytest.CaptureFixture[str], agent: str
) -> None:
    """A real claude-code run (`Write`, `Edit` with and without `replace_all`, a `MultiEdit` its CLI refused) and a
    real codex run (`apply_patch` through `exec_command`: an added file, then an update from a relative path under the
    call's workdir) wrote the greeting by hand; replayed in a local bwrap trial, the edits are made again and the
    trial scores what the recorded run scored, the demo's custom grader (which reads the file) included."""
    if usable_bwrap()[0] is None:
        require_system(f"bubblewrap ({usable_bwrap()[1]})", "apt-get install bubblewrap (or run .ci/run)")
    case_dir = RECORDED_AGENTS / agent / "edit-files"
    skill = skill_project.copy_hello_skill()
    dataset = skill / "evals" / "evals.json"
    entries = json.loads(dataset.read_text(encoding="utf-8"))
    entry = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    entries["evals"].append({**entry, "expected_output": "The task is done."})
    dataset.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    for arm, spelled in ARMS.items():
        text = (case_dir / arm / "trajectory.json").read_text(encoding="utf-8")
        replay = skill / "evals" / "replays" / f"edit-files.{spelled}.json"
        replay.write_text(json.dumps(as_replay(json.loads(text.replace(AGENT_SKILLS[agent], "{skills_dir}")))))
    result = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=bwrap", "-k", "edit-files")
    trials = {t["arm"]: t for t in skill_project.result_json("hello-skill")["trials"]}
    assert set(trials) == set(ARMS), result.stdout.str()[-2000:]
    for arm in ARMS:
        recorded = json.loads((case_dir / arm / "recorded-scores.json").read_text(encoding="utf-8"))
        replayed = trials[arm]
        assert replayed["custom_metrics"] == recorded["custom_metrics"], (arm, replayed["custom_metrics"])
        assert {name: replayed["metrics"][name] for name in STANDARD} == {
            name: recorded["metrics"][name] for name in STANDARD
        }, arm
        # The greeting exists only because the replay made the recorded edits.
        assert replayed["custom_metrics"]["greeting_correct"] == 1.0
