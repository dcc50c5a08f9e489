"""The two scaffolding commands: files written, refusals, --force, and the generated scripts run for real."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_skilleval.authoring.scaffold import (
    ScaffoldError,
    add_init_commands,
    init_custom_grader,
    init_harbor_task,
    run_init_custom_grader,
    run_init_harbor_task,
)
from pytest_skilleval.harbor.native_staging import stage_native_task
from pytest_skilleval.skill.config_file import load_config
from pytest_skilleval.skill.native_tasks import check_native_task, discover_native_tasks
from verifier.custom import read_grader_reward

BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="needs bash")

TRAJECTORY_STRING = {
    "schema_version": "ATIF-v1.4",
    "session_id": "s",
    "agent": {"name": "replay", "version": "1"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "Say the capital of France."},
        {
            "step_id": 2,
            "source": "agent",
            "message": "Checking.",
            "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "echo Paris"}}],
            "observation": {"results": [{"source_call_id": "c1", "content": "Paris"}]},
        },
        {"step_id": 3, "source": "agent", "message": "The capital is Paris."},
    ],
}
TRAJECTORY_PARTS = {
    "schema_version": "ATIF-v1.6",
    "session_id": "s",
    "agent": {"name": "replay", "version": "1"},
    "steps": [
        {"step_id": 1, "source": "user", "message": [{"type": "text", "text": "Say the capital of France."}]},
        {
            "step_id": 2,
            "source": "agent",
            "message": [{"type": "text", "text": "Looking at it."}],
            "observation": {"results": [{"content": [{"type": "text", "text": "Paris"}, {"type": "image"}]}]},
        },
        {"step_id": 3, "source": "agent", "message": [{"type": "text", "text": "The capital is Paris."}]},
    ],
}
ENTRY = {"id": "capital", "prompt": "Say the capital of France.", "expected_output": "Paris"}


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    skill_dir = tmp_path / "my-skill"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text("---\nname: my-skill\ndescription: test\n---\n")
    return skill_dir


def add_dataset(skill_dir: Path, *ids: str) -> None:
    """evals/evals.json with one entry per id: in a standard grading mode a native task is graded as one of them."""
    cases = [{"id": case_id, "prompt": f"Answer for {case_id}.", "expected_output": "x"} for case_id in ids]
    (skill_dir / "evals").mkdir(exist_ok=True)
    (skill_dir / "evals" / "evals.json").write_text(json.dumps({"skill_name": skill_dir.name, "evals": cases}))


def sandbox(tmp_path: Path, trajectory: object | None, entry: object | None = ENTRY) -> dict[str, str]:
    """A fake trial layout and the HARBOR_* variables pointing into it."""
    logs, tests = tmp_path / "logs", tmp_path / "tests"
    (logs / "agent").mkdir(parents=True)
    tests.mkdir()
    if trajectory is not None:
        (logs / "agent" / "trajectory.json").write_text(
            trajectory if isinstance(trajectory, str) else json.dumps(trajectory, indent=2)
        )
    if entry is not None:
        (tests / "entry.json").write_text(json.dumps(entry, indent=2))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARBOR_")}
    env.update(HARBOR_LOGS_DIR=str(logs), HARBOR_TESTS_DIR=str(tests))
    return env


def run(script: Path, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(script)] if script.suffix == ".py" else [str(BASH), str(script)]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def reward(tmp_path: Path) -> tuple[dict[str, object], str]:
    verifier = tmp_path / "logs" / "verifier"
    return json.loads((verifier / "reward.json").read_text()), (verifier / "reward.txt").read_text()


# --- init-custom-grader ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("language, name", [("python", "grader.py"), ("shell", "grader.sh")])
def test_custom_grader_files(skill: Path, language: str, name: str) -> None:
    written = init_custom_grader(skill, language)
    assert written == [skill / "evals" / name]
    assert written[0].stat().st_mode & stat.S_IXUSR
    assert not (skill / "evals" / "config.yml").exists()


@pytest.mark.parametrize(
    "mode, expected",
    [("default_plus_custom", None), ("custom_only", None), ("aces_plus_custom", "default_plus_custom")],
)
def test_custom_grader_with_mode_writes_config(skill: Path, mode: str, expected: str | None) -> None:
    written = init_custom_grader(skill, "python", mode)
    assert skill / "evals" / "config.yml" in written
    config = load_config(skill / "evals")
    assert config is not None and config.grading_mode == (expected or mode)


def test_custom_grader_rejects_default_mode(skill: Path) -> None:
    with pytest.raises(ScaffoldError, match="ignores a custom grader"):
        init_custom_grader(skill, "python", "default")


def test_custom_grader_refuses_overwrite_without_force(skill: Path) -> None:
    (skill / "evals").mkdir()
    (skill / "evals" / "grader.py").write_text("# mine\n")
    with pytest.raises(ScaffoldError, match="--force"):
        init_custom_grader(skill, "python", "custom_only")
    assert (skill / "evals" / "grader.py").read_text() == "# mine\n"
    assert not (skill / "evals" / "config.yml").exists()  # a refusal writes nothing
    init_custom_grader(skill, "python", force=True)
    assert "def grade" in (skill / "evals" / "grader.py").read_text()


def test_custom_grader_refuses_second_language(skill: Path) -> None:
    init_custom_grader(skill, "python")
    with pytest.raises(ScaffoldError, match="another grader"):
        init_custom_grader(skill, "shell", force=True)


def test_existing_config_updated_only_with_force(skill: Path) -> None:
    evals = skill / "evals"
    evals.mkdir()
    (evals / "config.yml").write_text("schema_version: 1\nharbor:\n  n_attempts: 3\ngrading:\n  mode: default\n")
    with pytest.raises(ScaffoldError, match="--force"):
        init_custom_grader(skill, "python", "custom_only")
    assert not (evals / "grader.py").exists()
    init_custom_grader(skill, "python", "custom_only", force=True)
    config = load_config(evals)
    assert config is not None and config.grading_mode == "custom_only" and config.harbor.n_attempts == 3


def test_existing_config_with_same_mode_is_left_alone(skill: Path) -> None:
    evals = skill / "evals"
    evals.mkdir()
    (evals / "config.yml").write_text("# mine\nschema_version: 1\ngrading: {mode: aces_plus_custom}\n")
    written = init_custom_grader(skill, "python", "default_plus_custom")
    assert written == [evals / "grader.py"]
    assert (evals / "config.yml").read_text().startswith("# mine")


def test_refuses_without_skill_md(tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="SKILL.md"):
        init_custom_grader(tmp_path, "python")
    with pytest.raises(ScaffoldError, match="not a directory"):
        init_harbor_task(tmp_path / "missing")


@pytest.mark.parametrize("trajectory", [TRAJECTORY_STRING, TRAJECTORY_PARTS], ids=["string", "parts"])
def test_python_grader_scores_a_trajectory(skill: Path, tmp_path: Path, trajectory: dict[str, object]) -> None:
    grader = init_custom_grader(skill, "python")[0]
    proc = run(grader, sandbox(tmp_path, trajectory))
    assert proc.returncode == 0, proc.stderr
    data, txt = reward(tmp_path)
    assert data["custom_metrics"] == {"final_answer_present": 1.0, "expected_output_coverage": 1.0}
    assert data["overall"] == 1.0 and float(txt) == 1.0
    sanitized = read_grader_reward(
        tmp_path / "logs" / "verifier" / "reward.json", tmp_path / "logs" / "verifier" / "reward.txt", "custom_only"
    )
    assert sanitized.ok and sanitized.overall == 1.0 and sanitized.omitted == []


@pytest.mark.parametrize(
    "trajectory", [None, "", "{not json", '{"steps": []}'], ids=["missing", "empty", "bad", "no-steps"]
)
def test_python_grader_without_trajectory(skill: Path, tmp_path: Path, trajectory: str | None) -> None:
    grader = init_custom_grader(skill, "python")[0]
    proc = run(grader, sandbox(tmp_path, trajectory, entry=None))
    assert proc.returncode == 0, proc.stderr
    data, txt = reward(tmp_path)
    assert data["overall"] == 0.0 and float(txt) == 0.0
    assert data["custom_metrics"]["final_answer_present"] == 0.0


@needs_bash
@pytest.mark.parametrize("trajectory", [TRAJECTORY_STRING, TRAJECTORY_PARTS], ids=["string", "parts"])
def test_shell_grader_scores_a_trajectory(skill: Path, tmp_path: Path, trajectory: dict[str, object]) -> None:
    grader = init_custom_grader(skill, "shell")[0]
    proc = run(grader, sandbox(tmp_path, trajectory))
    assert proc.returncode == 0, proc.stderr
    data, txt = reward(tmp_path)
    assert data["custom_metrics"] == {"agent_replied": 1.0, "expected_output_seen": 1.0}
    assert data["overall"] == 1.0 and float(txt) == 1.0
    assert set(data["details"]) == {"agent_replied", "expected_output_seen"}
    sanitized = read_grader_reward(
        tmp_path / "logs" / "verifier" / "reward.json", tmp_path / "logs" / "verifier" / "reward.txt", "custom_only"
    )
    assert sanitized.ok and sanitized.overall == 1.0


@needs_bash
def test_shell_grader_partial_score(skill: Path, tmp_path: Path) -> None:
    grader = init_custom_grader(skill, "shell")[0]
    proc = run(grader, sandbox(tmp_path, TRAJECTORY_STRING, entry={"id": "x", "expected_output": "Berlin"}))
    assert proc.returncode == 0, proc.stderr
    data, txt = reward(tmp_path)
    assert data["overall"] == 0.5 and txt.strip() == "0.5000"


@needs_bash
@pytest.mark.parametrize("trajectory", [None, ""], ids=["missing", "empty"])
def test_shell_grader_without_trajectory(skill: Path, tmp_path: Path, trajectory: str | None) -> None:
    grader = init_custom_grader(skill, "shell")[0]
    proc = run(grader, sandbox(tmp_path, trajectory))
    assert proc.returncode == 0, proc.stderr
    data, txt = reward(tmp_path)
    assert data["overall"] == 0.0 and float(txt) == 0.0
    assert "no trajectory" in json.dumps(data["details"])


def test_graders_honour_explicit_reward_paths(skill: Path, tmp_path: Path) -> None:
    grader = init_custom_grader(skill, "python")[0]
    env = sandbox(tmp_path, TRAJECTORY_STRING)
    env["HARBOR_REWARD_JSON"] = str(tmp_path / "elsewhere" / "r.json")
    env["HARBOR_REWARD_TXT"] = str(tmp_path / "elsewhere" / "r.txt")
    assert run(grader, env).returncode == 0
    assert json.loads((tmp_path / "elsewhere" / "r.json").read_text())["overall"] == 1.0


# --- init-harbor-task --------------------------------------------------------------------------------------------


def test_harbor_task_files(skill: Path) -> None:
    add_dataset(skill, "hello-case")
    written = init_harbor_task(skill, "hello-case")
    task_dir = skill / "evals" / "harbor" / "hello-case"
    assert written == [
        task_dir / "task.toml",
        task_dir / "instruction.md",
        task_dir / "environment" / "Dockerfile",
        task_dir / "tests" / "test.sh",
    ]
    assert (task_dir / "tests" / "test.sh").stat().st_mode & stat.S_IXUSR
    assert not (skill / "evals" / "config.yml").exists()


def test_harbor_task_with_config(skill: Path) -> None:
    written = init_harbor_task(skill, "hello-case", with_config=True)
    assert skill / "evals" / "config.yml" in written
    config = load_config(skill / "evals")
    assert config is not None and config.grading_mode == "custom_only"


def test_harbor_task_default_case_id(skill: Path) -> None:
    add_dataset(skill, "case-001")
    init_harbor_task(skill)
    assert (skill / "evals" / "harbor" / "case-001" / "task.toml").is_file()


@pytest.mark.parametrize("config", [None, "default", "default_plus_custom"])
def test_harbor_task_refuses_an_id_no_entry_has_in_a_standard_mode(skill: Path, config: str | None) -> None:
    """A run grades a native task as the dataset entry with its id in these modes; one with no entry fails
    collection (`entry-id-mismatch`), so the scaffold refuses it, naming the ids there are and the other ways."""
    add_dataset(skill, "case-10", "case-2")
    if config is not None:
        (skill / "evals" / "config.yml").write_text(f"schema_version: 1\ngrading:\n  mode: {config}\n")
    with pytest.raises(ScaffoldError) as refused:
        init_harbor_task(skill)
    message = str(refused.value)
    assert "'case-001' matches no entry" in message and "one of case-2, case-10" in message
    assert f"grading mode {config or 'default'} " in message and "--with-config" in message
    assert not (skill / "evals" / "harbor").exists()


def test_harbor_task_without_a_dataset_is_refused_in_a_standard_mode(skill: Path) -> None:
    with pytest.raises(ScaffoldError, match="has no evals.json: add one with an entry 'c1', or pass --with-config"):
        init_harbor_task(skill, "c1")
    assert not (skill / "evals" / "harbor").exists()


def test_harbor_task_any_id_in_custom_only(skill: Path) -> None:
    (skill / "evals").mkdir()
    (skill / "evals" / "config.yml").write_text("schema_version: 1\ngrading:\n  mode: custom_only\n")
    assert init_harbor_task(skill, "mine")[0] == skill / "evals" / "harbor" / "mine" / "task.toml"


@pytest.mark.parametrize("case_id", ["bad id", "-x", "results", "a" * 129, "x."])
def test_harbor_task_rejects_bad_case_ids(skill: Path, case_id: str) -> None:
    with pytest.raises(ScaffoldError):
        init_harbor_task(skill, case_id)


def test_harbor_task_refuses_overwrite(skill: Path) -> None:
    add_dataset(skill, "c1")
    init_harbor_task(skill, "c1")
    instruction = skill / "evals" / "harbor" / "c1" / "instruction.md"
    instruction.write_text("mine\n")
    with pytest.raises(ScaffoldError, match="--force"):
        init_harbor_task(skill, "c1")
    assert instruction.read_text() == "mine\n"
    init_harbor_task(skill, "c1", force=True)
    assert "hello from c1" in instruction.read_text()


@pytest.mark.parametrize("paired", [True, False])
def test_harbor_task_passes_strict_validation(skill: Path, paired: bool) -> None:
    from harbor.models.task.task import Task

    init_harbor_task(skill, "c1", with_config=True)
    tasks = discover_native_tasks(skill / "evals")
    assert [(t.case_id, t.entry_id) for t in tasks] == [("c1", "c1")]
    assert tasks[0].config.environment.docker_image is None  # runs locally without an image
    assert check_native_task(tasks[0], grading_mode="custom_only", paired=paired, dataset_ids=None) == []
    assert check_native_task(tasks[0], grading_mode="default", paired=paired, dataset_ids={"c1"}) == []
    assert Task(tasks[0].path).name == "my-skill/c1"


def test_scaffolded_task_stages(skill: Path, tmp_path: Path) -> None:
    add_dataset(skill, "c1")
    init_harbor_task(skill, "c1")
    task = discover_native_tasks(skill / "evals")[0]
    staged = stage_native_task(task, tmp_path / "staged", "without_skill")
    assert 'name = "my-skill/c1-without-skill"' in (staged / "task.toml").read_text()


@needs_bash
@pytest.mark.parametrize(
    "answer, overall, present, correct",
    [(None, 0.0, 0.0, 0.0), ("wrong\n", 0.5, 1.0, 0.0), ("hello from c1\n", 1.0, 1.0, 1.0)],
)
def test_harbor_test_sh_writes_flat_numeric_reward(
    skill: Path, tmp_path: Path, answer: str | None, overall: float, present: float, correct: float
) -> None:
    add_dataset(skill, "c1")
    init_harbor_task(skill, "c1")
    workspace = tmp_path / "workspace"
    (workspace / "output").mkdir(parents=True)
    if answer is not None:
        (workspace / "output" / "answer.txt").write_text(answer)
    env = sandbox(tmp_path, None, entry=None)
    env["HARBOR_WORKSPACE_DIR"] = str(workspace)
    proc = run(skill / "evals" / "harbor" / "c1" / "tests" / "test.sh", env)
    assert proc.returncode == 0, proc.stderr
    data, txt = reward(tmp_path)
    assert data == {"overall": overall, "answer_present": present, "answer_correct": correct}
    assert all(isinstance(v, float) and not isinstance(v, bool) for v in data.values())  # Harbor's flat contract
    assert float(txt) == overall


@needs_bash
def test_harbor_test_sh_falls_back_to_working_directory(skill: Path, tmp_path: Path) -> None:
    add_dataset(skill, "c1")
    init_harbor_task(skill, "c1")
    workspace = tmp_path / "cwd"
    (workspace / "output").mkdir(parents=True)
    (workspace / "output" / "answer.txt").write_text("hello from c1")
    env = sandbox(tmp_path, None, entry=None)
    env["HARBOR_WORKSPACE_DIR"] = str(tmp_path / "does-not-exist")
    assert run(skill / "evals" / "harbor" / "c1" / "tests" / "test.sh", env, cwd=workspace).returncode == 0
    assert reward(tmp_path)[0]["overall"] == 1.0


# --- command line ------------------------------------------------------------------------------------------------


def test_run_functions_exit_codes(skill: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_init_custom_grader([str(skill), "--language", "shell", "--mode", "default_plus_custom"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert run_init_custom_grader([str(skill), "--language", "shell"]) == 1
    assert "--force" in capsys.readouterr().err
    assert run_init_custom_grader([str(skill), "--language", "rust"]) == 2
    assert run_init_custom_grader([str(skill), "--mode", "default"]) == 2
    assert run_init_harbor_task([str(skill), "--case-id", "c9", "--with-config"]) == 1  # config disagrees
    assert run_init_harbor_task([str(skill), "--case-id", "c9", "--with-config", "--force"]) == 0
    assert run_init_harbor_task([str(skill), "--case-id", "bad id"]) == 1
    assert run_init_harbor_task([]) == 2


def test_with_config_when_custom_only_already_set(skill: Path) -> None:
    init_custom_grader(skill, "python", "custom_only")
    assert run_init_harbor_task([str(skill), "--case-id", "c2", "--with-config"]) == 0
    assert yaml.safe_load((skill / "evals" / "config.yml").read_text())["grading"]["mode"] == "custom_only"


def test_add_init_commands(skill: Path) -> None:
    add_dataset(skill, "c3")
    import argparse

    parser = argparse.ArgumentParser(prog="skilleval")
    add_init_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["init-harbor-task", str(skill), "--case-id", "c3"])
    assert args.handler(args) == 0 and (skill / "evals" / "harbor" / "c3" / "task.toml").is_file()
    args = parser.parse_args(["init-custom-grader", str(skill), "--mode", "aces_plus_custom"])
    assert args.handler(args) == 0
