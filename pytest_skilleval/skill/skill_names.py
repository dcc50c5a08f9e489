"""Which name a skill goes by, and the one line that says so when the dataset expects another.

A trial installs the skill under its folder's name, and activation is looked for under the name the cases expect
(`expected_skill`, filled from evals.json's `skill_name`); when the two differ the skill can never be seen as used
and a run reads INCONCLUSIVE for a reason the author cannot guess.
"""

from __future__ import annotations

from pathlib import Path

from pytest_skilleval.skill.skill_md import find_front_matter, front_matter_line, read_head


def skill_md_name(skill_dir: Path) -> str | None:
    """The `name:` of SKILL.md's front matter (its quotes dropped), or None when it has none (or SKILL.md is not a
    regular file); read line by line, as collection reads it (skill/skill_md.py)."""
    head = read_head(skill_dir)
    found = find_front_matter(head) if head is not None else None
    value = front_matter_line(found.block, "name") if found is not None else None
    if value is None:
        return None
    return value.strip("\"'").strip() or None


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
