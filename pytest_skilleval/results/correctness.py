"""Whether a case's correctness was measured at all: the one decision the summary, report.html, BENCHMARK.md and
`skilleval validate` share (pure).

Without a correctness signal the standard score asks only whether the agent found and used the skill safely, so a
PASS says nothing about whether the output was right. The signals: the case's own checks, a custom grader's metric
(or its overall in `custom_only`), and the LLM judges (`--judge-model`). `correctness_measured` takes each as a
flag, so a new signal is one more parameter here and nothing changes at the call sites that do not know it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from verifier.check_spec import CheckResult

HOW_TO_MEASURE = (
    "add checks to the case, a custom grader (evals/grader.py, run in default_plus_custom or custom_only), "
    "or run with --judge-model"
)


def correctness_measured(*, checks: bool = False, grader: bool, judge: bool) -> bool:
    """True when at least one signal says whether the output was right: the case has `checks`, a custom grader
    scored it, or a judge model judged it."""
    return checks or grader or judge


def unmeasured_line(cases: Sequence[str], limit: int = 5) -> str:
    """The plain sentence every surface prints for the cases with no correctness signal."""
    shown = ", ".join(cases[:limit]) + (f" and {len(cases) - limit} more" if len(cases) > limit else "")
    noun = "case" if len(cases) == 1 else "cases"
    return (
        f"Correctness not measured for {len(cases)} {noun} ({shown}): their scores say whether the skill was found "
        f"and used safely, not whether the output was right; {HOW_TO_MEASURE}."
    )


JUDGE_METRICS = ("accuracy", "goal_accuracy", "behavior_check")


def trial_signals(
    grading_mode: str, metrics: Mapping[str, Any], custom_metrics: Mapping[str, Any], scored: bool
) -> tuple[bool, bool]:
    """(grader, judge) for one trial: a custom grader scored it (its metrics, or its overall in custom_only), and a
    judge gave one of its metrics a score."""
    grader = bool(custom_metrics) or (grading_mode == "custom_only" and scored)
    judge = any(metrics.get(name) is not None for name in JUDGE_METRICS)
    return grader, judge


def unmeasured_cases(
    trials: Sequence[tuple[str, str, Mapping[str, Any], Mapping[str, Any], bool]],
    judge_enabled: bool,
    cases_with_checks: Collection[str] = (),
) -> list[str]:
    """The cases, in the order first seen, none of whose trials (case, grading mode, metrics, custom metrics,
    scored) has a correctness signal. A run with a judge model configured measures every case; so do a case's own
    checks (`cases_with_checks`)."""
    seen: dict[str, bool] = {}
    for case, mode, metrics, custom, scored in trials:
        grader, judge = trial_signals(mode, metrics, custom, scored)
        measured = correctness_measured(checks=case in cases_with_checks, grader=grader, judge=judge or judge_enabled)
        seen[case] = seen.get(case, False) or measured
    return [case for case, measured in seen.items() if not measured]


def planned_cases_with_checks(snapshot: Mapping[str, Any] | None) -> set[str]:
    """The case ids whose dataset entry (in the run's dataset snapshot) has checks. A trial that errored never ran
    its checks, so its record has none: without the dataset, a case with checks whose every trial errored would be
    named "not measured" and told to add the checks it has."""
    entries = snapshot.get("entries") if isinstance(snapshot, Mapping) else None
    if not isinstance(entries, list):
        return set()
    return {
        str(entry["id"])
        for entry in entries
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), (str, int)) and entry.get("checks")
    }


def errored_checks_warnings(trials: Iterable[tuple[str, Sequence[CheckResult] | None]]) -> list[str]:
    """One warning per case (in the order first seen) some of whose checks could not be evaluated in a trial (case,
    its check results): such a check is left out of the score, never failed, so a run whose checks all errored would
    otherwise pass with nothing said. Names the first such check and why."""
    errored: dict[str, tuple[int, CheckResult]] = {}
    for case, checks in trials:
        first = next((check for check in checks or () if check.status == "error"), None)
        if first is not None:
            count, shown = errored.get(case, (0, first))
            errored[case] = (count + 1, shown)
    return [
        f"{case}: checks could not be evaluated in {count} trial(s) and are left out of its score "
        f"({check.name}: {check.evidence})"
        for case, (count, check) in errored.items()
    ]
