"""One staged task folder per case and arm, shared by its trials: what Harbor builds from it is built once, and each
trial still gets its own name, its own entry.json in /tests and its own result."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from harbor.models.task.task import Task
from harbor.publisher.packager import Packager

from tests.support import LOCAL_REPLAY, SkillProject, bash_replay, simple_entries

# Scores the trial by which attempt it is, as its /tests/entry.json says: attempt 1 -> 0.1, attempt 2 -> 0.2.
ATTEMPT_GRADER = """
import json, os
from pathlib import Path

entry = json.loads(Path(os.environ["HARBOR_ENTRY_JSON"]).read_text())
Path(os.environ["HARBOR_REWARD_JSON"]).write_text(json.dumps({
    "overall": 1.0, "custom_metrics": {"attempt_seen": entry["attempt"] / 10, "agent_seen": float(entry["agent"] == "replay")}
}))
"""


def _trial_files(project: SkillProject) -> dict[int, dict]:
    found = sorted((project.root / "results" / "demo").glob("2*/replay/with_skill/trials/c1.*.json"))
    records = [json.loads(path.read_text())["record"] for path in found]
    return {record["attempt"]: record for record in records}


def test_the_trials_of_a_case_share_one_staged_task_and_keep_their_own_identity(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "grader.py").write_text(ATTEMPT_GRADER)
    result = skill_project.run(
        *LOCAL_REPLAY,
        "--ek",
        "sandbox=none",
        "--skip-baseline",
        "--grading-mode",
        "custom_only",
        "--n-attempts",
        "2",
        "--harbor-keep-jobs",
    )
    result.assert_outcomes(passed=2)
    trials = _trial_files(skill_project)
    assert sorted(trials) == [1, 2]
    # Each grader saw its own trial's entry.json, though both trials ran the same task folder.
    assert [trials[n]["custom_metrics"]["attempt_seen"] for n in (1, 2)] == [0.1, 0.2]
    assert all(trials[n]["custom_metrics"]["agent_seen"] == 1.0 for n in (1, 2))
    dirs = [Path(trials[n]["trial_dir"]) for n in (1, 2)]
    assert dirs[0] != dirs[1] and dirs[0].name != dirs[1].name
    configs = [json.loads((d / "config.json").read_text()) for d in dirs]
    (task_dir,) = {config["task"]["path"] for config in configs}
    task_dir = Path(task_dir)
    shared_entry = json.loads((task_dir / "tests" / "entry.json").read_text())
    assert shared_entry["id"] == "c1" and "attempt" not in shared_entry and "agent" not in shared_entry
    # What Harbor recorded for each trial, built once for the folder, is what Harbor computes for it afresh.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        checksum = Task(task_dir).checksum
    digest = "sha256:" + Packager.compute_content_hash(task_dir)[0]
    for d in dirs:
        lock = json.loads((d / "lock.json").read_text())
        assert lock["task"]["digest"] == digest and lock["task"]["path"] == str(task_dir)
        assert lock["verifier"]["environment_mode"] == "shared"
        assert len(lock["skills"]) == 1 and lock["skills"][0]["digest"].startswith("sha256:")
        assert json.loads((d / "result.json").read_text())["task_checksum"] == checksum


def test_a_changed_skill_between_runs_is_staged_and_hashed_anew(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    args = (
        *LOCAL_REPLAY,
        "--ek",
        "sandbox=none",
        "--skip-baseline",
        "--grading-mode",
        "custom_only",
        "--harbor-keep-jobs",
    )
    skill_project.run(*args).assert_outcomes(passed=1)
    first = json.loads((Path(_trial_files(skill_project)[1]["trial_dir"]) / "lock.json").read_text())
    (skill / "evals" / "grader.py").write_text(
        "import json, os\nfrom pathlib import Path\n"
        'Path(os.environ["HARBOR_REWARD_JSON"]).write_text(json.dumps({"overall": 0.0}))\n'
    )
    (skill / "evals" / "evals.json").write_text(json.dumps(simple_entries("c1", expected_output="changed")))
    skill_project.run(*args).assert_outcomes(failed=1)
    runs = sorted((skill_project.root / "results" / "demo").glob("2*/replay/with_skill/trials/c1.1.json"))
    second_trial = Path(json.loads(runs[-1].read_text())["record"]["trial_dir"])
    second = json.loads((second_trial / "lock.json").read_text())
    task_dir = Path(second["task"]["path"])
    assert second["task"]["digest"] == "sha256:" + Packager.compute_content_hash(task_dir)[0]
    assert second["task"]["digest"] != first["task"]["digest"]
    assert "changed" in (task_dir / "tests" / "entry.json").read_text()


def test_a_cases_checks_run_in_each_trial_and_leave_the_shared_task_as_staged(skill_project: SkillProject) -> None:
    checks = [{"type": "file_contains", "path": "output/result.txt", "text": "right", "name": "says right"}]
    skill = skill_project.make_skill("demo", simple_entries("c1", checks=checks), grader=False)
    (skill / "evals" / "replays" / "c1.json").write_text(
        json.dumps(bash_replay("mkdir -p output && echo right > output/result.txt"))
    )
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--n-attempts", "2", "--harbor-keep-jobs")
    result.assert_outcomes(passed=2)
    trials = _trial_files(skill_project)
    assert [[check["status"] for check in trials[n]["checks"]] for n in (1, 2)] == [["passed"], ["passed"]]
    (task_dir,) = {
        json.loads((Path(t["trial_dir"]) / "config.json").read_text())["task"]["path"] for t in trials.values()
    }
    # The checks' runner went to each trial's own tests folder; the shared task is what Harbor hashed for both.
    assert sorted(path.name for path in (Path(task_dir) / "tests").iterdir()) == ["entry.json", "test.sh"]
    for trial in trials.values():
        lock = json.loads((Path(trial["trial_dir"]) / "lock.json").read_text())
        assert lock["task"]["digest"] == "sha256:" + Packager.compute_content_hash(Path(task_dir))[0]
