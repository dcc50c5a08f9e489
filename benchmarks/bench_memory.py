"""What the controller keeps per finished trial: Python heap growth per trial, by where it was allocated.

Runs the plugin in this process (serial, no-op sleeping agent, local environment, custom grader) under tracemalloc,
takes a snapshot after WARMUP trials (imports, caches and first-use costs are paid by then) and another when the
last trial has finished, and prints the growth per trial and its largest sources. Peak RSS per trial (the figure
compared with Harbor) is printed by bench_vs_harbor.py; this one says what that memory is.

    .venv/bin/python benchmarks/bench_memory.py [N]    # default 250 trials
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tracemalloc
from typing import Any

import pytest

from _harness import common_args, make_project

WARMUP = 50


class _Probe:
    def __init__(self) -> None:
        self.finished = 0
        self.snapshots: dict[str, tracemalloc.Snapshot] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        tracemalloc.start(8)
        try:
            return (yield)
        finally:
            gc.collect()
            self.snapshots["end"] = tracemalloc.take_snapshot()
            tracemalloc.stop()

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.finished += 1
        if self.finished == WARMUP:
            gc.collect()
            self.snapshots["warm"] = tracemalloc.take_snapshot()


def _where(trace: tracemalloc.Traceback) -> str:
    """The innermost frame in this project (else the innermost frame): who asked for the memory."""
    frames = list(trace)
    ours = [f for f in frames if "pytest_skilleval" in f.filename or "/_pytest/" in f.filename]
    frame = ours[-1] if ours else frames[-1]
    return f"{frame.filename.split('site-packages/')[-1].split('/work/')[-1]}:{frame.lineno}"


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 250
    project = make_project(n)
    cwd = os.getcwd()
    os.environ.update(HARBOR_TELEMETRY="0", LITELLM_LOCAL_MODEL_COST_MAP="True", BENCH_AGENT_SLEEP="0")
    sys.path.insert(0, str(project))
    probe = _Probe()
    try:
        os.chdir(project)
        code = pytest.main(["-p", "no:cacheprovider", "-q", "--no-header", "--basetemp", str(project / "tmp"),
                            "--skill-eval", "skills/bench", "--results-dir", str(project / "results"),
                            *common_args()], plugins=[probe])
    finally:
        os.chdir(cwd)
        shutil.rmtree(project, ignore_errors=True)
    if code != 0 or "warm" not in probe.snapshots:
        print(f"the run failed (exit {code})", file=sys.stderr)
        return 1
    diff = probe.snapshots["end"].compare_to(probe.snapshots["warm"], "traceback")
    k = n - WARMUP
    by_where: dict[str, list[int]] = {}
    for stat in diff:
        entry = by_where.setdefault(_where(stat.traceback), [0, 0])
        entry[0] += stat.size_diff
        entry[1] += stat.count_diff
    total = sum(stat.size_diff for stat in diff)
    print(f"Python heap growth: {total / 1024 / k:.1f} KB per trial (trials {WARMUP + 1}..{n}, tracemalloc)")
    print(f"{'KB/trial':>9}{'blocks':>8}  allocated at")
    for where, (size, count) in sorted(by_where.items(), key=lambda kv: -kv[1][0])[:12]:
        print(f"{size / 1024 / k:>9.2f}{count / k:>8.1f}  {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
