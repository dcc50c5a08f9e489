"""`skilleval init SKILL_DIR`: a new skill that runs at once, offline: SKILL.md, a script, one eval case and one
replay per arm, so `pytest --skill-eval SKILL_DIR --agents replay --env-mode local` works before any edit.

Writes only into a folder that does not exist yet or is empty (never over an author's files); every file is planned
and checked before the first is written.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_skilleval.skill.case_ids import CaseIdError, canonical_case_id
from pytest_skilleval.skill.skill_md import description_problem, name_problem

CASE_ID = "write-note"
SCRIPT = "make_note.py"
OUTPUT = "/workspace/output/note.txt"


class InitError(Exception):
    """The folder cannot take a new skill; the message says why and what to do."""


def _yaml_text(text: str) -> str:
    """`text` as a YAML value: plain when YAML reads it back as written, else double-quoted (JSON's quoting)."""
    plain = (
        ": " not in text and " #" not in text and not text.endswith(":") and text[:1] not in set("!&*[]{}|>'\"%@`,?-#")
    )
    return text if plain else json.dumps(text, ensure_ascii=False)


def _skill_md(name: str, description: str) -> str:
    return f"""---
name: {name}
description: {_yaml_text(description)}
---

# {name}

Writes a short note to `{OUTPUT}` with the skill's own script. Always use the script: it
keeps the note's format the same every time.

## How to use

From the workspace (`/workspace`), run the script in this skill's folder (the folder that holds this SKILL.md):

```bash
python3 <skill-dir>/scripts/{SCRIPT} --text "what the note says"
```

It writes `{OUTPUT}` and prints the path it wrote.
"""


SCRIPT_TEXT = f'''"""Write a one-line note, in the skill's format, to {OUTPUT} (or --output)."""

import argparse
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--text", required=True)
parser.add_argument("--output", default="{OUTPUT}")
args = parser.parse_args()
path = Path(args.output)
path.parent.mkdir(parents=True, exist_ok=True)
path.write_text(f"NOTE: {{' '.join(args.text.split())}}\\n", encoding="utf-8")
print(path)
'''


def _dataset(name: str) -> dict[str, Any]:
    return {
        "skill_name": name,
        "evals": [
            {
                "id": CASE_ID,
                "prompt": f"Use the {name} skill to write a note that says: ship it on Friday.",
                "expected_output": f"{OUTPUT} holds exactly `NOTE: ship it on Friday.`",
                "expected_script": SCRIPT,
                "assertions": [
                    f"The agent ran the skill's {SCRIPT} script",
                    f"{OUTPUT} contains `NOTE: ship it on Friday.`",
                ],
                # Deterministic checks, run in the sandbox after the agent: a pass means the note is right.
                "checks": [
                    {
                        "type": "file_equals",
                        "path": OUTPUT.removeprefix("/workspace/"),
                        "text": "NOTE: ship it on Friday.\n",
                        "name": "the note, in the skill's format",
                    }
                ],
            }
        ],
    }


def _step(step_id: int, message: str, call: dict[str, Any] | None = None, output: str = "") -> dict[str, Any]:
    step: dict[str, Any] = {"step_id": step_id, "source": "agent", "message": message}
    if call is not None:
        call_id = f"call_{step_id}"
        step["tool_calls"] = [{"tool_call_id": call_id, **call}]
        step["observation"] = {"results": [{"source_call_id": call_id, "content": output}]}
    return step


def _replay(name: str, with_skill: bool, skill_md: str) -> dict[str, Any]:
    """A starter recording: the with-skill arm reads SKILL.md and runs the script; the baseline writes by hand.
    Shell commands run again for real when replayed; replace these with a real agent's run (`skilleval trajectory
    --replay`) once you have one."""
    prompt = _dataset(name)["evals"][0]["prompt"]
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user", "message": prompt}]
    if with_skill:
        read = {"function_name": "Read", "arguments": {"file_path": f"{{skills_dir}}/{name}/SKILL.md"}}
        run = {
            "function_name": "Bash",
            "arguments": {
                "command": f'python3 {{skills_dir}}/{name}/scripts/{SCRIPT} --text "ship it on Friday."',
                "workdir": "/workspace",
            },
        }
        steps += [
            _step(2, f"Reading the {name} skill.", read, skill_md),
            _step(3, "Running the skill's script.", run, "(replaced when re-run)"),
            _step(4, f"Wrote {OUTPUT}."),
        ]
    else:
        write = {
            "function_name": "Bash",
            "arguments": {"command": f"mkdir -p /workspace/output && echo 'ship it on friday' > {OUTPUT}"},
        }
        steps += [_step(2, "Writing the note.", write, "(replaced when re-run)"), _step(3, f"Wrote {OUTPUT}.")]
    return {
        "schema_version": "ATIF-v1.6",
        "agent": {"name": "recorded", "version": "1.0"},
        "steps": steps,
        "final_metrics": {"total_prompt_tokens": 2400 if with_skill else 900, "total_completion_tokens": 120},
    }


def _suggested_name(name: str) -> str:
    """`name` made to fit the Agent Skills rules: lowercase, runs of other characters as one hyphen, 64 at most."""
    fitted = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64].rstrip("-")
    return fitted or "my-skill"


def planned_files(skill_dir: Path, description: str) -> dict[Path, str]:
    """Every file `init` writes, by path."""
    name = skill_dir.name
    # SKILL.md's name is the folder's, and both it and the description follow the Agent Skills rules
    # (https://agentskills.io/specification: name <= 64 of a-z, 0-9 and single inner hyphens; description non-empty,
    # <= 1024 characters): agents list a skill by those two fields (skill/skill_md.py).
    wrong = name_problem(name)
    if wrong is not None:
        raise InitError(
            f"{skill_dir}: the folder's name is the skill's name, and {name!r} {wrong} (Agent Skills rules); "
            "pick another, such as " + repr(_suggested_name(name))
        )
    try:
        canonical_case_id(name)
    except CaseIdError as error:
        raise InitError(f"{skill_dir}: the folder's name is the skill's name and {error}; pick another") from None
    wrong = description_problem(description)
    if wrong is not None:
        raise InitError(f"--description {wrong} (Agent Skills rules): say what the skill does and when to use it")
    skill_md = _skill_md(name, description)
    replays = skill_dir / "evals" / "replays"
    return {
        skill_dir / "SKILL.md": skill_md,
        skill_dir / "scripts" / SCRIPT: SCRIPT_TEXT,
        skill_dir / "evals" / "evals.json": json.dumps(_dataset(name), indent=2) + "\n",
        skill_dir / "evals" / ".gitignore": "results/\n",
        replays / f"{CASE_ID}.with-skill.json": json.dumps(_replay(name, True, skill_md), indent=2) + "\n",
        replays / f"{CASE_ID}.without-skill.json": json.dumps(_replay(name, False, skill_md), indent=2) + "\n",
    }


def init_skill(skill_dir: Path, description: str) -> list[Path]:
    """Write a new skill into `skill_dir` (absent or empty); the paths written."""
    if skill_dir.is_symlink() or (skill_dir.exists() and not skill_dir.is_dir()):
        raise InitError(f"{skill_dir}: exists and is not a folder; pick a new folder for the skill")
    ancestor = next((parent for parent in skill_dir.absolute().parents if parent.exists()), None)
    if ancestor is not None and not ancestor.is_dir():
        raise InitError(f"{skill_dir}: {ancestor} is a file, not a folder; pick a path under a folder")
    if skill_dir.is_dir() and any(skill_dir.iterdir()):
        raise InitError(
            f"{skill_dir}: the folder is not empty; `skilleval init` writes only into a new or empty folder "
            "(for an existing skill, add evals/evals.json by hand or with skilleval init-custom-grader)"
        )
    files = planned_files(skill_dir, description)
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InitError(f"{skill_dir}: cannot write the skill ({error.strerror or error})") from None
    return list(files)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="skilleval init", description=__doc__.splitlines()[0])
    parser.add_argument("skill_dir", type=Path, help="the new skill's folder (its name is the skill's name)")
    parser.add_argument(
        "--description",
        default="Writes a short note to output/note.txt in the workspace. Use it whenever someone asks for a note.",
        help="SKILL.md's description: what the skill does and when an agent should use it",
    )
    return parser


def run_init_command(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    skill_dir = Path(args.skill_dir)
    try:
        written = init_skill(skill_dir, " ".join(args.description.split()))
    except InitError as error:
        print(f"skilleval init: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    print(
        f"next: pytest --skill-eval {skill_dir} --agents replay --env-mode local   (offline, no API key); then edit "
        "SKILL.md, evals/evals.json and the replays, or run a real agent (docs/agents.md)"
    )
    return 0
