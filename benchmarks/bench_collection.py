"""Collection cost: `pytest --co -q` on a generated eval dataset vs a plain parametrized test with as many items.

The eval dataset has n/2 cases run in both arms (n items). Both runs are whole processes (interpreter start, plugin import, collection, the `--co` listing) in the same
project, so the plugin is loaded in both; the difference is what collecting skill-eval items costs. Prints the whole
process time at each size, the per-item cost (slope between the smallest and each larger size, which removes the
fixed start-up), and the plugin/plain ratio.

    .venv/bin/python benchmarks/bench_collection.py [N ...]    # default: 1000 5000 20000

Target (issue 13): whole process <= 1.5x plain pytest, linear in N.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _harness import PYTHON, common_args, make_project

PLAIN_TEST = '''
import pytest

@pytest.mark.parametrize("case", [f"c{i:05d}" for i in range({n})])
def test_case(case):
    pass
'''


def _timed(project: Path, argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(project), "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        print(f"{' '.join(argv)} failed (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}",
              file=sys.stderr)
        raise SystemExit(1)
    return elapsed


def measure(n: int, repeats: int = 3) -> tuple[float, float]:
    """Best-of-`repeats` whole-process seconds for (plugin, plain) collecting n items."""
    # n/2 cases x both arms: a dataset holds at most 10,000 cases, and two arms is the default run anyway
    project = make_project(n // 2)
    try:
        (project / "test_plain.py").write_text(PLAIN_TEST.replace("{n}", str(n)))
        base = [str(PYTHON), "-m", "pytest", "-p", "no:cacheprovider", "--co", "-q", "--basetemp", str(project / "tmp")]
        plugin = base + ["--skill-eval", "skills/bench", "--results-dir", str(project / "results"), *(a for a in common_args() if a != "--skip-baseline")]
        plain = base + ["test_plain.py"]
        plugin_s = min(_timed(project, plugin) for _ in range(repeats))
        plain_s = min(_timed(project, plain) for _ in range(repeats))
        return plugin_s, plain_s
    finally:
        shutil.rmtree(project, ignore_errors=True)


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [1000, 5000, 20000]
    rows = {n: measure(n) for n in sizes}
    print("collection (--co -q), whole process, best of 3")
    print(f"{'items':>8}{'plugin s':>10}{'plain s':>10}{'ratio':>8}{'plugin ms/item':>16}{'plain ms/item':>15}")
    first = sizes[0]
    for n in sizes:
        plugin_s, plain_s = rows[n]
        if n == first:
            slope = ("", "")
        else:
            d = n - first
            slope = (f"{1000 * (plugin_s - rows[first][0]) / d:.3f}", f"{1000 * (plain_s - rows[first][1]) / d:.3f}")
        print(f"{n:>8,}{plugin_s:>10.2f}{plain_s:>10.2f}{plugin_s / plain_s:>8.2f}{slope[0]:>16}{slope[1]:>15}")
    worst = max(rows[n][0] / rows[n][1] for n in sizes)
    print(f"target: whole-process ratio <= 1.50, linear; worst ratio {worst:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
