"""One agent on several models: `--agent-model A=M1 --agent-model A=M2` runs the variants `A@M1` and `A@M2`, each
asking its own model; aliases name the same agent in `--agents`, `--agent-model` and `--agent-kwarg`."""

from __future__ import annotations

import pytest

from tests.support import SkillProject, simple_entries

# A Harbor agent that asks its model (an OpenAI chat completion at the scripted server, the provider prefix of its
# model name dropped as litellm does) and writes the reply as its answer. Plain urllib: importing litellm in the run
# would cost seconds and prove nothing here.
MODEL_AGENT = '''
import asyncio, json, os, shlex, urllib.request
from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities

class ModelAgent(BaseAgent):
    capabilities = AgentCapabilities(skills=True)

    @staticmethod
    def name():
        return "model-agent"

    def version(self):
        return "1"

    async def setup(self, environment):
        return None

    async def run(self, instruction, environment, context):
        body = {"model": self.model_name.split("/", 1)[-1], "messages": [{"role": "user", "content": instruction}]}
        request = urllib.request.Request(
            os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": "Bearer placeholder"},
        )
        reply = await asyncio.to_thread(lambda: json.load(urllib.request.urlopen(request, timeout=60)))
        answer = reply["choices"][0]["message"]["content"]
        await environment.exec(
            "mkdir -p /workspace/output && printf %s " + shlex.quote(answer) + " > /workspace/output/answer.txt"
        )
'''

# Scores 1.0 when the agent answered 42, else 0.0.
ANSWER_GRADER = """
import json, os
from pathlib import Path

workspace = Path(os.environ.get("HARBOR_WORKSPACE_DIR", "/workspace"))
answer = workspace / "output" / "answer.txt"
right = answer.is_file() and answer.read_text().strip() == "42"
verifier = Path(os.environ.get("HARBOR_VERIFIER_DIR", "/logs/verifier"))
verifier.mkdir(parents=True, exist_ok=True)
Path(os.environ.get("HARBOR_REWARD_JSON", verifier / "reward.json")).write_text(
    json.dumps({"overall": 1.0 if right else 0.0})
)
"""

AGENT = "model_agent:ModelAgent"


def test_two_models_of_one_agent_run_as_two_variants(
    skill_project: SkillProject, scripted_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    """model-a answers right and model-b wrong: each variant asked its own model, and the result says which did
    better; a model given twice is one variant."""
    skill = skill_project.make_skill("demo", simple_entries("c1", "c2"))
    (skill / "evals" / "grader.py").write_text(ANSWER_GRADER)
    skill_project.pytester.makepyfile(model_agent=MODEL_AGENT)
    server = scripted_model(
        {
            "models": {
                "model-a": [{"text": "42", "repeat": "forever"}],
                "model-b": [{"text": "41", "repeat": "forever"}],
            }
        }
    )
    for name, value in server.client_env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PYTHONPATH", str(skill_project.root))
    a, b = f"{AGENT}@openai/model-a", f"{AGENT}@openai/model-b"
    result = skill_project.run(
        "--agents", AGENT, "--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only",
        "--skip-baseline", "-v",
        "--agent-model", f"{AGENT}=openai/model-a",
        "--agent-model", f"{AGENT}=openai/model-b",
        "--agent-model", f"{AGENT}=openai/model-a",
    )  # fmt: skip
    out = result.stdout.str()
    assert "4 trials planned (2 cases x 2 agents x 1 arm x 1 attempt)" in out, out
    for variant, outcome in ((a, "PASSED"), (b, "FAILED")):
        for case in ("c1", "c2"):
            assert f"evals/evals.json::{case}[{variant}-with_skill-1] {outcome}" in out, out
    doc = skill_project.result_json("demo")
    assert list(doc["agents"]) == [a, b]
    assert doc["agents"][a]["model"] == "openai/model-a" and doc["agents"][b]["model"] == "openai/model-b"
    assert doc["agents"][a]["with_skill"]["overall"] == 1.0 and doc["agents"][b]["with_skill"]["overall"] == 0.0
    assert doc["comparison"] is not None and doc["best_agent"] == a
    assert sorted({t["agent"] for t in doc["trials"]}) == [a, b]
    # Each variant's trials asked its own model, once per trial.
    asked = sorted(entry.body["model"] for entry in server.requests)
    assert asked == ["model-a", "model-a", "model-b", "model-b"], asked
    # The marker names the variant, so one model's trials can be selected.
    selected = skill_project.run(
        "--agents", AGENT, "--env-mode", "local", "--ek", "sandbox=none", "--skip-baseline", "--collect-only", "-q",
        "--agent-model", f"{AGENT}=openai/model-a", "--agent-model", f"{AGENT}=openai/model-b",
        "-m", f"skilleval(agent='{b}')",
    )  # fmt: skip
    listed = [line for line in selected.stdout.lines if "::" in line]
    assert listed == [f"skills/demo/evals/evals.json::{c}[{b}-with_skill-1]" for c in ("c1", "c2")], listed


def test_aliases_name_the_same_agent_in_all_three_options(skill_project: SkillProject) -> None:
    """`claude` is `claude-code` in --agents, --agent-model and --agent-kwarg: its models make two variants and its
    constructor setting is accepted; nothing is dropped."""
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run(
        "--agents", "claude", "--env-mode", "local", "--ek", "sandbox=none", "--skip-baseline", "--collect-only",
        "-q", "--agent-model", "claude=m1", "--agent-model", "claude-code=m2", "--agent-kwarg", "claude:max_turns=3",
    )  # fmt: skip
    listed = [line for line in result.stdout.lines if "::" in line]
    assert listed == [
        "skills/demo/evals/evals.json::c1[claude-code@m1-with_skill-1]",
        "skills/demo/evals/evals.json::c1[claude-code@m2-with_skill-1]",
    ], result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent-model", "codex=gpt-5"], "--agent-model names agent(s) codex that this run does not use"),
        (["--agent-kwarg", "codex:x=1"], "--agent-kwarg names agent(s) codex that this run does not use"),
        (["--agent-model", "replay="], "--agent-model replay=: the model is empty"),
    ],
)
def test_a_model_or_kwarg_for_an_agent_not_selected_is_a_usage_error(
    skill_project: SkillProject, args: list[str], message: str
) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run("--agents", "replay", "--env-mode", "local", "--collect-only", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str(), result.stderr.str()
