#!/usr/bin/env python3
"""Run a skill's custom grader on a workspace whose verdict you know, and check the reward it writes.

    python3 check_grader.py SKILL_DIR --workspace DIR [--case ID] [--mode MODE] [--expect-pass | --expect-fail]
                            [--threshold 0.5] [--trajectory FILE]

The grader (SKILL_DIR/evals/grader.py, else grader.sh) runs as in a trial: on a scratch copy of the workspace, with
the HARBOR_* variables pointing at scratch files and /tests/entry.json built from the dataset entry. The reward is
then held to pytest-skilleval's rules: reserved names, non-object blocks, bad JSON, a non-zero exit or no reward at
all reject it; values that are not finite numbers in [0, 1] are dropped. Works without pytest-skilleval installed.
Prints a JSON report. Exit status: 0 contract kept (and the expected verdict), 1 otherwise, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

STANDARD_METRICS = {"security", "skill_execution", "skill_efficiency", "accuracy", "goal_accuracy", "behavior_check"}
STRUCTURE_KEYS = {"overall", "details", "metrics", "metric_set", "entry_id"}
NOT_METRICS = STRUCTURE_KEYS | {"custom_metrics"}
MAX_METRICS = 128
MAX_REWARD_BYTES = 4 * 1024 * 1024
TIMEOUT_SECONDS = 180


def find_grader(evals_dir: Path) -> Path | None:
    """grader.py wins over grader.sh, as in a run."""
    for name in ("grader.py", "grader.sh"):
        if (evals_dir / name).exists() or (evals_dir / name).is_symlink():
            return evals_dir / name
    return None


def dataset_entry(evals_dir: Path, case_id: str | None) -> dict[str, Any]:
    """The entry with this id from evals.json (an agentskills object or a list); {'id': case_id} without one."""
    try:
        data = json.loads((evals_dir / "evals.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"id": case_id} if case_id else {}
    rows = data.get("evals", data.get("cases")) if isinstance(data, dict) else data
    rows = [row for row in rows or [] if isinstance(row, dict)]
    if case_id is None:
        return dict(rows[0]) if len(rows) == 1 else {}
    entry = next((dict(row) for row in rows if str(row.get("id")) == case_id), {"id": case_id})
    if isinstance(data, dict) and "expected_skill" not in entry and data.get("skill_name"):
        entry["expected_skill"] = data["skill_name"]
    return entry


def configured_mode(evals_dir: Path) -> str:
    """grading.mode from evals/config.yml (a plain line scan; no YAML library needed), else default_plus_custom."""
    for name in ("config.yml", "config.yaml"):
        try:
            lines = (evals_dir / name).read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.split("#", 1)[0].strip().partition(":")
            if key == "mode" and value.strip():
                return value.strip().strip("'\"")
    return "default_plus_custom"


def reward_problems(reward: Any) -> tuple[list[str], dict[str, float], list[str]]:
    """(reasons the whole reward is rejected, kept metrics, dropped metrics) under the plugin's rules.

    Blocks are read in precedence order (custom_metrics, metrics, top-level numbers); the first of a name wins.
    Credential-looking names are not detected here; a run drops those.
    """
    if not isinstance(reward, dict):
        return [f"reward.json must be a JSON object, got {type(reward).__name__}"], {}, []
    problems, kept, dropped = [], {}, []
    used_standard = sorted(STANDARD_METRICS & {str(k) for k in reward})
    if used_standard:
        problems.append(f"standard metric name(s) {used_standard} are reserved")
    blocks = []
    for block in ("custom_metrics", "metrics"):
        if block not in reward:
            continue
        if not isinstance(reward[block], dict):
            problems.append(f"{block!r} must be an object")
            continue
        reserved = sorted((STANDARD_METRICS | STRUCTURE_KEYS) & {str(k).strip() for k in reward[block]})
        if reserved:
            problems.append(f"reserved name(s) {reserved} inside {block!r}")
        blocks.append((block, reward[block]))
    blocks.append(
        (
            "top level",
            {
                k: v
                for k, v in reward.items()
                if k not in NOT_METRICS | STANDARD_METRICS
                and not str(k).startswith("_")
                and isinstance(v, (int, float))
            },
        )
    )
    source_of: dict[str, str] = {}
    for source, block in blocks:
        for raw_name, value in block.items():
            name = str(raw_name).strip()
            if name in STANDARD_METRICS | STRUCTURE_KEYS:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or not 0 <= value <= 1
            ):
                dropped.append(f"{name}={value!r} (not a finite number in [0, 1])")
            elif not name or not name.isprintable() or len(name.encode()) > 256:
                problems.append(f"metric name {raw_name!r} is empty, unprintable or longer than 256 bytes")
            elif name in kept and source_of[name] == source:
                problems.append(f"{name!r} appears twice in {source} after trimming")
            elif name in kept:
                dropped.append(f"{name} in {source} (the {source_of[name]} value wins)")
            else:
                kept[name], source_of[name] = float(value), source
    if len(kept) > MAX_METRICS:
        problems.append(f"{len(kept)} metrics; at most {MAX_METRICS} are allowed")
    return problems, kept, dropped


def _overall(reward: Any, reward_txt: Path) -> float | None:
    value = reward.get("overall") if isinstance(reward, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1:
        return float(value)
    try:
        number = float(reward_txt.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None
    return number if math.isfinite(number) and 0 <= number <= 1 else None


def run_grader(grader: Path, workspace: Path, entry: dict[str, Any], trajectory: Path | None) -> dict[str, Any]:
    """Run the grader once in a scratch sandbox layout and report what it wrote."""
    with tempfile.TemporaryDirectory(prefix="check-grader-") as scratch:
        root = Path(scratch)
        work, tests, verifier, agent = root / "workspace", root / "tests", root / "logs/verifier", root / "logs/agent"
        shutil.copytree(workspace, work, symlinks=True)
        for folder in (tests, verifier, agent):
            folder.mkdir(parents=True, exist_ok=True)
        (tests / "entry.json").write_text(json.dumps(entry, indent=2), encoding="utf-8")
        shutil.copy2(grader, tests / grader.name)
        if trajectory is not None:
            shutil.copy2(trajectory, agent / "trajectory.json")
        env = {
            **os.environ,
            "HARBOR_LOGS_DIR": str(root / "logs"),
            "HARBOR_AGENT_LOGS_DIR": str(agent),
            "HARBOR_ATIF_PATH": str(agent / "trajectory.json"),
            "HARBOR_VERIFIER_DIR": str(verifier),
            "HARBOR_REWARD_JSON": str(verifier / "reward.json"),
            "HARBOR_REWARD_TXT": str(verifier / "reward.txt"),
            "HARBOR_TESTS_DIR": str(tests),
            "HARBOR_ENTRY_JSON": str(tests / "entry.json"),
            "HARBOR_GRADER": str(tests / "grader.py"),
            "HARBOR_GRADER_SH": str(tests / "grader.sh"),
            "HARBOR_WORKSPACE_DIR": str(work),
        }
        command = [sys.executable if grader.suffix == ".py" else "bash", str(tests / grader.name)]
        try:
            done = subprocess.run(
                command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
            )
        except subprocess.TimeoutExpired:
            return {"problems": [f"the grader ran longer than {TIMEOUT_SECONDS} s"]}
        report: dict[str, Any] = {"exit_code": done.returncode, "output_tail": (done.stdout + done.stderr)[-1500:]}
        problems = [f"the grader exited with {done.returncode}"] if done.returncode else []
        reward_json, reward_txt = verifier / "reward.json", verifier / "reward.txt"
        reward: Any = None
        if reward_json.is_file():
            if reward_json.stat().st_size > MAX_REWARD_BYTES:
                problems.append("reward.json is larger than 4 MiB")
            else:
                try:
                    reward = json.loads(reward_json.read_text(encoding="utf-8"))
                except ValueError as exc:
                    problems.append(f"reward.json is not valid JSON: {exc}")
            if reward is not None:
                rejected, kept, dropped = reward_problems(reward)
                problems += rejected
                report.update(
                    custom_metrics=kept,
                    dropped=dropped,
                    details=reward.get("details") if isinstance(reward, dict) else None,
                )
        elif not reward_txt.is_file():
            problems.append("the grader wrote neither $HARBOR_REWARD_JSON nor $HARBOR_REWARD_TXT")
        report["overall"] = _overall(reward, reward_txt)
        report["problems"] = problems
        return report


def check(
    skill_dir: Path,
    workspace: Path,
    case_id: str | None = None,
    mode: str | None = None,
    expect: str | None = None,
    threshold: float = 0.5,
    trajectory: Path | None = None,
) -> dict[str, Any]:
    """Run the grader of SKILL_DIR on WORKSPACE and judge the result; `ok` is the overall answer."""
    evals_dir = skill_dir / "evals"
    grader = find_grader(evals_dir)
    if grader is None:
        return {"ok": False, "problems": [f"{evals_dir}: no grader.py or grader.sh"]}
    if grader.is_symlink() or not grader.is_file():
        return {"ok": False, "problems": [f"{grader}: must be a regular file, not a symlink"]}
    if not workspace.is_dir():
        return {"ok": False, "problems": [f"{workspace}: not a folder"]}
    entry = dataset_entry(evals_dir, case_id)
    entry.update(
        evaluated_skill=skill_dir.resolve().name,
        has_skill=True,
        arm="with_skill",
        agent="check",
        attempt=1,
        grading_mode=mode or configured_mode(evals_dir),
        custom_grader=True,
    )
    report = {"grader": str(grader), "case": entry.get("id"), **run_grader(grader, workspace, entry, trajectory)}
    overall = report.get("overall")
    if overall is None and not report["problems"]:
        report["problems"].append(
            "no usable overall (reward.json 'overall' or reward.txt); custom_only would leave the trial unscored"
        )
    if expect and overall is not None:
        passed = overall >= threshold
        if passed != (expect == "pass"):
            report["problems"].append(
                f"expected the grader to {expect} this workspace, but overall is {overall} (threshold {threshold})"
            )
    report["ok"] = not report["problems"]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check_grader.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("skill_dir", type=Path)
    parser.add_argument("--workspace", type=Path, required=True, help="a folder standing in for /workspace")
    parser.add_argument("--case", help="the dataset entry to hand the grader as entry.json")
    parser.add_argument("--mode", choices=("default_plus_custom", "custom_only"), help="grading_mode in entry.json")
    verdict = parser.add_mutually_exclusive_group()
    verdict.add_argument("--expect-pass", dest="expect", action="store_const", const="pass")
    verdict.add_argument("--expect-fail", dest="expect", action="store_const", const="fail")
    parser.add_argument("--threshold", type=float, default=0.5, help="overall at or above this passes (0.5)")
    parser.add_argument("--trajectory", type=Path, help="an ATIF trajectory to hand the grader")
    args = parser.parse_args(argv)
    report = check(args.skill_dir, args.workspace, args.case, args.mode, args.expect, args.threshold, args.trajectory)
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
