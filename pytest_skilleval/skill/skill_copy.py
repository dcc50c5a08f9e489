"""What of a skill folder its agent is given: the files staging copies into the with-skill sandbox, and why a skill
cannot be copied. Collection, staging and `skilleval validate` all ask this one walk, so they never disagree.

A skill folder is untrusted input. The copy leaves out its evals/ (answers, graders, replays), generated output,
host-only environments (.venv), what the pytest session itself writes there (`--junitxml`, `--log-file`, its
cache...) and every pytest-skilleval results folder inside it: the run's own (a `--results-dir` inside the skill, as
with a skill at a repository's root and the README's CI setting) and any earlier one (a run folder holds the marker
file `.skilleval-generated-output`; a results root holds such run folders or a `latest` link to one), so no expected
answer reaches the agent. No link is followed: a relative link to
a file or folder the copy holds stays a link (it resolves the same way in the sandbox); a link leaving the skill
folder, an absolute one, or one to a part left out would dangle there, so it refuses the skill, as does a copy past
MAX_SKILL_FILES files or MAX_SKILL_BYTES bytes (counted from lstat, before anything is read).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilleval.results.run_paths import is_results_folder, run_results_folder
from pytest_skilleval.skill.case_inputs import StagingError, not_utf8, printable
from pytest_skilleval.skill.skill_content import left_out
from verifier import safe_io
from verifier.safe_paths import MAX_COPY_DEPTH

if TYPE_CHECKING:
    from pytest_skilleval.skill.folder import SkillFolder

# A skill is text and small scripts; the same caps as a --baseline-skill git export (skill/baseline.py).
MAX_SKILL_FILES = 5_000
MAX_SKILL_BYTES = 64 * 1024 * 1024
LINK_FIX = "links in a skill are never followed: copy the file into the skill folder in its place"


@dataclass(frozen=True)
class CopyProblem:
    """Why the skill cannot be copied: a `rule` (as `skilleval validate` names it), the path and one line."""

    rule: str
    path: Path
    message: str


@dataclass
class SkillCopy:
    """The walk's result: what the copy holds (paths relative to `root`, parents before children), what it left out
    as results folders (and as files `exclude` named), and the problems that refuse it."""

    root: Path
    dirs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    problems: list[CopyProblem] = field(default_factory=list)
    total_bytes: int = 0

    def error(self) -> str | None:
        """The first problem as one line (with how many more there are), or None when the skill can be copied."""
        if not self.problems:
            return None
        more = len(self.problems) - 1
        return self.problems[0].message + (
            f" (and {more} more problem(s); `skilleval validate` lists them)" if more else ""
        )


def results_inside(skill: SkillFolder) -> tuple[Path, ...]:
    """The skill's own results folder for this run when it lies inside the skill (else nothing): what the copy of
    the skill under test leaves out besides the fixed parts."""
    folder = run_results_folder(skill.path, skill.settings.results_dir, os.environ)
    return (folder,) if folder is not None else ()


def run_output(skill: SkillFolder) -> tuple[Path, ...]:
    """What this run writes that may lie inside the skill: its results folder and pytest's own output (a JUnit
    file, its cache...); the copy of the skill under test leaves each out besides the fixed parts."""
    return (*results_inside(skill), *skill.pytest_outputs)


def skill_copy_of(skill: SkillFolder) -> SkillCopy:
    """The copy of the skill under test, as this run stages it (walked once per skill and process)."""
    return skill.once("skill copy", lambda: plan_skill_copy(skill.path, run_output(skill)))


def left_out_note(skill: SkillFolder) -> str | None:
    """One line for the end of the session when results folders lie inside the skill folder (walked again: the
    run's own exists by now): which ones the agent's copy left out, and how to keep them apart."""
    left_out = plan_skill_copy(skill.path, results_inside(skill)).left_out
    if not left_out:
        return None
    shown = ", ".join(f"{rel}/" for rel in left_out[:3]) + (
        f" and {len(left_out) - 3} more" if len(left_out) > 3 else ""
    )
    return (
        f"{skill.name}: pytest-skilleval results lie inside the skill folder ({shown}); they were left out of the "
        "skill copy the agent is given (they hold the expected answers); to keep them apart, give --results-dir a "
        "folder outside the skill folder"
    )


def plan_skill_copy(skill_dir: Path, exclude: Iterable[Path] = ()) -> SkillCopy:
    """Walk the skill folder (no link followed, sizes from lstat) and decide what its copy holds; `exclude`: folders
    and files left out besides the fixed ones (the run's results folder, pytest's own output, the staging folder)."""
    root = Path(os.path.realpath(skill_dir))
    excluded = {Path(os.path.realpath(path)) for path in exclude}
    copy = SkillCopy(root)
    candidates: list[tuple[str, str]] = []
    count = 0
    stack: list[tuple[str, int]] = [("", 0)]
    while stack:
        rel, depth = stack.pop()
        folder = root / rel if rel else root
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda entry: entry.name, reverse=True)
        except OSError as error:
            copy.problems.append(CopyProblem("skill-copy", folder, f"{folder}: cannot be read ({error.strerror})"))
            continue
        if rel and is_results_folder(folder, {entry.name for entry in entries}):
            copy.left_out.append(rel)
            continue
        if rel:
            copy.dirs.append(rel)
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            path = root / child
            if left_out(entry.name):
                continue
            if not_utf8(entry.name):
                message = f"{printable(path)}: the name is not UTF-8 text; rename it"
                copy.problems.append(CopyProblem("skill-copy", path, message))
                continue
            if entry.is_symlink():
                candidates.append((child, os.readlink(path)))
                count += 1
            elif entry.is_dir(follow_symlinks=False):
                if path in excluded:
                    copy.left_out.append(child)
                elif depth + 1 >= MAX_COPY_DEPTH:
                    message = f"{path}: more than {MAX_COPY_DEPTH} folders deep; flatten the skill folder"
                    copy.problems.append(CopyProblem("skill-copy", path, message))
                else:
                    stack.append((child, depth + 1))
            elif entry.is_file(follow_symlinks=False):
                if path in excluded:
                    copy.left_out.append(child)
                    continue
                copy.files.append(child)
                copy.total_bytes += entry.stat(follow_symlinks=False).st_size
                count += 1
            else:
                message = f"{path}: not a regular file, folder or link; remove it from the skill folder"
                copy.problems.append(CopyProblem("skill-copy", path, message))
            if count > MAX_SKILL_FILES or copy.total_bytes > MAX_SKILL_BYTES:
                copy.problems.append(_too_large(root, count > MAX_SKILL_FILES))
                return copy
    _drop_emptied(copy, [rel for rel, _ in candidates])
    _check_links(copy, candidates)
    return copy


def _drop_emptied(copy: SkillCopy, links: list[str]) -> None:
    """A folder that held nothing but results folders left out (an earlier `--results-dir` inside the skill) is
    left out too, rather than reaching the agent empty."""
    emptied = {os.path.dirname(rel) for rel in copy.left_out}
    kept: set[str] = set()
    for rel in [*copy.files, *links, *(d for d in copy.dirs if d not in emptied)]:
        parent = rel
        while parent and parent not in kept:
            kept.add(parent)
            parent = os.path.dirname(parent)
    copy.dirs = [rel for rel in copy.dirs if rel in kept]


def _too_large(root: Path, by_count: bool) -> CopyProblem:
    what = f"more than {MAX_SKILL_FILES} files" if by_count else f"more than {MAX_SKILL_BYTES >> 20} MiB"
    return CopyProblem(
        "skill-size",
        root,
        f"{root}: the skill folder holds {what} (evals/ and results folders not counted), the most a skill copied "
        "into the sandbox may hold; move large or generated data out of the skill folder",
    )


def _check_links(copy: SkillCopy, candidates: list[tuple[str, str]]) -> None:
    """Keep each link that resolves, inside the skill, to something the copy holds; every other one is a problem."""
    held = {*copy.dirs, *copy.files}
    for rel, target in candidates:
        path = copy.root / rel
        lexical = os.path.normpath(os.path.join(os.path.dirname(rel), target))
        real = Path(os.path.realpath(path))
        if lexical == ".." or lexical.startswith("../") or not real.is_relative_to(copy.root):
            why = "leaving the skill folder"
        elif os.path.isabs(target):
            why = "an absolute path, which names nothing in the sandbox"
        elif real == copy.root:
            why = "the skill folder itself"
        elif real.relative_to(copy.root).as_posix() in held:
            copy.links.append((rel, target))
            continue
        elif os.path.lexists(real):
            why = "a part of the skill the agent is not given (evals/, results, caches)"
        else:
            why = "nothing (its target does not exist)"
        message = f"{path}: a symbolic link to {target}, {why}; the agent would find nothing there; {LINK_FIX}"
        copy.problems.append(CopyProblem("skill-link", path, message))


def copy_skill(copy: SkillCopy, destination: Path) -> None:
    """Write the planned copy to `destination` (a new folder): folders, then each file reached without following a
    link and within what is left of MAX_SKILL_BYTES (the folder may have changed since the walk), then the links."""
    destination.mkdir()
    for rel in copy.dirs:
        (destination / rel).mkdir()
    budget = MAX_SKILL_BYTES
    try:
        for rel in copy.files:
            safe_io.copy_file(copy.root, rel, destination, rel, max_bytes=budget)
            budget -= os.lstat(destination / rel).st_size
    except (OSError, safe_io.FileTooLargeError) as error:
        raise StagingError(f"{copy.root}: the skill could not be copied: {error}") from None
    for rel, target in copy.links:
        os.symlink(target, destination / rel)
