"""Results tree: naming, layout, schema, atomic writes, symlink refusal."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_skilleval.results import tree as results
from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.models import AggregateResult, ResultDocument, RunPlan
from pytest_skilleval.results.records import TokenUsage, TrialKey, TrialRecord
from pytest_skilleval.results.tree import (
    MARKER_FILE,
    UnsafeResultsPath,
    create_run_dir,
    new_run_id,
    render_result_schema,
    resolve_results_root,
    write_results_tree,
)

SCHEMA_PATH = Path(results.__file__).parents[1] / "schemas" / "result.schema.json"
RUN_ID = "20250102_030405_42_0123456789ab"
KEY = TrialKey("a", "codex", "with_skill", 1)


def rec(case: str, arm: str, agent: str = "codex", attempt: int = 1, score: float = 0.8, **kw: Any) -> TrialRecord:
    metrics = {"security": score, "skill_execution": score, "skill_efficiency": score}
    return TrialRecord(
        skill="s",
        case=case,
        agent=agent,
        arm=arm,  # type: ignore[arg-type]
        attempt=attempt,
        status="scored",
        metrics=metrics,
        custom_metrics={"cc": score},
        activation=1.0 if arm == "with_skill" else None,
        tokens=TokenUsage(prompt=100, completion=10),
        agent_seconds=1.5,
        **kw,
    )


def build(agents: tuple[str, ...] = ("codex",), **plan_kw: Any) -> tuple[AggregateResult, list[TrialRecord]]:
    records = [rec(c, arm, agent) for agent in agents for c in ("a", "b") for arm in ("with_skill", "without_skill")]
    plan = RunPlan(skill="s", cases=["a", "b"], agents=list(agents), evaluated_at="2025-01-02T03:04:05Z", **plan_kw)
    return aggregate(records, plan), records


# --------------------------------------------------------------------------------------------- naming


def test_new_run_id_shape() -> None:
    rid = new_run_id(datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC), pid=4242)
    assert re.fullmatch(r"20250102_030405_4242_[0-9a-f]{12}", rid)
    assert new_run_id() != new_run_id()
    assert re.fullmatch(r"\d{8}_\d{6}_\d+_[0-9a-f]{12}", new_run_id())


def test_resolve_results_root_precedence(tmp_path: Path) -> None:
    skill = tmp_path / "my-skill"
    assert resolve_results_root(skill, None, {}) == skill / "evals" / "results"
    assert resolve_results_root(skill, None, {"SKILLEVAL_RESULTS_DIR": str(tmp_path / "env")}) == (
        tmp_path / "env" / "my-skill"
    )
    env = {"SKILLEVAL_RESULTS_DIR": str(tmp_path / "env")}
    assert resolve_results_root(skill, tmp_path / "cli", env) == tmp_path / "cli" / "my-skill"
    assert resolve_results_root(str(skill) + "/", None, {"SKILLEVAL_RESULTS_DIR": ""}) == skill / "evals" / "results"


def test_create_run_dir_is_exclusive(tmp_path: Path) -> None:
    rid, path = create_run_dir(tmp_path / "root")
    assert path.is_dir() and path.name == rid
    with pytest.raises(FileExistsError):
        create_run_dir(tmp_path / "root", rid)


def test_safe_component_keeps_paths_inside() -> None:
    assert results.safe_component("case-1.ok") == "case-1.ok"
    for bad in ("..", "../x", "a/b", ".hidden", ""):
        out = results.safe_component(bad)
        assert "/" not in out and out not in {".", ".."} and not out.startswith(".")
    assert results.safe_component("a/b") != results.safe_component("a_b")


# ----------------------------------------------------------------------------------------------- tree


def test_writes_the_full_tree(tmp_path: Path) -> None:
    agg, records = build(agents=("codex", "claude-code"))
    root = tmp_path / "results"
    run_dir = write_results_tree(agg, records, root, RUN_ID)
    assert run_dir == root / RUN_ID
    for name in (MARKER_FILE, "result.json", "run_config.json", "attempt_policy.json", "comparison.json"):
        assert (run_dir / name).is_file(), name
    for agent in ("codex", "claude-code"):
        for name in ("lift.json", "custom_lift.json", "pass_at_k_lift.json"):
            assert (run_dir / agent / name).is_file()
        for arm in ("with_skill", "without_skill"):
            assert (run_dir / agent / arm / "summary.json").is_file()
            trial = json.loads((run_dir / agent / arm / "trials" / "a.1.json").read_text())
            assert trial["format"] == results.TRIAL_FORMAT and trial["record"]["case"] == "a"
            assert (
                results.trial_file(run_dir, TrialKey("a", agent, arm, 1))
                == run_dir / agent / arm / "trials" / "a.1.json"
            )
    # One file per trial: no folder per trial, no per-artifact files.
    assert not [p for p in run_dir.glob("*/*/trials/*") if not p.name.endswith(".json")]
    policy = json.loads((run_dir / "attempt_policy.json").read_text())
    assert set(policy) >= {"max_attempts", "pass_threshold", "stop_on_pass"}
    latest = root / "latest"
    assert latest.is_symlink() and os.readlink(latest) == RUN_ID
    assert not list(root.glob(".latest*")) and not list(run_dir.rglob("*.tmp"))


def test_result_json_minimum_shape_and_schema(tmp_path: Path) -> None:
    agg, records = build()
    run_dir = write_results_tree(agg, records, tmp_path, RUN_ID)
    doc = json.loads((run_dir / "result.json").read_text())
    jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(doc)
    assert doc["schema_version"] == "2.0" and doc["run_id"] == RUN_ID
    for key in (
        "execution_status",
        "verdict",
        "score_policy",
        "verdict_policy",
        "attempt_policy",
        "evaluated_at",
        "evaluator_version",
        "dataset_summary",
        "dataset_digest",
        "trials",
        "agents",
        "harbor_version",
    ):
        assert key in doc, key
    trial = doc["trials"][0]
    keys = ("case", "agent", "arm", "attempt", "overall", "metrics", "custom_metrics", "status", "tokens", "seconds")
    assert set(keys) <= set(trial)
    agent = doc["agents"]["codex"]
    arm = agent["with_skill"]
    assert set(arm["dimensions"]) == {"security", "correctness", "discoverability", "effectiveness", "efficiency"}
    assert arm["dimensions"]["correctness"] is None  # unscored is null
    assert set(arm["metrics"]) == {
        "security",
        "skill_execution",
        "skill_efficiency",
        "accuracy",
        "goal_accuracy",
        "behavior_check",
        "checks",
    }
    assert arm["metrics"]["checks"] is None and trial["checks"] is None  # no case has checks: null, not 0
    assert set(arm["pass_at_k"]) >= {"k", "rate", "unbiased", "pass_hat_k"}
    assert set(arm) >= {"overall", "custom_metrics", "n_trials", "n_scored", "resources"}
    lift = agent["lift"]
    assert set(lift) >= {"overall", "outcome", "dimensions", "metrics", "mcnemar_p"}
    assert set(lift["overall"]) >= {"delta", "ci95", "n_pairs", "insufficient", "band"}
    assert "cc" in agent["custom_lift"]


def test_result_json_is_its_model_field_for_field_in_order(tmp_path: Path) -> None:
    """result.json is written from the aggregate's dump plus the writer's fields: exactly what ResultDocument
    makes of it (no field of the model missing, none extra, in the model's order)."""
    result, records = build()
    run_dir = write_results_tree(result, records, tmp_path, "20260101_000000_1_abcdef012345")
    document = json.loads((run_dir / "result.json").read_text())
    as_model = ResultDocument.model_validate(document).model_dump(mode="json")
    assert document == as_model and list(document) == list(as_model)


def test_schema_file_is_in_sync_with_models() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == render_result_schema(), (
        "regenerate with: python -m pytest_skilleval.results.result_schema"
    )


def test_schema_rejects_a_renamed_key(tmp_path: Path) -> None:
    agg, records = build()
    doc = json.loads((write_results_tree(agg, records, tmp_path, RUN_ID) / "result.json").read_text())
    doc["verdict"] = "PASS"
    with pytest.raises(jsonschema.ValidationError):
        results.validate_result(doc)


def test_skipped_arm_writes_no_summary_and_no_lift(tmp_path: Path) -> None:
    records = [rec("a", "with_skill"), rec("b", "with_skill")]
    plan = RunPlan(skill="s", cases=["a", "b"], agents=["codex"], arms=["with_skill"])
    run_dir = write_results_tree(aggregate(records, plan), records, tmp_path, RUN_ID)
    assert not (run_dir / "codex" / "without_skill").exists()
    lift = json.loads((run_dir / "codex" / "lift.json").read_text())
    assert lift["available"] is False and lift["reason"]
    assert not (run_dir / "codex" / "pass_at_k_lift.json").exists()
    assert not (run_dir / "comparison.json").exists()


def test_copies_harbor_artifacts_but_not_symlinks_or_oversize(tmp_path: Path) -> None:
    trial_dir = tmp_path / "harbor-trial"
    (trial_dir / "verifier").mkdir(parents=True)
    (trial_dir / "agent").mkdir()
    (trial_dir / "verifier" / "reward.json").write_text('{"security": 0.8}')
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN")
    (trial_dir / "agent" / "trajectory.json").symlink_to(secret)
    (trial_dir / "result.json").write_text("x" * 100)
    records = [rec("a", "with_skill", trial_dir=str(trial_dir))]
    plan = RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["with_skill"])
    run_dir = write_results_tree(aggregate(records, plan), records, tmp_path / "out", RUN_ID, max_artifact_bytes=50)
    trial = json.loads(results.trial_file(run_dir, KEY).read_text())
    assert trial["reward"] == {"security": 0.8}
    assert trial["trajectory"] is None  # symlink not followed
    assert trial["harbor_result"] is None  # over the cap
    assert trial["artifacts"] == {"reward": "verifier/reward.json"}
    assert "TOKEN" not in results.trial_file(run_dir, KEY).read_text()


def test_reward_json_from_record_when_harbor_left_none(tmp_path: Path) -> None:
    records = [rec("a", "with_skill")]
    plan = RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["with_skill"])
    run_dir = write_results_tree(aggregate(records, plan), records, tmp_path, RUN_ID)
    trial = json.loads(results.trial_file(run_dir, KEY).read_text())
    assert trial["reward"] is None and trial["artifacts"] == {}  # Harbor's reward is missing, not invented
    assert trial["rich_reward"]["security"] == 0.8 and trial["rich_reward"]["evaluation_status"] == "scored"


def test_trial_folder_keeps_rich_reward_and_grader_output_redacted(tmp_path: Path) -> None:
    trial_dir = tmp_path / "harbor-trial"
    (trial_dir / "verifier").mkdir(parents=True)
    rich = {
        "metrics": {"security": 0.0},
        "overall": 0.0,
        "details": {
            "security": {"findings": [{"type": "secret_leak", "evidence": "echo sk-abcdefghijklmnop"}]},
            "custom": {"api_key": "hunter2"},
        },
    }
    (trial_dir / "verifier" / "skilleval_reward.json").write_text(json.dumps(rich))
    noise = "x" * (results.MAX_GRADER_OUTPUT_CHARS + 100)
    (trial_dir / "verifier" / "grader-output.txt").write_text(noise + "\nOPENAI_API_KEY=sk-abcdefghijklmnop done\n")
    records = [rec("a", "with_skill", trial_dir=str(trial_dir))]
    plan = RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["with_skill"])
    run_dir = write_results_tree(aggregate(records, plan), records, tmp_path / "out", RUN_ID)
    trial = json.loads(results.trial_file(run_dir, KEY).read_text())
    kept = trial["rich_reward"]
    assert kept["details"]["security"]["findings"][0]["evidence"] == "echo [REDACTED]"
    assert kept["details"]["custom"]["api_key"] == "[REDACTED]"
    output = trial["grader_output"]
    assert "sk-abc" not in output and output.rstrip().endswith("[REDACTED] done")
    assert output.startswith("[... ") and len(output) < results.MAX_GRADER_OUTPUT_CHARS + 200  # capped, tail kept
    assert trial["artifacts"]["rich_reward"] == "verifier/skilleval_reward.json"
    assert trial["artifacts"]["grader_output"] == "verifier/grader-output.txt"


def test_rich_reward_rebuilt_from_record_without_harbor_files(tmp_path: Path) -> None:
    records = [rec("a", "with_skill", details={"security": {"findings": [], "reason": "ok"}})]
    plan = RunPlan(skill="s", cases=["a"], agents=["codex"], arms=["with_skill"])
    run_dir = write_results_tree(aggregate(records, plan), records, tmp_path, RUN_ID)
    kept = json.loads(results.trial_file(run_dir, KEY).read_text())["rich_reward"]
    assert kept["details"] == {"security": {"findings": [], "reason": "ok"}} and kept["security"] == 0.8


def test_rich_reward_names_match_the_host_verifier() -> None:
    from pytest_skilleval.harbor import verifier_adapter as harbor_verifier

    assert results.RICH_REWARD_SOURCE == f"verifier/{harbor_verifier.RICH_REWARD_NAME}"
    assert results.GRADER_OUTPUT_SOURCE == f"verifier/{harbor_verifier.GRADER_OUTPUT_NAME}"


# ---------------------------------------------------------------------------------------- safety


def test_refuses_symlinked_run_dir(tmp_path: Path) -> None:
    agg, records = build()
    root = tmp_path / "root"
    root.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / RUN_ID).symlink_to(elsewhere)
    with pytest.raises(UnsafeResultsPath):
        write_results_tree(agg, records, root, RUN_ID)
    assert list(elsewhere.iterdir()) == []


def test_refuses_symlinked_agent_dir(tmp_path: Path) -> None:
    agg, records = build()
    root = tmp_path / "root"
    (root / RUN_ID).mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / RUN_ID / "codex").symlink_to(elsewhere)
    with pytest.raises(UnsafeResultsPath):
        write_results_tree(agg, records, root, RUN_ID)
    assert list(elsewhere.iterdir()) == []
    assert not (root / RUN_ID / "result.json").exists()
    assert not (root / "latest").exists()


def test_refuses_symlinked_results_root(tmp_path: Path) -> None:
    agg, records = build()
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "root").symlink_to(target)
    with pytest.raises(UnsafeResultsPath):
        write_results_tree(agg, records, tmp_path / "root", RUN_ID)
    assert list(target.iterdir()) == []


def test_refuses_symlinked_file(tmp_path: Path) -> None:
    agg, records = build()
    root = tmp_path / "root"
    (root / RUN_ID).mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (root / RUN_ID / "run_config.json").symlink_to(victim)
    with pytest.raises(UnsafeResultsPath):
        write_results_tree(agg, records, root, RUN_ID)
    assert victim.read_text() == "keep me"


def test_existing_run_dir_from_staging_is_reused(tmp_path: Path) -> None:
    agg, records = build()
    (tmp_path / RUN_ID / "_harbor-tasks").mkdir(parents=True)
    run_dir = write_results_tree(agg, records, tmp_path, RUN_ID)
    assert (run_dir / "_harbor-tasks").is_dir() and (run_dir / "result.json").is_file()


def test_atomic_write_leaves_old_content_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.json"
    results.atomic_write_json(target, {"v": 1}, tmp_path)

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(results.os, "replace", boom)
    with pytest.raises(OSError):
        results.atomic_write_json(target, {"v": 2}, tmp_path)
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]  # temp file cleaned up


def test_latest_moves_only_after_result_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agg, records = build()
    old = "20240101_000000_1_aaaaaaaaaaaa"
    write_results_tree(agg, records, tmp_path, old)
    assert os.readlink(tmp_path / "latest") == old

    real = results.atomic_write_bytes

    def failing(path: Path, data: bytes, root: Path) -> Path:
        if path.name == "result.json":
            raise OSError("crash while writing result.json")
        return real(path, data, root)

    monkeypatch.setattr(results, "atomic_write_bytes", failing)
    with pytest.raises(OSError):
        write_results_tree(agg, records, tmp_path, RUN_ID)
    assert os.readlink(tmp_path / "latest") == old
    monkeypatch.setattr(results, "atomic_write_bytes", real)
    write_results_tree(agg, records, tmp_path, RUN_ID)
    assert os.readlink(tmp_path / "latest") == RUN_ID


def test_interrupted_run_does_not_move_latest(tmp_path: Path) -> None:
    agg, records = build(interrupted=True)
    run_dir = write_results_tree(agg, records, tmp_path, RUN_ID)
    assert (run_dir / "result.json").is_file()
    assert not (tmp_path / "latest").exists()


def test_latest_that_is_a_real_directory_is_left_alone(tmp_path: Path) -> None:
    agg, records = build()
    (tmp_path / "latest").mkdir()
    write_results_tree(agg, records, tmp_path, RUN_ID)
    assert (tmp_path / "latest").is_dir() and not (tmp_path / "latest").is_symlink()


def test_unsafe_run_id_refused(tmp_path: Path) -> None:
    agg, records = build()
    with pytest.raises(UnsafeResultsPath):
        write_results_tree(agg, records, tmp_path, "../escape")
