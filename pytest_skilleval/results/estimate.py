"""Before a run: what its trials will likely cost, from the newest earlier run of the same skill and agents."""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path

from pytest_skilleval.results.run_folder import RunFolderError, load_run, run_folders

RUNS_LOOKED_AT = 5


def cost_estimate(results_root: Path, agents: Collection[str], planned: int) -> str | None:
    """`estimated cost $X ($Y a trial, the mean of N trials of run R)`: the mean cost of that run's trials of these
    agents times the trials planned; None when no recent run holds a cost for them (missing is never zero)."""
    for path in reversed(run_folders(results_root)[-RUNS_LOOKED_AT:]):
        try:
            doc = load_run(path).document
        except RunFolderError:
            continue
        costs = [
            t.tokens.cost_usd
            for t in doc.trials
            if t.agent in agents and t.counted and t.tokens is not None and t.tokens.cost_usd is not None
        ]
        if costs:
            mean = math.fsum(costs) / len(costs)
            return (
                f"estimated cost ${mean * planned:.4f} (${mean:.4f} a trial, the mean of {len(costs)} trials of run "
                f"{doc.run_id})"
            )
    return None
