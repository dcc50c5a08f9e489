"""Which files of a skill folder are the skill: the one rule the agent's copy (`skill_copy`) and the skill's digest
(`content_digest`, which `--resume` compares with the run's) share. A file the agent is never given and the run never
reads (a `.venv` made inside the skill) then never reads as a changed skill, and every file it is given does.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from pytest_skilleval.results.run_paths import MARKER_FILE, is_results_folder

# Folders (or files) of a skill, by name at any depth, an agent must never see or could not use: its evals (answers,
# graders, replays), generated output, version control, caches and host-only Python environments.
SKILL_EXCLUDES = frozenset(
    {"evals", "results", "__pycache__", ".git", ".pytest_cache", MARKER_FILE, ".venv", "venv", ".tox"}
)


def left_out(name: str, *, own_evals: bool = False) -> bool:
    """Whether a file or folder of this name is no part of the agent's copy of the skill. `own_evals`: the name sits
    at the skill's top level, where `evals` is what the run reads besides the copy (the dataset, graders, replays,
    case inputs, native tasks), so the digest keeps it, under the same rule inside."""
    if name.casefold() == "evals":
        return not (own_evals and name == "evals")
    return name in SKILL_EXCLUDES


def content_digest(skill_dir: Path, exclude: tuple[Path, ...] = ()) -> str:
    """sha256 over what the agent's copy holds and the skill's own evals/ (names and bytes; links as their target
    text, never followed): neither what the copy leaves out (`left_out`), nor any results folder inside the skill, nor
    the run's own output in `exclude` (its results folder, pytest's `--junitxml`...), so a resumed run can tell
    whether the skill it would finish is the one it started with."""
    digest = hashlib.sha256()
    top = os.fspath(skill_dir)
    for current, dirs, files in os.walk(skill_dir):
        kept = []
        for name in sorted(dirs):
            path = Path(current, name)
            if left_out(name, own_evals=current == top) or path in exclude or is_results_folder(path):
                continue
            if path.is_symlink():
                files.append(name)  # a linked folder is not walked (nor is it in the copy): its link text counts
            else:
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            path = Path(current, name)
            if left_out(name) or path in exclude:
                continue
            digest.update(os.fsencode(path.relative_to(skill_dir)) + b"\0")
            _add_file(digest, path)
            digest.update(b"\0")
    return digest.hexdigest()


# Past this size a file counts by its size and modification time: the digest never reads a file whole, and a huge
# file in evals/ (which no copy cap covers) costs no read at all.
DIGEST_READ_LIMIT = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


def _add_file(digest: hashlib._Hash, path: Path) -> None:
    """One file's part of the digest, from `lstat` first: a link counts as its target text (never followed), a FIFO or
    device as its kind (never opened: a FIFO in evals/ used to block the run before its first trial), a regular file
    as its bytes read in chunks, or by size and mtime past DIGEST_READ_LIMIT."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        digest.update(os.fsencode(os.readlink(path)))
    elif not stat.S_ISREG(info.st_mode):
        digest.update(f"special:{stat.S_IFMT(info.st_mode)}".encode())
    elif info.st_size > DIGEST_READ_LIMIT:
        digest.update(f"large:{info.st_size}:{info.st_mtime_ns}".encode())
    else:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            left = DIGEST_READ_LIMIT
            while left > 0 and (chunk := handle.read(min(_CHUNK, left))):
                digest.update(chunk)
                left -= len(chunk)
