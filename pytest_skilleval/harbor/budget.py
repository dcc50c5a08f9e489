"""`--max-cost USD`: the run's spend so far, and whether a new trial may start.

Every process of a run (pytest-xdist workers included) keeps its own total in one small file of a folder the run's
processes share (under the system's temporary folder, named after the run and the skill); the spend is the sum of
those files. Costs come from the trials' records: the agent's (reported, or priced by `pricing`) plus the LLM
judges' that graded the trial (`judge_cost_usd`); a cost that is unknown adds nothing, so a run whose agents and
judges report neither cost nor tokens cannot be held by a budget (the summary says its cost is N/A). A trial reused
by `--resume` counts as spent.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
from pathlib import Path

from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.triggering import TriggerRecord

MAX_LEDGER_FILES = 1024


class BudgetReached(Exception):
    """No new trial starts: the run's spend reached --max-cost."""


class Budget:
    """Spend against one skill's --max-cost, shared with the run's other processes through `folder`."""

    def __init__(self, folder: Path, limit: float) -> None:
        self.folder = folder
        self.limit = limit
        self._mine = 0.0
        self._lock = threading.Lock()

    @classmethod
    def for_run(cls, run_id: str, skill_name: str, limit: float) -> Budget:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{run_id}-{skill_name}")
        return cls(Path(tempfile.gettempdir()) / f"skilleval-spend-{os.getuid()}" / safe, limit)

    def add(self, record: TrialRecord | TriggerRecord) -> None:
        """Count a trial's spend: its agent's cost and its LLM judges' (both money spent; each unknown adds 0); a
        trigger trial's is its agent's reported cost (no judge grades it)."""
        if isinstance(record, TriggerRecord):
            costs: tuple[float | None, ...] = (record.cost_usd,)
        else:
            costs = (record.tokens.cost_usd if record.tokens is not None else None, record.judge_cost_usd)
        cost = math.fsum(c for c in costs if c is not None and c > 0)
        if cost <= 0:
            return
        with self._lock:
            self._mine += cost
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            partial = self.folder / f".{os.getpid()}.{threading.get_ident()}.tmp"
            partial.write_text(json.dumps(self._mine))
            partial.replace(self.folder / f"{os.getpid()}.json")

    def spent(self) -> float:
        """This run's spend: every process's total (a file that does not read as a number counts as nothing)."""
        total = 0.0
        if not self.folder.is_dir():
            return self._mine
        for path in sorted(self.folder.glob("*.json"))[:MAX_LEDGER_FILES]:
            try:
                value = json.loads(path.read_text()[:64])
            except (OSError, ValueError):
                continue
            if isinstance(value, int | float) and value > 0:
                total += float(value)
        return max(total, self._mine)

    def reached(self) -> bool:
        return self.spent() >= self.limit

    def check(self) -> None:
        """Raise BudgetReached when no new trial may start."""
        spent = self.spent()
        if spent >= self.limit:
            raise BudgetReached(
                f"skilleval: budget reached: ${spent:.4f} spent of --max-cost ${self.limit:.4f}; not started "
                "(finish the run with --resume and a higher --max-cost)"
            )
