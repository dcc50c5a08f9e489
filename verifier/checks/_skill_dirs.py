"""Which SKILL.md is the skill under test: one in a skills folder the trial installed, and loaded successfully.

A skill is identified by its path, never by its name alone: codex bundles system skills (`skill-creator`, ...)
under its own home in both arms, and a baseline that reads one of those has not used a skill under test that
happens to share the name. The skills folders are the ones our trials install skills into for the agent
(`DEFAULT_SKILLS_DIRS`), or the ones a case names (`skills_dirs`, from `skilleval grade --skills-dir`). A load
that failed (the file was not there, the Skill tool did not know the skill) is not a load.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from verifier.skill_folders import AGENT_SKILLS_DIRS, DEFAULT_SKILLS_DIRS, HARBOR_SKILLS_DIRS
from verifier.skill_folders import expanded as _expanded

HOME = "/root"  # the agent's HOME in our sandboxes
_HOME_PREFIX = re.compile(r"^(?:~|\$HOME|\$\{HOME\})(?=/|$)")
DEFAULT_CWD = "/workspace"

# Output that says a read or run of a file failed: the shell's messages, and each agent's exit-code line.
_FAILED_FILE = re.compile(
    r"no such file or directory|permission denied|not a directory|is a directory|can't open file|"
    r"file not found|cannot open|does not exist",
    re.IGNORECASE,
)
_NONZERO_EXIT = re.compile(
    r"process exited with code [1-9]\d*|^exit code:? [1-9]\d*|\bexit_code=[1-9]\d*|\bstatus=(?:failed|error)\b",
    re.IGNORECASE | re.MULTILINE,
)
_UNKNOWN_SKILL = re.compile(r"unknown skill|skill .{0,80}not found|no skill named|<tool_use_error>", re.IGNORECASE)


def skills_dirs_for(agent_name: str | None, entry: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The skills folders of one trial: the entry's `skills_dirs` when it names any, else the agent's defaults
    (Harbor's folders and the agent's own copy), else every folder our trials install skills into."""
    named = (entry or {}).get("skills_dirs")
    if isinstance(named, str):
        named = [named]
    if isinstance(named, (list, tuple)):
        folders = tuple(str(folder).strip() for folder in named if str(folder).strip())
        if folders:
            return _expanded(folders)
    agent = (agent_name or "").strip().lower()
    for name, folders in AGENT_SKILLS_DIRS.items():
        stem = name.split("-")[0]
        if agent == name or (len(stem) > 2 and agent.startswith(stem)):
            return _expanded((*HARBOR_SKILLS_DIRS, *folders))
    if agent.startswith("terminus"):
        return HARBOR_SKILLS_DIRS
    return DEFAULT_SKILLS_DIRS


def normalize(path: str, cwd: str = DEFAULT_CWD) -> str:
    """An absolute, normalized path: `~` and `$HOME` are the sandbox HOME, a relative path is taken from `cwd`."""
    cleaned = path.strip().strip("'\"").replace("\\", "/")
    if not cleaned:
        return ""
    cleaned = _HOME_PREFIX.sub(HOME, cleaned)
    if not cleaned.startswith("/"):
        if cleaned.startswith("$"):
            return ""  # another variable: not a path we can place
        cleaned = posixpath.join(cwd or DEFAULT_CWD, cleaned)
    return posixpath.normpath(cleaned)


@lru_cache(maxsize=64)
def _roots(skills_dirs: tuple[str, ...]) -> frozenset[str]:
    return frozenset(root for root in (normalize(folder) for folder in skills_dirs) if root)


def folder_prefixes(skills_dirs: Iterable[str]) -> tuple[str, ...]:
    """Each skills folder as a normalized `/path/` prefix, for `str.startswith`."""
    return tuple(root.rstrip("/") + "/" for root in _roots(tuple(skills_dirs)))


def installed_skill(path: str, skills_dirs: Iterable[str], cwd: str = DEFAULT_CWD) -> str:
    """The skill name when `path` is `<skills dir>/<name>/SKILL.md` for one of `skills_dirs`, else ''."""
    resolved = normalize(path, cwd)
    if not resolved:
        return ""
    folder, file_name = posixpath.split(resolved)
    if file_name != "SKILL.md":
        return ""
    parent, name = posixpath.split(folder)
    if not name or name.startswith("."):
        return ""
    return name if parent in _roots(tuple(skills_dirs)) else ""


def installed_skill_folder(folder: str, skills_dirs: Iterable[str]) -> str:
    """The skill name when `folder` is `<skills dir>/<name>` (a harness's "base directory" of a skill), else ''."""
    resolved = normalize(folder)
    parent, name = posixpath.split(resolved.rstrip("/"))
    if not name or name.startswith("."):
        return ""
    return name if parent in _roots(tuple(skills_dirs)) else ""


def read_failed(observation: str, path: str = "", *, exit_codes: bool = True) -> bool:
    """Whether the output of a read or run says it failed: the shell's "No such file" / "Permission denied" for
    `path` (for any file when no path is given), or, with `exit_codes`, an exit code other than 0 (a script that ran
    and failed still ran, so a run is checked without them)."""
    if not observation:
        return False
    if exit_codes and _NONZERO_EXIT.search(observation):
        return True
    if not path:
        return bool(_FAILED_FILE.search(observation))
    # The line must name this file: its last two components (`skill/SKILL.md`, as `~` or a variable may have been
    # expanded before the message was printed), or the name alone when that is all the path is.
    parts = [part for part in path.replace("\\", "/").split("/") if part]
    needle = "/".join(parts[-2:]) if parts else path
    return any(_FAILED_FILE.search(line) and needle in line for line in observation.splitlines())


def skill_tool_failed(observation: str) -> bool:
    """Whether a Skill tool call was refused or failed (claude-code: "Unknown skill: NAME"; opencode, from its log:
    `status=error` with `Skill "NAME" not found`)."""
    return bool(_UNKNOWN_SKILL.search(observation or "") or _NONZERO_EXIT.search(observation or ""))
