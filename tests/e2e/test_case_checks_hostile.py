"""Every check type against a hostile agent, in the local (bwrap) sandbox and in Docker: links the agent planted
where a check looks (never followed), a command that never ends (killed at its timeout), a 1 GB (sparse) file to
compare (sizes first, reads capped), and bytes that are not UTF-8."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.test_case_checks import write_replays
from tests.support import SkillProject

pytestmark = pytest.mark.e2e

LATIN = b"\xff\xfe caf\xe9 42\n"
AGENT = (
    "mkdir -p output /tmp/real && printf 'hello 42\\n' > /tmp/real/result.txt"
    " && printf '{\"a\": 1}' > /tmp/real/data.json"
    " && ln -s /tmp/real/result.txt output/linked.txt && ln -s /tmp/real output/linkdir"
    " && ln -s /tmp/real/data.json output/data.json"
    " && truncate -s 1G output/big.bin"
    " && printf '\\377\\376 caf\\351 42\\n' > output/latin.txt"
    " && printf 'a: [1, 2]\\nname: caf\\351\\n' > output/conf.yaml"
)
# (check, expected status, words its evidence holds)
CASES: list[tuple[dict[str, Any], str, str]] = [
    ({"type": "file_exists", "path": "output/linked.txt"}, "failed", "symbolic link (not followed)"),
    ({"type": "file_contains", "path": "output/linked.txt", "text": "hello"}, "failed", "symbolic link"),
    (
        {"type": "file_contains", "path": "output/linkdir/result.txt", "text": "hello"},
        "failed",
        "/workspace/output/linkdir is a symbolic link (not followed)",
    ),
    ({"type": "json_path", "path": "output/data.json", "json_path": "$.a", "equals": 1}, "failed", "symbolic link"),
    ({"type": "file_equals", "path": "output/linked.txt", "text": "hello 42\n"}, "failed", "symbolic link"),
    ({"type": "file_absent", "path": "output/linked.txt"}, "failed", "exists"),
    ({"type": "command", "run": "sleep 1000", "timeout_sec": 2}, "failed", "did not finish within 2 s (killed)"),
    ({"type": "command", "run": "(setsid sleep 1000 &); exit 0", "timeout_sec": 10}, "passed", "exit code 0"),
    ({"type": "file_equals", "path": "output/big.bin", "text": "x"}, "failed", "is 1073741824 bytes, expected 1"),
    ({"type": "file_contains", "path": "output/big.bin", "text": "needle"}, "error", "only the first 268435456"),
    ({"type": "file_not_contains", "path": "output/big.bin", "regex": "needle"}, "error", "only the first 16777216"),
    ({"type": "file_contains", "path": "output/latin.txt", "text": "42"}, "passed", "contains text '42'"),
    ({"type": "file_contains", "path": "output/latin.txt", "regex": "caf.\\s42"}, "passed", "contains regex"),
    ({"type": "file_equals", "path": "output/latin.txt", "file": "latin.txt"}, "passed", "equals the expected"),
    # YAML: parsed in the sandbox when it has PyYAML, else on the host within the dataset reader's limits.
    ({"type": "json_path", "path": "output/conf.yaml", "json_path": "$.a", "contains": 2}, "passed", "is [1, 2]"),
    ({"type": "json_path", "path": "output/conf.yaml", "json_path": "$.name", "exists": True}, "passed", "exists"),
    (
        {"type": "command", "run": "printf '\\377\\376'; exit 3", "exit_code": 0},
        "failed",
        "exit code 3, expected 0; output '\ufffd\ufffd'",
    ),
    ({"type": "workspace_changed", "paths": ["output/big.bin"]}, "passed", "output/big.bin"),
    ({"type": "workspace_unchanged", "paths": ["input"]}, "passed", "nothing matching input changed"),
    ({"type": "no_command_matching", "regex": "truncate -s"}, "failed", "command 1 matches"),
    ({"type": "final_message_contains", "text": "Done"}, "passed", "matches text 'Done'"),
    ({"type": "final_message_matches", "regex": "^Nope"}, "failed", "lacks regex '^Nope'"),
]


def _hostile_skill(project: SkillProject) -> Path:
    checks = [{**check, "name": f"check {index}"} for index, (check, _, _) in enumerate(CASES)]
    dataset = {
        "skill_name": "hostile",
        "evals": [{"id": "c1", "prompt": "p", "expected_output": "e", "checks": checks}],
    }
    skill = project.make_skill("hostile", dataset, grader=False)
    (skill / "evals" / "replays" / "c1.json").unlink()
    write_replays(skill, "c1", AGENT)
    (skill / "evals" / "files").mkdir()
    (skill / "evals" / "files" / "latin.txt").write_bytes(LATIN)
    return skill


def _assert_checks(project: SkillProject, seconds: float) -> None:
    run = sorted((project.root / "results" / "hostile").glob("2*"))[-1]
    record = json.loads((run / "replay" / "with_skill" / "trials" / "c1.1.json").read_text())["record"]
    found = record["checks"]
    assert len(found) == len(CASES)
    for result, (check, status, words) in zip(found, CASES, strict=True):
        assert (result["status"], words in result["evidence"]) == (status, True), (check, result)
    scored = [s for _, s, _ in CASES if s != "error"]
    assert record["metrics"]["checks"] == round(scored.count("passed") / len(scored), 4)
    assert "output/big.bin" in record["workspace_diff"]["created"]
    assert seconds < 120  # the endless command was cut at its 2 s, and the 1 GB file never read whole


def test_every_check_type_against_a_hostile_agent_locally(skill_project: SkillProject) -> None:
    _hostile_skill(skill_project)
    started = time.monotonic()
    skill_project.run("--agents", "replay", "--env-mode", "local", "--skip-baseline")
    _assert_checks(skill_project, time.monotonic() - started)


def test_every_check_type_against_a_hostile_agent_in_docker(skill_project: SkillProject, test_base_image: str) -> None:
    _hostile_skill(skill_project)
    started = time.monotonic()
    result = skill_project.run(
        "--agents", "replay", "--env-mode", "docker", "--base-image", test_base_image, "--skip-baseline"
    )
    assert "check 0" in result.stdout.str(), result.stdout.str()[-3000:]
    _assert_checks(skill_project, time.monotonic() - started)
