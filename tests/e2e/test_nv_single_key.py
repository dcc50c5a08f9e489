"""The NVIDIA single-key route end to end: `SKILL_EVAL_LLM_PROVIDER=nv_build` and one `NVIDIA_API_KEY`, no
OpenAI or Anthropic key, no `--agent-model`: codex, claude-code and opencode (the pinned CLIs from npm) each run the
demo skill's positive case and negative control in both arms, and the judges grade them.

The scripted model server stands in for NVIDIA Build and, like it, speaks chat completions only (`/responses` and
`/messages` answer 404) and accepts only the NVIDIA key. opencode talks to it directly; codex (Responses API) and
claude-code (Anthropic Messages) reach it only through the bridge (litellm's proxy, started by the run). Every
agent request arrives as a chat completion for Nemotron Super under the NVIDIA key, and the key is in no file the
run wrote. Each CLI under bwrap (local); claude-code (the bridge) and opencode (direct) also under Docker, with
the CLIs baked into an image made from the offline test image and the pinned npm folder (the build's own CLI state removed: a directory codex made in an image layer cannot be
renamed in the container, and the warning it prints then fails Harbor's version check).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.harbor.nv_route import DEFAULT_MODEL
from tests.e2e.agent_runs import NEGATIVE_CASE, POSITIVE_CASE, SKILL
from tests.e2e.test_agent_clis import (
    CLAUDE_CODE,
    CODEX,
    OPENCODE,
    CliAgent,
    _needs_bwrap,
    check_run,
    script,
)
from tests.plugin.test_judge_runs import _script as judge_script
from tests.support import SkillProject

pytestmark = [pytest.mark.e2e, pytest.mark.agents]

NVIDIA_KEY = "nvapi-singlekey-Zx81Qw27Lm45Rt90"
JUDGE = "nvidia/judge-demo"
OWN_KEYS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CODEX_API_KEY")
JUDGE_VARS = ("SKILL_EVAL_JUDGE_MODEL", "SKILL_EVAL_LLM_MODEL", "SKILL_EVAL_LLM_API_KEY")

AGENTS = {
    "codex": (dataclasses.replace(CODEX, queue=DEFAULT_MODEL), f"{SKILL}/SKILL.md"),
    "claude-code": (dataclasses.replace(CLAUDE_CODE, queue=DEFAULT_MODEL), "Writes a welcome greeting file"),
    "opencode": (dataclasses.replace(OPENCODE, name="opencode", queue=DEFAULT_MODEL), "Writes a welcome greeting file"),
}


def nvidia_script(agent: CliAgent, marker: str) -> dict[str, Any]:
    """The agent's script on Nemotron Super's queue, plus the judges' replies on their own model."""
    document = script(agent, marker)
    document["models"][JUDGE] = judge_script(JUDGE)["models"][JUDGE]
    return document


CLI_IMAGE_DOCKERFILE = """\
FROM {base}
COPY node /usr/local/bin/node
COPY clis /opt/agent-clis
RUN ln -s /opt/agent-clis/node_modules/.bin/claude /opt/agent-clis/node_modules/.bin/codex \\
      /opt/agent-clis/node_modules/.bin/opencode /usr/local/bin/ \\
 && claude --version && codex --version && opencode --version \\
 && rm -rf /root/.codex /root/.cache /root/.config /root/.local
"""


@pytest.fixture(scope="module")
def cli_image(test_base_image: str, agent_clis: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The offline test image plus node and the pinned CLIs (hard links of the npm cache: no download)."""
    node = shutil.which("node")
    assert node is not None
    tag = f"skilleval-test-agent-clis:{agent_clis.prefix.name[-40:].lower()}-r2"
    if subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0:
        return tag
    context = tmp_path_factory.mktemp("cli-image")
    shutil.copytree(agent_clis.prefix, context / "clis", symlinks=True, copy_function=_link_or_copy)
    shutil.copy2(node, context / "node")
    (context / "Dockerfile").write_text(CLI_IMAGE_DOCKERFILE.format(base=test_base_image))
    built = subprocess.run(["docker", "build", "-q", "-t", tag, str(context)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    return tag


def _link_or_copy(source: str, target: str) -> None:
    try:
        Path(target).hardlink_to(source)
    except OSError:
        shutil.copy2(source, target)


def docker_gateway() -> str:
    from pytest_skilleval.harbor.nv_bridge import bridge_host

    return bridge_host("docker")


def files_under(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file() and not path.is_symlink()]


# Every agent under bwrap (each route's wire: codex's Responses and claude-code's Messages through the bridge,
# opencode direct). In Docker one agent per route: opencode proves the NVIDIA key itself reaches a container and
# NVIDIA Build is reached from it; claude-code proves the bridge listens on the Docker gateway and a container's
# agent reaches it with the bridge's token. codex in a container is test_trigger_codex's docker run; codex's
# variables on the route are route data like claude-code's (tests/unit/test_nv_route.py).
CASES = [
    *((name, "local") for name in AGENTS),
    *(pytest.param(name, "docker", marks=pytest.mark.docker) for name in ("claude-code", "opencode")),
]


@pytest.mark.parametrize(("name", "where"), CASES)
def test_one_nvidia_key_runs_the_agent_through_chat_completions_only(
    name: str,
    where: str,
    skill_project: SkillProject,
    scripted_model,
    agent_clis,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Local: bwrap, the CLIs through `--ek tools`, NVIDIA Build and the bridge on 127.0.0.1. Docker: the CLIs baked
    into the image, NVIDIA Build and the bridge on the Docker bridge's gateway, which the trial's containers reach."""
    agent, marker = AGENTS[name]
    if where == "local":
        _needs_bwrap()
        host = "127.0.0.1"
        environment = ("--env-mode", "local", "--ek", "sandbox=bwrap", "--ek", f"tools={agent_clis.prefix}")
    else:
        environment = ("--env-mode", "docker", "--base-image", request.getfixturevalue("cli_image"))
        host = docker_gateway()
    served = nvidia_script(agent, marker)
    server = scripted_model(served, dialects=("chat",), require_key=NVIDIA_KEY, host=host)
    for variable in (*OWN_KEYS, *JUDGE_VARS):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("SKILL_EVAL_LLM_PROVIDER", "nv_build")
    monkeypatch.setenv("NVIDIA_API_KEY", NVIDIA_KEY)
    monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)  # "NVIDIA Build" for judges and agents
    monkeypatch.setenv("LLM_JUDGE_MODEL", JUDGE)
    skill_project.copy_hello_skill()
    result = skill_project.run(
        "--agents",
        agent.name,
        *environment,
        "-k",
        f"{POSITIVE_CASE} or {NEGATIVE_CASE}",
    )

    posts = [entry for entry in server.requests if entry.method == "POST"]
    assert posts and all(entry.status == 200 for entry in posts), [(e.path, e.status) for e in posts]
    assert {entry.dialect for entry in posts} == {"chat"}, "every request reached NVIDIA Build as a chat completion"
    agent_models = {entry.model for entry in posts if entry.model != JUDGE}
    assert agent_models == {DEFAULT_MODEL}, agent_models  # Nemotron Super by default, the catalog id whole
    assert any(entry.model == JUDGE for entry in posts), "the judges ran on the same key"
    check_run(agent, marker, server, skill_project.root)

    # The key went to "NVIDIA Build" only (the server refuses any other), and is in no file or line of the run.
    for path in files_under(skill_project.root / "results"):
        assert NVIDIA_KEY.encode() not in path.read_bytes(), path
    assert NVIDIA_KEY not in result.stdout.str() + result.stderr.str()
