"""`skilleval trajectory --replay` output replays for every agent we support: each agent's real trajectory, taken
out of a trial file with `--replay`, loads in the replay agent and has every action it recorded done again in a
real local trial (shell commands, terminus-2 keystrokes in both modes, OpenHands calls with and without function
calling)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harbor.models.trajectories import Trajectory

from pytest_skilleval.authoring.cli import main
from tests.e2e.conftest import skip_without_bwrap, skip_without_tmux
from tests.e2e.test_replay_agent import replay_agent, written_trajectory
from tests.support import FIXTURES

pytestmark = pytest.mark.e2e

TRAJECTORIES = FIXTURES / "trajectories"
# (agent, its trajectory, the actions it recorded: shell commands, keystrokes, file edits; counted by hand).
AGENTS = [
    ("claude-code", "claude-code/trajectory.json", 1),
    ("codex", "codex/trajectory.json", 2),  # its arguments are JSON strings and agent.version is missing
    ("opencode", "opencode/trajectory.json", 2),
    ("terminus-2", "terminus-2-recorded/tool-calls/with_skill/trajectory.json", 2),
    ("terminus-2-raw-content", "terminus-2-recorded/raw-content/with_skill/trajectory.json", 2),
    ("openhands", "text-calls/openhands-function-calling/trajectory.json", 1),
    ("openhands-no-function-calling", "text-calls/openhands-no-function-calling/trajectory.json", 1),
]


@pytest.mark.parametrize(("agent", "fixture", "actions"), AGENTS, ids=[a[0] for a in AGENTS])
def test_replay_output_replays(
    tmp_path: Path, kit, capsys: pytest.CaptureFixture[str], agent: str, fixture: str, actions: int
) -> None:
    skip_without_bwrap("bwrap")
    if agent.startswith("terminus-2"):
        skip_without_tmux("the replay types terminus-2's keystrokes into tmux")
    trial_file = tmp_path / "case.1.json"
    trial_file.write_text(json.dumps({"trajectory": json.loads((TRAJECTORIES / fixture).read_text())}))
    out = tmp_path / "replays" / "case.json"
    out.parent.mkdir()
    assert main(["trajectory", str(trial_file), "--replay", "-o", str(out)]) == 0, capsys.readouterr().err
    Trajectory.model_validate_json(out.read_text())  # Harbor's own ATIF model accepts it

    task = kit.make_task(tmp_path, 'echo 1 > "$HARBOR_REWARD_TXT"\n')
    trial, result = kit.run_trial(
        kit.trial_config(task, tmp_path / "trials", sandbox="bwrap", agent=replay_agent(out.parent))
    )
    assert result.exception_info is None, result.exception_info
    replayed = written_trajectory(trial)
    assert replayed.extra["replay"]["executed_calls"] == actions
    outputs = [
        r for s in replayed.steps if s.observation for r in s.observation.results if (r.extra or {}).get("replayed")
    ]
    assert outputs, "no observation holds a replayed output"
