"""`skilleval check-suite SKILL_DIR`: run an agent that does nothing against every case and name each case that
cannot discriminate.

A positive case whose checks, grader or judge already pass on the untouched workspace scores a broken skill as
well as a working one ("this case cannot fail"); a negative control that a do-nothing agent fails asks for more
than leaving the skill alone. The trials are real: `pytest --skill-eval` in a subprocess with the idle agent
(`harbor/idle_agent.py`), the with-skill arm only, one attempt, under a throwaway results folder, so the sandbox,
staging and grading are exactly a run's and nothing is written into the skill folder.

Exit status: 0 no finding, 1 one line per finding, 2 a usage problem or a run that produced no result.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pytest_skilleval.authoring.findings import UsageError
from pytest_skilleval.authoring.validate import check_skill_dir
from pytest_skilleval.harbor.idle_agent import IDLE_AGENT_IMPORT_PATH
from pytest_skilleval.results.natural_order import natural_key
from pytest_skilleval.results.run_folder import RunFolderError, TrialFiles, load_run, run_folders
from verifier.reward import RichReward

JUDGE_METRICS = ("accuracy", "goal_accuracy", "behavior_check")
CHECKS_METRIC = "checks"  # the case's own checks, when a trial's metrics carry them


def _grader(rich: RichReward) -> dict[str, float]:
    """The grader's scores of one trial: its overall when the trial kept one, else each of its metrics."""
    if rich.custom_overall is not None:
        return {"grader overall": rich.custom_overall}
    return {f"grader {name}": value for name, value in sorted(rich.custom_metrics.items())}


def _signals(rich: RichReward) -> dict[str, float]:
    """Every correctness signal of one trial: the case's checks, the grader, each judge that judged."""
    found: dict[str, float] = {}
    checks = rich.metrics.get(CHECKS_METRIC)
    if checks is not None:
        found["checks"] = checks
    found.update(_grader(rich))
    for name in JUDGE_METRICS:
        value = rich.metrics.get(name)
        if value is not None and not rich.section(name).get("skipped"):
            found[f"judge {name}"] = value
    return found


def _passing(rich: RichReward, threshold: float) -> list[str]:
    """The signals that already reach the threshold: the grader counts when all its scores do."""
    signals = _signals(rich)
    grader = {k: v for k, v in signals.items() if k.startswith("grader ")}
    passing = [f"{k} {v:.2f}" for k, v in signals.items() if not k.startswith("grader ") and v >= threshold]
    if grader and all(v >= threshold for v in grader.values()):
        passing.insert(0, ", ".join(f"{k} {v:.2f}" for k, v in grader.items()))
    return passing


def _failing(rich: RichReward, overall: float | None, threshold: float) -> list[str]:
    """Why a negative control's do-nothing trial fails: its overall, and each signal below the threshold."""
    found: list[str] = []
    if overall is not None and overall < threshold:
        low = sorted(k for k, v in rich.metrics.items() if v is not None and v < threshold)
        found.append(f"overall {overall:.2f}" + (f" ({', '.join(low)} below)" if low else ""))
    found += [f"{k} {v:.2f}" for k, v in _signals(rich).items() if v < threshold]
    return found


def trial_finding(trial: TrialFiles, threshold: float) -> str | None:
    """The one line this do-nothing trial warrants, or None."""
    entry = trial.entry
    rich = trial.content().rich_reward()
    if entry.status in ("error", "unscored") or rich is None:
        why = entry.error or entry.reason or "no grading recorded"
        return f"case {entry.case!r}: the do-nothing trial could not be graded ({why})"
    if entry.negative_control:
        failing = _failing(rich, entry.overall, threshold)
        if failing:
            return (
                f"case {entry.case!r}: negative control fails for an agent that does nothing: {'; '.join(failing)} "
                f"(threshold {threshold:.2f}); it asks for more than leaving the skill unused"
            )
        return None
    passing = _passing(rich, threshold)
    if passing:
        return (
            f"case {entry.case!r}: cannot fail: on the untouched workspace a do-nothing agent already passes "
            f"{', '.join(passing)} (threshold {threshold:.2f})"
        )
    if entry.passed and entry.overall is not None:  # no signal judged the result, and the skill checks let it by
        return (
            f"case {entry.case!r}: cannot fail: a do-nothing agent passes it with overall {entry.overall:.2f} "
            f"(threshold {threshold:.2f}) and nothing measures its result; give it checks, a grader or a judge, and "
            "an expected_skill"
        )
    return None


def _pytest_argv(skill: Path, results: Path, env_mode: str | None, ek: Sequence[str], judge: str | None) -> list[str]:
    argv = [sys.executable, "-m", "pytest", str(skill), "--skill-eval", "-p", "no:cacheprovider", "-q"]
    argv += ["--agents", IDLE_AGENT_IMPORT_PATH, "--skip-baseline", "--n-attempts", "1", "--results-dir", str(results)]
    if env_mode:
        argv += ["--env-mode", env_mode]
    for item in ek:
        argv += ["--ek", item]
    if judge:
        argv += ["--judge-model", judge]
    return argv


def check_suite(
    skill_dir: Path, env_mode: str | None = None, ek: Sequence[str] = (), judge_model: str | None = None
) -> tuple[list[str], str | None]:
    """(findings, None), or ([], why) when the run produced no result to read."""
    skill = check_skill_dir(skill_dir).resolve()
    with tempfile.TemporaryDirectory(prefix="skilleval-check-suite-") as tmp:
        results = Path(tmp) / "results"
        argv = _pytest_argv(skill, results, env_mode, ek, judge_model)
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env={**os.environ})
        runs = run_folders(results / skill.name)
        if not runs:
            tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
            return [], f"the do-nothing run produced no result (pytest exit {done.returncode}): {tail}"
        try:
            run = load_run(runs[-1])
        except RunFolderError as error:
            return [], str(error)
        threshold = run.document.attempt_policy.pass_threshold
        trials = sorted(
            (t for t in run.trials() if t.entry.counted and t.entry.status != "skipped"),
            key=lambda t: natural_key(t.entry.case),
        )
        found = [line for t in trials if (line := trial_finding(t, threshold)) is not None]
    return found, None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skilleval check-suite",
        description="Run an agent that does nothing against every case: name each positive case it already passes "
        "(it cannot fail) and each negative control it fails. Exit 1 when any.",
    )
    parser.add_argument("skill_dir", metavar="SKILL_DIR", type=Path)
    parser.add_argument("--env-mode", help="the run's --env-mode (local, docker, ...)")
    parser.add_argument("--ek", action="append", default=[], metavar="KEY=VALUE", help="the run's --ek (repeatable)")
    parser.add_argument("--judge-model", help="judge the trials too (else the judge settings of the environment)")
    return parser


def run_check_suite_command(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    try:
        findings, failure = check_suite(args.skill_dir, args.env_mode, args.ek, args.judge_model)
    except UsageError as error:
        print(f"skilleval check-suite: {error}", file=sys.stderr)
        return 2
    if failure is not None:
        print(f"skilleval check-suite: {args.skill_dir}: {failure}", file=sys.stderr)
        return 2
    for line in findings:
        print(f"{args.skill_dir}: {line}")
    if not findings:
        print(f"{args.skill_dir}: every case can fail, and every negative control passes when nothing is done")
    return 1 if findings else 0
