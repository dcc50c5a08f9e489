"""What the controller keeps per finished trial: Python heap growth per trial, by where it was allocated.

The plugin's side of bench_memory_vs_harbor.py on its own (serial, in-process, no-op agent, local environment,
custom grader; tracemalloc from the warm-up's last trial to the last one), for looking into what the plugin keeps
without running Harbor's side. The comparison with Harbor, heap and RSS, is bench_memory_vs_harbor.py.

    .venv/bin/python benchmarks/bench_memory.py [N]    # default 200 trials
"""

from __future__ import annotations

import sys

from bench_memory_vs_harbor import WARMUP, print_breakdown, run_child


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 200
    print_breakdown("plugin", run_child("plugin", "heap", WARMUP, n), f"trials {WARMUP + 1}..{n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
