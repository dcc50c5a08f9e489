"""Skills the harness itself loaded, seen in the system and user messages rather than in a tool call.

Some agents never call a tool to load a skill: codex answers a `$name` mention by injecting the skill as a
`<skill><name>..</name><path>..</path>` user message, and claude-code, for a `/name` slash command or a Skill tool
call, injects "Base directory for this skill: .../name" with the body. Those are activation of the skill at that path,
and only of a skill installed in a skills folder of the trial (`_skill_dirs`): codex's bundled system skills are
loaded the same way from its own home, in both arms, and are other skills. A harness that pastes a whole SKILL.md
(frontmatter included) into the system message names no path, so that load is taken by name.

The prompt's own `$name` or `/name` is a request, not a load: codex injects the block only when the skill exists,
and claude-code passes an unknown `/name` to the model as plain text. A skill *listing* (terminus-2's
`<available_skills>`, codex's "Available skills" section) is not a load either: the agent still has to read the file,
which the tool-call readers see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from verifier.checks._skill_dirs import installed_skill, installed_skill_folder
from verifier.evidence import TrajectoryEvidence

_NAME = r"[A-Za-z0-9][A-Za-z0-9_.:-]*"
_CODEX_BLOCK = re.compile(r"<skill>\s*<name>\s*(" + _NAME + r")\s*</name>\s*<path>\s*([^<\s]+)\s*</path>")
_CLAUDE_BASE_DIR = re.compile(r"Base directory for this skill:\s*(\S+)")
_FRONTMATTER_NAME = re.compile(
    r"(?:\A|\n)---[ \t]*\n(?:[^\n]*\n){0,20}?name:[ \t]*[\"']?(" + _NAME + r")[\"']?[ \t]*\n"
)


@dataclass(frozen=True)
class HarnessLoad:
    """One skill the harness loaded: its name, how we know, from which kind of message, and where it lives.

    `path` is the SKILL.md (codex) or skill folder (claude-code) the harness named, '' when it named none.
    """

    skill: str
    how: str
    source: str  # "user" | "system"
    excerpt: str
    path: str = ""
    folder: bool = False  # `path` is the skill's folder rather than its SKILL.md

    def installed_as(self, skills_dirs: Iterable[str]) -> str:
        """The skill's name when it was loaded from a skills folder of the trial, else '' (another skill)."""
        if not self.path:
            return self.skill
        if self.folder:
            return installed_skill_folder(self.path, skills_dirs)
        return installed_skill(self.path, skills_dirs)


def _loads_in(text: str, source: str) -> Iterable[HarnessLoad]:
    injected = False
    for match in _CODEX_BLOCK.finditer(text):
        injected = True
        yield HarnessLoad(
            match.group(1), "codex injected the skill (<skill> block)", source, match.group(0)[:200], match.group(2)
        )
    for match in _CLAUDE_BASE_DIR.finditer(text):
        injected = True
        path = match.group(1).rstrip("/")
        name = path.rsplit("/", 1)[-1]
        if name:
            yield HarnessLoad(
                name,
                "claude-code loaded the skill (Base directory for this skill)",
                source,
                match.group(0)[:200],
                path,
                folder=True,
            )
    if source == "system" and not injected:
        for match in _FRONTMATTER_NAME.finditer(text):
            yield HarnessLoad(
                match.group(1), "SKILL.md injected into the system message", source, match.group(0).strip()[:200]
            )


def harness_loads(evidence: TrajectoryEvidence) -> list[HarnessLoad]:
    """Every harness-level skill load in the trajectory's system and user messages, in message order, whichever
    skill it loaded (see `installed_loads` for the ones of the trial's skills folders)."""
    found: list[HarnessLoad] = []
    for source, messages in (("system", evidence.system_messages), ("user", evidence.user_messages)):
        for text in messages:
            found.extend(_loads_in(text, source))
    return found


def installed_loads(loads: list[HarnessLoad], skills_dirs: Iterable[str]) -> list[HarnessLoad]:
    """The loads of skills installed in `skills_dirs`, each named by its folder there."""
    folders = tuple(skills_dirs)
    kept = []
    for load in loads:
        name = load.installed_as(folders)
        if name:
            kept.append(load if name == load.skill else replace(load, skill=name))
    return kept


def other_loads(loads: list[HarnessLoad], skills_dirs: Iterable[str]) -> list[dict[str, str]]:
    """The loads of skills from anywhere else (codex's bundled system skills, ...), as detail records."""
    folders = tuple(skills_dirs)
    return [
        {"skill": load.skill, "path": load.path, "via": load.how} for load in loads if not load.installed_as(folders)
    ]


def loads_of(loads: list[HarnessLoad], skill: str) -> list[HarnessLoad]:
    """The loads naming `skill` (case-insensitive; a `plugin:skill` name matches its last part)."""
    wanted = skill.strip().casefold()
    if not wanted:
        return []
    return [
        load for load in loads if load.skill.casefold() == wanted or load.skill.casefold().rsplit(":", 1)[-1] == wanted
    ]


def load_evidence(load: HarnessLoad) -> dict[str, str]:
    """A load as an evidence item in check details."""
    return {"why": load.how, "source": f"{load.source} message", "evidence": load.excerpt}
