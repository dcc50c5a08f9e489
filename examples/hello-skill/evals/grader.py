#!/usr/bin/env python3
"""Custom grader for hello-skill (Python 3 standard library only).

Runs inside the trial sandbox after the agent. Inputs, each with its container default:
HARBOR_ENTRY_JSON (/tests/entry.json), HARBOR_ATIF_PATH (/logs/agent/trajectory.json, may be
missing), HARBOR_WORKSPACE_DIR (/workspace). Outputs: HARBOR_REWARD_JSON (flat numbers, with
``overall`` in [0, 1]), HARBOR_REWARD_TXT (overall) and grader_details.json next to them.

Positive cases (an entry with ``greeting_name``): the greeting file must hold the skill's exact
two-line greeting. Negative cases (``expected_skill`` null): no greeting file may exist, and
``answer.txt`` must hold ``expected_answer`` when the entry gives one.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

SECOND_LINE = "Welcome aboard. We are glad you are here."


def env_path(name: str, default: str) -> Path:
    return Path(os.environ.get(name) or default)


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def text_of(content: Any) -> str:
    """Message or observation content as text: a string or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def planned_keystrokes(message: str) -> list[str]:
    """The commands of a terminus-2 reply kept as raw text (its `raw_content` mode records the model's JSON plan,
    `{"analysis", "plan", "commands": [{"keystrokes": ...}]}`, instead of tool calls); none for other text."""
    start, end = message.find("{"), message.rfind("}")
    try:
        plan = json.loads(message[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        return []
    commands = plan.get("commands") if isinstance(plan, dict) else None
    if not isinstance(commands, list):
        return []
    return [json.dumps({"keystrokes": c["keystrokes"]}) for c in commands if isinstance(c, dict) and "keystrokes" in c]


def trajectory_signals(trajectory: Any) -> dict[str, Any]:
    """What the agent did, from ATIF; empty when there is no usable trajectory."""
    if not isinstance(trajectory, dict) or not isinstance(trajectory.get("steps"), list):
        return {}
    steps = [step for step in trajectory["steps"] if isinstance(step, dict)]
    # terminus-2 with raw_content: its commands are only in its replies' text, and no step has tool calls.
    plans_in_text = (trajectory.get("agent") or {}).get("name") == "terminus-2" and not any(
        step.get("tool_calls") for step in steps
    )
    calls, outputs, last_message = [], [], ""
    for step in steps:
        for call in step.get("tool_calls") or []:
            if isinstance(call, dict):
                calls.append(json.dumps(call.get("arguments", {})))
        if plans_in_text and step.get("source") == "agent":
            calls.extend(planned_keystrokes(text_of(step.get("message"))))
        for result in (step.get("observation") or {}).get("results") or []:
            if isinstance(result, dict):
                outputs.append(text_of(result.get("content")))
        if step.get("source") == "agent":
            last_message = text_of(step.get("message")) or last_message
    return {
        "read_skill": any("hello-skill/SKILL.md" in c for c in calls),
        "ran_script": any("greet.py" in c for c in calls),
        "script_wrote": any("wrote " in o and "greeting.txt" in o for o in outputs),
        "final_message": last_message[:500],
    }


def grade(entry: dict[str, Any], workspace: Path, signals: dict[str, Any]) -> tuple[dict[str, float], dict[str, Any]]:
    greeting_file = workspace / "output" / "greeting.txt"
    present = greeting_file.is_file()
    details: dict[str, Any] = {"case": entry.get("id"), "greeting_file": str(greeting_file), "trajectory": signals}
    scores: dict[str, float] = {}
    name = entry.get("greeting_name")
    negative = "expected_skill" in entry and entry.get("expected_skill") is None
    if negative or not name:
        scores["no_greeting_file"] = 0.0 if present else 1.0
        parts = [scores["no_greeting_file"]]
        expected_answer = entry.get("expected_answer")
        if expected_answer is not None:
            answer_file = workspace / "output" / "answer.txt"
            got = answer_file.read_text(encoding="utf-8").strip() if answer_file.is_file() else None
            scores["answer_correct"] = 1.0 if got == str(expected_answer).strip() else 0.0
            details["answer"] = got
            parts.append(scores["answer_correct"])
        scores["overall"] = sum(parts) / len(parts)
    else:
        expected = f"Hello, {' '.join(str(name).split())}!\n{SECOND_LINE}\n"
        got = greeting_file.read_text(encoding="utf-8", errors="replace") if present else None
        correct = got is not None and got.rstrip() == expected.rstrip()
        scores["greeting_present"] = 1.0 if present else 0.0
        scores["greeting_correct"] = 1.0 if correct else 0.0
        scores["overall"] = 1.0 if correct else (0.25 if present else 0.0)
        details.update(expected=expected, got=got)
    if signals:
        scores["script_used"] = 1.0 if signals.get("ran_script") else 0.0
    return scores, details


def load_trajectory(path: Path) -> Any:
    """The trajectory at `path`, with the segments it continues in (terminus-2's `linear_history` splits it at each
    context summarization into `trajectory.cont-N.json` beside it): their steps appended, each file read once."""
    trajectory = load_json(path)
    if not isinstance(trajectory, dict) or not isinstance(trajectory.get("steps"), list):
        return trajectory
    steps, seen, ref = list(trajectory["steps"]), set(), trajectory.get("continued_trajectory_ref")
    while isinstance(ref, str) and re.fullmatch(r"trajectory\.cont-[1-9][0-9]{0,5}\.json", ref) and ref not in seen:
        seen.add(ref)
        segment = path.with_name(ref)
        part = None if segment.is_symlink() else load_json(segment)
        if not isinstance(part, dict) or not isinstance(part.get("steps"), list):
            break
        steps += part["steps"]
        ref = part.get("continued_trajectory_ref")
    return {**trajectory, "steps": steps}


def main() -> int:
    logs = os.environ.get("HARBOR_LOGS_DIR") or "/logs"
    verifier_dir = env_path("HARBOR_VERIFIER_DIR", f"{logs}/verifier")
    tests_dir = os.environ.get("HARBOR_TESTS_DIR") or "/tests"
    entry = load_json(env_path("HARBOR_ENTRY_JSON", f"{tests_dir}/entry.json"))
    if not isinstance(entry, dict):
        entry = {}
    atif = env_path("HARBOR_ATIF_PATH", f"{os.environ.get('HARBOR_AGENT_LOGS_DIR') or logs + '/agent'}/trajectory.json")
    signals = trajectory_signals(load_trajectory(atif))
    scores, details = grade(entry, env_path("HARBOR_WORKSPACE_DIR", "/workspace"), signals)
    reward_json = env_path("HARBOR_REWARD_JSON", f"{verifier_dir}/reward.json")
    reward_txt = env_path("HARBOR_REWARD_TXT", f"{verifier_dir}/reward.txt")
    reward_json.parent.mkdir(parents=True, exist_ok=True)
    reward_json.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    reward_txt.parent.mkdir(parents=True, exist_ok=True)
    reward_txt.write_text(f"{scores['overall']}\n", encoding="utf-8")
    (reward_json.parent / "grader_details.json").write_text(json.dumps(details, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
