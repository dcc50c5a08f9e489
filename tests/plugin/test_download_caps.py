"""What a trial's sandbox holds reaches the host only within caps (issue 21): a 6 GiB sparse file that costs the
sandbox no disk block is left out of the recorded /workspace (`--harbor-keep-jobs`) with a marker saying so, a
folder thousands deep in /logs/agent is cut at its depth limit while the rest of the download arrives, and a
trajectory over the trial file's cap is kept cut, saying why, rather than dropped."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.harbor.download_caps import LEFT_OUT_SUFFIX
from pytest_skilleval.harbor.local_env import bwrap_available
from tests.support import LOCAL_REPLAY, SkillProject

MODES = [
    "none",
    pytest.param("bwrap", marks=pytest.mark.skipif(not bwrap_available(), reason="bubblewrap is not usable here")),
]
GRADER = """
import json, os
from pathlib import Path
verifier = Path(os.environ["HARBOR_VERIFIER_DIR"])
verifier.mkdir(parents=True, exist_ok=True)
(verifier / "reward.json").write_text(json.dumps({"overall": 1.0}))
"""
COMMANDS = {
    "sparse": "truncate -s 6G /workspace/output/big.bin && echo small > /workspace/output/small.txt",
    "deep": (
        "python3 -c \"import os; os.chdir('/logs/agent'); [(os.mkdir('d'), os.chdir('d')) for _ in range(3000)]\""
        " && echo kept > /logs/agent/zz-after.txt"
    ),
}


def _replay(command: str) -> dict[str, Any]:
    call = {"tool_call_id": "c1", "function_name": "Bash", "arguments": {"command": command}}
    return {
        "schema_version": "ATIF-v1.6",
        "agent": {"name": "recorded", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "do it"},
            {"step_id": 2, "source": "agent", "message": "working", "tool_calls": [call]},
        ],
    }


def _skill(project: SkillProject, commands: dict[str, str]) -> Path:
    skill = project.root / "skills" / "demo"
    (skill / "evals" / "replays").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: test skill\n---\n# demo\n")
    entries = [{"id": case, "prompt": f"do {case}", "expected_output": "done"} for case in commands]
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "demo", "evals": entries}))
    (skill / "evals" / "grader.py").write_text(GRADER)
    for case, command in commands.items():
        (skill / "evals" / "replays" / f"{case}.json").write_text(json.dumps(_replay(command)))
    return skill


def _host_bytes(folder: Path) -> int:
    """Disk blocks in use under `folder`, in bytes (what a copy cost the host, sparse or not)."""
    total = 0
    for top, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                continue
    return total


def _scored_records(project: SkillProject) -> dict[str, Any]:
    """Each case's trial file of the run; both cases were scored."""
    run = next((project.root / "results" / "demo").glob("2*"))
    records = {
        path.name.split(".")[0]: json.loads(path.read_text()) for path in run.glob("replay/with_skill/trials/*.json")
    }
    assert {case: doc["record"]["status"] for case, doc in records.items()} == {"sparse": "scored", "deep": "scored"}
    return records


def _small_copied_big_left_out(kept: Path) -> Path:
    """The recorded /workspace of the `sparse` case: its small file copied, its 6 GiB sparse file left out."""
    copied = kept / "artifacts" / "workspace"
    assert (copied / "output" / "small.txt").read_text() == "small\n"
    assert not (copied / "output" / "big.bin").exists()
    return copied


@pytest.mark.parametrize("sandbox", MODES)
def test_downloads_are_capped_by_apparent_size_and_depth(skill_project: SkillProject, sandbox: str) -> None:
    _skill(skill_project, COMMANDS)
    result = skill_project.run(
        *LOCAL_REPLAY,
        "--skip-baseline",
        "--grading-mode",
        "custom_only",
        "--harbor-keep-jobs",
        "--ek",
        f"sandbox={sandbox}",
    )
    result.assert_outcomes(passed=2)
    records = _scored_records(skill_project)
    kept = Path(records["sparse"]["record"]["trial_dir"])
    _small_copied_big_left_out(kept)
    marker = (kept / "artifacts" / f"workspace{LEFT_OUT_SUFFIX}").read_text()
    assert "/workspace/output/big.bin is 6442450944 bytes; the limit is 104857600 bytes" in marker
    assert _host_bytes(kept / "artifacts") < 1024 * 1024

    kept = Path(records["deep"]["record"]["trial_dir"])
    assert (kept / "agent" / "zz-after.txt").read_text() == "kept\n"  # sorted after the deep folder: still copied
    marker = (kept / f"agent{LEFT_OUT_SUFFIX}").read_text()
    assert "more than 128 folders deep; nothing in it was copied" in marker
    assert records["deep"]["trajectory"] is not None


DOCKER_COMMANDS = {
    "sparse": (
        "mkdir -p /workspace/output && truncate -s 6G /workspace/output/big.bin"
        " && echo small > /workspace/output/small.txt && ln -s /etc/passwd /workspace/output/passwd"
        " && truncate -s 3G /logs/agent/huge.log && ln -s /etc /logs/agent/etc && mkfifo /logs/agent/pipe"
        " && echo kept > /logs/agent/note.txt"
    ),
    "deep": COMMANDS["deep"],
}


def test_docker_downloads_are_capped_and_bring_no_link(skill_project: SkillProject, test_base_image: str) -> None:
    """The same caps in Docker, where Harbor's `docker compose cp` copied every byte of a sparse file and links as
    links: /logs/agent and the recorded /workspace arrive without the oversized files, the links and the FIFO, each
    named in the marker, and the trials are scored."""
    _skill(skill_project, DOCKER_COMMANDS)
    result = skill_project.run(
        "--agents", "replay", "--env-mode", "docker", "--base-image", test_base_image,
        "--skip-baseline", "--grading-mode", "custom_only", "--harbor-keep-jobs",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    records = _scored_records(skill_project)
    kept = Path(records["sparse"]["record"]["trial_dir"])
    copied = _small_copied_big_left_out(kept)
    assert not os.path.lexists(copied / "output" / "passwd")
    marker = (kept / "artifacts" / f"workspace{LEFT_OUT_SUFFIX}").read_text()
    assert "/workspace/output/big.bin is 6442450944 bytes; the limit is 104857600 bytes" in marker
    assert "/workspace/output/passwd is a link to '/etc/passwd'; not copied, not followed" in marker
    assert (kept / "agent" / "note.txt").read_text() == "kept\n"
    for planted in ("huge.log", "etc", "pipe"):
        assert not os.path.lexists(kept / "agent" / planted), planted
    marker = (kept / f"agent{LEFT_OUT_SUFFIX}").read_text()
    assert "/logs/agent/huge.log is 3221225472 bytes" in marker
    assert "/logs/agent/etc is a link to '/etc'; not copied, not followed" in marker
    assert "/logs/agent/pipe is not a regular file or folder" in marker
    assert _host_bytes(kept) < 64 * 1024 * 1024

    kept = Path(records["deep"]["record"]["trial_dir"])
    assert (kept / "agent" / "zz-after.txt").read_text() == "kept\n"
    assert "more than 128 folders deep" in (kept / f"agent{LEFT_OUT_SUFFIX}").read_text()


def test_a_trajectory_over_the_trial_files_cap_is_kept_cut_and_says_why(skill_project: SkillProject) -> None:
    """One 6 MB command output makes the replay's trajectory pass the 5 MiB a trial file keeps of it."""
    _skill(skill_project, {"loud": "python3 -c \"print('a' * 6_000_000)\" && echo LAST-LINE"})
    result = skill_project.run(
        *LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "custom_only", "--ek", "sandbox=none"
    )
    result.assert_outcomes(passed=1)
    run = next((skill_project.root / "results" / "demo").glob("2*"))
    trial = json.loads((run / "replay" / "with_skill" / "trials" / "loud.1.json").read_text())
    trajectory = trial["trajectory"]
    assert trajectory is not None and len(trajectory["steps"]) == 2
    assert "over the trial file's limit of 5242880 bytes" in trajectory["extra"]["skilleval_cut"]
    [observation] = trajectory["steps"][1]["observation"]["results"]
    assert observation["content"].startswith("aaaa") and "[cut by pytest-skilleval: " in observation["content"]
    assert len(json.dumps(trajectory)) < 5 * 1024 * 1024
