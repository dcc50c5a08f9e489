"""One file per trial (`<run>/<agent>/<arm>/trials/<case>.<attempt>.json`), and runs of the earlier folder-per-trial
layout still resume and render (issue 13: session finish <= 1 ms per trial)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.models import RunPlan
from pytest_skilleval.results.records import TrialKey, TrialRecord
from pytest_skilleval.results.run_folder import load_run
from pytest_skilleval.results.tree import write_results_tree
from pytest_skilleval.results.trial_file import TRIAL_FORMAT, trial_file, trial_folder
from pytest_skilleval.resume import stored_records

KEY = TrialKey("a", "codex", "with_skill", 1)

RUN_ID = "20250102_030405_42_0123456789ab"
TRAJECTORY = {"steps": [{"step_id": 1, "source": "agent", "message": "said hello"}]}


def _record(case: str, **extra: object) -> TrialRecord:
    return TrialRecord(
        skill="s",
        case=case,
        agent="codex",
        arm="with_skill",
        attempt=1,
        status="scored",
        overall=0.7,
        metrics={"security": 1.0},
        details={"security": {"reason": "ok"}},
        **extra,
    )  # type: ignore[arg-type]


def _legacy_run(root: Path, records: list[TrialRecord]) -> Path:
    """A run folder as the folder-per-trial layout left it, interrupted (no result.json)."""
    run_dir = root / RUN_ID
    for record in records:
        folder = trial_folder(run_dir, record.key)
        folder.mkdir(parents=True)
        (folder / "record.json").write_text(record.model_dump_json())
        (folder / "trajectory.json").write_text(json.dumps(TRAJECTORY))
        (folder / "skilleval_reward.json").write_text(json.dumps({"overall": 0.7, "details": {"kept": True}}))
        (folder / "grader-output.txt").write_text("grader said hi\n")
    return run_dir


def test_resume_reads_a_run_of_the_earlier_layout_and_keeps_its_trials(tmp_path: Path) -> None:
    records = [_record("a"), _record("b")]
    run_dir = _legacy_run(tmp_path, records)
    stored = stored_records(run_dir)
    assert sorted(key[0] for key in stored) == ["a", "b"]
    resumed = [r.model_copy(update={"source_run": RUN_ID}) for r in stored.values()]
    plan = RunPlan(skill="s", cases=["a", "b"], agents=["codex"], arms=["with_skill"])
    write_results_tree(aggregate(resumed, plan), resumed, tmp_path, RUN_ID)
    trial = json.loads(trial_file(run_dir, KEY).read_text())
    assert trial["format"] == TRIAL_FORMAT and trial["record"]["source_run"] == RUN_ID
    assert trial["trajectory"] == TRAJECTORY and trial["rich_reward"]["details"] == {"kept": True}
    assert trial["grader_output"] == "grader said hi\n"
    assert sorted(key[0] for key in stored_records(run_dir)) == ["a", "b"]  # read back from the new files


def test_report_reads_trial_files_and_falls_back_to_the_earlier_layout(tmp_path: Path) -> None:
    records = [_record("a")]
    plan = RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["with_skill"])
    run_dir = write_results_tree(aggregate(records, plan), records, tmp_path, RUN_ID)
    (files,) = load_run(run_dir).trials()
    assert files.path == trial_file(run_dir, KEY)
    assert files.content().record()["case"] == "a" and files.content().trajectory() is None
    files.path.unlink()  # as a run of the earlier layout has it: a folder instead of the file
    folder = trial_folder(run_dir, KEY)
    folder.mkdir(parents=True)
    (folder / "trajectory.json").write_text(json.dumps(TRAJECTORY))
    (files,) = load_run(run_dir).trials()
    assert files.content().trajectory() == TRAJECTORY


def test_a_resumed_trial_file_is_rewritten_with_its_new_record_and_old_evidence(tmp_path: Path) -> None:
    harbor = tmp_path / "harbor"
    (harbor / "agent").mkdir(parents=True)
    (harbor / "agent" / "trajectory.json").write_text(json.dumps(TRAJECTORY))
    records = [_record("a", trial_dir=str(harbor))]
    plan = RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["with_skill"])
    run_dir = write_results_tree(aggregate(records, plan), records, tmp_path, RUN_ID)
    (harbor / "agent" / "trajectory.json").unlink()  # the Harbor trial folder is gone by the time of --resume
    resumed = [records[0].model_copy(update={"source_run": RUN_ID})]
    write_results_tree(aggregate(resumed, plan), resumed, tmp_path, RUN_ID)
    trial = json.loads(trial_file(run_dir, KEY).read_text())
    assert trial["trajectory"] == TRAJECTORY and trial["record"]["source_run"] == RUN_ID


def test_a_harbor_file_that_is_not_json_is_kept_as_redacted_text(tmp_path: Path) -> None:
    harbor = tmp_path / "harbor"
    (harbor / "agent").mkdir(parents=True)
    (harbor / "agent" / "trajectory.json").write_text("{truncated, token=abcdef123456")
    (harbor / "result.json").write_text(json.dumps({"reward": float("nan")}))  # Python's json writes NaN
    records = [_record("a", trial_dir=str(harbor))]
    plan = RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["with_skill"])
    run_dir = write_results_tree(aggregate(records, plan), records, tmp_path / "out", RUN_ID)
    text = trial_file(run_dir, KEY).read_text()
    assert "NaN" not in text  # strict JSON
    trial = json.loads(text)
    assert trial["trajectory"] == "{truncated, token=[REDACTED]"
    assert trial["harbor_result"] == {"reward": None}
    assert trial["artifacts"] == {"trajectory": "agent/trajectory.json", "harbor_result": "result.json"}
