"""The `replay` Harbor agent, in real trials on the local environment."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from harbor.models.trajectories import Trajectory
from harbor.models.trial.config import AgentConfig
from harbor.models.trial.paths import EnvironmentPaths

from pytest_skilleval.harbor.replay_agent import (
    REPLAY_AGENT_IMPORT_PATH,
    ReplayAgent,
    format_output,
    replay_candidates,
    shell_command,
)

pytestmark = pytest.mark.e2e

REWARD_IF_TRAJECTORY = 'if [ -f "$HARBOR_ATIF_PATH" ]; then echo 1; else echo 0; fi > "$HARBOR_REWARD_TXT"\n'


def shell_step(step_id: int, calls: list[tuple[str, dict[str, Any]]], recorded: str = "RECORDED") -> dict[str, Any]:
    return {
        "step_id": step_id,
        "source": "agent",
        "message": f"step {step_id}",
        "tool_calls": [
            {"tool_call_id": f"c{step_id}_{i}", "function_name": name, "arguments": args}
            for i, (name, args) in enumerate(calls)
        ],
        "observation": {
            "results": [{"source_call_id": f"c{step_id}_{i}", "content": recorded} for i in range(len(calls))]
        },
    }


def trajectory(*steps: dict[str, Any], **root: Any) -> dict[str, Any]:
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": "s",
        "agent": {"name": "recorded-agent", "version": "1.0"},
        "steps": [{"step_id": 1, "source": "user", "message": "please"}, *steps],
        **root,
    }


def replay_agent(
    replay_dir: Path, case_id: str = "case", arm: str = "with_skill", skills: list[Path] | None = None
) -> AgentConfig:
    return AgentConfig(
        import_path=REPLAY_AGENT_IMPORT_PATH,
        kwargs={"replay_dir": str(replay_dir), "case_id": case_id, "arm": arm},
        skills=[str(s) for s in skills or []],
    )


def written_trajectory(trial: Any) -> Trajectory:
    return Trajectory.model_validate_json((Path(trial.paths.agent_dir) / "trajectory.json").read_text())


def results_by_call(traj: Trajectory) -> dict[str, Any]:
    return {r.source_call_id: r for s in traj.steps if s.observation for r in s.observation.results}


def test_replay_reexecutes_shell_calls_and_records_real_output(tmp_path: Path, kit, sandbox_mode: str) -> None:
    replays = tmp_path / "replays"
    kit.write_json(
        replays / "case.with-skill.json",
        trajectory(
            shell_step(
                2,
                [
                    ("Bash", {"command": "echo real-out; echo real-err >&2"}),
                    ("Bash", {"command": "pwd", "workdir": "/workspace/output"}),
                ],
            ),
            shell_step(
                3,
                [
                    ("exec_command", {"cmd": "echo made > /workspace/output/made.txt; exit 3"}),
                    ("shell", {"command": ["bash", "-lc", "cat /workspace/output/made.txt"]}),
                    ("Read", {"file_path": "/workspace/output/made.txt"}),
                ],
            ),
            {
                "step_id": 4,
                "source": "agent",
                "message": "all done",
                "metrics": {"prompt_tokens": 10, "completion_tokens": 2},
            },
            final_metrics={
                "total_prompt_tokens": 1234,
                "total_completion_tokens": 56,
                "total_cached_tokens": 700,
                "total_cost_usd": 0.0125,
            },
        ),
    )
    task = kit.make_task(
        tmp_path,
        'grep -q "made" "$HARBOR_ATIF_PATH" && echo 1 > "$HARBOR_REWARD_TXT" || echo 0 > "$HARBOR_REWARD_TXT"\n',
    )
    trial, result = kit.run_trial(
        kit.trial_config(task, tmp_path / "trials", sandbox="bwrap", agent=replay_agent(replays))
    )
    assert result.exception_info is None, result.exception_info
    # The verifier saw the written trajectory inside the sandbox (Harbor uploads <trial>/agent to /logs/agent).
    assert result.verifier_result.rewards == {"reward": 1.0}
    traj = written_trajectory(trial)
    by_call = results_by_call(traj)
    assert by_call["c2_0"].content == "real-out\nreal-err\n"
    assert by_call["c2_1"].content.strip().endswith("/workspace/output")
    assert by_call["c3_0"].content == "[exit code: 3]" and by_call["c3_0"].extra["exit_code"] == 3
    assert by_call["c3_1"].content == "made\n"
    assert by_call["c3_2"].content == "RECORDED"  # not a shell call: recorded observation kept
    assert [s.message for s in traj.steps] == ["please", "step 2", "step 3", "all done"]
    assert traj.extra["replay"]["executed_calls"] == 4
    ctx = result.agent_result
    assert (ctx.n_input_tokens, ctx.n_output_tokens, ctx.n_cache_tokens, ctx.cost_usd) == (1234, 56, 700, 0.0125)
    assert result.agent_info.name == "replay"


def test_tokens_fall_back_to_summed_step_metrics(tmp_path: Path, kit) -> None:
    replays = tmp_path / "replays"
    step = shell_step(2, [("Bash", {"command": "true"})])
    step["metrics"] = {"prompt_tokens": 100, "completion_tokens": 5, "cost_usd": 0.001}
    last = {
        "step_id": 3,
        "source": "agent",
        "message": "ok",
        "metrics": {"prompt_tokens": 150, "completion_tokens": 7, "cost_usd": 0.002},
    }
    kit.write_json(replays / "case.json", trajectory(step, last))
    task = kit.make_task(tmp_path, REWARD_IF_TRAJECTORY)
    _, result = kit.run_trial(kit.trial_config(task, tmp_path / "trials", sandbox="none", agent=replay_agent(replays)))
    ctx = result.agent_result
    assert (ctx.n_input_tokens, ctx.n_output_tokens) == (250, 12)
    assert ctx.cost_usd == pytest.approx(0.003)
    assert ctx.n_cache_tokens is None  # missing is not zero


def test_execute_false_writes_trajectory_as_is_and_runs_nothing(tmp_path: Path, kit, sandbox_mode: str) -> None:
    replays = tmp_path / "replays"
    kit.write_json(
        replays / "case.without-skill.json",
        trajectory(
            shell_step(2, [("Bash", {"command": "touch /workspace/output/ran"})], recorded="as recorded"),
            extra={"replay": {"execute": False}, "origin": "test"},
        ),
    )
    task = kit.make_task(
        tmp_path, 'if [ -e "$HARBOR_WORKSPACE_DIR/output/ran" ]; then echo 0; else echo 1; fi > "$HARBOR_REWARD_TXT"\n'
    )
    trial, result = kit.run_trial(
        kit.trial_config(
            task, tmp_path / "trials", sandbox=sandbox_mode, agent=replay_agent(replays, arm="without_skill")
        )
    )
    assert result.exception_info is None, result.exception_info
    assert result.verifier_result.rewards == {"reward": 1.0}
    traj = written_trajectory(trial)
    assert results_by_call(traj)["c2_0"].content == "as recorded"
    assert traj.extra["origin"] == "test" and traj.extra["replay"]["execute"] is False
    assert traj.extra["replay"]["executed_calls"] == 0


def test_missing_replay_names_every_path(tmp_path: Path, kit) -> None:
    replays = tmp_path / "replays"
    replays.mkdir()
    task = kit.make_task(tmp_path, REWARD_IF_TRAJECTORY)
    _, result = kit.run_trial(
        kit.trial_config(
            task, tmp_path / "trials", sandbox="none", agent=replay_agent(replays, case_id="nope", arm="without_skill")
        )
    )
    assert result.exception_info is not None
    message = result.exception_info.exception_message
    assert str(replays / "nope.without-skill.json") in message
    assert str(replays / "nope.json") in message
    assert result.verifier_result is None


def test_arm_specific_file_wins_over_generic(tmp_path: Path, kit) -> None:
    replays = tmp_path / "replays"
    kit.write_json(replays / "case.json", trajectory(shell_step(2, [("Bash", {"command": "echo generic"})])))
    kit.write_json(
        replays / "case.with-skill.json", trajectory(shell_step(2, [("Bash", {"command": "echo specific"})]))
    )
    task = kit.make_task(tmp_path, REWARD_IF_TRAJECTORY)
    runs = {}
    for arm in ("with_skill", "without_skill"):
        trial, result = kit.run_trial(
            kit.trial_config(task, tmp_path / f"trials-{arm}", sandbox="none", agent=replay_agent(replays, arm=arm))
        )
        runs[arm] = results_by_call(written_trajectory(trial))["c2_0"].content
    assert runs == {"with_skill": "specific\n", "without_skill": "generic\n"}


def test_skills_visible_only_in_with_skill_config(tmp_path: Path, kit, sandbox_mode: str) -> None:
    replays = tmp_path / "replays"
    kit.write_json(
        replays / "case.json",
        trajectory(
            shell_step(
                2,
                [
                    ("Bash", {"command": "echo dir={skills_dir}"}),
                    ("Bash", {"command": "cat {skills_dir}/hello-skill/SKILL.md"}),
                ],
            )
        ),
    )
    task = kit.make_task(tmp_path, REWARD_IF_TRAJECTORY)
    default_dir = EnvironmentPaths().default_skills_dir.as_posix()

    trial, result = kit.run_trial(
        kit.trial_config(
            task, tmp_path / "with", sandbox=sandbox_mode, agent=replay_agent(replays, skills=[kit.HELLO_SKILL])
        )
    )
    assert result.exception_info is None, result.exception_info
    by_call = results_by_call(written_trajectory(trial))
    if sandbox_mode == "bwrap":
        assert by_call["c2_0"].content == f"dir={default_dir}\n"
    assert "name: hello-skill" in by_call["c2_1"].content
    # The recorded command names Harbor's real skills path, so graders can see the read.
    calls = written_trajectory(trial).steps[1].tool_calls
    assert calls[1].arguments["command"] == f"cat {default_dir}/hello-skill/SKILL.md"

    trial, result = kit.run_trial(
        kit.trial_config(task, tmp_path / "without", sandbox=sandbox_mode, agent=replay_agent(replays))
    )
    assert result.exception_info is None, result.exception_info
    content = results_by_call(written_trajectory(trial))["c2_1"].content
    assert "No such file" in content and "[exit code: 1]" in content


def test_helpers() -> None:
    assert shell_command({"command": "ls"}) == "ls"
    assert shell_command({"cmd": ["bash", "-lc", "echo 'a b'"]}) == "bash -lc 'echo '\"'\"'a b'\"'\"''"
    assert shell_command({"file_path": "/x"}) is None
    assert format_output("o\n", "e\n", 0) == "o\ne\n"
    assert format_output("", "boom\n", 2) == "boom\n[exit code: 2]"
    assert [p.name for p in replay_candidates("/r", "c1", "without_skill")] == ["c1.without-skill.json", "c1.json"]
    with pytest.raises(ValueError, match="arm"):
        replay_candidates("/r", "c1", "both")
    with pytest.raises(ValueError, match="replay_dir"):
        ReplayAgent(logs_dir=Path("/tmp/unused"))
    assert ReplayAgent.name() == "replay"
    assert ReplayAgent.capabilities.skills and ReplayAgent.capabilities.atif


# ---- the demo skill, through a hand-staged task (the plugin's staging is not used) --------


HELLO_CASES = json.loads((Path(__file__).resolve().parents[2] / "examples/hello-skill/evals/evals.json").read_text())[
    "evals"
]


def stage_hello_case(root: Path, kit, case: dict[str, Any], arm: str) -> Path:
    evals = kit.HELLO_SKILL / "evals"
    entry = {
        **case,
        "evaluated_skill": "hello-skill",
        "has_skill": arm == "with_skill",
        "arm": arm,
        "agent": "replay",
        "attempt": 1,
    }
    inputs = {}
    for rel in case.get("files") or []:
        inputs["input/" + Path(rel).relative_to("files").as_posix()] = (evals / rel).read_text()
    return kit.make_task(
        root,
        'python3 "$HARBOR_GRADER"\n',
        name=f"{case['id']}-{arm}",
        instruction=case["prompt"],
        tests_files={"grader.py": (evals / "grader.py").read_text(), "entry.json": json.dumps(entry)},
        workspace_files=inputs,
    )


@pytest.mark.parametrize("case", HELLO_CASES, ids=[c["id"] for c in HELLO_CASES])
def test_hello_skill_cases(tmp_path: Path, kit, case: dict[str, Any], sandbox_mode: str) -> None:
    rewards = {}
    for arm in ("with_skill", "without_skill"):
        task = stage_hello_case(tmp_path / arm, kit, case, arm)
        skills = [kit.HELLO_SKILL] if arm == "with_skill" else []
        agent = replay_agent(kit.HELLO_SKILL / "evals" / "replays", case_id=case["id"], arm=arm, skills=skills)
        trial, result = kit.run_trial(
            kit.trial_config(task, tmp_path / arm / "trials", sandbox=sandbox_mode, agent=agent)
        )
        assert result.exception_info is None, result.exception_info
        rewards[arm] = result.verifier_result.rewards
        assert 0.0 <= rewards[arm]["overall"] <= 1.0
        assert result.agent_result.n_input_tokens and result.agent_result.cost_usd
    if case.get("expected_skill", "hello-skill") is None:
        assert rewards["with_skill"]["no_greeting_file"] == 1.0
        assert rewards["with_skill"]["overall"] == rewards["without_skill"]["overall"] == 1.0
    else:
        assert rewards["with_skill"]["greeting_correct"] == 1.0 and rewards["with_skill"]["script_used"] == 1.0
        assert rewards["without_skill"]["greeting_correct"] == 0.0
        assert rewards["with_skill"]["overall"] > rewards["without_skill"]["overall"]


def test_hello_grader_copes_without_trajectory_and_with_content_parts(tmp_path: Path) -> None:
    import subprocess
    import sys

    grader = Path(__file__).resolve().parents[2] / "examples/hello-skill/evals/grader.py"
    ws = tmp_path / "ws"
    (ws / "output").mkdir(parents=True)
    (ws / "output" / "greeting.txt").write_text("Hello, Ada Lovelace!\nWelcome aboard. We are glad you are here.\n")
    entry = tmp_path / "entry.json"
    entry.write_text(json.dumps({"id": "x", "greeting_name": "Ada Lovelace", "expected_skill": "hello-skill"}))
    env = {
        "HARBOR_ENTRY_JSON": str(entry),
        "HARBOR_WORKSPACE_DIR": str(ws),
        "HARBOR_VERIFIER_DIR": str(tmp_path / "v"),
        "HARBOR_ATIF_PATH": str(tmp_path / "missing.json"),
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run([sys.executable, str(grader)], env=env, check=True, capture_output=True)
    reward = json.loads((tmp_path / "v" / "reward.json").read_text())
    assert reward == {"greeting_present": 1.0, "greeting_correct": 1.0, "overall": 1.0}
    assert (tmp_path / "v" / "reward.txt").read_text().strip() == "1.0"
    traj = {
        "steps": [
            {
                "step_id": 1,
                "source": "agent",
                "message": [{"type": "text", "text": "done"}],
                "tool_calls": [
                    {"tool_call_id": "a", "function_name": "Bash", "arguments": {"command": "python3 x/greet.py"}}
                ],
                "observation": {
                    "results": [{"source_call_id": "a", "content": [{"type": "text", "text": "wrote greeting.txt"}]}]
                },
            }
        ]
    }
    (tmp_path / "t.json").write_text(json.dumps(traj))
    env["HARBOR_ATIF_PATH"] = str(tmp_path / "t.json")
    subprocess.run([sys.executable, str(grader)], env=env, check=True, capture_output=True)
    assert json.loads((tmp_path / "v" / "reward.json").read_text())["script_used"] == 1.0
    shutil.rmtree(ws / "output")
    (ws / "output").mkdir()
    subprocess.run([sys.executable, str(grader)], env=env, check=True, capture_output=True)
    assert json.loads((tmp_path / "v" / "reward.json").read_text())["overall"] == 0.0


def test_agent_timeout_kills_the_call_keeps_partial_trajectory_and_still_verifies(
    tmp_path: Path, kit, sandbox_mode: str
) -> None:
    replays = tmp_path / "replays"
    kit.write_json(
        replays / "case.json",
        trajectory(
            shell_step(2, [("Bash", {"command": "echo first > /workspace/output/first.txt"})]),
            shell_step(3, [("Bash", {"command": "(sleep 3; touch /workspace/output/late) & sleep 60"})]),
        ),
    )
    task = kit.make_task(tmp_path, REWARD_IF_TRAJECTORY)
    task_toml = task / "task.toml"
    task_toml.write_text(task_toml.read_text().replace("[agent]\ntimeout_sec = 60.0", "[agent]\ntimeout_sec = 1.0"))
    trial, result = kit.run_trial(
        kit.trial_config(task, tmp_path / "trials", sandbox=sandbox_mode, agent=replay_agent(replays), delete=False)
    )
    assert result.exception_info is not None and result.exception_info.exception_type == "AgentTimeoutError"
    assert result.verifier_result.rewards == {"reward": 1.0}  # verification still ran and saw the trajectory
    traj = written_trajectory(trial)
    by_call = results_by_call(traj)
    assert by_call["c2_0"].extra["replayed"] is True and by_call["c3_0"].content == "RECORDED"
    assert traj.extra["replay"]["executed_calls"] == 1
    time.sleep(4)
    rootfs = Path(trial.paths.trial_dir).resolve() / "local-sandbox" / "rootfs"
    assert (rootfs / "workspace/output/first.txt").exists()
    assert not (rootfs / "workspace/output/late").exists()


def test_a_workdir_outside_the_sandbox_says_nothing_of_the_host(tmp_path: Path, kit) -> None:
    """A recorded `workdir` that exists on the host but not in the sandbox (the host's /proc/<pid>, a host folder)
    gets the same answer as one that exists nowhere: the sandbox decides, never a look at the host."""
    import os

    from tests.e2e.conftest import skip_without_bwrap

    skip_without_bwrap("bwrap")  # `sandbox=none` is the host: it has nothing to hide
    host_only = f"/proc/{os.getpid()}/fd"  # this process, on the host; the sandbox has its own pid namespace
    assert os.path.isdir(host_only)
    nowhere = "/proc/999999999/fd"
    replays = tmp_path / "replays"
    calls = [("Bash", {"command": "echo ran", "workdir": path}) for path in (host_only, nowhere, "/workspace")]
    kit.write_json(replays / "case.json", trajectory(shell_step(2, calls)))
    task = kit.make_task(tmp_path, REWARD_IF_TRAJECTORY)
    trial, result = kit.run_trial(
        kit.trial_config(task, tmp_path / "trials", sandbox="bwrap", agent=replay_agent(replays))
    )
    assert result.exception_info is None, result.exception_info
    by_call = results_by_call(written_trajectory(trial))
    first, second = (by_call[f"c2_{i}"] for i in (0, 1))
    assert first.extra["exit_code"] == second.extra["exit_code"] != 0
    assert first.content.replace(host_only, "X") == second.content.replace(nowhere, "X")
    assert "ran" not in first.content and by_call["c2_2"].content == "ran\n"
