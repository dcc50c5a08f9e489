"""Benchmark: the plugin against `harbor run` on the same no-op work, in the same `local` environment.

Both sides do the same work per trial: the same no-op agent (it returns at once), the same skill given to the agent
(the plugin's with-skill arm; `harbor run --skill`), and a shell script that writes a reward of 1 (Harbor: the task's
own tests/test.sh; the plugin: the skill's custom grader `evals/grader.sh`, in custom_only mode).
Printed ratios (plugin / Harbor):
- serial per-trial cost, from the slope between a small and a large run (target <= 0.8);
- start-up, process start to the first trial, as the intercept of that line (target <= 1.2);
- memory per trial, from the peak-RSS slope (target <= 1.0);
- two trials at once at 96 trials: `--n-concurrent 2` against `harbor run -n 2` (target <= 1.0).
Run: .venv/bin/python benchmarks/bench_vs_harbor.py   (BENCH_REPEATS=N: best of N runs each, default 3)
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from _harness import REPO, SLEEP_AGENT, Measured, fail_unless_ok, make_project, measure, run_pytest

SMALL, LARGE, PARALLEL = 8, 40, 96
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
LOCAL_ENV = "pytest_skilleval.harbor.local_env:LocalEnvironment"
# Through the HARBOR_* variables, as the plugin's grader does: under --ek sandbox=none a literal /logs inside a script is
# the host's own /logs (the command line is rewritten into the sandbox, a script's contents are not).
TEST_SH = '#!/bin/bash\nmkdir -p "$HARBOR_VERIFIER_DIR"\necho 1 > "$HARBOR_VERIFIER_DIR/reward.txt"\n'


def make_tasks(n: int) -> Path:
    root = Path(tempfile.mkdtemp(prefix="skilleval-bench-harbor-"))
    for i in range(n):
        task = root / "tasks" / f"t{i:04d}"
        (task / "tests").mkdir(parents=True)
        (task / "environment").mkdir()
        (task / "task.toml").write_text(f'schema_version = "1.4"\n[task]\nname = "bench/t{i:04d}"\n'
                                        "[agent]\ntimeout_sec = 60.0\n[verifier]\ntimeout_sec = 60.0\n")
        (task / "instruction.md").write_text(f"do {i}\n")
        (task / "tests" / "test.sh").write_text(TEST_SH)
    (root / "bench_agent.py").write_text(SLEEP_AGENT)
    skill = root / "skill" / "bench"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: bench\ndescription: benchmark skill\n---\n# bench\n")
    return root


def run_harbor(root: Path, n_concurrent: int) -> Measured:
    argv = [str(REPO / ".venv" / "bin" / "harbor"), "run", "-p", str(root / "tasks"), "-a", "bench_agent:SleepAgent", "-e", LOCAL_ENV,
            "--ek", "sandbox=none", "--skill", str(root / "skill" / "bench"), "-n", str(n_concurrent), "-o", str(root / "jobs"), "-q", "-y"]
    return measure(argv, root, {"PYTHONPATH": str(root)})


PLUGIN_ARGS = ("--agents", "bench_agent:SleepAgent", "--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only",
               "--skip-baseline")


def plugin(n: int, n_concurrent: int) -> Measured:
    project = make_project(n)
    try:
        measured = run_pytest(project, *PLUGIN_ARGS, "--n-concurrent", str(n_concurrent))
        fail_unless_ok(f"plugin, {n} trials", measured)
        return measured
    finally:
        shutil.rmtree(project, ignore_errors=True)


def harbor(n: int, n_concurrent: int) -> Measured:
    root = make_tasks(n)
    try:
        measured = run_harbor(root, n_concurrent)
        fail_unless_ok(f"harbor run, {n} trials", measured)
        fail_unless_scored(f"harbor run, {n} trials", root / "jobs", n)
        return measured
    finally:
        shutil.rmtree(root, ignore_errors=True)


def fail_unless_scored(label: str, jobs: Path, n: int) -> None:
    """`harbor run` exits 0 when trials fail: a benchmark of failing trials measures nothing, so check every one scored 1."""
    [result] = list(jobs.glob("*/result.json"))
    stats = json.loads(result.read_text())["stats"]
    means = [metric.get("mean") for ev in stats["evals"].values() for metric in ev.get("metrics", [])]
    if stats["n_errored_trials"] or stats["n_completed_trials"] != n or means != [1.0]:
        print(f"{label}: not every trial scored 1 ({json.dumps(stats)[:1500]})", file=sys.stderr)
        raise SystemExit(1)


def line(small: Measured, large: Measured) -> tuple[float, float, float]:
    """(per-trial seconds, start-up seconds, per-trial MB) from two runs of different size."""
    per_trial = (large.seconds - small.seconds) / (LARGE - SMALL)
    startup = small.seconds - SMALL * per_trial
    per_trial_mb = (large.peak_rss_mb - small.peak_rss_mb) / (LARGE - SMALL)
    return per_trial, startup, per_trial_mb


def best(run: Callable[[int, int], Measured], n: int, n_concurrent: int) -> Measured:
    """The fastest of REPEATS runs (time and memory from the same run): other load on the machine only adds."""
    return min((run(n, n_concurrent) for _ in range(REPEATS)), key=lambda measured: measured.seconds)


def main() -> None:
    ours = line(best(plugin, SMALL, 1), best(plugin, LARGE, 1))
    theirs = line(best(harbor, SMALL, 1), best(harbor, LARGE, 1))
    ours_par = best(plugin, PARALLEL, 2)
    theirs_par = best(harbor, PARALLEL, 2)
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, cpus={os.cpu_count()}, "
          f"best of {REPEATS} runs each")
    print(f"{'':28}{'plugin':>10}{'harbor':>10}{'ratio':>8}  target")
    rows = [
        ("serial s/trial", ours[0], theirs[0], "<= 0.8"),
        ("start-up s", ours[1], theirs[1], "<= 1.2"),
        ("MB/trial (peak RSS slope)", ours[2], theirs[2], "<= 1.0"),
        (f"{PARALLEL} trials, 2 at once, s", ours_par.seconds, theirs_par.seconds, "<= 1.0"),
    ]
    for label, a, b, target in rows:
        ratio = a / b if b else float("nan")
        print(f"{label:28}{a:10.3f}{b:10.3f}{ratio:8.2f}  {target}")


if __name__ == "__main__":
    main()
