"""Collection cost: `pytest --co -q` on a generated eval dataset vs a plain parametrized test with as many items.

The eval dataset has n/2 cases run in both arms (n items). Both runs are whole processes (interpreter start,
collection, the `--co` listing) in the same project; the plain run has the plugin disabled (`-p no:skilleval`), so the
difference is everything the plugin costs, its import included. Prints the whole
process time at each size, the per-item cost (slope between the smallest and each larger size, which removes the
fixed start-up), and the plugin/plain ratio of wall time (the target) and of CPU time (steadier on a busy machine).
Each side runs once unmeasured first, so both read compiled bytecode as an installed plugin does.

    .venv/bin/python benchmarks/bench_collection.py [N ...]    # default: 1000 5000 20000

Target (issue 13): whole process <= 1.5x plain pytest, linear in N.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _harness import PYTHON, common_args, make_project

REPEATS = 5
PLAIN_TEST = '''
import pytest

@pytest.mark.parametrize("case", [f"c{i:05d}" for i in range({n})])
def test_case(case):
    pass
'''


def _timed(project: Path, argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) for one whole process."""
    env = {**os.environ, "PYTHONPATH": str(project), "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    # Bytecode caches as a user has them: without them every run compiles (and pytest assertion-rewrites) each module
    # of the plugin again, which the plain side, whose modules are compiled at install, never pays.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        print(
            f"{' '.join(argv)} failed (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}",
            file=sys.stderr,
        )
        raise SystemExit(1)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(n: int, repeats: int = REPEATS) -> tuple[float, float, float, float]:
    """Best-of-`repeats` (plugin wall, plain wall, plugin CPU, plain CPU) seconds collecting n items.

    The two commands alternate, so a burst of load from elsewhere on the machine hits both sides alike."""
    # n/2 cases x both arms: a dataset holds at most 10,000 cases, and two arms is the default run anyway
    project = make_project(n // 2)
    try:
        (project / "test_plain.py").write_text(PLAIN_TEST.replace("{n}", str(n)))
        base = [str(PYTHON), "-m", "pytest", "-p", "no:cacheprovider", "--co", "-q", "--basetemp", str(project / "tmp")]
        plugin = base + [
            "--skill-eval",
            "skills/bench",
            "--results-dir",
            str(project / "results"),
            *(a for a in common_args() if a != "--skip-baseline"),
        ]
        plain = base + ["-p", "no:skilleval", "test_plain.py"]  # plain pytest: the plugin not even imported
        _timed(project, plugin), _timed(project, plain)  # warm-up: bytecode caches written, files in the page cache
        runs = [(_timed(project, plugin), _timed(project, plain)) for _ in range(repeats)]
        return (
            min(p[0] for p, _ in runs),
            min(q[0] for _, q in runs),
            min(p[1] for p, _ in runs),
            min(q[1] for _, q in runs),
        )
    finally:
        shutil.rmtree(project, ignore_errors=True)


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [1000, 5000, 20000]
    rows = {n: measure(n) for n in sizes}
    print(f"collection (--co -q), whole process, best of {REPEATS} (plugin and plain runs alternate)")
    print(
        f"{'items':>8}{'plugin s':>10}{'plain s':>10}{'ratio':>8}{'plugin ms/item':>16}{'plain ms/item':>15}"
        f"{'plugin CPU s':>14}{'plain CPU s':>13}{'CPU ratio':>11}"
    )
    first = sizes[0]
    for n in sizes:
        plugin_s, plain_s, plugin_cpu, plain_cpu = rows[n]
        if n == first:
            slope = ("", "")
        else:
            d = n - first
            slope = (f"{1000 * (plugin_s - rows[first][0]) / d:.3f}", f"{1000 * (plain_s - rows[first][1]) / d:.3f}")
        print(
            f"{n:>8,}{plugin_s:>10.2f}{plain_s:>10.2f}{plugin_s / plain_s:>8.2f}{slope[0]:>16}{slope[1]:>15}"
            f"{plugin_cpu:>14.2f}{plain_cpu:>13.2f}{plugin_cpu / plain_cpu:>11.2f}"
        )
    worst = max(rows[n][0] / rows[n][1] for n in sizes)
    worst_cpu = max(rows[n][2] / rows[n][3] for n in sizes)
    print(f"target: whole-process ratio <= 1.50, linear; worst ratio {worst:.2f} (CPU {worst_cpu:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
