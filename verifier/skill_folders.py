"""Where skills live in a sandbox: the folders a trial installs skills into, and every folder an agent discovers
skills in. One home for these paths: the grader credits a load only from an installed folder, and every image
empties each discovery folder so no agent finds a skill the arm was not given.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

# Harbor stages every skill in its skills folder (`/runtime/skills` on 0.25, `/harbor/skills` on 0.24), and each
# installed agent copies it into its own (harbor/agents/installed/*: `_build_register_skills_command`): codex and pi
# `~/.agents/skills`, claude-code `$CLAUDE_CONFIG_DIR/skills` (Harbor sets `/logs/agent/sessions`; the CLI also reads
# `~/.claude/skills`), opencode `~/.config/opencode/skills`, and so on. `~` is the agent's HOME: `/root` in our
# sandboxes, `/workspace` for a CLI run with HOME there.
HARBOR_SKILLS_DIRS = ("/runtime/skills", "/harbor/skills")
# A replay file writes the skills folder as this placeholder, so one file replays on every Harbor version; the replay
# agent writes out the folder Harbor gave it, and `skilleval grade` the folder the grader credits loads from.
SKILLS_DIR_PLACEHOLDER = "{skills_dir}"
AGENT_SKILLS_DIRS: dict[str, tuple[str, ...]] = {
    "codex": ("~/.agents/skills",),
    "pi": ("~/.agents/skills",),
    "claude-code": ("/logs/agent/sessions/skills", "~/.claude/skills"),
    "opencode": ("~/.config/opencode/skills",),
    "cursor-cli": ("~/.cursor/skills",),
    "cline-cli": ("~/.cline/skills",),
    "gemini-cli": ("~/.gemini/skills",),
    "goose": ("~/.config/goose/skills",),
    "copilot-cli": ("~/.copilot/skills",),
    "kimi-cli": ("~/.kimi/skills",),
    "qwen-coder": ("~/.qwen/skills",),
    "hermes": ("/tmp/hermes/skills",),
}
HOMES = ("/root", "/workspace")
# Folders agents also search that no trial installs into: a project's own `skills/`, codex's older homes, opencode's
# project folder. A skill found there was not given by the arm, so images keep them empty too.
OTHER_DISCOVERY_DIRS = (
    "/workspace/skills",
    "~/.codex/skills",
    "/workspace/.opencode/skills",
    "/etc/codex/skills",
    "/tmp/codex-home/skills",
)


def expanded(folders: Iterable[str]) -> tuple[str, ...]:
    """Each folder with `~/` written out for every HOME, in order, without repeats."""
    out: list[str] = []
    for folder in folders:
        if folder.startswith("~/"):
            out.extend(home + folder[1:] for home in HOMES)
        else:
            out.append(folder)
    return tuple(dict.fromkeys(out))


DEFAULT_SKILLS_DIRS: tuple[str, ...] = expanded(
    (*HARBOR_SKILLS_DIRS, *(folder for folders in AGENT_SKILLS_DIRS.values() for folder in folders))
)
# Every folder an agent may find a skill in; images empty each one (Harbor then fills its own in the skilled arms).
SKILL_DISCOVERY_DIRS: tuple[str, ...] = expanded((*DEFAULT_SKILLS_DIRS, *OTHER_DISCOVERY_DIRS))


def with_skills_dir(json_text: str, skills_dir: str) -> str:
    """A JSON document's text with every `{skills_dir}` placeholder written out as `skills_dir` (JSON-escaped)."""
    return json_text.replace(SKILLS_DIR_PLACEHOLDER, json.dumps(skills_dir)[1:-1])
