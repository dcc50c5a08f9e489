"""`skilleval optimize-description --max-cost`: the proposer's requests are priced (litellm's installed price map, as
the judges' are) and count against the budget; description-proposal.md says what the proposer cost.

The agent is the replay agent (its trials report no cost), so whatever stops the loop is the proposer's own spend;
its trials run unsandboxed (`--ek sandbox=none`: our own replays, which only echo) to keep the test short.
The proposer is a scripted model server answering as `gpt-4o-mini`, a model the price map knows, with fixed token
counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import SkillProject, bash_replay

PROPOSER = "gpt-4o-mini"
TOKENS = {"usage": {"input_tokens": 1000, "output_tokens": 100}}
# train: p1 (should); held out: p2, p3 (should), n2, n3 (should not). No replay loads the skill.
QUERIES = [("p1", True, "train")] + [
    (qid, should, "test") for qid, should in (("p2", True), ("p3", True), ("n2", False), ("n3", False))
]


def _skill(root: Path) -> Path:
    skill = root / "skills" / "demo"
    (skill / "evals" / "replays").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Writes text files\n---\n# demo\n")
    rows = [{"id": qid, "query": f"QUERY {qid} END", "should_trigger": s, "split": split} for qid, s, split in QUERIES]
    (skill / "evals" / "triggers.json").write_text(json.dumps(rows))
    for qid, _, _ in QUERIES:
        (skill / "evals" / "replays" / f"{qid}.json").write_text(json.dumps(bash_replay("echo 144")))
    return skill


def _price(model: str) -> float:
    """One proposal's price, from litellm's installed price map, read in a process of its own: litellm imports the
    importlib_metadata backport, which takes over finding installed packages from the standard library's finder
    (it deletes `PathFinder.find_distributions`), and pytester's restore of sys.meta_path after this test would then
    leave this process finding none (the next test to import Harbor afresh fails on its version lookup)."""
    script = f"import litellm; print(sum(litellm.cost_per_token(model={model!r}, prompt_tokens=1000, completion_tokens=100)))"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def _optimize(
    root: Path, skill: Path, env: dict[str, str], model: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest_skilleval.authoring.cli", "optimize-description", str(skill)]
    argv += ["--model", f"openai/{model}", "--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none"]
    return subprocess.run([*argv, *extra], cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_the_proposers_cost_counts_against_max_cost(skill_project: SkillProject, scripted_model: Any) -> None:
    price = _price(PROPOSER)
    skill = _skill(skill_project.root)
    replies = [{"text": json.dumps({"description": f"Greets people, take {n}"}), **TOKENS} for n in (1, 2)]
    proposer = scripted_model({"models": {PROPOSER: replies}})
    env = {
        **os.environ,
        "SKILL_EVAL_LLM_BASE_URL": proposer.openai_base_url,
        "SKILL_EVAL_LLM_API_KEY": "scripted-key-0000",
    }

    # Below one proposal's price: the first proposal spends the budget, so it is not measured and none follows.
    done = _optimize(skill_project.root, skill, env, PROPOSER, "--iterations", "2", "--max-cost", f"{price / 2:.8f}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len([r for r in proposer.requests if r.method == "POST"]) == 1, done.stdout
    assert "not measured: --max-cost" in done.stdout and "candidate 2" not in done.stdout
    (proposal,) = sorted((skill / "evals" / "results").glob("optimize-*/description-proposal.md"))
    text = proposal.read_text()
    assert f"Proposer (openai/{PROPOSER}): ${price:.6f} for 1 request(s), 0 answered from the cache" in text
    assert f"| 1 | ${price:.6f} | n/a |" in text


def test_an_unpriced_proposer_is_said_unknown_not_free(skill_project: SkillProject, scripted_model: Any) -> None:
    skill = _skill(skill_project.root)
    replies = [{"text": json.dumps({"description": f"Greets people, take {n}"}), **TOKENS} for n in (1, 2)]
    proposer = scripted_model({"models": {"unpriced-model": replies}})
    env = {**os.environ, "SKILL_EVAL_LLM_BASE_URL": proposer.openai_base_url, "SKILL_EVAL_LLM_API_KEY": "k-0000"}
    done = _optimize(skill_project.root, skill, env, "unpriced-model", "--iterations", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    (proposal,) = sorted((skill / "evals" / "results").glob("optimize-*/description-proposal.md"))
    text = proposal.read_text()
    assert "Proposer (openai/unpriced-model): n/a for 1 request(s)" in text
    assert "The proposer's cost is unknown for candidate(s) 1" in text


def test_iterations_zero_measures_the_current_description_without_a_proposer(skill_project: SkillProject) -> None:
    """`--iterations 0` asks the proposer nothing, so it needs no proposer model: it measures the current description
    and writes the proposal file saying no proposer was asked."""
    skill = _skill(skill_project.root)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LLM_JUDGE", "SKILL_EVAL_LLM"))}
    argv = [sys.executable, "-m", "pytest_skilleval.authoring.cli", "optimize-description", str(skill)]
    argv += ["--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none", "--iterations", "0"]
    done = subprocess.run(argv, cwd=skill_project.root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    # No replay loads the skill: the train query (should trigger) is missed, two of the four held out are right.
    assert (
        "candidate 0 (current): train accuracy 0.00\nwinner: candidate 0: train accuracy 0.00, held-out test "
        "accuracy 0.50\n" in done.stdout
    )
    (proposal,) = sorted((skill / "evals" / "results").glob("optimize-*/description-proposal.md"))
    text = proposal.read_text()
    assert "Proposer: none asked (--iterations 0)" in text
    assert "| 0 | $0.000000 | n/a |" in text
