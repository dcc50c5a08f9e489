"""`skilleval install-skill NAME DEST`: copy an agent skill shipped in this package to where an agent finds skills.

The shipped skills live in `pytest_skilleval/authoring/skills/<name>/` (in a source checkout that folder is a symlink
to the repository's `skills/<name>/`). Only what an agent should see is copied: a skill's `evals/` (its own test
cases, graders and replays) and caches stay behind, exactly as in a with-skill trial.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

# Parts of a shipped skill folder that are not the skill: its own evals and generated files.
NOT_SHIPPED = {"evals", "results", "__pycache__", ".pytest_cache"}


class InstallError(Exception):
    """The install refused or failed; the message says why and how to proceed."""


def shipped_skills_root() -> Path:
    """The folder that holds the shipped skills, one sub-folder each."""
    return Path(str(resources.files("pytest_skilleval").joinpath("authoring", "skills")))


def available_skills(root: Path | None = None) -> list[str]:
    """Names of the shipped skills (folders holding SKILL.md), sorted."""
    root = shipped_skills_root() if root is None else root
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "SKILL.md").is_file())


def _ignore(_directory: str, names: list[str]) -> list[str]:
    return [name for name in names if name in NOT_SHIPPED or name.endswith(".pyc")]


def install_skill(name: str, dest: Path, force: bool = False, root: Path | None = None) -> Path:
    """Copy skill NAME to DEST/NAME and return that path; refuses to replace an existing folder unless forced."""
    root = shipped_skills_root() if root is None else root
    names = available_skills(root)
    if name not in names:
        raise InstallError(f"unknown skill {name!r}; available: {', '.join(names) or '(none)'}")
    if dest.exists() and not dest.is_dir():
        raise InstallError(f"{dest}: exists and is not a directory")
    target = dest / name
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise InstallError(f"{target}: exists and is not a directory; remove it first")
    if target.exists():
        if not force:
            raise InstallError(f"{target}: already exists; pass --force to replace it")
        shutil.rmtree(target)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(root / name, target, ignore=_ignore)
    return target


def run_install_skill(argv: Sequence[str] | None = None) -> int:
    """`skilleval install-skill ARGS`; exit 0 installed, 1 refused or failed, 2 usage."""
    parser = argparse.ArgumentParser(
        prog="skilleval install-skill",
        description="Copy an agent skill shipped with pytest-skilleval into a skills folder "
        "(e.g. .claude/skills, .agents/skills or .opencode/skills).",
    )
    parser.add_argument("name", nargs="?", help="the skill to install; omit with --list")
    parser.add_argument("dest", nargs="?", type=Path, help="the skills folder; the skill lands in DEST/NAME")
    parser.add_argument("--force", action="store_true", help="replace DEST/NAME if it exists")
    parser.add_argument("--list", action="store_true", help="list the shipped skills and exit")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    if args.list:
        print("\n".join(available_skills()))
        return 0
    if args.name is None or args.dest is None:
        parser.print_usage(sys.stderr)
        print(
            f"skilleval install-skill: NAME and DEST are required; available: {', '.join(available_skills())}",
            file=sys.stderr,
        )
        return 2
    try:
        target = install_skill(args.name, args.dest, args.force)
    except (InstallError, OSError) as exc:
        print(f"skilleval install-skill: {exc}", file=sys.stderr)
        return 1
    print(f"installed {args.name} to {target}")
    return 0
