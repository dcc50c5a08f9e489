"""Benchmark: 16 trials whose agent sleeps 2 s, in one process (--n-concurrent 8), with xdist (-n 8), and both
together (-n 2 --n-concurrent 4: the same 8 in flight from two processes).

Targets (issue 13): in-process elapsed within 1.15x of the ideal (4 s of sleeping plus start-up, where start-up is a
one-trial run of the same command), and in-process peak memory at most 1/3 of xdist's.
Run: .venv/bin/python benchmarks/bench_concurrency.py
"""

from __future__ import annotations

import platform
import shutil

from _harness import common_args, fail_unless_ok, make_project, run_pytest

SLEEP = 2.0
TRIALS = 16
WIDTH = 8


def main() -> None:
    project = make_project(TRIALS)
    one = make_project(1)
    try:
        env = {"BENCH_AGENT_SLEEP": "0"}
        startup = run_pytest(one, *common_args(), "--n-concurrent", "1", env=env)
        fail_unless_ok("start-up run", startup)
        env = {"BENCH_AGENT_SLEEP": str(SLEEP)}
        inproc = run_pytest(project, *common_args(), "--n-concurrent", str(WIDTH), env=env)
        fail_unless_ok("in-process run", inproc)
        xdist = run_pytest(project, *common_args(), "--n-concurrent", "1", "-n", str(WIDTH), env=env)
        fail_unless_ok("xdist run", xdist)
        both = run_pytest(project, *common_args(), "--n-concurrent", str(WIDTH // 2), "-n", "2", env=env)
        fail_unless_ok("xdist + in-process run", both)
    finally:
        shutil.rmtree(project, ignore_errors=True)
        shutil.rmtree(one, ignore_errors=True)
    ideal = TRIALS / WIDTH * SLEEP + startup.seconds
    print(f"machine: {platform.machine()}, {platform.python_version()}, cpus={__import__('os').cpu_count()}")
    print(f"start-up (one trial, no sleep)      {startup.seconds:6.2f} s")
    print(f"ideal ({TRIALS} x {SLEEP:.0f} s / {WIDTH} + start-up)   {ideal:6.2f} s")
    print(
        f"--n-concurrent {WIDTH}   elapsed {inproc.seconds:6.2f} s  ratio to ideal {inproc.seconds / ideal:5.2f} "
        f"(target <= 1.15)  peak RSS {inproc.peak_rss_mb:7.1f} MB"
    )
    print(
        f"-n {WIDTH} (xdist)        elapsed {xdist.seconds:6.2f} s  ratio to ideal {xdist.seconds / ideal:5.2f}"
        f"                   peak RSS {xdist.peak_rss_mb:7.1f} MB"
    )
    print(
        f"-n 2 --n-concurrent {WIDTH // 2}  elapsed {both.seconds:6.2f} s  ratio to ideal {both.seconds / ideal:5.2f}"
        f"                   peak RSS {both.peak_rss_mb:7.1f} MB"
    )
    print(f"memory in-process / xdist: {inproc.peak_rss_mb / xdist.peak_rss_mb:5.2f} (target <= 0.33)")


if __name__ == "__main__":
    main()
