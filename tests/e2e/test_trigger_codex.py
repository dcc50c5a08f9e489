"""Trigger sets with an npm CLI, OpenAI's codex, against the scripted model server, in `local` and in Docker.

The pinned CLI comes from the `agent_clis` fixture (skipped with the install hint where node or npm is missing). In
`local` it runs under bwrap, its folder shown read-only through `--ek tools=DIR`; in Docker it runs inside the
container, from an image made once over the offline test image with codex's own static (musl) binary, and reaches the
scripted server on the Docker bridge's host address. The script makes codex, through its own shell tool, read the
skill's SKILL.md on some queries and not on others, read a sibling skill's SKILL.md on one (a distractor load) and a
SKILL.md path that does not exist on another (a failed read). The run's precision and recall must be exactly what
the script implies; the distractor read is attributed to the distractor; the failed read is no trigger.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from pytest_skilleval.testing.script import regex_all
from tests.e2e.agent_runs import TriggerQuery, trigger_project
from tests.e2e.test_agent_clis import CODEX, local_cli_args
from tests.support import SkillProject, require_system

pytestmark = [pytest.mark.e2e, pytest.mark.agents]

OWN = f"cat {CODEX.skills_dir}/demo/SKILL.md"
SIBLING = f"cat {CODEX.skills_dir}/other/SKILL.md"
NOTHING = "echo 144"
FAILED_READ = "cat /workspace/demo/SKILL.md"  # the skill's name, not where it is installed: "No such file"

# (id, should_trigger, what codex runs). TP: read-a, read-b; FN: miss, failed; FP: false-read; TN: clean,
# distractor. Precision 2/3, recall 2/4, accuracy 4/7.
QUERIES: list[TriggerQuery] = [
    ("read-a", True, OWN),
    ("read-b", True, OWN),
    ("miss", True, NOTHING),
    ("failed", True, FAILED_READ),
    ("false-read", False, OWN),
    ("clean", False, NOTHING),
    ("distractor", False, SIBLING),
]


def script(queries: list[TriggerQuery]) -> dict[str, Any]:
    """Per query: one shell call through codex's own tool, then a final answer."""
    replies: list[dict[str, Any]] = []
    for qid, _, command in queries:
        guard = regex_all(f"QUERY {qid} END")
        replies += [
            {"match_regex": guard, "tool_calls": [CODEX.shell(command)]},
            {"match_regex": guard, "text": "Done.", "repeat": "forever"},
        ]
    return {"models": {CODEX.queue: replies, "*": [{"text": "ok", "repeat": "forever"}]}}


def _docker_gateway(request: pytest.FixtureRequest) -> str:
    """The host's address on Docker's default bridge: what a container reaches the host's scripted server at."""
    from pytest_skilleval.harbor.nv_bridge import docker_bridge_gateway

    request.getfixturevalue("docker_available")
    return docker_bridge_gateway()


@pytest.fixture(scope="session")
def codex_image(test_base_image: str, agent_clis: Any, docker_available: str) -> str:
    """The offline test image with codex's static binary (and the rg it ships) on PATH, built once and kept."""
    version = agent_clis.versions["@openai/codex"]
    vendor = agent_clis.prefix / "node_modules" / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl"
    base = test_base_image.replace(":", "-").replace("/", "-")
    tag = f"skilleval-test-codex:{version}-{base}"
    if subprocess.run([docker_available, "image", "inspect", tag], capture_output=True, timeout=60).returncode == 0:
        return tag
    dockerfile = f"FROM {test_base_image}\nCOPY bin/codex /usr/local/bin/codex\nCOPY codex-path/rg /usr/local/bin/rg\n"
    built = subprocess.run(
        [docker_available, "build", "-t", tag, "-f", "-", str(vendor)],
        input=dockerfile,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if built.returncode != 0:
        pytest.fail(f"docker build of {tag} failed:\n{built.stderr[-2000:]}", pytrace=False)
    return tag


@pytest.mark.parametrize("where", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_codex_trigger_set_scores_what_the_script_implies(
    skill_project: SkillProject,
    scripted_model: Any,
    agent_clis: Any,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    where: str,
) -> None:
    if where == "docker":
        image = request.getfixturevalue("codex_image")
        server = scripted_model(script(QUERIES), host=_docker_gateway(request))
        run_args: tuple[str, ...] = (
            *("--agents", CODEX.name, "--agent-model", f"{CODEX.name}={CODEX.model}"),
            *("--env-mode", "docker", "--base-image", image),
        )
    else:
        from pytest_skilleval.harbor.local_env import bwrap_available

        if not bwrap_available():
            require_system(
                "bubblewrap (bwrap) that can create namespaces", "apt-get install bubblewrap (or run .ci/run)"
            )
        server = scripted_model(script(QUERIES))
        run_args = local_cli_args(CODEX, agent_clis)
    trigger_project(skill_project.root, QUERIES)
    for name, value in server.client_env().items():
        monkeypatch.setenv(name, value)
    result = skill_project.run(*run_args, "-v")
    result.assert_outcomes(passed=4, failed=3)
    triggering = skill_project.result_json("demo")["triggering"][CODEX.name]
    assert triggering["precision"] == pytest.approx(2 / 3, abs=1e-4)
    assert triggering["recall"] == pytest.approx(2 / 4, abs=1e-4)
    assert triggering["accuracy"] == pytest.approx(4 / 7, abs=1e-4)
    assert triggering["missed"] == ["miss", "failed"] and triggering["false_triggers"] == ["false-read"]
    rates = {query["id"]: query for query in triggering["queries"]}
    assert rates["distractor"]["distractors_loaded"] == {"other": 1}
    assert rates["distractor"]["trigger_rate"] == 0.0 and rates["failed"]["trigger_rate"] == 0.0
    assert all(not rates[qid]["distractors_loaded"] for qid, _, command in QUERIES if command != SIBLING)
    # codex was shown both installed skills, and every command the script asked for went through its shell tool.
    listed = [entry for entry in server.requests if "QUERY read-a END" in entry.text]
    assert listed and all("other/SKILL.md" in entry.text and "demo/SKILL.md" in entry.text for entry in listed)
    # Every model request was answered from the script (codex's WebSocket probes, GETs, are answered 404 first).
    posts = [entry for entry in server.requests if entry.method == "POST"]
    assert posts and all(entry.status == 200 for entry in posts), [(e.path, e.status) for e in posts]
