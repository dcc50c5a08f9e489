"""`--baseline-skill PATH|git:REF`: the previous version of a skill, the `baseline_skill` arm's skill.

A `git:REF` is the skill's own folder at that revision, read out of git object by object (`ls-tree`, `cat-file`)
into a temporary folder: the working tree and the index are never touched, no checkout happens, and no filter,
hook or fsmonitor the repository configures runs (blobs are read raw). Symbolic links and submodules in the tree
are left out, paths are checked to stay inside the export, and the export is capped in files and bytes.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

GIT_PREFIX = "git:"
MAX_FILES = 5_000
MAX_BYTES = 64 * 1024 * 1024
# Repository settings that could run a program: neutralised for every git command we run on a skill's repository.
SAFE_GIT = ("-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null", "-c", "protocol.allow=never")


class BaselineError(ValueError):
    """The baseline version cannot be used; the message names it and the fix."""


@dataclass(frozen=True)
class BaselineVersion:
    """Which version the baseline arm runs: as given, the commit (git only) and the folder holding its files."""

    source: str
    commit: str | None = None
    folder: Path | None = None

    @property
    def short(self) -> str:
        """The version in a node id: the 7-character commit, or the folder's name."""
        return self.commit[:7] if self.commit else Path(self.source).name

    @property
    def label(self) -> str:
        """The version as a person reads it: `git:v1 (1a2b3c4)` or the path."""
        return f"{self.source} ({self.commit[:7]})" if self.commit else self.source

    def as_json(self) -> dict[str, str | None]:
        return {"source": self.source, "commit": self.commit, "short": self.short, "label": self.label}


def git_output(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        done = subprocess.run(
            ["git", *SAFE_GIT, "-C", str(repo), *args], input=data, capture_output=True, env=env, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BaselineError(f"git {args[0]} failed: {error}") from None
    if done.returncode != 0:
        raise BaselineError(done.stderr.decode(errors="replace").strip().splitlines()[-1:][0] if done.stderr else "")
    return done.stdout


def resolve_baseline(given: str, skill_dir: Path) -> BaselineVersion:
    """The version `--baseline-skill` names for this skill (a git ref is resolved to its commit, not exported yet)."""
    if not given.startswith(GIT_PREFIX):
        folder = Path(given).expanduser().resolve()
        if not (folder / "SKILL.md").is_file():
            raise BaselineError(f"--baseline-skill {given}: no SKILL.md there; give the previous version's folder")
        return BaselineVersion(given, None, folder)
    ref = given[len(GIT_PREFIX) :].strip()
    if not ref or ref.startswith("-"):
        raise BaselineError(f"--baseline-skill {given}: expected git:REF, e.g. git:main or git:HEAD~1")
    try:
        commit = git_output(skill_dir, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except BaselineError as error:
        raise BaselineError(
            f"--baseline-skill {given}: {skill_dir} has no git revision {ref!r} ({error or 'unknown revision'})"
        ) from None
    return BaselineVersion(given, commit.decode().strip())


def export_baseline(version: BaselineVersion, skill_dir: Path) -> Path:
    """A folder holding the baseline's skill files (named as the skill), exported once per process for git."""
    if version.commit is None:
        assert version.folder is not None
        return version.folder
    prefix = git_output(skill_dir, "rev-parse", "--show-prefix").decode().strip()
    listing = git_output(skill_dir, "ls-tree", "-r", "-z", "--full-tree", version.commit, "--", prefix or ".")
    root = Path(tempfile.mkdtemp(prefix="skilleval-baseline-"))
    atexit.register(shutil.rmtree, root, True)
    dest = root / skill_dir.name
    dest.mkdir()
    blobs: list[tuple[str, bool, PurePosixPath]] = []
    for line in listing.split(b"\0"):
        if not line:
            continue
        meta, _, name = line.partition(b"\t")
        mode, kind, sha = meta.decode().split()
        if kind != "blob" or mode not in ("100644", "100755"):
            continue  # links and submodules are not exported
        relative = PurePosixPath(name.decode(errors="replace")[len(prefix) :])
        if not relative.parts or any(part in ("", ".", "..") for part in relative.parts):
            raise BaselineError(f"--baseline-skill {version.source}: unsafe path {name!r} in the git tree")
        blobs.append((sha, mode == "100755", relative))
    if len(blobs) > MAX_FILES:
        raise BaselineError(f"--baseline-skill {version.source}: more than {MAX_FILES} files in the skill folder")
    sizes = git_output(
        skill_dir, "cat-file", "--batch-check=%(objectsize)", data="".join(f"{s}\n" for s, _, _ in blobs).encode()
    )
    if sum(int(size) for size in sizes.split()) > MAX_BYTES:
        raise BaselineError(f"--baseline-skill {version.source}: the skill folder is over {MAX_BYTES >> 20} MiB")
    for sha, executable, relative in blobs:
        target = dest.joinpath(*relative.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git_output(skill_dir, "cat-file", "blob", sha))
        if executable:
            target.chmod(0o755)
    if not (dest / "SKILL.md").is_file():
        raise BaselineError(f"--baseline-skill {version.source}: the skill folder has no SKILL.md at that revision")
    return dest
