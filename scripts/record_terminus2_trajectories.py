#!/usr/bin/env python3
"""Record terminus-2 runs of the demo skill through the plugin, in its default mode and with raw_content.

terminus-2 (Harbor's own agent) runs in `--env-mode local` (bwrap) against the scripted model server, with the
replies of tests/e2e/test_terminus2.py: with the skill it reads SKILL.md and runs the skill's script; without it, it
writes a wrong greeting by hand. Each arm's trajectory (as the results tree keeps it) and the run's scores go to
fixtures/trajectories/terminus-2-recorded/<mode>/<arm>/, for the grading and replay tests.

The `linear-history` mode (`raw_content` and `linear_history`) makes terminus-2 summarize: the model server answers
its second request with a context-length error, terminus-2 runs its three summarization subagents and goes on in a
new trajectory file. Both arms get the same replies (read SKILL.md; after the hand-off, run the skill's script), so
the baseline's read and run fail. Kept: the files terminus-2 wrote, `trajectory.json` and `trajectory.cont-1.json`.

    .venv/bin/python scripts/record_terminus2_trajectories.py [OUT_DIR [MODE,...]]
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
from pytest_skilleval.testing.script import regex_all  # noqa: E402
from tests.e2e.agent_runs import terminus_episode as episode  # noqa: E402
from tests.e2e.test_terminus2 import script  # noqa: E402  (the e2e test's own scripted replies)

SKILL = "hello-skill"
CASE = "explicit-greeting"
MODES = {
    "tool-calls": {},
    "raw-content": {"raw_content": True},
    "linear-history": {"raw_content": True, "linear_history": True},
}
SKILL_MD = f"/runtime/skills/{SKILL}/SKILL.md"
GREET = f"cd /workspace && python3 /runtime/skills/{SKILL}/scripts/greet.py --name 'Ada Lovelace'"
OVERFLOW = "This model's maximum context length is 4096 tokens. However, your messages resulted in 5021 tokens."
# What terminus-2's summarization sends: its summary subagent, questions subagent, answers subagent, hand-off.
SUMMARY_ASK = "hand off your work to another AI agent"
QUESTIONS_ASK = "Please begin by asking several questions"
ANSWERS_ASK = "questions for you, please answer"
HANDOFF = "Here are the answers the other agent provided"
PLANNED = "Follow the script"  # in every episode reply (tests/e2e/agent_runs.TERMINUS_PLAN)


def linear_history_script() -> dict:
    """The same replies in both arms, each told apart by what its request holds (so no reply is used up)."""
    asks = (SUMMARY_ASK, QUESTIONS_ASK, ANSWERS_ASK, HANDOFF)
    forever = {"repeat": "forever"}
    return {
        "models": {
            "scripted": [
                {"match_regex": regex_all("Ada Lovelace", absent=(PLANNED, *asks)), "text": episode(f"cat {SKILL_MD}")}
                | forever,
                {"match_regex": regex_all(PLANNED, absent=asks), "status": 400, "message": OVERFLOW} | forever,
                {
                    "match_regex": regex_all(SUMMARY_ASK, absent=(ANSWERS_ASK, HANDOFF)),
                    "text": f"I ran cat {SKILL_MD}; next, run the skill's greet.py for Ada Lovelace.",
                }
                | forever,
                {
                    "match_regex": regex_all(QUESTIONS_ASK, absent=(ANSWERS_ASK, HANDOFF)),
                    "text": "1. Did the SKILL.md read work?",
                }
                | forever,
                {"match_regex": regex_all(ANSWERS_ASK, absent=(HANDOFF,)), "text": "1. See the terminal screen."}
                | forever,
                {"match_regex": regex_all(HANDOFF, absent=(PLANNED,)), "text": episode(GREET)} | forever,
                {"match_regex": regex_all(HANDOFF, PLANNED), "text": episode(done=True), "repeat": "forever"},
            ]
        }
    }


PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider")
TERMINUS = ("--agents", "terminus-2", "--agent-model", "terminus-2=openai/scripted")
LOCAL = ("--env-mode", "local", "--ek", "sandbox=bwrap", "--agent-kwarg", "terminus-2:record_terminal_session=false")


def record(mode: str, trajectory_config: dict, out: Path, server: ScriptedModelServer) -> None:
    with tempfile.TemporaryDirectory(prefix="record-terminus2-") as tmp:
        project = Path(tmp)
        skill = project / SKILL
        shutil.copytree(REPO / "examples" / SKILL, skill, ignore=shutil.ignore_patterns("results", "__pycache__"))
        argv = [*PYTEST, "--skill-eval", str(skill), *TERMINUS, *LOCAL, "-k", CASE, "--harbor-keep-jobs"]
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
            if trajectory_config.get("linear_history"):
                # The files as terminus-2 wrote them (the trial file keeps them merged into one document).
                for name in ("trajectory.json", "trajectory.cont-1.json"):
                    shutil.copyfile(Path(trial["trial_dir"]) / "agent" / name, target / name)
            else:
                (target / "trajectory.json").write_text(json.dumps(trial["trajectory"], indent=2) + "\n")
            scores = {
                "metrics": trial["record"]["metrics"],
                "custom_metrics": trial["record"]["custom_metrics"],
                "overall": trial["record"]["overall"],
            }
            (target / "recorded-scores.json").write_text(json.dumps(scores, indent=2) + "\n")


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "fixtures" / "trajectories" / "terminus-2-recorded"
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else list(MODES)
    for mode, config in MODES.items():
        if mode not in only:
            continue
        # A fresh server per mode: each run consumes the script's first replies.
        with ScriptedModelServer(linear_history_script() if config.get("linear_history") else script()) as server:
            record(mode, config, out, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
