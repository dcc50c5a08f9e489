"""One file per trial (`<run>/<agent>/<arm>/trials/<case>.<attempt>.json`), and runs of the earlier folder-per-trial
layout still resume and render (issue 13: session finish <= 1 ms per trial)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.models import RunPlan
from pytest_skilleval.results.records import TrialKey, TrialRecord
from pytest_skilleval.results.resume import stored_records
from pytest_skilleval.results.run_folder import load_run
from pytest_skilleval.results.tree import write_results_tree
from pytest_skilleval.results.trial_file import (
    MAX_ARTIFACT_BYTES,
    TRIAL_PARTS,
    read_parts,
    trial_file,
    trial_folder,
)
from verifier.reward import WrittenFile

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


def test_resume_does_not_trust_a_run_of_the_earlier_layout(tmp_path: Path) -> None:
    """A folder-per-trial run carries no seal (results/run_seal.py): --resume reads none of its trials back."""
    records = [_record("a"), _record("b")]
    run_dir = _legacy_run(tmp_path, records)
    assert stored_records(run_dir) == {}


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


def _written_trial(folder: Path, grader_output: str, rich: dict[str, object]) -> dict[str, WrittenFile]:
    """A trial folder holding what the host verifier writes, and the same files as it hands them over."""
    texts = {
        "verifier/skilleval_reward.json": json.dumps(rich, indent=2) + "\n",
        "verifier/reward.json": json.dumps({"overall": 0.7}, indent=2) + "\n",
        "verifier/grader-output.txt": grader_output,
    }
    values: dict[str, object] = {**{rel: json.loads(text) for rel, text in texts.items() if rel.endswith(".json")}}
    values["verifier/grader-output.txt"] = grader_output
    for rel, text in texts.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    (folder / "result.json").write_text(json.dumps({"trial_name": "t"}))
    return {rel: WrittenFile(values[rel], len(text.encode("utf-8"))) for rel, text in texts.items()}


@pytest.mark.parametrize(
    ("grader_output", "rich_size"),
    [("graded: ok\n", 100), ("é" * 200_000 + "tail ☃\n", 100), ("x\n", 10 * 1024 * 1024)],
    ids=["short", "multibyte-over-the-tail", "reward-over-the-cap"],
)
def test_files_handed_over_are_the_parts_the_folder_gives(tmp_path: Path, grader_output: str, rich_size: int) -> None:
    """The trial file takes what this process's verifier wrote from memory exactly as it would read it back: the
    grader output's byte tail (a character cut in two included), a reward over the cap left out, the rest read."""
    folder = tmp_path / "trial"
    written = _written_trial(folder, grader_output, {"overall": 0.7, "details": {"pad": "p" * rich_size}})
    from_disk = read_parts(folder, TRIAL_PARTS, MAX_ARTIFACT_BYTES)
    (folder / "verifier").rename(tmp_path / "moved")  # what is handed over is never read from the folder
    from_memory = read_parts(folder, TRIAL_PARTS, MAX_ARTIFACT_BYTES, written)
    assert from_memory == from_disk
    assert "harbor_result" in from_memory and ("rich_reward" in from_memory) == (rich_size < MAX_ARTIFACT_BYTES)
