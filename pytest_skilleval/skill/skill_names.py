"""Which name a skill goes by, and the one line that says so when the dataset expects another.

A trial installs the skill under its folder's name, and activation is looked for under the name the cases expect
(`expected_skill`, filled from evals.json's `skill_name`); when the two differ the skill can never be seen as used
and a run reads INCONCLUSIVE for a reason the author cannot guess.
"""

from __future__ import annotations

import re
from pathlib import Path

# Front matter sits at the top of SKILL.md; reading more than this is never needed (SKILL.md is untrusted input).
FRONT_MATTER_BYTES = 64 * 1024
_NAME_LINE = re.compile(r"^name:\s*[\"']?(?P<name>[^\"'#\n]+?)[\"']?\s*(?:#.*)?$", re.MULTILINE)


def skill_md_name(skill_dir: Path) -> str | None:
    """The `name:` of SKILL.md's front matter, or None when it has none (or SKILL.md is not a regular file)."""
    path = skill_dir / "SKILL.md"
    if path.is_symlink() or not path.is_file():
        return None
    with path.open("rb") as handle:
        head = handle.read(FRONT_MATTER_BYTES).decode("utf-8", "replace")
    if not head.startswith("---"):
        return None
    end = head.find("\n---", 3)
    match = _NAME_LINE.search(head[3 : end if end != -1 else len(head)])
    return match.group("name").strip() if match else None


def name_mismatch(skill_dir: Path, expected: str | None, dataset_file: str = "evals.json") -> str | None:
    """One line naming the skill's names and the dataset's, and the fix, when the dataset expects another skill."""
    if not expected or expected == skill_dir.name:
        return None
    declared = skill_md_name(skill_dir)
    also = f", SKILL.md name {declared!r}" if declared and declared != skill_dir.name else ""
    return (
        f"{dataset_file} skill_name {expected!r} is not this skill's name (folder {skill_dir.name!r}{also}): trials "
        f"install the skill as {skill_dir.name!r}, so its use is never seen; set skill_name to {skill_dir.name!r} "
        f"(or rename the folder, and SKILL.md's name, to {expected!r})"
    )


def unnamed_skill_cases(skill_dir: Path, dataset_file: str, entries: list[dict]) -> str | None:
    """One line naming the cases that expect no skill, and the fix, when a dataset gives them none to look for.

    A flat list of entries has no `skill_name` to fill `expected_skill` from, so a case that sets neither it nor
    `should_trigger: false` is unlabelled: the skill checks skip it at 1.0 without looking, and Discoverability and
    Efficiency then read perfect in both arms, whatever the agent did. Peer tools (agent-skill-eval) write exactly
    such lists, so an author meets this with their first run.
    """
    from verifier.checks.skill_entry import expected_skill, should_trigger

    ids = [str(e.get("id")) for e in entries if should_trigger(e) is not False and not expected_skill(e)]
    if not ids:
        return None
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return (
        f"{dataset_file}: {len(ids)} of {len(entries)} case(s) name no skill to look for ({shown}): without a "
        "skill_name or expected_skill they are unlabelled, and Discoverability and Efficiency score them 1.0 "
        f'without looking; wrap the list as {{"skill_name": "{skill_dir.name}", "evals": [...]}} (or set '
        f'expected_skill: "{skill_dir.name}" on each, and should_trigger: false on negative controls)'
    )
