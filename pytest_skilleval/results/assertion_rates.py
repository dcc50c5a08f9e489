"""Per-assertion results: each natural-language assertion of a case, its pass rate per arm over attempts (pure).

behavior_check judges a case's assertions one by one; its score is only their mean, which hides which assertion
the skill fixes and which it never does. The verdicts are in each trial's details (`behavior_check.results`, in
the assertions' order); the assertion texts come from the run's dataset snapshot, else from the verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_skilleval.results.models import AssertionArm, AssertionRate, RunPlan
from pytest_skilleval.results.natural_order import natural_key
from pytest_skilleval.results.records import ARMS
from pytest_skilleval.results.trials import ScoredTrial, r4


def _texts(plan: RunPlan) -> dict[str, list[str]]:
    snapshot = plan.dataset_snapshot or {}
    entries = snapshot.get("entries") if isinstance(snapshot, Mapping) else None
    texts: dict[str, list[str]] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("assertions"), list):
            texts[str(entry.get("id"))] = [str(text) for text in entry["assertions"]]
    return texts


def judged_results(details: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """behavior_check's verdicts of one trial, or None when it judged nothing (skipped, failed, not configured)."""
    section = details.get("behavior_check")
    if (
        not isinstance(section, Mapping)
        or section.get("skipped")
        or section.get("status") in ("error", "not_configured")
    ):
        return None
    results = section.get("results")
    if not isinstance(results, list) or not results:
        return None
    return [item for item in results if isinstance(item, Mapping)]


def case_assertion_rates(agent: str, trials: Sequence[ScoredTrial], plan: RunPlan) -> dict[str, list[AssertionRate]]:
    """case -> each assertion's pass rate in each arm, over the agent's counted trials that behavior_check judged."""
    texts = _texts(plan)
    tally: dict[str, dict[int, dict[str, list[int]]]] = {}
    seen_text: dict[tuple[str, int], str] = {}
    for trial in trials:
        rec = trial.record
        if rec.agent != agent or not trial.ran:
            continue
        results = judged_results(rec.details)
        if results is None:
            continue
        known = texts.get(rec.case)
        for index, item in enumerate(results):
            if known is not None and index >= len(known):
                break
            counts = tally.setdefault(rec.case, {}).setdefault(index, {arm: [0, 0] for arm in ARMS})
            counts[rec.arm][0] += 1
            counts[rec.arm][1] += 1 if item.get("passed") is True else 0
            if isinstance(item.get("assertion"), str):
                seen_text.setdefault((rec.case, index), item["assertion"])
    out: dict[str, list[AssertionRate]] = {}
    for case in sorted(tally, key=natural_key):
        rows = []
        for index in sorted(tally[case]):
            counts = tally[case][index]
            known = texts.get(case)
            text = known[index] if known is not None else seen_text.get((case, index), f"assertion {index + 1}")
            arms = {
                arm: AssertionArm(judged=j, passed=p, rate=r4(p / j) if j else None) for arm, (j, p) in counts.items()
            }
            rows.append(AssertionRate(index=index + 1, text=text, **arms))
        out[case] = rows
    return out
