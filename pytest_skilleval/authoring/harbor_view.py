"""`skilleval harbor-view JOBS_DIR`: Harbor's own trial viewer (`harbor view`) on the trial folders a run kept.

`--harbor-keep-jobs` keeps each trial's Harbor folder at `<...>/skilleval<N>/<skill>/<case>/<agent>-<arm>-<attempt>/
trials/<trial>` (the summary names the folder). Harbor's viewer reads a jobs folder: one folder per job, each
holding its trials, and it refuses a job or trial reached through a link. So this command gathers the kept trials
into `JOBS_DIR/.skilleval-harbor-view/<skill>/<trial>/`, one job per skill, with hard links to the trial's regular
files (no copy; a copy, capped, where hard links cannot be made), and runs `harbor view --jobs` on it in the
foreground until Ctrl+C. Links inside the kept folders are never followed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from verifier import safe_io

VIEW_DIRNAME = ".skilleval-harbor-view"
# <skill>/<case>/<agent>-<arm>-<attempt>/trials/<trial>, under a skilleval<N> folder, under xdist a worker's folder.
MAX_SEARCH_DEPTH = 8
MAX_FILE_BYTES = 256 * 1024 * 1024


def kept_trials(root: Path) -> list[Path]:
    """Harbor trial folders (a `config.json` inside) in a `trials` folder below `root`, found without following a
    link, in name order."""
    found: list[Path] = []
    pending = [(root, 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False) or entry.name == VIEW_DIRNAME:
                continue
            path = Path(entry.path)
            if folder.name == "trials" and (path / "config.json").is_file() and not (path / "config.json").is_symlink():
                found.append(path)
            elif depth < MAX_SEARCH_DEPTH:
                pending.append((path, depth + 1))
    return sorted(found)


def _job_name(trial: Path) -> str:
    """The skill a kept trial belongs to: `<skill>/<case>/<agent>-<arm>-<attempt>/trials/<trial>`."""
    parents = trial.parents
    return parents[3].name if len(parents) > 3 else "trials"


def _link_files(source: Path, target: Path) -> None:
    """The regular files and folders of `source` under `target`: hard links, else capped copies; links and special
    files are left out."""
    for folder, dirs, files in os.walk(source):
        relative = Path(folder).relative_to(source)
        (target / relative).mkdir(parents=True, exist_ok=True)
        dirs[:] = [name for name in dirs if not os.path.islink(os.path.join(folder, name))]
        for name in files:
            origin = Path(folder, name)
            if not stat.S_ISREG(os.lstat(origin).st_mode):
                continue
            try:
                os.link(origin, target / relative / name, follow_symlinks=False)
            except OSError:
                try:
                    safe_io.copy_file(source, relative / name, target, relative / name, max_bytes=MAX_FILE_BYTES)
                except (OSError, safe_io.FileTooLargeError):
                    continue


def build_view(root: Path) -> tuple[Path, dict[str, int]]:
    """`root/.skilleval-harbor-view/`, made afresh: one job per skill holding its kept trials. Returns the folder
    and the number of trials per job."""
    view = root / VIEW_DIRNAME
    if view.is_symlink():
        view.unlink()
    shutil.rmtree(view, ignore_errors=True)
    view.mkdir()
    counts: dict[str, int] = {}
    for trial in kept_trials(root):
        job = _job_name(trial)
        _link_files(trial, view / job / trial.name)
        counts[job] = counts.get(job, 0) + 1
    return view, counts


def harbor_view_argv(view: Path, port: str, host: str) -> list[str]:
    """Harbor's own CLI, from this interpreter's environment, viewing `view` as a jobs folder."""
    return [sys.executable, "-m", "harbor.cli.main", "view", str(view), "--jobs", "--port", port, "--host", host]


def run_harbor_view_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="skilleval harbor-view",
        description="Browse the Harbor trial folders a run kept (--harbor-keep-jobs) in Harbor's own viewer.",
    )
    parser.add_argument("jobs_dir", type=Path, help="the kept folder the session summary names (or any folder above)")
    parser.add_argument("--port", default="8080-8089", help="port or range for Harbor's viewer (default 8080-8089)")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    args = parser.parse_args(argv)
    root: Path = args.jobs_dir.expanduser().resolve()
    if not root.is_dir():
        print(f"skilleval harbor-view: {args.jobs_dir} is not a folder", file=sys.stderr)
        return 2
    view, counts = build_view(root)
    if not counts:
        print(
            f"skilleval harbor-view: no kept Harbor trial folder under {root}; run pytest with --harbor-keep-jobs "
            "and give the folder its summary names",
            file=sys.stderr,
        )
        return 1
    jobs = ", ".join(f"{job} ({count} trials)" for job, count in sorted(counts.items()))
    print(f"skilleval harbor-view: {jobs}, gathered in {view}; starting Harbor's viewer (Ctrl+C stops it)", flush=True)
    try:
        return subprocess.call(harbor_view_argv(view, args.port, args.host))
    except KeyboardInterrupt:
        return 0
