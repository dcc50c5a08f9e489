"""The replay agent makes OpenHands' `str_replace_editor` edits to the file, in real local trials: with function
calling (tool calls) and without (the `<function=...>` block in the message), starting from Harbor's golden
OpenHands trajectories (fixtures/trajectories/text-calls)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_replay_agent import replay_agent, written_trajectory
from tests.support import FIXTURES

pytestmark = pytest.mark.e2e

TEXT_CALLS = FIXTURES / "trajectories" / "text-calls"
TARGET = "/workspace/hello.txt"
# The grader passes only when the file holds exactly what the edits leave: created, replaced, inserted, undone.
CHECK = """W="${HARBOR_WORKSPACE_DIR:-/workspace}"
if [ "$(cat "$W/hello.txt")" = "$(printf 'Hello, world!\\nsecond line')" ] && [ ! -e "$W/view" ]; then
  echo 1 > "$HARBOR_REWARD_TXT"; else echo 0 > "$HARBOR_REWARD_TXT"; fi
"""
EDITS: list[dict[str, Any]] = [
    {"command": "create", "path": TARGET, "file_text": "Hello, world!\nsecond line\n"},
    {"command": "create", "path": TARGET, "file_text": "refused: the file exists"},
    {"command": "str_replace", "path": TARGET, "old_str": "world", "new_str": "there"},
    {"command": "insert", "path": TARGET, "insert_line": "1", "new_str": "inserted"},
    {"command": "undo_edit", "path": TARGET},
    {"command": "undo_edit", "path": TARGET},
    {"command": "str_replace", "path": TARGET, "old_str": "absent", "new_str": "x"},
    {"command": "view", "path": "/workspace/view"},
]


def _function_calling() -> dict[str, Any]:
    """The golden run's create step, repeated once per edit (the task tracker's `view` must not run as a shell)."""
    document = json.loads((TEXT_CALLS / "openhands-function-calling" / "trajectory.json").read_text())
    steps = document["steps"]
    edit_step, finish = steps[4], steps[5]
    replayed = []
    for number, arguments in enumerate(EDITS):
        step = copy.deepcopy(edit_step)
        call_id = f"call_edit_{number}"
        step["tool_calls"][0].update(tool_call_id=call_id, arguments={**arguments, "security_risk": "LOW"})
        step["observation"]["results"][0]["source_call_id"] = call_id
        replayed.append(step)
    tracker = copy.deepcopy(edit_step)
    tracker["tool_calls"][0].update(
        tool_call_id="call_tracker", function_name="task_tracker", arguments={"command": "view"}
    )
    tracker["observation"]["results"][0]["source_call_id"] = "call_tracker"
    document["steps"] = [*steps[:4], *replayed, tracker, finish]
    for position, step in enumerate(document["steps"], start=1):
        step["step_id"] = position
    return document


def _block(arguments: dict[str, Any]) -> str:
    params = "".join(f"<parameter={key}>{value}</parameter>\n" for key, value in arguments.items())
    return f"<function=str_replace_editor>\n{params}</function>"


def _no_function_calling() -> dict[str, Any]:
    document = json.loads((TEXT_CALLS / "openhands-no-function-calling" / "trajectory.json").read_text())
    steps = document["steps"]
    edit_step, finish = steps[2], steps[3]
    replayed = []
    for arguments in EDITS:
        step = copy.deepcopy(edit_step)
        step["message"] = "Editing.\n" + _block(arguments)
        replayed.append(step)
    document["steps"] = [*steps[:2], *replayed, finish]
    for position, step in enumerate(document["steps"], start=1):
        step["step_id"] = position
    return document


@pytest.mark.parametrize("shape", ["function-calling", "no-function-calling"])
def test_openhands_edits_are_made_to_the_file(tmp_path: Path, kit, sandbox_mode: str, shape: str) -> None:
    document = _function_calling() if shape == "function-calling" else _no_function_calling()
    kit.write_json(tmp_path / "replays" / "case.json", document)
    task = kit.make_task(tmp_path, CHECK)
    trial, result = kit.run_trial(
        kit.trial_config(task, tmp_path / "trials", sandbox=sandbox_mode, agent=replay_agent(tmp_path / "replays"))
    )
    assert result.exception_info is None, result.exception_info
    assert result.verifier_result.rewards == {"reward": 1.0}
    replayed = written_trajectory(trial)
    answers = [r.content for s in replayed.steps if s.observation for r in s.observation.results if r.extra]
    assert answers[0] == f"File created successfully at: {TARGET}"
    assert "File already exists" in answers[1]
    assert (
        answers[2:6]
        == [f"The file {TARGET} has been edited."] * 2 + [f"Last edit to {TARGET} undone successfully."] * 2
    )
    assert "did not appear verbatim" in answers[6]
    assert replayed.extra["replay"]["executed_calls"] == 7  # view and the task tracker change nothing
