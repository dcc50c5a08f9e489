"""`skilleval optimize-description` end to end: terminus-2 against one scripted model server (the agent), the
proposer against another.

The agent loads the skill on a should-trigger query only when the skill's listed description holds the word
TRIGGERWORD. The proposer's first description lacks it, its second has it: the loop must pick the second, report its
held-out score, leave SKILL.md alone without --write, and a rerun must get both proposals from the cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.testing.script import regex_all
from tests.e2e.agent_runs import TERMINUS_PLAN, terminus_episode
from tests.e2e.conftest import terminus_local
from tests.support import SkillProject

pytestmark = [pytest.mark.e2e, pytest.mark.agents, pytest.mark.slow]

AGENT_MODEL = "scripted"
PROPOSER_MODEL = "proposer"
GOOD = "TRIGGERWORD greets new teammates by name"
BAD = "Handles miscellaneous requests"
FOLLOW = TERMINUS_PLAN
# train: p1 (should), n1 (should not); held out: p2, p3 (should), n2, n3 (should not).
QUERIES = [("p1", True, "train"), ("n1", False, "train")] + [
    (qid, should, "test") for qid, should in (("p2", True), ("p3", True), ("n2", False), ("n3", False))
]


def agent_script() -> dict[str, Any]:
    reads = [
        {
            "match_regex": regex_all(f"QUERY {qid} END", "TRIGGERWORD", absent=(FOLLOW,)),
            "text": terminus_episode("cat /runtime/skills/demo/SKILL.md", duration=0.1),
            "repeat": "forever",
        }
        for qid, should, _ in QUERIES
        if should
    ]
    first_answer = {
        "match_regex": regex_all("QUERY", absent=(FOLLOW,)),
        "text": terminus_episode(done=True),
        "repeat": "forever",
    }
    confirm = {"match_regex": regex_all(FOLLOW), "text": terminus_episode(done=True), "repeat": "forever"}
    return {"models": {AGENT_MODEL: [*reads, first_answer, confirm]}}


def proposer_script(*descriptions: str) -> dict[str, Any]:
    return {"models": {PROPOSER_MODEL: [{"text": json.dumps({"description": text})} for text in descriptions]}}


def optimize(project: SkillProject, skill: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest_skilleval.authoring.cli", "optimize-description", str(skill)]
    argv += ["--model", f"openai/{PROPOSER_MODEL}", "--agents", "terminus-2", "--env-mode", "local"]
    argv += ["--agent-model", f"terminus-2=openai/{AGENT_MODEL}"]
    argv += ["--agent-kwarg", "terminus-2:record_terminal_session=false", "--iterations", "2", *extra]
    return subprocess.run(argv, cwd=project.root, env=env, capture_output=True, text=True, timeout=900, check=False)


def test_optimizer_picks_the_description_that_triggers(skill_project: SkillProject, scripted_model: Any) -> None:
    terminus_local()
    skill = skill_project.root / "skills" / "demo"
    (skill / "evals").mkdir(parents=True)
    original = "---\nname: demo\ndescription: Writes text files\n---\n# demo\n\nGreets people.\n"
    (skill / "SKILL.md").write_text(original)
    rows = [{"id": qid, "query": f"QUERY {qid} END", "should_trigger": s, "split": split} for qid, s, split in QUERIES]
    (skill / "evals" / "triggers.json").write_text(json.dumps(rows))
    agent = scripted_model(agent_script())
    proposer = scripted_model(proposer_script(BAD, GOOD))
    env = {
        **os.environ,
        **agent.client_env(),
        "SKILL_EVAL_LLM_BASE_URL": proposer.openai_base_url,
        "SKILL_EVAL_LLM_API_KEY": "scripted-key-0000",
    }

    first = optimize(skill_project, skill, env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "candidate 0 (current): train accuracy 0.50" in first.stdout
    assert "candidate 1 (proposed): train accuracy 0.50" in first.stdout
    assert "candidate 2 (proposed): train accuracy 1.00" in first.stdout
    assert "winner: candidate 2: train accuracy 1.00, held-out test accuracy 1.00" in first.stdout
    assert len([r for r in proposer.requests if r.model and PROPOSER_MODEL in r.model]) == 2
    # The proposer saw the train failure, never a held-out query.
    prompts = [entry.text for entry in proposer.requests]
    assert "QUERY p1 END" in prompts[0] and not any(f"QUERY {q} END" in p for p in prompts for q in ("p2", "n2"))
    assert (skill / "SKILL.md").read_text() == original  # no --write
    (proposal,) = sorted((skill / "evals" / "results").glob("optimize-*/description-proposal.md"))
    text = proposal.read_text()
    assert "Winner: candidate 2 (train accuracy 1.00, held-out test accuracy 1.00)" in text
    assert f'+description: "{GOOD}"' in text and "-description: Writes text files" in text
    assert "| 0 | 0.50 | n/a | 0.00 | 0.50 | n/a | 0.00 |" in text

    silent = scripted_model({"models": {PROPOSER_MODEL: [{"status": 500, "repeat": "forever"}]}})
    rerun = optimize(skill_project, skill, {**env, "SKILL_EVAL_LLM_BASE_URL": silent.openai_base_url}, "--write")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "candidate 1 (cached)" in rerun.stdout and "candidate 2 (cached)" in rerun.stdout
    assert silent.requests == []
    assert f'description: "{GOOD}"' in (skill / "SKILL.md").read_text()
    assert (skill / "SKILL.md").read_text().endswith("# demo\n\nGreets people.\n")


def test_optimizer_refuses_without_a_held_out_split(skill_project: SkillProject) -> None:
    skill = skill_project.root / "skills" / "demo"
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: greets\n---\n")
    rows = [{"query": f"q{i}", "should_trigger": i % 2 == 0, "split": "test" if i < 3 else "train"} for i in range(6)]
    (skill / "evals" / "triggers.json").write_text(json.dumps(rows))
    done = optimize(skill_project, skill, dict(os.environ))
    assert done.returncode == 1
    assert "3 held-out queries; the optimiser needs at least 4" in done.stderr
    assert 'mark at least 4 queries of triggers.json with "split": "test"' in done.stderr
