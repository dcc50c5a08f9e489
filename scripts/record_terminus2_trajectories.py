#!/usr/bin/env python3
"""Record terminus-2 runs of the demo skill through the plugin, in its default mode and with raw_content.

terminus-2 (Harbor's own agent) runs in `--env-mode local` (bwrap) against the scripted model server, with the
replies of tests/e2e/test_terminus2.py: with the skill it reads SKILL.md and runs the skill's script; without it, it
writes a wrong greeting by hand. Each arm's trajectory (as the results tree keeps it) and the run's scores go to
fixtures/trajectories/terminus-2-recorded/<mode>/<arm>/, for the grading and replay tests.

    .venv/bin/python scripts/record_terminus2_trajectories.py [OUT_DIR]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_skilleval.results.records import TrialKey
from pytest_skilleval.results.tree import trial_file
from pytest_skilleval.testing.scripted_model import ScriptedModelServer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.e2e.test_terminus2 import script  # noqa: E402  (the e2e test's own scripted replies)

SKILL = "hello-skill"
CASE = "explicit-greeting"
MODES = {"tool-calls": {}, "raw-content": {"raw_content": True}}
PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider")
TERMINUS = ("--agents", "terminus-2", "--agent-model", "terminus-2=openai/scripted")
LOCAL = ("--env-mode", "local", "--ek", "sandbox=bwrap", "--agent-kwarg", "terminus-2:record_terminal_session=false")


def record(mode: str, trajectory_config: dict, out: Path, server: ScriptedModelServer) -> None:
    with tempfile.TemporaryDirectory(prefix="record-terminus2-") as tmp:
        project = Path(tmp)
        skill = project / SKILL
        shutil.copytree(REPO / "examples" / SKILL, skill, ignore=shutil.ignore_patterns("results", "__pycache__"))
        argv = [*PYTEST, "--skill-eval", str(skill), *TERMINUS, *LOCAL, "-k", CASE]
        if trajectory_config:
            argv += ["--agent-kwarg", f"terminus-2:trajectory_config={json.dumps(trajectory_config)}"]
        env = {**os.environ, **server.client_env(), "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=600)
        print(done.stdout[-600:])
        (result,) = sorted((skill / "evals" / "results").glob("2*/result.json"))[-1:]
        for arm in ("with_skill", "without_skill"):
            trial = json.loads(trial_file(result.parent, TrialKey(CASE, "terminus-2", arm, 1)).read_text())
            target = out / mode / arm
            target.mkdir(parents=True, exist_ok=True)
            (target / "trajectory.json").write_text(json.dumps(trial["trajectory"], indent=2) + "\n")
            scores = {
                "metrics": trial["record"]["metrics"],
                "custom_metrics": trial["record"]["custom_metrics"],
                "overall": trial["record"]["overall"],
            }
            (target / "recorded-scores.json").write_text(json.dumps(scores, indent=2) + "\n")


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "fixtures" / "trajectories" / "terminus-2-recorded"
    for mode, config in MODES.items():
        # A fresh server per mode: each run consumes the script's first replies.
        with ScriptedModelServer(script()) as server:
            record(mode, config, out, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
