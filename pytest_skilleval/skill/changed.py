"""`--changed-since REF`: only the skills whose folder (SKILL.md, scripts, evals) differs from REF in git.

A skill is kept when `git diff --name-only REF` (committed and uncommitted changes) or an untracked file names
anything under its folder. Git runs with the repository's programs neutralised (see `baseline.SAFE_GIT`), no
external diff driver, and its output is read only as names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_skilleval.skill.baseline import BaselineError, git_output

LISTED = 3


class ChangedSinceError(ValueError):
    """REF cannot be compared with (not a git repository, unknown revision)."""


@dataclass(frozen=True)
class SkillChange:
    """Whether one skill is kept, and why, in words."""

    skill_dir: Path
    files: tuple[str, ...]

    @property
    def kept(self) -> bool:
        return bool(self.files)

    def reason(self) -> str:
        if not self.files:
            return f"{self.skill_dir.name} (no change)"
        more = f", and {len(self.files) - LISTED} more" if len(self.files) > LISTED else ""
        return f"{self.skill_dir.name} ({len(self.files)} changed: {', '.join(self.files[:LISTED])}{more})"


def skill_change(skill_dir: Path, ref: str) -> SkillChange:
    """The files of this skill's folder that differ from `ref` (relative to the folder), untracked ones included."""
    if not ref or ref.startswith("-"):
        raise ChangedSinceError(f"--changed-since {ref!r}: expected a git revision, e.g. origin/main")
    try:
        git_output(skill_dir, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
        diff = git_output(
            skill_dir, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", "--relative", ref, "--", "."
        )
        new = git_output(skill_dir, "ls-files", "-z", "--others", "--exclude-standard", "--", ".")
    except BaselineError as error:
        raise ChangedSinceError(
            f"--changed-since {ref}: {skill_dir} is not in a git repository that has {ref} ({error or 'git failed'})"
        ) from None
    names = {name.decode(errors="replace") for name in (diff + b"\0" + new).split(b"\0") if name}
    return SkillChange(skill_dir, tuple(sorted(names)))
