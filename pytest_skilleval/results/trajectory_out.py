"""`skilleval trajectory TRIAL_FILE`: the agent's trajectory out of a trial's file in the results tree.

A run keeps each trial as one JSON file (`<run>/<agent>/<arm>/trials/<case>.<attempt>.json`); its `trajectory` is
the ATIF document the agent wrote, redacted. Printed as it is, or with `--replay`, ready to commit as the case's
replay: the skills folder the agent saw becomes the `{skills_dir}` placeholder, so the replay works on every
Harbor version, and what Harbor's strict ATIF model would refuse of what the agent wrote is repaired
(`verifier.atif_repair`; each repair named on stderr), so the replay agent can load it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pytest_skilleval.results.trial_file import read_trial
from verifier.atif_repair import repaired
from verifier.skill_folders import HARBOR_SKILLS_DIRS, SKILLS_DIR_PLACEHOLDER

__all__ = ["as_replay", "run_trajectory_command"]


def as_replay(trajectory: Any) -> Any:
    """The same document with every skills-folder path replaced by the `{skills_dir}` placeholder."""
    if isinstance(trajectory, str):
        for folder in HARBOR_SKILLS_DIRS:  # Harbor 0.25's and 0.24's skills folders
            trajectory = trajectory.replace(folder, SKILLS_DIR_PLACEHOLDER)
        return trajectory
    if isinstance(trajectory, list):
        return [as_replay(item) for item in trajectory]
    if isinstance(trajectory, dict):
        return {key: as_replay(value) for key, value in trajectory.items()}
    return trajectory


def run_trajectory_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="skilleval trajectory", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "trial_file", metavar="TRIAL_FILE", help="a trial's file: <run>/<agent>/<arm>/trials/<case>.<attempt>.json"
    )
    parser.add_argument(
        "--replay", action="store_true", help="write skills-folder paths as {skills_dir}, as a replay file needs"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    args = parser.parse_args(argv)
    path = Path(args.trial_file)
    document = read_trial(path)
    if document is None:
        print(f"skilleval trajectory: {path} is not a readable trial file", file=sys.stderr)
        return 2
    trajectory = document.get("trajectory")
    if not isinstance(trajectory, dict):
        where = document.get("trial_dir") or "the trial's folder"
        print(
            f"skilleval trajectory: {path} holds no trajectory (none was written, or it was over the size limit; "
            f"look for agent/trajectory.json in {where})",
            file=sys.stderr,
        )
        return 1
    if args.replay:
        try:
            trajectory, repairs = repaired(trajectory)
        except ValueError as error:
            print(f"skilleval trajectory: {path}: {error}", file=sys.stderr)
            return 1
        if repairs:
            shown = "; ".join(repairs[:5]) + ("; ..." if len(repairs) > 5 else "")
            print(
                f"skilleval trajectory: {len(repairs)} repair(s) so Harbor's ATIF model accepts it: {shown}",
                file=sys.stderr,
            )
        trajectory = as_replay(trajectory)
    text = json.dumps(trajectory, indent=2, ensure_ascii=False) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
