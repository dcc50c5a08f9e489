"""A run folder says what --resume compares from its first trial file on, so a run killed outright (SIGKILL, no
session end, no result.json) can be resumed; such a folder is still not a finished run to any reader."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skilleval.results import run_folder, tree
from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.models import RunPlan
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.resume import ResumeError, resolve_run_dir, resume_problem, stored_records
from pytest_skilleval.results.run_seal import RunSeal
from pytest_skilleval.skill.setting_catalog import unmeasured_settings
from verifier.redact import Redactor

RUN_ID = "20250102_030405_42_0123456789ab"
UNMEASURED = unmeasured_settings()
CONFIG = {"agents": ["codex"], "n_attempts": 2, "n_concurrent": 4, "skill_digest": "skill-1", "judge": None}


def _record(case: str = "c0") -> TrialRecord:
    return TrialRecord(
        skill="s",
        case=case,
        agent="codex",
        arm="with_skill",
        attempt=1,
        status="scored",
        overall=0.7,
        metrics={"security": 1.0},
    )


def _killed_run(root: Path) -> Path:
    """What a run SIGKILLed after its first trial leaves: the early writer's files, no result.json."""
    early = tree.EarlyTrialFiles(root, RUN_ID, Redactor.from_environment({}), start=tree.RunStart(CONFIG, "data-1"))
    early.write(_record())
    return root / RUN_ID


def test_a_killed_run_is_still_unfinished_to_every_reader(tmp_path: Path) -> None:
    run_dir = _killed_run(tmp_path)
    assert json.loads((run_dir / tree.RUN_CONFIG_FILE).read_text()) == CONFIG
    assert json.loads((run_dir / tree.DATASET_DIGEST_FILE).read_text()) == {"dataset_digest": "data-1"}
    assert (run_dir / "codex" / "with_skill" / "trials" / "c0.1.json").is_file()
    assert not (run_dir / "result.json").exists() and not (tmp_path / "latest").exists()
    with pytest.raises(run_folder.RunFolderError, match="no result.json"):
        run_folder.load_run(run_dir)
    assert run_folder.run_folders(tmp_path) == []
    with pytest.raises(run_folder.RunFolderError):
        run_folder.find_run(tmp_path)


def test_the_end_writes_the_same_files_the_early_writer_did(tmp_path: Path) -> None:
    records = [_record("c0"), _record("c1")]
    plan = RunPlan(
        skill="s",
        cases=["c0", "c1"],
        agents=["codex"],
        arms=["with_skill"],
        run_config=dict(CONFIG),
        dataset_digest="data-1",
        evaluated_at="2025-01-02T03:04:05Z",
    )
    early = tree.EarlyTrialFiles(tmp_path, RUN_ID, Redactor.from_environment({}), start=tree.RunStart(CONFIG, "data-1"))
    early.write(records[0])
    run_dir = tmp_path / RUN_ID
    before = {name: (run_dir / name).read_text() for name in (tree.RUN_CONFIG_FILE, tree.DATASET_DIGEST_FILE)}
    tree.write_results_tree(aggregate(records, plan), records, tmp_path, RUN_ID, early=early)
    assert {name: (run_dir / name).read_text() for name in before} == before
    assert run_folder.load_run(run_dir).document.dataset_digest == "data-1"


def test_the_early_writer_refuses_a_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "root" / RUN_ID).mkdir(parents=True)
    (tmp_path / "root" / RUN_ID / tree.RUN_CONFIG_FILE).symlink_to(victim)
    with pytest.raises(tree.UnsafeResultsPath, match="symlink"):
        _killed_run(tmp_path / "root")
    assert victim.read_text() == "keep me"
    assert not list((tmp_path / "root" / RUN_ID).glob("*/*/trials/*.json"))  # no trial file before them


def test_a_killed_run_compares_like_a_finished_one(tmp_path: Path) -> None:
    run_dir = _killed_run(tmp_path)
    assert resume_problem(run_dir, CONFIG, "data-1", unmeasured=UNMEASURED) is None
    assert (
        resume_problem(run_dir, {**CONFIG, "n_concurrent": 1, "resume": "latest"}, "data-1", unmeasured=UNMEASURED)
        is None
    )
    assert (
        resume_problem(run_dir, CONFIG, "data-2", unmeasured=UNMEASURED)
        == "the dataset changed since that run (its digest differs)"
    )
    assert resume_problem(run_dir, {**CONFIG, "skill_digest": "skill-2"}, "data-1", unmeasured=UNMEASURED) == (
        "the skill's files changed since that run (its digest differs)"
    )
    assert resume_problem(run_dir, {**CONFIG, "n_attempts": 3}, "data-1", unmeasured=UNMEASURED) == (
        "settings changed since that run: n_attempts"
    )


def test_a_run_without_a_dataset_digest_file_compares_with_its_sealed_result_json(tmp_path: Path) -> None:
    """The digest is in result.json too; like every file --resume reads, only when this machine sealed it."""
    run_dir = _killed_run(tmp_path)
    (run_dir / tree.DATASET_DIGEST_FILE).unlink()
    (run_dir / "result.json").write_text(json.dumps({"dataset_digest": "data-1"}))  # by hand: not sealed
    assert "not a run folder this plugin can resume" in resume_problem(run_dir, CONFIG, "data-1", unmeasured=UNMEASURED)
    with tree._write_batch(tmp_path):
        tree.write_sealed_json(
            run_dir, run_dir / "result.json", {"dataset_digest": "data-1"}, tmp_path, RunSeal.of_this_machine()
        )
    assert resume_problem(run_dir, CONFIG, "data-1", unmeasured=UNMEASURED) is None
    assert (
        resume_problem(run_dir, CONFIG, "data-2", unmeasured=UNMEASURED)
        == "the dataset changed since that run (its digest differs)"
    )


def test_a_folder_with_neither_is_refused_with_the_reason(tmp_path: Path) -> None:
    run_dir = _killed_run(tmp_path)
    (run_dir / tree.RUN_CONFIG_FILE).unlink()
    (run_dir / tree.DATASET_DIGEST_FILE).unlink()
    problem = resume_problem(run_dir, CONFIG, "data-1", unmeasured=UNMEASURED)
    assert problem == (
        f"{run_dir} has no readable run_config.json or dataset_digest.json (or result.json): "
        "not a run folder this plugin can resume"
    )
    (run_dir / tree.RUN_CONFIG_FILE).write_text("{not json")
    tree.RunStart(CONFIG, "data-1").write(run_dir, tmp_path, Redactor.from_environment({}), RunSeal.of_this_machine())
    assert resume_problem(run_dir, CONFIG, "data-1", unmeasured=UNMEASURED) is None
    (run_dir / tree.RUN_CONFIG_FILE).write_text(json.dumps({**CONFIG, "n_attempts": 3}))  # edited since: not ours
    assert resume_problem(run_dir, CONFIG, "data-1", unmeasured=UNMEASURED) == (
        f"{run_dir} has no readable run_config.json: not a run folder this plugin can resume"
    )


def test_only_trial_files_this_machine_sealed_are_read_back(tmp_path: Path) -> None:
    """A trial file edited after it was written, one planted beside the real ones, and a whole folder written by
    someone else (even one holding a copy of a real seal log) are never trusted."""
    run_dir = _killed_run(tmp_path)
    assert set(stored_records(run_dir)) == {("c0", "codex", "with_skill", 1)}
    trials = run_dir / "codex" / "with_skill" / "trials"
    planted = json.loads((trials / "c0.1.json").read_text())
    planted["record"].update(case="c1", overall=1.0)
    (trials / "c1.1.json").write_text(json.dumps(planted))
    assert set(stored_records(run_dir)) == {("c0", "codex", "with_skill", 1)}
    edited = json.loads((trials / "c0.1.json").read_text())
    edited["record"]["overall"] = 1.0
    (trials / "c0.1.json").write_text(json.dumps(edited, indent=2) + "\n")
    assert stored_records(run_dir) == {}

    forged = shutil.copytree(_killed_run(tmp_path / "real"), tmp_path / "forged" / "20991231_000000_1_aaaaaaaaaaaa")
    with pytest.raises(ResumeError, match=r"20991231_000000_1_aaaaaaaaaaaa is not a run this machine wrote"):
        resolve_run_dir(tmp_path / "forged", "latest")
    assert resume_problem(forged, CONFIG, "data-1", unmeasured=UNMEASURED) is not None and stored_records(forged) == {}
    assert resolve_run_dir(tmp_path / "real", "latest") == tmp_path / "real" / RUN_ID


def test_without_the_machine_key_nothing_is_trusted(tmp_path: Path) -> None:
    run_dir = _killed_run(tmp_path)
    assert stored_records(run_dir, RunSeal(None)) == {}
    with pytest.raises(ResumeError, match="this machine has no run key"):
        resolve_run_dir(tmp_path, RUN_ID, RunSeal(None))
    other = RunSeal(b"0" * 64)  # another machine's key
    with pytest.raises(ResumeError, match="no matching seal"):
        resolve_run_dir(tmp_path, RUN_ID, other)
