"""`skilleval harbor-view JOBS_DIR`: the summary of a run made with --harbor-keep-jobs names the kept folder and the
command, and the command serves those trials in Harbor's own viewer (its HTTP API answers with them)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> object | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())
    except OSError:
        return None


def test_kept_jobs_are_named_and_open_in_harbors_viewer(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1", "c2"))
    result = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline", "--harbor-keep-jobs")
    result.assert_outcomes(passed=2)
    output = result.stdout.str()
    found = re.search(r"^Jobs:   (\S+)$", output, re.MULTILINE)
    assert found, output[-2000:]
    jobs = found.group(1)
    assert f"browse them: skilleval harbor-view {jobs}" in " ".join(output.split())
    assert Path(jobs).name == "demo"

    port = _free_port()
    script = Path(sys.executable).parent / "skilleval"
    viewer = subprocess.Popen(
        [str(script), "harbor-view", jobs, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        listed: object = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and viewer.poll() is None:
            listed = _get(f"http://127.0.0.1:{port}/api/jobs")
            if listed:
                break
            time.sleep(0.5)
        assert isinstance(listed, dict), viewer.stdout.read().decode() if viewer.poll() is not None else listed
        [job] = listed["items"]
        assert job["name"] == "demo", job
        trials = _get(f"http://127.0.0.1:{port}/api/jobs/demo/trials")
        assert isinstance(trials, dict), trials
        names = sorted(item["name"] for item in trials["items"])
        assert len(names) == 2 and all(name.startswith("skilleval-c") for name in names), names
        trajectory = _get(f"http://127.0.0.1:{port}/api/jobs/demo/trials/{names[0]}/trajectory")
        assert isinstance(trajectory, dict) and trajectory.get("steps"), trajectory  # read through the hard links
    finally:
        os.killpg(viewer.pid, signal.SIGTERM)
        viewer.wait(timeout=30)


def test_a_folder_without_kept_trials_says_what_to_do(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "skilleval"), "harbor-view", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"no kept Harbor trial folder under {tmp_path.resolve()}; run pytest with --harbor-keep-jobs" in done.stderr
