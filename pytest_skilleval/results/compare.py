"""`skilleval compare`: how one condition differs from another, per dimension and per case, with intervals.

A condition is one agent (or variant) on one arm of one run, so any two can be compared: two runs, two agents of
one run, or two arms (`--arms without_skill,with_skill` is the run's own Skill Lift). Differences are B minus A.

The numbers are the session's own: each side's trials are read back from their trial files (full precision, not
result.json's rounded entries), scored with the aggregate's policy, and paired by the same function Skill Lift
uses (case means paired over the cases both sides scored, the expanded percentile paired bootstrap, exact McNemar
on per-case passes, pass@k), so comparing a run's two arms prints exactly the lift its summary printed. Per case the
unit is the attempt: with the same attempts on both sides they are paired by number; otherwise only the difference
of means is shown, and the output says which cases and attempts did not line up. A case row whose sides do not
pair shows each side's own mean, or why it has none ("not run": no trial of the case; "not scored").

Only runs whose execution_status is `succeeded` are compared. Pure: imports neither pytest nor Harbor.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from pydantic import ValidationError

from pytest_skilleval.results import stats
from pytest_skilleval.results.arms import arm_summary
from pytest_skilleval.results.lift import agent_lift
from pytest_skilleval.results.models import DIMENSIONS, LiftSection, LiftStat, ResultDocument, RunPlan
from pytest_skilleval.results.natural_order import natural_key
from pytest_skilleval.results.records import ALL_ARMS, TrialRecord
from pytest_skilleval.results.run_folder import RunFolder, RunFolderError, find_run, load_run, run_folders, run_roots
from pytest_skilleval.results.stats import MIN_PAIRS, paired_bootstrap_ci
from pytest_skilleval.results.trials import Condition, ScoredTrial, build_condition, interval_pair, r4, score_trial

__all__ = ["Comparison", "Delta", "Side", "compare_sides", "load_side", "run_compare_command"]

MEASURES: tuple[str, ...] = (*DIMENSIONS, "overall")
FORMATS = ("text", "md", "json")


class CompareError(ValueError):
    """The two sides cannot be compared (unknown agent or arm, run not succeeded, nothing in common)."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: an agent's trials on one arm of one run, scored as the session scored them."""

    label: str
    plan: RunPlan
    trials: tuple[ScoredTrial, ...]
    selection: str | None = None  # how many of the dataset's cases its run selected, when not all (-k, --max-cases)

    @property
    def condition(self) -> Condition:
        agent, arm = self.trials[0].record.agent, self.trials[0].record.arm
        return build_condition(agent, arm, list(self.trials), self.plan.cases, self.plan)


@dataclass(frozen=True)
class Delta:
    name: str
    a: float | None
    b: float | None
    delta: float | None
    ci95: tuple[float, float] | None
    n: int
    insufficient: bool
    # a case row's side with no mean: "not run" (no trial of the case) or "not scored" (trials, none scored)
    a_missing: str | None = None
    b_missing: str | None = None


@dataclass
class Comparison:
    """B minus A: the paired lift (the session's model), per-measure and per-case deltas, and how the sides paired."""

    lift: LiftSection
    measures: list[Delta]
    cases: list[Delta]
    pairing: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- sides


def run_plan(doc: ResultDocument) -> RunPlan:
    """The plan the session aggregated with, as far as result.json keeps it; cases in the session's order (the
    order of its pass@k table), so the paired bootstrap resamples the same list."""
    ordered: list[str] = []
    for agent in doc.agents.values():
        for arm in ALL_ARMS:
            summary = getattr(agent, arm)
            if summary is not None and summary.pass_at_k is not None:
                ordered += [case for case in summary.pass_at_k.cases if case not in ordered]
    rest = sorted({t.case for t in doc.trials if t.counted} - set(ordered), key=natural_key)
    policy = doc.attempt_policy
    return RunPlan(
        skill=doc.skill_name,
        cases=ordered + rest,
        agents=list(doc.agents),
        arms=[arm for arm in ALL_ARMS if any(t.arm == arm for t in doc.trials)],
        n_attempts=policy.max_attempts,
        pass_threshold=policy.pass_threshold,
        stop_on_pass=policy.stop_on_pass,
        grading_mode=doc.grading_mode,  # type: ignore[arg-type]
        selection_complete=True,
    )


def _succeeded(run: RunFolder) -> None:
    status = run.document.execution_status
    if status != "succeeded":
        raise CompareError(f"{run.path}: execution_status is {status}; only succeeded runs are compared")


def load_side(run: RunFolder, agent: str, arm: str) -> Side:
    """One agent's trials on one arm, read back from their trial files at full precision."""
    doc = run.document
    if agent not in doc.agents:
        raise CompareError(f"{run.path}: no agent {agent!r} (agents: {', '.join(doc.agents) or 'none'})")
    plan = run_plan(doc)
    trials = []
    for files in run.trials():
        entry = files.entry
        if entry.agent != agent or entry.arm != arm or not entry.counted:
            continue
        try:
            record = TrialRecord.model_validate(files.content().record())
        except ValidationError:
            raise CompareError(
                f"{files.path}: no readable trial record (the trial file is missing or damaged)"
            ) from None
        trials.append(score_trial(record, plan))
    if not trials:
        raise CompareError(f"{run.path}: agent {agent!r} has no {arm} trials")
    return Side(f"{doc.run_id}/{agent}/{arm}", plan, tuple(trials), _selection(doc))


def _selection(doc: ResultDocument) -> str | None:
    """'N of M cases' for a run that selected some of its dataset's cases; None for a run of them all."""
    coverage = doc.coverage
    if coverage.selection_complete:
        return None
    ran = len({trial.case for trial in doc.trials} - set(coverage.skipped_cases))
    return f"{ran} of {ran + len(coverage.skipped_cases)} cases"


def _latest_succeeded(root: Path, count: int) -> list[RunFolder]:
    """The newest `count` succeeded runs under a results root (or where a skill folder's runs are: `run_roots`)."""
    for base in run_roots(root):
        runs = [load_run(p) for p in run_folders(base)]
        good = [r for r in runs if r.document.execution_status == "succeeded"]
        if good:
            return good[-count:]
    return []


def _two(values: list[str] | None, what: str) -> tuple[str | None, str | None]:
    if not values:
        return None, None
    if len(values) > 2:
        raise CompareError(f"--{what} takes one or two names, got {len(values)}")
    return values[0], values[-1]


def resolve_sides(targets: list[str], agents: list[str] | None, arms: list[str] | None) -> list[tuple[Side, Side]]:
    """What the command line names, as pairs of sides (one pair per agent compared)."""
    agent_a, agent_b = _two(agents, "agents")
    arm_a, arm_b = _two(arms, "arms")
    arm_a, arm_b = arm_a or "with_skill", arm_b or "with_skill"
    two_in_one = (agents and len(agents) == 2) or (arms and len(arms) == 2)
    if len(targets) == 1 and two_in_one:
        run = load_run(find_run(targets[0]))
        _succeeded(run)
        runs = [run, run]
    elif len(targets) == 1:
        runs = _latest_succeeded(Path(targets[0]), 2)
        if len(runs) < 2:
            raise CompareError(f"{targets[0]}: fewer than two succeeded runs to compare (or pass --agents A,B)")
    elif len(targets) == 2:
        runs = [load_run(find_run(t)) for t in targets]
        for run in runs:
            _succeeded(run)
    else:
        raise CompareError("give two runs, or one run with --agents A,B or --arms X,Y, or a results root")
    first, second = runs
    if agent_a is not None and agent_b is not None and agent_a != agent_b:
        return _skills_named([(load_side(first, agent_a, arm_a), load_side(second, agent_b, arm_b))])
    names = [agent_a] if agent_a else [n for n in first.document.agents if n in second.document.agents]
    if not names:
        ran_a, ran_b = list(first.document.agents), list(second.document.agents)
        pair = f"--agents {ran_a[0]},{ran_b[0]}" if ran_a and ran_b else "--agents A,B"
        raise CompareError(
            f"{first.path} ran {', '.join(ran_a) or 'no agent'} and {second.path} ran {', '.join(ran_b) or 'no agent'}: "
            f"no agent in common; name the two to compare, e.g. {pair}"
        )
    return _skills_named([(load_side(first, n, arm_a), load_side(second, n, arm_b)) for n in names])


def _skills_named(pairs: list[tuple[Side, Side]]) -> list[tuple[Side, Side]]:
    """Runs of two skills (a skill and its renamed copy, say; one session gives them one run id): each side's label
    starts with its skill, so A and B are never the same words."""
    return [
        (replace(a, label=f"{a.plan.skill} {a.label}"), replace(b, label=f"{b.plan.skill} {b.label}"))
        if a.plan.skill != b.plan.skill
        else (a, b)
        for a, b in pairs
    ]


# -------------------------------------------------------------------------------------------- compare


def _attempts(side: Side) -> dict[str, list[ScoredTrial]]:
    found: dict[str, list[ScoredTrial]] = {}
    for trial in sorted(side.trials, key=lambda t: t.record.attempt):
        if trial.scored:
            found.setdefault(trial.record.case, []).append(trial)
    return found


def _ran_cases(side: Side) -> set[str]:
    """The cases this side has a trial of that ran, scored or not."""
    return {trial.record.case for trial in side.trials if trial.ran}


def _missing(mean: float | None, ran: bool) -> str | None:
    """Why a side's cell of a case row has no mean: it never ran the case, or none of its trials of it was scored."""
    if mean is not None:
        return None
    return "not scored" if ran else "not run"


def _case_delta(case: str, a: list[ScoredTrial], b: list[ScoredTrial], ran_a: bool, ran_b: bool) -> Delta:
    """One case row: each side's own mean (or why it has none) and, where both have one, B minus A."""
    va = [t.overall for t in a if t.overall is not None]
    vb = [t.overall for t in b if t.overall is not None]
    mean_a, mean_b = stats.mean(va), stats.mean(vb)
    delta = None if mean_a is None or mean_b is None else mean_b - mean_a
    lined_up = bool(a) and [t.record.attempt for t in a] == [t.record.attempt for t in b]
    ci = interval_pair(paired_bootstrap_ci([y - x for x, y in zip(va, vb, strict=True)])) if lined_up else None
    return Delta(
        case,
        r4(mean_a),
        r4(mean_b),
        r4(delta),
        (ci[0], ci[1]) if ci else None,
        min(len(a), len(b)),
        not lined_up or len(a) < 2,
        _missing(mean_a, ran_a),
        _missing(mean_b, ran_b),
    )


def _measure(name: str, stat: LiftStat | None) -> Delta:
    if stat is None:
        return Delta(name, None, None, None, None, 0, True)
    ci = (stat.ci95[0], stat.ci95[1]) if stat.ci95 else None
    return Delta(name, stat.without_skill, stat.with_skill, stat.delta, ci, stat.n_pairs, stat.insufficient)


def _cases(ids: list[str]) -> str:
    """`case 1` / `cases 1, 2`: case ids named as cases (skill-creator's are numbers, which read as counts alone)."""
    return f"case {ids[0]}" if len(ids) == 1 else f"cases {', '.join(ids)}"


def _pairing(a: Side, b: Side, ca: dict[str, list[ScoredTrial]], cb: dict[str, list[ScoredTrial]]) -> list[str]:
    """How the two sides lined up, in words: paired cases, cases on one side only, attempts that differ."""
    shared = [c for c in cb if c in ca]
    notes = [f"paired over {len(shared)} case(s) scored on both sides"]
    only_a, only_b = sorted(set(ca) - set(cb), key=natural_key), sorted(set(cb) - set(ca), key=natural_key)
    if only_a:
        notes.append(f"not paired, scored in A only: {_cases(only_a)}")
    if only_b:
        notes.append(f"not paired, scored in B only: {_cases(only_b)}")
    uneven = [c for c in shared if [t.record.attempt for t in ca[c]] != [t.record.attempt for t in cb[c]]]
    if uneven:
        notes.append(f"attempts differ in {_cases(uneven)} (case means compared, no per-attempt pairing)")
    if a.plan.skill != b.plan.skill:
        notes.append(f"different skills: A {a.plan.skill}, B {b.plan.skill} (cases paired by id)")
    if a.plan.grading_mode != b.plan.grading_mode:
        notes.append(f"graded differently: A {a.plan.grading_mode}, B {b.plan.grading_mode}")
    if a.plan.pass_threshold != b.plan.pass_threshold:
        notes.append(f"pass thresholds differ: A {a.plan.pass_threshold}, B {b.plan.pass_threshold} (McNemar, pass@k)")
    if a.plan.n_attempts != b.plan.n_attempts:
        notes.append(
            f"attempts per case differ: A {a.plan.n_attempts}, B {b.plan.n_attempts} (each side's pass@k is at its own k)"
        )
    for name, side in (("A", a), ("B", b)):
        if side.selection:
            notes.append(f"{name} is a partial run: {side.selection} (a -k/-m/--max-cases selection)")
    return notes


def compare_sides(a: Side, b: Side) -> Comparison:
    """B minus A, paired as the session pairs Skill Lift (B in the with-skill place, A in the baseline's)."""
    cond_a, cond_b = a.condition, b.condition
    sum_a, pass_a = arm_summary(cond_a, a.plan)
    sum_b, pass_b = arm_summary(cond_b, b.plan)
    lift, _ = agent_lift(cond_b, cond_a, pass_b, pass_a, sum_b, sum_a, b.plan)
    ca, cb = _attempts(a), _attempts(b)
    ran_a, ran_b = _ran_cases(a), _ran_cases(b)
    cases = [
        _case_delta(c, ca.get(c, []), cb.get(c, []), c in ran_a, c in ran_b)
        for c in sorted(set(ca) | set(cb) | ran_a | ran_b, key=natural_key)
    ]
    measures = [_measure(d, lift.dimensions.get(d)) for d in DIMENSIONS] + [_measure("overall", lift.overall)]
    return Comparison(lift, measures, cases, _pairing(a, b, ca, cb))


# ----------------------------------------------------------------------------------------------- print


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "N/A" if signed else "NO SCORE"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _cell(value: float | None, missing: str | None) -> str:
    """A side's cell: its mean, else why it has none (a case row), else NO SCORE."""
    return _fmt(value) if value is not None or missing is None else missing


def _ci(d: Delta) -> str:
    return f"[{d.ci95[0]:+.4f}, {d.ci95[1]:+.4f}]" if d.ci95 else "no interval"


def _line(d: Delta, label_width: int) -> str:
    flag = "!" if d.insufficient else ""
    return (
        f"  {d.name[:label_width]:<{label_width}} {_cell(d.a, d.a_missing):>10} {_cell(d.b, d.b_missing):>10} "
        f"{_fmt(d.delta, True):>9} "
        f"{_ci(d):<20} n={d.n}{flag}"
    ).rstrip()


def _tests(result: Comparison) -> list[str]:
    mc, pk = result.lift.mcnemar, result.lift.pass_at_k
    p = "N/A" if mc.p_value is None else f"{mc.p_value:.4f}"
    return [
        f"McNemar (per-case pass): passes only in B {mc.only_with_skill}, only in A {mc.only_without_skill}, "
        f"both {mc.both_pass}, neither {mc.both_fail}; exact p = {p}",
        f"pass@k: A {_fmt(pk.without_skill)}, B {_fmt(pk.with_skill)}, delta {_fmt(pk.delta, True)}",
    ]


def _case_pairing(result: Comparison) -> str:
    """How the case rows pair attempts: by number, unless a pairing note says some cases' attempts differ."""
    if any(note.startswith("attempts differ") for note in result.pairing):
        return "attempts paired by number where both sides ran the same ones, else case means"
    return "attempts paired by number"


def render_comparison(a: Side, b: Side, result: Comparison) -> list[str]:
    lines = [f"A: {a.label}", f"B: {b.label}", *(f"  {note}" for note in result.pairing), ""]
    lines += [
        "By dimension (paired over cases; B - A, 95% interval)",
        f"  {'measure':<22} {'A':>10} {'B':>10} {'delta':>9} {'interval':<20} pairs",
    ]
    lines += [_line(d, 22) for d in result.measures]
    lines += ["", *_tests(result), ""]
    lines += [f"By case (overall; {_case_pairing(result)})"]
    lines += [f"  {'case':<22} {'A':>10} {'B':>10} {'delta':>9} {'interval':<20} attempts"]
    lines += [_line(d, 22) for d in result.cases]
    lines.append(
        f"  ! fewer than {MIN_PAIRS} pairs (dimensions) or unequal/single attempts (cases): no firm conclusion"
    )
    return lines


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(a: Side, b: Side, result: Comparison) -> list[str]:
    lines = [f"**A:** `{a.label}`  ", f"**B:** `{b.label}`", "", *(f"- {_md_cell(n)}" for n in result.pairing), ""]
    lines += ["| measure | A | B | B - A | 95% interval | pairs |", "| --- | --- | --- | --- | --- | --- |"]
    for d in result.measures:
        few = " (few)" if d.insufficient else ""
        lines.append(f"| {d.name} | {_fmt(d.a)} | {_fmt(d.b)} | {_fmt(d.delta, True)} | {_ci(d)} | {d.n}{few} |")
    lines += ["", *(f"- {t}" for t in _tests(result)), ""]
    lines += ["| case | A | B | B - A | 95% interval | attempts |", "| --- | --- | --- | --- | --- | --- |"]
    for d in result.cases:
        a_cell, b_cell = _cell(d.a, d.a_missing), _cell(d.b, d.b_missing)
        lines.append(f"| {_md_cell(d.name)} | {a_cell} | {b_cell} | {_fmt(d.delta, True)} | {_ci(d)} | {d.n} |")
    return lines


def as_json(a: Side, b: Side, result: Comparison) -> dict[str, object]:
    return {
        "a": a.label,
        "b": b.label,
        "pairing": result.pairing,
        "measures": [asdict(d) for d in result.measures],
        "cases": [asdict(d) for d in result.cases],
        "mcnemar": result.lift.mcnemar.model_dump(mode="json"),
        "pass_at_k": result.lift.pass_at_k.model_dump(mode="json"),
        "lift": result.lift.model_dump(mode="json"),
    }


def _names(value: str | None) -> list[str] | None:
    return [part.strip() for part in value.split(",") if part.strip()] if value else None


def run_compare_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="skilleval compare", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="two run folders (or result.json files, results roots, skill folders: their latest run); one run with "
        "--agents A,B or --arms X,Y; or one results root: its two newest succeeded runs",
    )
    parser.add_argument("--agents", help="A,B: two agents or variants (of one run, or A in RUN_A and B in RUN_B)")
    parser.add_argument("--arms", help="X,Y: two arms (of one run, or X in RUN_A and Y in RUN_B); default with_skill")
    parser.add_argument("--arm", choices=ALL_ARMS, help=argparse.SUPPRESS)  # the earlier spelling of one arm
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), md or json")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the earlier --format json
    args = parser.parse_args(argv)
    arms = _names(args.arms) or ([args.arm] if args.arm else None)
    unknown = [arm for arm in arms or [] if arm not in ALL_ARMS]
    if unknown:
        print(f"skilleval compare: --arms {','.join(unknown)}: expected {', '.join(ALL_ARMS)}", file=sys.stderr)
        return 2
    fmt = "json" if args.json else args.format
    try:
        pairs = resolve_sides(args.runs, _names(args.agents), arms)
    except (CompareError, RunFolderError) as error:
        print(f"skilleval compare: {error}", file=sys.stderr)
        return 2
    out: list[dict[str, object]] = []
    for a, b in pairs:
        result = compare_sides(a, b)
        if fmt == "json":
            out.append(as_json(a, b, result))
        else:
            render = render_markdown if fmt == "md" else render_comparison
            print("\n".join(render(a, b, result)) + "\n")
    if fmt == "json":
        print(json.dumps(out, indent=2))
    return 0
