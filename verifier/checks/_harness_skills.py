"""Skills the harness itself loaded, seen in the system and user messages rather than in a tool call.

Some agents never call a tool to load a skill: codex answers a `$name` mention by injecting the skill as a
`<skill><name>..</name><path>..</path>` user message, claude-code runs `/name` as a slash command and injects
"Base directory for this skill: .../name" with the body, and other harnesses paste the whole SKILL.md (frontmatter
included) into the system or user message. Each of those is activation. A skill *listing* (terminus-2's
`<available_skills>` with `<description>`/`<location>`, codex's "Available skills" section) is not: the agent still
has to read the file, which the tool-call readers see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from verifier.evidence import TrajectoryEvidence

_NAME = r"[A-Za-z0-9][A-Za-z0-9_.:-]*"
_CODEX_BLOCK = re.compile(r"<skill>\s*<name>\s*(" + _NAME + r")\s*</name>\s*<path>")
_CLAUDE_BASE_DIR = re.compile(r"Base directory for this skill:\s*(\S+)")
_CLAUDE_COMMAND = re.compile(r"<command-name>\s*/(" + _NAME + r")\s*</command-name>")
_SLASH_AT_START = re.compile(r"\A\s*/(" + _NAME + r")(?=\s|\Z)")
_DOLLAR_MENTION = re.compile(r"(?:^|(?<=[\s(\[\"'`]))\$(" + _NAME + r")(?=[\s,.;:!?)\]\"'`]|\Z)")
_FRONTMATTER_NAME = re.compile(
    r"(?:\A|\n)---[ \t]*\n(?:[^\n]*\n){0,20}?name:[ \t]*[\"']?(" + _NAME + r")[\"']?[ \t]*\n"
)


@dataclass(frozen=True)
class HarnessLoad:
    """One skill the harness loaded: its name, how we know, and from which kind of message."""

    skill: str
    how: str
    source: str  # "user" | "system"
    excerpt: str


def _last_component(path: str) -> str:
    parts = [part for part in path.replace("\\", "/").rstrip("/").split("/") if part]
    return parts[-1] if parts else ""


def _loads_in(text: str, source: str) -> Iterable[HarnessLoad]:
    for match in _CODEX_BLOCK.finditer(text):
        yield HarnessLoad(match.group(1), "codex injected the skill (<skill> block)", source, match.group(0)[:200])
    for match in _CLAUDE_BASE_DIR.finditer(text):
        name = _last_component(match.group(1))
        if name:
            yield HarnessLoad(
                name, "claude-code loaded the skill (Base directory for this skill)", source, match.group(0)[:200]
            )
    for match in _CLAUDE_COMMAND.finditer(text):
        yield HarnessLoad(match.group(1), "claude-code slash command invoked the skill", source, match.group(0)[:200])
    if source == "user":
        if slash := _SLASH_AT_START.match(text):
            yield HarnessLoad(slash.group(1), "slash command invoked the skill", source, slash.group(0)[:200])
        for match in _DOLLAR_MENTION.finditer(text):
            yield HarnessLoad(match.group(1), "codex $skill mention", source, match.group(0)[:200])
    for match in _FRONTMATTER_NAME.finditer(text):
        yield HarnessLoad(
            match.group(1), f"SKILL.md injected into the {source} message", source, match.group(0).strip()[:200]
        )


def harness_loads(evidence: TrajectoryEvidence) -> list[HarnessLoad]:
    """Every harness-level skill load in the trajectory's system and user messages, in message order."""
    found: list[HarnessLoad] = []
    for source, messages in (("system", evidence.system_messages), ("user", evidence.user_messages)):
        for text in messages:
            found.extend(_loads_in(text, source))
    return found


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
