"""Skills a native task ships in its own environment, which a paired run must refuse.

The plugin installs the skill under test into the with-skill arm only; a task whose environment carries skills itself
(`[environment] skills_dir`, a Dockerfile `COPY skills/`, `environment/skills/<name>/SKILL.md`) gives them to both
arms, so the baseline would see the skill and the comparison would measure nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

from harbor.models.task.config import TaskConfig

_COPY_SKILLS_RE = re.compile(r"^\s*(?:COPY|ADD)\s.*?(?:\s|/)skills(?:/|\s|$)", re.IGNORECASE)


def shipped_skills(task_dir: Path, config: TaskConfig) -> list[str]:
    """How the task's own environment carries skills: `environment.skills_dir`, a Dockerfile `COPY skills/`, or
    an `environment/skills/<name>/SKILL.md`. Those reach both arms, unlike the skill the plugin installs."""
    found: list[str] = []
    skills_dir = config.environment.skills_dir
    if skills_dir:
        found.append(f"[environment] skills_dir = {skills_dir!r} (Harbor copies it into the agent's skills folder)")
    environment = task_dir / "environment"
    dockerfile = environment / "Dockerfile"
    try:
        text = dockerfile.read_text(encoding="utf-8", errors="replace") if dockerfile.is_file() else ""
    except OSError:
        text = ""
    found.extend(f"environment/Dockerfile: {line.strip()}" for line in text.splitlines() if _COPY_SKILLS_RE.match(line))
    shipped = sorted(p.parent.name for p in (environment / "skills").glob("*/SKILL.md")) if environment.is_dir() else []
    if shipped:
        found.append(f"environment/skills/ holds {', '.join(shipped)}")
    return found
