"""`skilleval compare`: how one run (or agent) differs from another, per case and per dimension, with intervals.

Differences are B minus A on one arm (with-skill by default). Per dimension (and overall) the unit is the case, as
for Skill Lift: the case means of the two sides are paired over the cases both scored, and the interval is the
stats module's expanded percentile paired bootstrap. Per case the unit is the attempt: with the same number of
scored attempts on both sides they are paired by attempt number (for independent attempts any pairing gives the
right variance for a difference of means); otherwise only the difference of means is shown.

Only runs whose execution_status is `succeeded` are compared: a failed or interrupted run's means are not
comparable. Pure: reads result.json through `run_folder`, imports neither pytest nor Harbor.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from pytest_skilleval.results.models import DIMENSIONS, TrialEntry
from pytest_skilleval.results.natural_order import natural_key
from pytest_skilleval.results.run_folder import RunFolder, RunFolderError, find_run, load_run, run_folders
from pytest_skilleval.results.stats import MIN_PAIRS, paired_bootstrap_ci

__all__ = ["Delta", "Side", "compare_sides", "run_compare_command"]

MEASURES: tuple[str, ...] = (*DIMENSIONS, "overall")


class CompareError(ValueError):
    """The two sides cannot be compared (unknown agent, run not succeeded, nothing in common)."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: an agent's trials on one arm of one run."""

    label: str
    trials: tuple[TrialEntry, ...]


@dataclass(frozen=True)
class Delta:
    name: str
    a: float | None
    b: float | None
    delta: float | None
    ci95: tuple[float, float] | None
    n: int
    insufficient: bool


def _value(trial: TrialEntry, measure: str) -> float | None:
    return trial.overall if measure == "overall" else getattr(trial.dimensions, measure)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _ci(values: Sequence[float]) -> tuple[float, float] | None:
    ci = paired_bootstrap_ci(values)
    return None if ci is None else (round(ci[0], 4), round(ci[1], 4))


def _by_case(side: Side, measure: str) -> dict[str, list[tuple[int, float]]]:
    cases: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for trial in side.trials:
        value = _value(trial, measure)
        if value is not None:
            cases[trial.case].append((trial.attempt, value))
    return cases


def _measure_delta(a: Side, b: Side, measure: str) -> Delta:
    ca, cb = _by_case(a, measure), _by_case(b, measure)
    shared = sorted(set(ca) & set(cb), key=natural_key)
    mean_a = [math.fsum(v for _, v in ca[c]) / len(ca[c]) for c in shared]  # shared cases have values on both sides
    mean_b = [math.fsum(v for _, v in cb[c]) / len(cb[c]) for c in shared]
    diffs = [y - x for x, y in zip(mean_a, mean_b, strict=True)]
    return Delta(
        measure,
        _r(_mean(mean_a)),
        _r(_mean(mean_b)),
        _r(_mean(diffs)),
        _ci(diffs),
        len(shared),
        len(shared) < MIN_PAIRS,
    )


def _case_delta(case: str, a: list[tuple[int, float]], b: list[tuple[int, float]]) -> Delta:
    mean_a, mean_b = _mean([v for _, v in a]), _mean([v for _, v in b])
    delta = None if mean_a is None or mean_b is None else mean_b - mean_a
    ci = None
    if a and len(a) == len(b):
        ci = _ci([y - x for (_, x), (_, y) in zip(sorted(a), sorted(b), strict=True)])
    return Delta(case, _r(mean_a), _r(mean_b), _r(delta), ci, min(len(a), len(b)), len(a) != len(b) or len(a) < 2)


def compare_sides(a: Side, b: Side) -> dict[str, list[Delta]]:
    """{"measures": per dimension and overall, "cases": per case (overall score)}; B minus A throughout."""
    ca, cb = _by_case(a, "overall"), _by_case(b, "overall")
    cases = [
        _case_delta(case, ca.get(case, []), cb.get(case, [])) for case in sorted(set(ca) | set(cb), key=natural_key)
    ]
    return {"measures": [_measure_delta(a, b, m) for m in MEASURES], "cases": cases}


# ---------------------------------------------------------------------------------------------- sides


def _succeeded(run: RunFolder) -> None:
    status = run.document.execution_status
    if status != "succeeded":
        raise CompareError(f"{run.path}: execution_status is {status}; only succeeded runs are compared")


def side(run: RunFolder, agent: str, arm: str) -> Side:
    doc = run.document
    if agent not in doc.agents:
        raise CompareError(f"{run.path}: no agent {agent!r} (agents: {', '.join(doc.agents) or 'none'})")
    trials = tuple(t for t in doc.trials if t.agent == agent and t.arm == arm and t.counted)
    return Side(f"{doc.run_id}/{agent}/{arm}", trials)


def _latest_succeeded(root: Path, count: int) -> list[RunFolder]:
    """The newest `count` succeeded runs under a results root (or a skill folder's evals/results)."""
    for base in (root, root / "evals" / "results"):
        runs = [load_run(p) for p in run_folders(base)]
        good = [r for r in runs if r.document.execution_status == "succeeded"]
        if good:
            return good[-count:]
    return []


def resolve_sides(targets: list[str], agents: list[str] | None, arm: str) -> list[tuple[Side, Side]]:
    """What the command line names, as pairs of sides (one pair per agent compared)."""
    if len(targets) == 1 and agents and len(agents) == 2:
        run = load_run(find_run(targets[0]))
        _succeeded(run)
        return [(side(run, agents[0], arm), side(run, agents[1], arm))]
    if len(targets) == 1:
        runs = _latest_succeeded(Path(targets[0]), 2)
        if len(runs) < 2:
            raise CompareError(f"{targets[0]}: fewer than two succeeded runs to compare (or pass --agents A,B)")
    elif len(targets) == 2:
        runs = [load_run(find_run(t)) for t in targets]
        for run in runs:
            _succeeded(run)
    else:
        raise CompareError("give two runs, or one run with --agents A,B, or a results root")
    first, second = runs
    names = agents or [n for n in first.document.agents if n in second.document.agents]
    if not names:
        raise CompareError(f"{first.path} and {second.path} have no agent in common (use --agents)")
    return [(side(first, n, arm), side(second, n, arm)) for n in names]


# ----------------------------------------------------------------------------------------------- print


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "N/A" if signed else "NO SCORE"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _line(d: Delta, label_width: int) -> str:
    ci = f"[{d.ci95[0]:+.4f}, {d.ci95[1]:+.4f}]" if d.ci95 else "no interval"
    flag = "!" if d.insufficient else ""
    return (
        f"  {d.name[:label_width]:<{label_width}} {_fmt(d.a):>9} {_fmt(d.b):>9} {_fmt(d.delta, True):>9} "
        f"{ci:<20} n={d.n}{flag}"
    ).rstrip()


def render_comparison(a: Side, b: Side, result: dict[str, list[Delta]]) -> list[str]:
    lines = [
        f"A: {a.label}",
        f"B: {b.label}",
        "",
        "By dimension (paired over cases; B - A, 95% interval)",
        f"  {'measure':<22} {'A':>9} {'B':>9} {'delta':>9} {'interval':<20} pairs",
    ]
    lines += [_line(d, 22) for d in result["measures"]]
    lines += [
        "",
        "By case (overall; attempts paired by number)",
        f"  {'case':<22} {'A':>9} {'B':>9} {'delta':>9} {'interval':<20} attempts",
    ]
    lines += [_line(d, 22) for d in result["cases"]]
    lines.append(
        f"  ! fewer than {MIN_PAIRS} pairs (dimensions) or unequal/single attempts (cases): no firm conclusion"
    )
    return lines


def run_compare_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="skilleval compare", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="two run folders (or result.json files, results roots, skill folders: their latest "
        "run); one run with --agents A,B; or one results root: its two newest succeeded runs",
    )
    parser.add_argument("--agents", help="A,B: compare two agents of one run, or restrict to these agents")
    parser.add_argument("--arm", choices=("with_skill", "without_skill"), default="with_skill")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = parser.parse_args(argv)
    agents = [a.strip() for a in args.agents.split(",") if a.strip()] if args.agents else None
    try:
        pairs = resolve_sides(args.runs, agents, args.arm)
    except (CompareError, RunFolderError) as error:
        print(f"skilleval compare: {error}", file=sys.stderr)
        return 2
    out: list[dict[str, object]] = []
    for a, b in pairs:
        result = compare_sides(a, b)
        if args.json:
            out.append({"a": a.label, "b": b.label, **{k: [asdict(d) for d in v] for k, v in result.items()}})
        else:
            print("\n".join(render_comparison(a, b, result)) + "\n")
    if args.json:
        print(json.dumps(out, indent=2))
    return 0
