"""Trial files are written (and job folders deleted) as items finish, not all at the session's end (issue 13: the
session's end did ~2 ms a trial that nothing overlapped). The run folder stays incomplete until result.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import SkillProject, simple_entries

# Runs after the plugin's own report hook, on the process that writes results (the controller under xdist), and
# logs what the run folder holds when each item's last report is in.
SNAPSHOT_CONFTEST = '''
import json, os
from pathlib import Path
import pytest

_config = None

def pytest_configure(config):
    global _config
    _config = config

@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when != "teardown" or hasattr(_config, "workerinput"):
        return
    record = next(json.loads(v) for k, v in report.user_properties if k == "skilleval_trial")
    results = Path(os.environ["SNAPSHOT_RESULTS"])
    own = list(results.glob(f"*/2*/*/*/trials/{record['case']}.{record['attempt']}.json"))
    with open(os.environ["SNAPSHOT_LOG"], "a") as log:
        log.write(json.dumps({
            "case": record["case"], "own_file": [str(p) for p in own],
            "result_json": bool(list(results.glob("*/2*/result.json"))),
            "job_folder": Path(record["trial_dir"]).parent.parent.exists(),
        }) + "\\n")
'''

RUN = ("--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none", "--skip-baseline")


@pytest.fixture
def project(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> SkillProject:
    skill_project.pytester.makeconftest(SNAPSHOT_CONFTEST)
    monkeypatch.setenv("SNAPSHOT_RESULTS", str(skill_project.root / "results"))
    monkeypatch.setenv("SNAPSHOT_LOG", str(skill_project.root / "snapshots.jsonl"))
    skill_project.make_skill("demo", simple_entries("c1", "c2", "c3", "c4"))
    return skill_project


def _snapshots(project: SkillProject) -> list[dict]:
    return [json.loads(line) for line in (project.root / "snapshots.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_each_trial_file_is_written_when_its_item_is_done(project: SkillProject, xdist: list[str]) -> None:
    result = project.run(*RUN, "--n-attempts", "2", *xdist)
    result.assert_outcomes(passed=8)
    snapshots = _snapshots(project)
    assert len(snapshots) == 8
    for snapshot in snapshots:
        assert len(snapshot["own_file"]) == 1, snapshot  # already in the run folder, before the session's end
        assert snapshot["result_json"] is False, snapshot  # which still marks the folder incomplete
        assert snapshot["job_folder"] is False, snapshot  # Harbor's folders of the trial are gone
    final = project.result_json("demo")
    assert len(final["trials"]) == 8
    for snapshot in snapshots:
        document = json.loads(Path(snapshot["own_file"][0]).read_text())
        assert document["record"]["case"] == snapshot["case"] and document["record"]["status"] == "scored"
        assert document["harbor_result"]["verifier_result"]["rewards"], document.keys()


def test_kept_jobs_stay_when_trial_files_are_written_early(project: SkillProject) -> None:
    project.run(*RUN, "--harbor-keep-jobs").assert_outcomes(passed=4)
    snapshots = _snapshots(project)
    assert [s["job_folder"] for s in snapshots] == [True] * 4
    assert all(len(s["own_file"]) == 1 for s in snapshots)


MANY_METRICS_GRADER = """
import json, os
from pathlib import Path
case = json.loads(Path(os.environ["HARBOR_ENTRY_JSON"]).read_text())["id"]
metrics = {f"{case}_metric_{i}": 1.0 for i in range(70)}
Path(os.environ["HARBOR_REWARD_JSON"]).write_text(json.dumps({"overall": 1.0, **metrics}))
"""


def test_a_record_changed_at_the_end_replaces_the_one_written_early(project: SkillProject) -> None:
    """Two cases with 70 metric names each exceed a condition's 128: at the end every trial of that condition
    becomes an error. The trial files written early are rewritten with that record, keeping Harbor's parts."""
    (project.root / "skills" / "demo" / "evals" / "grader.py").write_text(MANY_METRICS_GRADER)
    result = project.run(*RUN, "--grading-mode", "custom_only")
    assert all(s["own_file"] and not s["job_folder"] for s in _snapshots(project))
    final = project.result_json("demo")
    assert {t["status"] for t in final["trials"]} == {"error"}, result.stdout.str()
    for snapshot in _snapshots(project):
        document = json.loads(Path(snapshot["own_file"][0]).read_text())
        assert document["record"]["status"] == "error"
        assert document["record"]["error"] == "condition exceeded the custom metric name limit"
        assert document["record"]["custom_metrics"] == {}
        assert document["harbor_result"]["verifier_result"] is not None  # the early file's parts, kept
