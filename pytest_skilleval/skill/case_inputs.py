"""Which files a case's `files` puts in /workspace/input: the rules collection checks and staging applies.

Inputs live under `evals/` and never reach evaluator-only material; no link is ever followed. A plain module of the
skill layer, so collection checks every case's inputs without importing the staging of Harbor tasks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

# Evaluator-only material under evals/ that a case's `files` may not select.
RESERVED_INPUT_ROOTS = {"environment", "harbor", "results", "tests", "replays"}
# What one case's inputs may hold, by apparent size (`st_size`), as a download out of a sandbox may: the copy writes
# every byte, so a 1 GiB sparse file that costs the skill folder no disk block cost the host 1 GiB per trial staged.
MAX_INPUT_BYTES = 1024 * 1024 * 1024


class StagingError(ValueError):
    """A case that cannot be staged; the message names the case and what is wrong."""


def _skill_file_problem(skill_root: Path, relative: Path) -> str | None:
    """Public datasets list the skill's own files as inputs (`"files": ["SKILL.md", "scripts/extract.py"]`).

    Those resolve outside evals/, so they are refused (docs/datasets.md), with the true reason rather than "does not
    exist": copied into /workspace/input they would hand the skill to the baseline arm, and the with-skill arm has the
    whole skill installed already.
    """
    candidate = skill_root / relative
    if not relative.parts or not (candidate.is_file() or candidate.is_dir()):
        return None
    return (
        f"is part of the skill itself ({skill_root.name}/{relative.as_posix()}), not a case input: staging it "
        "into /workspace/input would hand the skill to the baseline arm, and the with-skill arm has the skill "
        "installed already; leave it out of files (inputs live under evals/, e.g. evals/files/)"
    )


def not_utf8(name: str) -> bool:
    """Whether a file name read from disk holds bytes that are not UTF-8 (Python keeps them as lone surrogates):
    Harbor's upload and digest encode names as UTF-8 and crashed on one with a traceback."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def printable(path: Path | str) -> str:
    """A path as one line can show it: bytes that are not UTF-8 as `\\xff` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _link_problem(path: Path, skill_root: Path) -> str | None:
    """Why `path` cannot be an input: a symbolic link (saying where it points), a special file, or a name that is
    not UTF-8; else None."""
    shown = path.relative_to(skill_root).as_posix() if path.is_relative_to(skill_root) else str(path)
    if not_utf8(path.name):
        return f"{printable(shown)} has a name that is not UTF-8 text; rename it"
    if path.is_symlink():
        target = os.readlink(path)
        outside = not Path(os.path.realpath(path)).is_relative_to(skill_root)
        where = ", outside the skill folder" if outside else ""
        return f"{shown} is a symbolic link (to {target}{where}); inputs may not contain links"
    if path.exists() and not (path.is_dir() or path.is_file()):
        return f"{shown} is not a regular file or folder"
    return None


def link_leaving(folder: Path, never: str | None = None) -> str | None:
    """The first symbolic link below `folder` (a native task's) that is absolute, leaves it or points at nothing, or
    is `never` at its top, as one line naming it and its target; None when there is none. Never followed: a linked
    folder is not entered. (Harbor reads a task's instruction.md on the host: linked to ~/.ssh/id_rsa, the key
    became the agent's prompt.)"""
    root = os.path.realpath(folder)
    for current, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            path = os.path.join(current, name)
            if not os.path.islink(path):
                continue
            if name == never and current == os.fspath(folder):
                return f"{printable(path)}: {never} must not be a symbolic link"
            target, resolved = os.readlink(path), os.path.realpath(path)
            inside = resolved.startswith(root + os.sep) and os.path.exists(resolved)
            if os.path.isabs(target) or not inside:
                return (
                    f"{printable(path)}: a symbolic link to {printable(target)}, leaving the task folder; links in a "
                    "skill are never followed: copy the file into the task folder in its place"
                )
    return None


def input_link_problem(evals_dir: Path, source: Path) -> str | None:
    """The first link on the way from the skill folder to `source`, or anywhere below it (never followed)."""
    skill_root = Path(os.path.abspath(evals_dir.parent))
    evals_dir = skill_root / evals_dir.name
    current = evals_dir
    for part in (None, *Path(os.path.abspath(source)).relative_to(evals_dir).parts):
        current = current if part is None else current / part
        problem = _link_problem(current, skill_root)
        if problem:
            return problem
    if not current.is_dir():
        return None
    for folder, dirs, files in os.walk(current, followlinks=False):
        for name in sorted(dirs + files):
            problem = _link_problem(Path(folder) / name, skill_root)
            if problem:
                return problem
    return None


def input_sources(evals_dir: Path, files: list[str] | None, case_id: str) -> list[tuple[Path, Path]]:
    """(source, destination relative to /workspace/input) pairs for a case's `files`.

    No link is ever followed: a link anywhere in a case's inputs (evals/files itself, a listed entry, anything in a
    listed folder) is an error naming it and where it points, so a link to ~/.ssh or /etc/passwd cannot copy host
    files into the sandbox.
    """
    evals_root = evals_dir.resolve()
    if files is None:
        default = evals_dir / "files"
        if not os.path.lexists(default):
            return []
        problem = input_link_problem(evals_dir, default)
        if problem:
            raise StagingError(f"case {case_id!r}: the default inputs (evals/files/): {problem}")
        pairs = [(default, Path("."))] if default.is_dir() else []
        _check_size(evals_dir, pairs, case_id)
        return pairs
    pairs = []
    for item in files:
        relative = Path(item.removeprefix("evals/"))
        problem = None
        if relative.is_absolute() or "://" in item or "\x00" in item:
            problem = "must be a path relative to evals/"
        elif ".." in relative.parts:
            problem = "must not contain '..'"
        elif relative.parts and relative.parts[0].casefold() in RESERVED_INPUT_ROOTS:
            problem = f"selects evaluator-only material under evals/{relative.parts[0]}/"
        source = evals_dir / relative
        if problem is None:
            link = input_link_problem(evals_dir, source)
            if link:
                problem = f"is refused: {link}"
            elif not source.exists():
                problem = _skill_file_problem(evals_root.parent, relative) or "does not exist"
            elif not source.resolve().is_relative_to(evals_root) or source.resolve() == evals_root:
                problem = "leaves evals/"
        if problem:
            raise StagingError(f"case {case_id!r}: files entry {item!r} {problem}")
        destination = relative.relative_to("files") if relative.parts[:1] == ("files",) else relative
        pairs.append((source, destination))
    _check_size(evals_dir, pairs, case_id)
    return pairs


def _check_size(evals_dir: Path, pairs: list[tuple[Path, Path]], case_id: str) -> None:
    """Refuse inputs over MAX_INPUT_BYTES in all, from `lstat` (links were refused already), before any is copied."""
    total = 0
    for source, _ in pairs:
        walked: Iterable[tuple[str, list[str], list[str]]] = (
            os.walk(source) if source.is_dir() else [(str(source.parent), [], [source.name])]
        )
        for folder, _dirs, files in walked:
            for name in files:
                size = os.lstat(os.path.join(folder, name)).st_size
                total += size
                if total > MAX_INPUT_BYTES:
                    shown = os.path.relpath(os.path.join(folder, name), evals_dir.parent)
                    raise StagingError(
                        f"case {case_id!r}: its inputs hold more than {MAX_INPUT_BYTES // 1024**3} GiB by apparent "
                        f"size (reached at {shown}, {size:,} bytes): each trial copies them whole, a sparse "
                        "file's holes included; make the inputs smaller, or generate large data inside the sandbox"
                    )
