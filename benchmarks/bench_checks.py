"""Benchmark: security (+ skill_execution + skill_efficiency when importable) over 10,000 and 100,000 shell calls.

Target: the three checks over 10,000 realistic shell calls in under 1 s, and 10x the calls costing at most 12x.
Run: .venv/bin/python benchmarks/bench_checks.py
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from verifier.checks.security import check_security
from verifier.evidence import MetricResult, ToolCallRecord, TrajectoryEvidence

COMMANDS = [
    "ls -la",
    "cd /workspace/src && ls",
    "cat README.md",
    "cat /workspace/skills/demo/SKILL.md",
    "python -m pytest -q tests/ 2>&1 | tail -n 20",
    "grep -rn 'def main' src/ | head",
    "git status --short",
    "git diff --stat",
    "pip install -r requirements.txt",
    "python /workspace/skills/demo/scripts/run.py --input data.csv --out /tmp/out.json",
    "rm -f /tmp/out.json",
    "rm -rf build dist",
    "find . -name '*.pyc' -delete",
    "mkdir -p out && cp data.csv out/",
    "curl -sSL https://example.com/data.json -o data.json",
    "wget -q https://example.com/file.tar.gz && tar xzf file.tar.gz",
    "for f in *.csv; do wc -l \"$f\"; done",
    "if [ -f setup.py ]; then pip install -e .; fi",
    "export PYTHONPATH=$PWD/src; python -c 'import app; print(app.__version__)'",
    "cat > notes.txt <<'EOF'\nremember: run tests with pytest\nuse curl to fetch data\nEOF",
    "jq '.items[] | select(.ok)' data.json | wc -l",
    "sed -i 's/foo/bar/g' src/app.py && git diff",
    "echo \"done at $(date)\" >> log.txt",
    "pushd /tmp && ls && popd",
    "docker ps --format '{{.Names}}'",
]


def trajectory(n: int, seed: int = 1, distinct: bool = False) -> TrajectoryEvidence:
    """Calls drawn from COMMANDS; with `distinct`, each command gets a unique comment so no parse cache can help."""
    rng = random.Random(seed)
    calls = [
        ToolCallRecord(
            index=i,
            tool="Bash",
            arguments={"command": rng.choice(COMMANDS) + (f"  # call {i}" if distinct else "")},
            observation="ok\n" * rng.randrange(1, 4),
        )
        for i in range(n)
    ]
    return TrajectoryEvidence(
        source="bench",
        tool_calls=calls,
        agent_messages=["Working on it."] * 10,
        user_messages=["Please summarise data.csv using the demo skill."],
    )


def _optional(module: str, name: str) -> Callable[..., MetricResult] | None:
    try:
        mod = __import__(module, fromlist=[name])
        return getattr(mod, name)
    except Exception as exc:  # noqa: BLE001 - report and continue
        print(f"note: {module}.{name} not importable ({type(exc).__name__}: {exc}); timing security alone")
        return None


def timed(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    entry = {"expected_skill": "demo", "expected_script": "scripts/run.py", "question": "summarise data.csv"}
    skill_execution = _optional("verifier.checks.skill_execution", "check_skill_execution")
    skill_efficiency = _optional("verifier.checks.skill_efficiency", "check_skill_efficiency")

    def all_checks(ev: TrajectoryEvidence) -> None:
        check_security(ev, entry)
        if skill_execution:
            skill_execution(ev, entry)
        if skill_efficiency:
            skill_efficiency(ev, entry)

    figures: dict[str, dict[int, float]] = {"security": {}, "all": {}, "distinct": {}}
    for n in (10_000, 100_000):
        ev = trajectory(n)
        figures["security"][n] = timed(partial(check_security, ev, entry), repeat=3)
        figures["all"][n] = timed(partial(all_checks, ev), repeat=3)
        unique = trajectory(n, distinct=True)
        figures["distinct"][n] = timed(partial(all_checks, unique), repeat=3)
    included = (
        "security + skill_execution + skill_efficiency"
        if skill_execution and skill_efficiency
        else "security"
        + (" + skill_execution" if skill_execution else "")
        + (" + skill_efficiency" if skill_efficiency else "")
    )
    ok = True
    for label, name in (
        ("security alone", "security"),
        (included, "all"),
        ("(same, every command distinct: no cache hits)", "distinct"),
    ):
        small, big = figures[name][10_000], figures[name][100_000]
        ratio = big / small
        print(f"{label:50s} 10k calls: {small:7.3f} s   100k calls: {big:7.3f} s   ratio: {ratio:5.2f}x")
        if name == "all":
            ok = small < 1.0 and ratio <= 12.0
    print("target (all checks: 10k < 1 s, ratio <= 12x):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
