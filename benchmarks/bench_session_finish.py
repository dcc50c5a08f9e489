"""Session finish at scale: aggregate + write_results_tree + report.html/BENCHMARK.md for N synthetic trials.

Each record carries realistic details (six evaluators with reasons and a finding, ~2 KB) and points at a Harbor-like
trial folder (trajectory, rewards, result.json, grader output: what the writer copies per trial); the folders come
from a small pool so setting up 20,000 trials stays cheap. Prints ms per trial for each part, and the growth from
the smallest to the largest N (1.0 = linear).

    .venv/bin/python benchmarks/bench_session_finish.py [N ...]    # default: 2000 20000

Target (issue 13): aggregate + tree (+ redaction) <= 1 ms per trial and linear up to 20,000; report.html linear.

Then the same end as a session has it (issue 28's session end), best of 3 at each N: the trial files and their
drill-downs made first, untimed, as the session makes them while trials run; then the custom-metric name check, the
aggregate, the results tree (result.json and the rest) and report.html + BENCHMARK.md, in ms for the whole end.
Steadier than `bench_scale.py`'s session end, which shares the machine with the last trials' clean-up.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pytest_skilleval.reporting import _condition_name_problems
from pytest_skilleval.results import html_report
from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.benchmark_card import render_card
from pytest_skilleval.results.html_report import render_report
from pytest_skilleval.results.models import RunPlan
from pytest_skilleval.results.publish import write_run_reports
from pytest_skilleval.results.records import TokenUsage, TrialRecord
from pytest_skilleval.results.run_folder import load_run
from pytest_skilleval.results.tree import EarlyTrialFiles, atomic_write_bytes, write_results_tree
from pytest_skilleval.results.trial_evidence import trial_evidence
from verifier.redact import Redactor

POOL = 64  # distinct Harbor trial folders the records point at
ATTEMPTS = 2
METRICS = ("security", "skill_execution", "skill_efficiency", "output_quality", "task_completion", "trajectory")


def _trial_pool(root: Path) -> list[str]:
    dirs = []
    for i in range(POOL):
        tdir = root / f"trial-{i}"
        (tdir / "agent").mkdir(parents=True)
        (tdir / "verifier").mkdir()
        steps = [{"step_id": s, "source": "agent", "message": f"step {s} of trial {i} " + "x" * 200} for s in range(12)]
        (tdir / "agent" / "trajectory.json").write_text(json.dumps({"steps": steps}))
        (tdir / "verifier" / "reward.json").write_text(json.dumps({"reward": 1.0}))
        (tdir / "verifier" / "skilleval_reward.json").write_text(json.dumps({"overall": 0.8, "details": _details(i)}))
        (tdir / "verifier" / "grader-output.txt").write_text(f"grader ran for trial {i}\n" * 20)
        (tdir / "result.json").write_text(json.dumps({"trial_name": f"t{i}", "reward": 1.0, "exception": None}))
        dirs.append(str(tdir))
    return dirs


def _details(i: int) -> dict[str, object]:
    return {
        m: {
            "passed": i % 3 != 0,
            "score": 0.8,
            "reason": f"{m}: the agent did what case {i} asked " + "." * 120,
            "findings": [{"type": "note", "severity": "info", "message": f"finding for {m}", "evidence": "e" * 80}],
        }
        for m in METRICS
    }


def _records(n: int, pool: list[str]) -> tuple[list[TrialRecord], list[str]]:
    n_cases = max(1, n // (2 * ATTEMPTS))
    cases = [f"case-{c:05d}" for c in range(n_cases)]
    records = []
    for c, case in enumerate(cases):
        for arm, base in (("with_skill", 0.8), ("without_skill", 0.5)):
            for attempt in range(1, ATTEMPTS + 1):
                score = min(1.0, base + 0.001 * (c % 100) - 0.01 * attempt)
                records.append(
                    TrialRecord(
                        skill="bench",
                        case=case,
                        agent="oracle",
                        arm=arm,
                        attempt=attempt,
                        status="scored",  # type: ignore[arg-type]
                        overall=score,
                        passed=score >= 0.5,
                        metrics={m: score for m in METRICS},
                        custom_metrics={"greeting_correct": score},
                        details=_details(c),
                        activation=1.0 if arm == "with_skill" else None,
                        tokens=TokenUsage(prompt=1000, completion=100),
                        agent_seconds=1.5,
                        trial_dir=pool[len(records) % len(pool)],
                    )
                )
    return records, cases


def _timed(timings: dict[str, tuple[float, float]], part: str, started: tuple[float, float]) -> tuple[float, float]:
    now = (time.perf_counter(), time.process_time())
    timings[part] = (now[0] - started[0], now[1] - started[1])
    return now


def measure(n: int, work: Path, pool: list[str]) -> dict[str, tuple[float, float]]:
    """(wall, cpu) ms per trial for each part. Wall includes waiting on the disk; cpu is this process's own work."""
    records, cases = _records(n, pool)
    plan = RunPlan(
        skill="bench", cases=cases, agents=["oracle"], n_attempts=ATTEMPTS, evaluated_at="2026-01-02T03:04:05Z"
    )
    gc.collect()
    timings: dict[str, tuple[float, float]] = {}
    mark = (time.perf_counter(), time.process_time())
    result = aggregate(records, plan)
    mark = _timed(timings, "aggregate", mark)
    run_dir = write_results_tree(result, records, work / "results", f"20260102_030405_{n}_0123456789ab")
    mark = _timed(timings, "results tree", mark)
    run = load_run(run_dir)
    atomic_write_bytes(run.report_path, render_report(run).encode("utf-8"), run_dir.parent)
    mark = _timed(timings, "report.html", mark)
    atomic_write_bytes(run.card_path, render_card(run).encode("utf-8"), run_dir.parent)
    _timed(timings, "BENCHMARK.md", mark)

    def total(parts: tuple[str, ...]) -> tuple[float, float]:
        return sum(timings[p][0] for p in parts), sum(timings[p][1] for p in parts)

    timings["finish (aggregate+tree)"] = total(("aggregate", "results tree"))
    timings["total"] = total(("aggregate", "results tree", "report.html", "BENCHMARK.md"))
    return {k: (1000 * w / len(records), 1000 * c / len(records)) for k, (w, c) in timings.items()}


def measure_end(n: int, work: Path, pool: list[str]) -> dict[str, tuple[float, float]]:
    """(wall, cpu) ms for each part of the session's end, the trial files already written as trials ended."""
    records, cases = _records(n, pool)
    plan = RunPlan(
        skill="bench", cases=cases, agents=["oracle"], n_attempts=ATTEMPTS, evaluated_at="2026-01-02T03:04:05Z"
    )
    root, run_id = work / f"end-{n}", f"20260102_030405_{n}_0123456789ac"
    redactor = Redactor.from_environment({})
    early = EarlyTrialFiles(root, run_id, redactor)
    html_report.load_template()
    known = {}
    for record in records:
        body = early.write(record)
        known[record.key] = html_report.drill_down(trial_evidence(json.loads(body)))
    os.sync()
    gc.collect()
    gc.freeze()  # as the session does once the trials are over
    try:
        timings: dict[str, tuple[float, float]] = {}
        start = mark = (time.perf_counter(), time.process_time())
        _condition_name_problems(records)
        mark = _timed(timings, "name check", mark)
        result = aggregate(records, plan)
        mark = _timed(timings, "aggregate", mark)
        run_dir = write_results_tree(result, records, root, run_id, redactor=redactor, early=early)
        mark = _timed(timings, "results tree", mark)
        write_run_reports(run_dir, known)
        _timed(timings, "report.html + card", mark)
        _timed(timings, "end", start)
    finally:
        gc.unfreeze()
        shutil.rmtree(root, ignore_errors=True)
    return {k: (1000 * w, 1000 * c) for k, (w, c) in timings.items()}


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [2000, 20000]
    work = Path(tempfile.mkdtemp(prefix="skilleval-bench-finish-"))
    try:
        pool = _trial_pool(work / "harbor")
        rows = {n: measure(n, work, pool) for n in sizes}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    parts = list(next(iter(rows.values())))
    print("session finish, ms per trial: wall (cpu)")
    print(f"{'part':<26}" + "".join(f"{f'{n:,}':>18}" for n in sizes) + f"{'growth':>8}")
    for part in parts:
        first, last = rows[sizes[0]][part][0], rows[sizes[-1]][part][0]
        growth = last / first if first else float("nan")
        cells = "".join(f"{f'{rows[n][part][0]:.3f} ({rows[n][part][1]:.3f})':>18}" for n in sizes)
        print(f"{part:<26}{cells}{growth:>8.2f}")
    worst = max(rows[n]["finish (aggregate+tree)"][0] for n in sizes)
    worst_cpu = max(rows[n]["finish (aggregate+tree)"][1] for n in sizes)
    print(
        f"target: aggregate+tree <= 1.000 ms/trial and linear (growth <= ~1.3); "
        f"worst {worst:.3f} ms/trial wall, {worst_cpu:.3f} cpu"
    )
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    _print_session_end(sizes)
    return 0


def _print_session_end(sizes: list[int]) -> None:
    work = Path(tempfile.mkdtemp(prefix="skilleval-bench-end-"))
    try:
        pool = _trial_pool(work / "harbor")
        rows = {}
        for n in sizes:
            runs = [measure_end(n, work, pool) for _ in range(3)]
            rows[n] = {part: min(run[part] for run in runs) for part in runs[0]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("the session's end, trial files written as trials ended: ms, wall (cpu), best of 3")
    print(f"{'part':<26}" + "".join(f"{f'{n:,}':>20}" for n in sizes))
    for part in next(iter(rows.values())):
        print(f"{part:<26}" + "".join(f"{f'{rows[n][part][0]:.0f} ({rows[n][part][1]:.0f})':>20}" for n in sizes))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
