"""SKILL.md's front matter against the Agent Skills rules for `name` and `description`.

The rules are the Agent Skills specification's (https://agentskills.io/specification, "Frontmatter"):
- `name`: required; at most 64 characters; lowercase letters, digits and hyphens only; it must not start or end
  with a hyphen nor hold two in a row; it must match the name of the folder holding SKILL.md.
- `description`: required; non-empty; at most 1024 characters; what the skill does and when to use it.
Agents list a skill by these two fields and load it on demand; without them an agent has nothing to find it by.

`skilleval init` refuses a name or description that breaks them; `skilleval validate` reports each broken rule
(`front_matter_problems`, which parses the YAML), and a run warns at collection about the ones no agent gets past
(`missing_front_matter`, read line by line: collecting a JSON dataset never imports PyYAML).

This is also the one reader of SKILL.md's front matter: the block (`find_front_matter`, a byte-order mark and either
line ending accepted), a key's line (`front_matter_line`, without YAML: the skill's declared name at collection) and
the block as data (`front_matter_data`, bounded YAML: validate and `optimize-description`'s proposer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Front matter sits at the top of SKILL.md; reading more than this is never needed (SKILL.md is untrusted input).
FRONT_MATTER_BYTES = 64 * 1024
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# The block between SKILL.md's opening and closing `---` lines (either line ending).
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class FrontMatter:
    """SKILL.md's front matter: the text between its `---` lines (`block`), where that text lies in the file's text
    (`start`, `end`: the proposer replaces it there) and where the closing `---` line ends (`close`: the body
    follows)."""

    block: str
    start: int
    end: int
    close: int


def find_front_matter(text: str) -> FrontMatter | None:
    """The front matter at the top of SKILL.md's text (after a byte-order mark, if any), None without one."""
    offset = 1 if text.startswith("\ufeff") else 0
    match = FRONT_MATTER.match(text[offset:] if offset else text)
    if match is None:
        return None
    return FrontMatter(match.group(1), match.start(1) + offset, match.end(1) + offset, match.end() + offset)


def read_head(skill_dir: Path) -> str | None:
    """The first FRONT_MATTER_BYTES of SKILL.md as text, None when it is not a readable regular file (a link is
    never followed)."""
    path = skill_dir / "SKILL.md"
    if path.is_symlink() or not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            return handle.read(FRONT_MATTER_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def _key_line(block: str, key: str) -> re.Match[str] | None:
    return re.search(rf"^{re.escape(key)}[ \t]*:(.*)$", block, re.MULTILINE)


def front_matter_line(block: str, key: str) -> str | None:
    """A top-level key's value as written on its line (a trailing ` #` comment dropped), None without the key; read
    without a YAML parser, so collecting a JSON dataset never imports one."""
    match = _key_line(block, key)
    return _value(match) if match is not None else None


def _value(line: re.Match[str]) -> str:
    return line.group(1).split(" #")[0].strip()


def front_matter_data(block: str) -> Any:
    """The block as YAML data, within the bounded loader's limits; raises yaml.YAMLError or ParseLimitError."""
    from pytest_skilleval.skill.bounded_yaml import load_yaml

    return load_yaml(block)


def name_problem(name: str) -> str | None:
    """What is wrong with `name` as a skill's name under the Agent Skills rules, None when nothing is."""
    if not name:
        return "is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"is {len(name)} characters long, more than the {MAX_NAME_CHARS} allowed"
    if not _NAME.fullmatch(name):
        return (
            "may hold only lowercase letters, digits and hyphens, and must not start or end with a hyphen nor hold "
            "two in a row"
        )
    return None


def description_problem(description: str) -> str | None:
    """What is wrong with `description` under the Agent Skills rules, None when nothing is."""
    if not description.strip():
        return "is empty"
    if len(description) > MAX_DESCRIPTION_CHARS:
        return f"is {len(description)} characters long, more than the {MAX_DESCRIPTION_CHARS} allowed"
    return None


@dataclass(frozen=True)
class FrontMatterProblem:
    """One broken rule. `fatal`: no agent can list the skill (no front matter, unreadable, no name or description);
    otherwise the skill breaks a rule some agents enforce and others let pass."""

    rule: str
    fatal: bool
    message: str


NO_FRONT_MATTER = FrontMatterProblem(
    "skill-md-front-matter",
    True,
    "SKILL.md has no front matter (a YAML block between --- lines at the top, with name and description): agents "
    "list a skill by those two fields, so none can find this one; add one",
)


def _front_block(skill_dir: Path) -> str | list[FrontMatterProblem]:
    """The text between SKILL.md's opening and closing `---` lines, else the problems that leave nothing to read:
    none when SKILL.md is not a readable regular file (the folder checks report that), NO_FRONT_MATTER without one."""
    head = read_head(skill_dir)
    if head is None:
        return []
    found = find_front_matter(head)
    return found.block if found is not None else [NO_FRONT_MATTER]


def _has_value(block: str, key: str) -> bool:
    """Whether a top-level key has a non-empty value: on its line (a block scalar's `|` or `>` counts), or on the
    indented lines after an empty one."""
    match = _key_line(block, key)
    if match is None:
        return False
    value = _value(match)
    if value == "":
        return block[match.end() :].lstrip("\r\n").startswith((" ", "\t"))
    return value not in ('""', "''")


def missing_front_matter(skill_dir: Path) -> list[FrontMatterProblem]:
    """The problems no agent gets past, read line by line without a YAML parser: no front matter, no name, no
    description (an empty one included)."""
    block = _front_block(skill_dir)
    if isinstance(block, list):
        return block
    problems = []
    if not _has_value(block, "name"):
        problems += _name_problems(None, skill_dir.name)
    if not _has_value(block, "description"):
        problems += _description_problems(None)
    return problems


def front_matter_problems(skill_dir: Path) -> list[FrontMatterProblem]:
    """Every Agent Skills rule SKILL.md's front matter breaks (none when SKILL.md is not a readable file: the
    folder checks report that)."""
    block = _front_block(skill_dir)
    if isinstance(block, list):
        return block
    import yaml

    from pytest_skilleval.skill.bounded_parse import ParseLimitError
    from pytest_skilleval.skill.bounded_yaml import yaml_error_message

    try:
        data = front_matter_data(block)
    except yaml.YAMLError as error:
        return [
            FrontMatterProblem(
                "skill-md-front-matter",
                True,
                f"SKILL.md's front matter is not valid YAML ({yaml_error_message(error)}): agents cannot read its "
                "name and description; quote a value that holds ': ' or starts with a special character",
            )
        ]
    except ParseLimitError as error:
        return [FrontMatterProblem("skill-md-front-matter", True, f"SKILL.md's front matter: {error}")]
    if data is None:
        data = {}  # an empty block: no name and no description
    if not isinstance(data, dict):
        return [
            FrontMatterProblem(
                "skill-md-front-matter",
                True,
                "SKILL.md's front matter is not a mapping: write it as `name: ...` and `description: ...` lines",
            )
        ]
    return _name_problems(data.get("name"), skill_dir.name) + _description_problems(data.get("description"))


def _name_problems(name: object, folder: str) -> list[FrontMatterProblem]:
    if name is None or (isinstance(name, str) and not name.strip()):
        return [
            FrontMatterProblem(
                "skill-md-name",
                True,
                f"SKILL.md's front matter has no name: agents list a skill by it; add `name: {folder}`",
            )
        ]
    if not isinstance(name, str):
        return [FrontMatterProblem("skill-md-name", True, "SKILL.md's name is not text; write it as `name: ...`")]
    problems = []
    wrong = name_problem(name)
    if wrong is not None:
        problems.append(
            FrontMatterProblem("skill-md-name", False, f"SKILL.md's name {name!r} {wrong} (Agent Skills rules)")
        )
    if name != folder:
        problems.append(
            FrontMatterProblem(
                "skill-md-name",
                False,
                f"SKILL.md's name {name!r} is not its folder's name {folder!r}, as the Agent Skills rules require "
                "(trials install the skill under the folder's name); rename one to match",
            )
        )
    return problems


def _description_problems(description: object) -> list[FrontMatterProblem]:
    if description is None or (isinstance(description, str) and not description.strip()):
        return [
            FrontMatterProblem(
                "skill-md-description",
                True,
                "SKILL.md's front matter has no description (or an empty one): agents decide to use a skill from "
                "it; say what the skill does and when to use it",
            )
        ]
    if not isinstance(description, str):
        return [
            FrontMatterProblem(
                "skill-md-description", True, "SKILL.md's description is not text; write it as `description: ...`"
            )
        ]
    wrong = description_problem(description)
    if wrong is None:
        return []
    return [FrontMatterProblem("skill-md-description", False, f"SKILL.md's description {wrong} (Agent Skills rules)")]
