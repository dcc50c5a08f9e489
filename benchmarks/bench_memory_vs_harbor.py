"""Benchmark: memory the process keeps per finished trial, the plugin against `harbor run`, on the same no-op work.

Both sides run serially (one trial at a time) in one Python process, the work of bench_vs_harbor.py: the same no-op
agent, the same skill, a shell script writing a reward of 1, in our `local` environment under `--ek sandbox=none`.
- plugin: `pytest.main` in-process with a probe plugin (`--n-concurrent 1`);
- Harbor: `harbor run -p tasks -a bench_agent:SleepAgent -e <local env> --ek sandbox=none --skill ... -n 1`, the
  Typer app called in-process, with `Job.run` wrapped to register an `on_trial_ended` hook.
Two points per run: after the WARMUP-th trial has ended (imports, caches and first-use costs are paid by then) and
when the last of TRIALS trials has ended (plugin: the run-test loop is over, before the session-finish writing;
Harbor: `Job.run()` has returned, before the CLI prints its tables). The figure is the growth between them divided
by the trials in between, `gc.collect()` first at each point. Two measures, each in its own fresh interpreter:
- Python heap: `tracemalloc.get_traced_memory()[0]`, tracing started before the first trial;
- VmRSS of the process itself, from /proc/self/status, in a run without tracemalloc (its bookkeeping inflates RSS).
Each (side, measure) runs REPEATS times, the four kinds taking turns; the medians and plugin/Harbor ratios are
printed (target <= 1.0), then, for both sides, where the median heap run's growth was allocated.

    .venv/bin/python benchmarks/bench_memory_vs_harbor.py   # BENCH_REPEATS (3), BENCH_WARMUP (50), BENCH_TRIALS (200)
    .venv/bin/python benchmarks/bench_memory_vs_harbor.py --child plugin heap 50 200 out.json   # one run
"""

from __future__ import annotations

import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _harness import PYTHON, make_project

REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))
WARMUP = int(os.environ.get("BENCH_WARMUP", "50"))
TRIALS = int(os.environ.get("BENCH_TRIALS", "200"))
SIDES = ("plugin", "harbor")
MEASURES = ("heap", "rss")
DEPTH = 6  # traceback frames kept by tracemalloc, for the breakdown (tracing costs about as much at 1)
TOP = 14
# Frames that say who asked for memory on each side: the innermost one of these in an allocation's traceback.
OURS = {"plugin": ("pytest_skilleval/", "/_pytest/", "/pluggy/"), "harbor": ("/harbor/", "pytest_skilleval/")}


def vm_rss() -> int:
    """This process's resident set, bytes."""
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))


class Points:
    """The two measuring points of one run: the reading after warm-up and at the end, plus heap snapshots."""

    def __init__(self, measure: str, warmup: int) -> None:
        self.measure = measure
        self.warmup = warmup
        self.ended = 0
        self.readings: dict[str, int] = {}
        self.snapshots: dict[str, tracemalloc.Snapshot] = {}

    def start(self) -> None:
        if self.measure == "heap":
            tracemalloc.start(DEPTH)

    def trial_ended(self) -> None:
        self.ended += 1
        if self.ended == self.warmup:
            self.mark("warm")

    def mark(self, name: str) -> None:
        gc.collect()
        if self.measure == "rss":
            self.readings[name] = vm_rss()
            return
        self.readings[name] = tracemalloc.get_traced_memory()[0]  # a snapshot is not traced itself
        self.snapshots[name] = tracemalloc.take_snapshot()
        if name == "end":
            tracemalloc.stop()

    def result(self, side: str, trials: int) -> dict[str, Any]:
        if set(self.readings) != {"warm", "end"} or self.ended != trials:
            raise SystemExit(f"{side}: {self.ended} of {trials} trials ended, points taken: {sorted(self.readings)}")
        k = trials - self.warmup
        out: dict[str, Any] = {"per_trial": (self.readings["end"] - self.readings["warm"]) / k, **self.readings}
        if self.snapshots:
            out["breakdown"] = breakdown(self.snapshots["warm"], self.snapshots["end"], OURS[side], k)
        return out


def _where(trace: tracemalloc.Traceback, ours: tuple[str, ...]) -> str:
    """The innermost frame of ours (else the innermost frame): who asked for the memory."""
    frames = list(trace)  # oldest frame first
    mine = [f for f in frames if any(marker in f.filename for marker in ours)]
    frame = mine[-1] if mine else frames[-1]
    return f"{frame.filename.split('site-packages/')[-1].split('/work/')[-1]}:{frame.lineno}"


def breakdown(
    warm: tracemalloc.Snapshot, end: tracemalloc.Snapshot, ours: tuple[str, ...], k: int
) -> list[tuple[str, float, float]]:
    """(where, bytes per trial, blocks per trial), largest first."""
    by_where: dict[str, list[int]] = {}
    for stat in end.compare_to(warm, "traceback"):
        entry = by_where.setdefault(_where(stat.traceback, ours), [0, 0])
        entry[0] += stat.size_diff
        entry[1] += stat.count_diff
    rows = sorted(by_where.items(), key=lambda kv: -kv[1][0])
    return [(where, size / k, count / k) for where, (size, count) in rows]


def _plugin_probe(points: Points) -> object:
    import pytest

    class Probe:
        @pytest.hookimpl(wrapper=True)
        def pytest_runtestloop(self, session: pytest.Session) -> Any:
            points.start()
            try:
                return (yield)
            finally:
                points.mark("end")  # the loop is over; session finish (the results tree) comes after

        def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
            points.trial_ended()

    return Probe()


def run_plugin(points: Points, trials: int) -> None:
    import pytest
    from bench_vs_harbor import PLUGIN_ARGS

    project = make_project(trials)
    sys.path.insert(0, str(project))
    os.chdir(project)
    try:
        code = pytest.main(
            [
                "-p",
                "no:cacheprovider",
                "-q",
                "--no-header",
                "--basetemp",
                str(project / "tmp"),
                "--skill-eval",
                "skills/bench",
                "--results-dir",
                str(project / "results"),
                *PLUGIN_ARGS,
                "--n-concurrent",
                "1",
            ],
            plugins=[_plugin_probe(points)],
        )
    finally:
        shutil.rmtree(project, ignore_errors=True)
    if code != 0:
        raise SystemExit(f"plugin: the run failed (exit {code})")


def run_harbor(points: Points, trials: int) -> None:
    from bench_vs_harbor import LOCAL_ENV, fail_unless_scored, make_tasks
    from harbor.cli.main import app
    from harbor.job import Job

    plain_run = Job.run

    async def measured_run(job: Job) -> Any:
        async def ended(_event: object) -> None:
            points.trial_ended()

        job.on_trial_ended(ended)
        points.start()
        result = await plain_run(job)
        points.mark("end")  # before the CLI prints its tables
        return result

    Job.run = measured_run  # type: ignore[method-assign]
    root = make_tasks(trials)
    sys.path.insert(0, str(root))
    os.chdir(root)
    try:
        app(
            [
                "run",
                "-p",
                str(root / "tasks"),
                "-a",
                "bench_agent:SleepAgent",
                "-e",
                LOCAL_ENV,
                "--ek",
                "sandbox=none",
                "--skill",
                str(root / "skill" / "bench"),
                "-n",
                "1",
                "-o",
                str(root / "jobs"),
                "-q",
                "-y",
            ],
            standalone_mode=False,
        )
        fail_unless_scored("harbor run", root / "jobs", trials)
    finally:
        shutil.rmtree(root, ignore_errors=True)


RUNNERS: dict[str, Callable[[Points, int], None]] = {"plugin": run_plugin, "harbor": run_harbor}


def child(side: str, measure: str, warmup: int, trials: int, out: Path) -> None:
    os.environ.update(HARBOR_TELEMETRY="0", LITELLM_LOCAL_MODEL_COST_MAP="True", BENCH_AGENT_SLEEP="0")
    points = Points(measure, warmup)
    RUNNERS[side](points, trials)
    out.write_text(json.dumps(points.result(side, trials)))


def run_child(side: str, measure: str, warmup: int, trials: int) -> dict[str, Any]:
    """One (side, measure) run in a fresh interpreter; its figures, or the run's output tail on failure."""
    with tempfile.TemporaryDirectory(prefix="skilleval-bench-mem-") as tmp:
        out = Path(tmp) / "result.json"
        env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        proc = subprocess.run(
            [str(PYTHON), __file__, "--child", side, measure, str(warmup), str(trials), str(out)],
            check=False,
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
            raise SystemExit(f"{side} {measure} run failed (exit {proc.returncode}):\n{tail}")
        return json.loads(out.read_text())


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return sorted(runs, key=lambda run: run["per_trial"])[len(runs) // 2]


def print_breakdown(side: str, run: dict[str, Any], which: str = "median run") -> None:
    print(f"{side}: Python heap growth {run['per_trial'] / 1024:.1f} KB per trial ({which}), by where allocated")
    print(f"{'KB/trial':>9}{'blocks':>8}  allocated at")
    for where, size, count in run["breakdown"][:TOP]:
        print(f"{size / 1024:>9.2f}{count:>8.1f}  {where}")


def main() -> None:
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(s, m): [] for s in SIDES for m in MEASURES}
    for round_ in range(REPEATS):
        order = SIDES if round_ % 2 == 0 else SIDES[::-1]  # neither side always runs first in a round
        for measure in MEASURES:
            for side in order:
                runs[side, measure].append(run_child(side, measure, WARMUP, TRIALS))
    print(
        f"machine: {platform.machine()}, Python {platform.python_version()}, cpus={os.cpu_count()}; serial, "
        f"growth from trial {WARMUP} to trial {TRIALS}, median of {REPEATS} runs each"
    )
    print(f"{'KB per trial':36}{'plugin':>10}{'harbor':>10}{'ratio':>8}  target  (every run: plugin | harbor)")
    for measure, label in (("heap", "Python heap (tracemalloc)"), ("rss", "VmRSS of the process")):
        ours, theirs = (statistics.median(r["per_trial"] for r in runs[side, measure]) / 1024 for side in SIDES)
        every = " | ".join(" ".join(f"{r['per_trial'] / 1024:.1f}" for r in runs[side, measure]) for side in SIDES)
        ratio = ours / theirs if theirs > 0 else float("nan")
        print(f"{label:36}{ours:10.1f}{theirs:10.1f}{ratio:8.2f}  <= 1.0  ({every})")
    for side in SIDES:
        print()
        print_breakdown(side, median_run(runs[side, "heap"]))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        side_, measure_, warmup_, trials_, out_ = sys.argv[2:7]
        child(side_, measure_, int(warmup_), int(trials_), Path(out_))
    else:
        main()
