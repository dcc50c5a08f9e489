"""A case's checks graded in the trial's sandbox after the agent: real trials, local (bwrap) environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, shell_replay

pytest_plugins = ["pytester"]


def _skill(project: SkillProject, name: str, checks: list[dict[str, Any]], command: str, **entry: Any) -> Path:
    dataset = {
        "skill_name": name,
        "evals": [
            {"id": "c1", "prompt": "write the result", "expected_output": "result.txt", "checks": checks, **entry}
        ],
    }
    skill = project.make_skill(name, dataset, grader=False)
    (skill / "evals" / "replays" / "c1.json").write_text(json.dumps(shell_replay(command, message="Done: wrote it")))
    return skill


def _trial(project: SkillProject, skill: str, arm: str = "with_skill") -> dict[str, Any]:
    run = sorted((project.root / "results" / skill).glob("2*"))[-1]
    return json.loads(next((run / "replay" / arm / "trials").glob("c1.1.json")).read_text())


def test_every_check_type_in_the_local_sandbox(pytester: pytest.Pytester) -> None:
    project = SkillProject(pytester)
    command = (
        "mkdir -p output && printf 'hello\\n' > output/result.txt && printf '{\"items\": [{\"name\": \"x\"}]}' "
        "> output/data.json && printf 'a: [1, 2]\\n' > output/conf.yaml"
    )
    checks = [
        {"type": "file_exists", "path": "output/result.txt"},
        {"type": "file_absent", "path": "output/other.txt"},
        {"type": "file_contains", "path": "output/result.txt", "text": "hello"},
        {"type": "file_not_contains", "path": "output/result.txt", "regex": "TODO"},
        {"type": "file_equals", "path": "output/result.txt", "text": "hello\n"},
        {"type": "json_path", "path": "output/data.json", "json_path": "$.items[0].name", "equals": "x"},
        {"type": "json_path", "path": "output/conf.yaml", "json_path": "$.a", "contains": 2},
        {"type": "command", "run": "grep -c hello output/result.txt", "stdout_contains": "1"},
        {"type": "final_message_contains", "text": "Done"},
        {"type": "final_message_matches", "regex": "^Done: "},
        {"type": "workspace_changed", "paths": ["output/*"]},
        {"type": "workspace_unchanged", "paths": ["input"]},
        {"type": "no_command_matching", "regex": "rm -rf"},
        {"type": "file_contains", "path": "output/result.txt", "text": "goodbye", "name": "says goodbye"},
    ]
    _skill(project, "all-checks", checks, command)
    project.run("skills/all-checks", *LOCAL_REPLAY, "--skip-baseline")
    trial = _trial(project, "all-checks")["record"]
    statuses = {check["name"]: check["status"] for check in trial["checks"]}
    assert list(statuses.values()) == ["passed"] * 13 + ["failed"], trial["checks"]
    assert trial["metrics"]["checks"] == round(13 / 14, 4)
    assert "output/result.txt" in trial["workspace_diff"]["created"]
    assert "lacks text 'goodbye'; it starts 'hello\\n'" in trial["checks"][-1]["evidence"]
