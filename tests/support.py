"""Helpers for plugin tests: lay out real skill folders in a pytester project and run pytest on them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NoReturn

import pytest

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parents[1]
HELLO_SKILL = REPO / "examples" / "hello-skill"
FIXTURES = REPO / "fixtures"
# CI sets this so that a test skipped for a missing system part fails instead: CI proves those tests ran.
REQUIRE_SYSTEM_ENV = "SKILLEVAL_REQUIRE_SYSTEM"
# Every plugin run in the tests is hermetic: local environment, replay agent, results under the pytester dir.
LOCAL_REPLAY = ("--agents", "replay", "--env-mode", "local")


def default_ctrl_c() -> None:
    """`preexec_fn` for a child a test sends Ctrl+C: the default SIGINT handling of a terminal's foreground job. A
    shell without job control starts `cmd &` with SIGINT ignored, an ignored signal stays ignored through fork and
    exec, and Python then never turns SIGINT into KeyboardInterrupt: such a child would sit out the test's Ctrl+C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_interruptible(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A run started as a terminal's foreground job is (its own session, Python's Ctrl+C), output merged, for a test
    to signal."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=default_ctrl_c,
    )


def require_system(name: str, how_to_install: str) -> NoReturn:
    """Skip a test whose system part `name` is missing, saying how to install it; fail instead under CI."""
    message = f"{name} is not available here: {how_to_install}"
    if os.environ.get(REQUIRE_SYSTEM_ENV, "").strip() not in ("", "0"):
        pytest.fail(f"{message} ({REQUIRE_SYSTEM_ENV} is set: system parts must be present)", pytrace=False)
    pytest.skip(message)


def bash_replay(*commands: str, message: str = "printing") -> dict[str, Any]:
    """An ATIF trajectory for the replay agent: one agent step running `commands` as Bash tool calls, in order."""
    calls = [
        {"tool_call_id": f"c{i}", "function_name": "Bash", "arguments": {"command": command}}
        for i, command in enumerate(commands)
    ]
    return {
        "schema_version": "ATIF-v1.6",
        "agent": {"name": "recorded", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "do it"},
            {"step_id": 2, "source": "agent", "message": message, "tool_calls": calls},
        ],
    }


class SkillProject:
    """A pytester project holding skill folders, plus the way to run pytest on them."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.root = pytester.path

    def copy_hello_skill(
        self, name: str = "hello-skill", triggers: bool | Iterable[str] = False, cases: Iterable[str] | None = None
    ) -> Path:
        """The demo skill, cut to what a test needs: its cases (all, or the ids in `cases`, with their replays) and
        its trigger set (none by default, so a test of its cases counts their items alone; True for all of it, or
        the query ids to keep). Every item is a real trial, so a test that proves one thing runs one or two."""
        target = self.root / "skills" / name
        shutil.copytree(HELLO_SKILL, target, ignore=shutil.ignore_patterns("results", "__pycache__"))
        if cases is not None:
            keep = set(cases)
            evals = target / "evals" / "evals.json"
            data = json.loads(evals.read_text())
            data["evals"] = [row for row in data["evals"] if row["id"] in keep]
            assert {row["id"] for row in data["evals"]} == keep, f"the demo has no case {keep}"
            evals.write_text(json.dumps(data, indent=2))
            for replay in (target / "evals" / "replays").glob("*.json"):
                if not replay.name.startswith("t-") and replay.name.split(".")[0] not in keep:
                    replay.unlink()
        if triggers is not True:
            keep = set() if triggers is False else set(triggers)
            trigger_file = target / "evals" / "triggers.json"
            rows = [row for row in json.loads(trigger_file.read_text()) if row["id"] in keep]
            assert {row["id"] for row in rows} == keep, f"the demo has no trigger query {keep}"
            if rows:
                trigger_file.write_text(json.dumps(rows, indent=2))
            else:
                trigger_file.unlink()
            for replay in (target / "evals" / "replays").glob("t-*.json"):
                if replay.stem not in keep:
                    replay.unlink()
        return target

    def make_skill(
        self,
        name: str,
        dataset: Any | None = None,
        dataset_name: str = "evals.json",
        raw: str | None = None,
        grader: bool = True,
    ) -> Path:
        """A minimal skill: SKILL.md, a dataset (given as data or raw text) and a grader that scores 1.0."""
        skill = self.root / "skills" / name
        (skill / "evals").mkdir(parents=True, exist_ok=True)
        (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: test skill\n---\n# {name}\n")
        if raw is not None:
            (skill / "evals" / dataset_name).write_text(raw)
        elif dataset is not None:
            if dataset_name.endswith((".yaml", ".yml")):
                import yaml

                text = yaml.safe_dump(dataset)
            elif dataset_name.endswith(".jsonl"):
                text = "\n".join(json.dumps(row) for row in dataset) + "\n"
            else:
                text = json.dumps(dataset, indent=2)
            (skill / "evals" / dataset_name).write_text(text)
        if grader:
            shutil.copy2(FIXTURES / "graders" / "always_one.py", skill / "evals" / "grader.py")
        rows = dataset.get("evals", dataset.get("cases")) if isinstance(dataset, dict) else dataset
        for row in rows or []:
            if isinstance(row, dict) and isinstance(row.get("id"), (str, int)):
                (skill / "evals" / "replays").mkdir(exist_ok=True)
                shutil.copy2(FIXTURES / "replays" / "noop.json", skill / "evals" / "replays" / f"{row['id']}.json")
        return skill

    def run(self, *args: str, subprocess: bool = True) -> pytest.RunResult:
        argv = ["--skill-eval", "-p", "no:cacheprovider", "--results-dir", str(self.root / "results"), *args]
        if subprocess:
            return self.pytester.runpytest_subprocess(*argv, timeout=300)
        return self.pytester.runpytest(*argv)

    def result_json(self, skill: str) -> dict[str, Any]:
        latest = sorted((self.root / "results" / skill).glob("2*/result.json"))
        assert latest, f"no result.json under {self.root / 'results' / skill}"
        return json.loads(latest[-1].read_text())


def shell_replay(command: str, message: str = "working") -> dict[str, Any]:
    """A replay whose one agent step is a shell call of `command` (the replay agent runs it in the sandbox)."""
    return {
        "schema_version": "ATIF-v1.6",
        "agent": {"name": "recorded", "version": "1.0"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "do it"},
            {
                "step_id": 2,
                "source": "agent",
                "message": message,
                "tool_calls": [{"tool_call_id": "c1", "function_name": "Bash", "arguments": {"command": command}}],
                "observation": {"results": [{"source_call_id": "c1", "content": ""}]},
            },
        ],
    }


def link_from_outside(path: Path, outside_dir: Path) -> Path:
    """Move `path` (a file or folder) into `outside_dir` and leave a symbolic link to it in its place, so a reader
    that followed links would still find valid content; returns where it went."""
    outside = outside_dir / path.name
    path.rename(outside)
    path.symlink_to(outside, target_is_directory=outside.is_dir())
    return outside


def grow_sparse(path: Path, size: int = 3 * 1024**3) -> None:
    """Make `path` `size` bytes long without writing them (sparse: no disk block): huge by its size alone."""
    with open(path, "r+b" if path.exists() else "wb") as handle:
        handle.truncate(size)


def simple_entries(*ids: str, **extra: Any) -> dict[str, Any]:
    """An agentskills dataset with one entry per id."""
    return {
        "skill_name": "demo",
        "evals": [{"id": case_id, "prompt": f"do {case_id}", "expected_output": "done", **extra} for case_id in ids],
    }


def logging_agent_log(project: SkillProject, monkeypatch: Any, source: str | None = None) -> Path:
    """`logging_agent.py` (LOGGING_AGENT, or `source`) importable by the run, and the log its agents write to."""
    project.pytester.makepyfile(logging_agent=source or LOGGING_AGENT)
    monkeypatch.setenv("PYTHONPATH", str(project.root))
    log = project.root / "agent.log"
    monkeypatch.setenv("SKILLEVAL_TEST_LOG", str(log))
    return log


# A Harbor agent for tests that observe when trials run: it sleeps $SKILLEVAL_TEST_SLEEP seconds (default 0.4) and
# logs its start and end, with its class name, to $SKILLEVAL_TEST_LOG. Import it as `logging_agent:LoggingAgent`.
LOGGING_AGENT = '''
import asyncio, json, os, time
from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities

class LoggingAgent(BaseAgent):
    """Sleeps, and logs its start and end (with its own name) to $SKILLEVAL_TEST_LOG."""

    capabilities = AgentCapabilities(skills=True)

    @staticmethod
    def name():
        return "logging"

    def version(self):
        return "1"

    async def setup(self, environment):
        return None

    async def run(self, instruction, environment, context):
        log = os.environ["SKILLEVAL_TEST_LOG"]
        me = type(self).__name__
        with open(log, "a") as handle:
            started = {"agent": me, "event": "start", "t": time.monotonic(), "pid": os.getpid(), "ppid": os.getppid()}
            handle.write(json.dumps(started) + "\\n")
        await asyncio.sleep(float(os.environ.get("SKILLEVAL_TEST_SLEEP", "0.4")))
        with open(log, "a") as handle:
            handle.write(json.dumps({"agent": me, "event": "end", "t": time.monotonic()}) + "\\n")

class OtherAgent(LoggingAgent):
    pass
'''
