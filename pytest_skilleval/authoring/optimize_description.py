"""`skilleval optimize-description SKILL_DIR`: propose better SKILL.md descriptions and keep the one that triggers best.

Each candidate (the current description first) is measured with real trials: a copy of the skill carrying that
description, run by `pytest --skill-eval COPY -m skilleval_trigger` with the run options given, its distractors the
original skill's siblings (or `--distractor-skills`). The proposer sees the best candidate's train failures only;
every candidate's held-out test score is reported. The winner goes to `<run>/description-proposal.md` with the
scores and a diff; SKILL.md changes only with `--write`.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_skilleval.authoring.description_proposer import (
    Failure,
    ProposerError,
    description_of,
    front_matter,
    prompt_for,
    propose,
    with_description,
)
from pytest_skilleval.results.triggering import TRIGGERED_AT, QueryRate, TriggeringAgent, subset_scores
from pytest_skilleval.skill.dataset import DatasetError
from pytest_skilleval.skill.triggers import TriggerSet, find_trigger_set, load_trigger_set

MIN_HELD_OUT = 4
PROPOSAL_FILE = "description-proposal.md"
HOW_TO_SPLIT = (
    'mark at least {n} queries of {path} with "split": "test" (should-trigger and should-not-trigger ones); the '
    "proposer never sees them, so their score says whether a new description generalises"
)


class OptimizeError(Exception):
    """A refusal or failure, said in one line."""


@dataclass
class Candidate:
    index: int
    description: str
    train: dict[str, float | None] = field(default_factory=dict)
    test: dict[str, float | None] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    cost_usd: float | None = None
    error: str | None = None
    proposer_cost_usd: float | None = 0.0  # what asking for this description cost (0.0: the current one, or cached)
    cached: bool = False


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skilleval optimize-description",
        description="Propose better SKILL.md descriptions with an LLM and measure each on the trigger set.",
    )
    parser.add_argument("skill_dir", type=Path)
    parser.add_argument("--model", help="the proposer: a litellm model name (default: the judge model variables)")
    parser.add_argument("--agents", default="codex")
    parser.add_argument("--agent-model", action="append", default=[], metavar="AGENT=MODEL")
    parser.add_argument("--agent-kwarg", action="append", default=[], metavar="AGENT:KEY=VALUE")
    parser.add_argument("--env-mode", default="docker")
    parser.add_argument("--ek", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--distractor-skills", metavar="DIR")
    parser.add_argument(
        "--iterations",
        type=int,
        default=3,
        help="proposals to ask for (default 3; 0: measure the current description only, no --model needed)",
    )
    parser.add_argument("--n-attempts", type=int, default=1, help="attempts per query and candidate (default 1)")
    parser.add_argument("--max-cost", type=float, metavar="USD", help="stop once the reported cost reaches this")
    parser.add_argument("--results-dir", metavar="DIR", help="default: <skill>/evals/results/")
    parser.add_argument("--judge-cache", default="on", choices=("on", "off", "read", "write"))
    parser.add_argument("--write", action="store_true", help="put the winning description into SKILL.md")
    return parser


def held_out_split(triggers: TriggerSet) -> tuple[set[str], set[str]]:
    """The train and held-out query ids, or OptimizeError when the held-out split is too small or takes all."""
    test = {query.id for query in triggers.queries if query.split == "test"}
    if len(test) < MIN_HELD_OUT:
        raise OptimizeError(
            f"{triggers.path}: {len(test)} held-out queries; the optimiser needs at least {MIN_HELD_OUT}: "
            + HOW_TO_SPLIT.format(n=MIN_HELD_OUT, path=triggers.path.name)
        )
    train = {query.id for query in triggers.queries if query.id not in test}
    if not train:
        raise OptimizeError(f"{triggers.path}: every query is held out; leave some without a split (or split: train)")
    return train, test


def _pytest_args(args: argparse.Namespace, copy: Path, results: Path, distractors: Path) -> list[str]:
    argv = [sys.executable, "-m", "pytest", "--skill-eval", str(copy), "-p", "no:cacheprovider", "-q"]
    argv += ["-m", "skilleval_trigger", "--results-dir", str(results), "--distractor-skills", str(distractors)]
    argv += ["--agents", args.agents, "--env-mode", args.env_mode, "--n-attempts", str(args.n_attempts)]
    for flag, values in (("--agent-model", args.agent_model), ("--agent-kwarg", args.agent_kwarg), ("--ek", args.ek)):
        for value in values:
            argv += [flag, value]
    return argv


def _measure(
    args: argparse.Namespace, skill_dir: Path, work: Path, candidate: Candidate, train: set[str], test: set[str]
) -> None:
    """Run the trigger set on a copy of the skill with the candidate's description; fill its scores."""
    copy = work / f"candidate-{candidate.index}" / skill_dir.name
    shutil.copytree(skill_dir, copy, ignore=shutil.ignore_patterns("results", "__pycache__", ".git"), symlinks=True)
    manifest = copy / "SKILL.md"
    manifest.write_text(with_description(manifest.read_text(encoding="utf-8"), candidate.description), "utf-8")
    results = work / f"candidate-{candidate.index}" / "results"
    distractors = Path(args.distractor_skills).resolve() if args.distractor_skills else skill_dir.parent
    done = subprocess.run(
        _pytest_args(args, copy, results, distractors), cwd=copy.parent, capture_output=True, text=True, check=False
    )
    documents = sorted(results.glob(f"{skill_dir.name}/2*/result.json"))
    section = json.loads(documents[-1].read_text(encoding="utf-8")).get("triggering", {}) if documents else {}
    if not section:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        candidate.error = f"no trigger results (pytest exit {done.returncode}): {tail}"
        return
    queries = [QueryRate.model_validate(q) for agent in section.values() for q in agent["queries"]]
    candidate.train = subset_scores(queries, train)
    candidate.test = subset_scores(queries, test)
    costs = [TriggeringAgent.model_validate(agent).cost_usd for agent in section.values()]
    candidate.cost_usd = sum(cost for cost in costs if cost is not None) if any(c is not None for c in costs) else None
    texts = {query.id: query for query in load_trigger_set(find_trigger_set(copy / "evals")).queries}  # type: ignore[arg-type]
    candidate.failures = [
        Failure(texts[q.id].query, q.should_trigger)
        for q in queries
        if q.id in train and q.trigger_rate is not None and (q.trigger_rate >= TRIGGERED_AT) != q.should_trigger
    ]


def _score(candidate: Candidate) -> float:
    accuracy = candidate.train.get("accuracy")
    return -1.0 if accuracy is None else accuracy


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.6f}"


def _total(values: list[float | None]) -> float | None:
    """The sum, or None when any part is unknown (missing is never zero)."""
    return None if any(value is None for value in values) else sum(value or 0.0 for value in values)


def _cost_lines(candidates: list[Candidate], model: str | None, max_cost: float | None) -> list[str]:
    """What the proposer (`model`; None: none was needed, --iterations 0) and the trials cost, per candidate and in
    all, against --max-cost."""
    asked = candidates[1:]
    proposer = _total([c.proposer_cost_usd for c in asked])
    trials = _total([c.cost_usd for c in candidates if not c.error])
    unknown = [c.index for c in asked if c.proposer_cost_usd is None]
    cached = sum(1 for c in asked if c.cached)
    asking = (
        f"Proposer ({model}): {_usd(proposer)} for {len(asked) - cached} request(s), {cached} answered from the cache"
        if model is not None
        else "Proposer: none asked (--iterations 0)"
    )
    lines = [
        "## Cost",
        "",
        f"{asking}; trials (the agents' reported cost): {_usd(trials)}; --max-cost: "
        f"{'none' if max_cost is None else _usd(max_cost)}.",
    ]
    if unknown:
        lines.append(
            f"The proposer's cost is unknown for candidate(s) {', '.join(map(str, unknown))}: litellm's installed "
            "price map does not price this model, so --max-cost could not count those requests."
        )
    lines += ["", "| candidate | proposer cost | trials cost |", "| --- | --- | --- |"]
    lines += [f"| {c.index} | {_usd(c.proposer_cost_usd)} | {_usd(c.cost_usd)} |" for c in candidates]
    return [*lines, ""]


def _report(
    skill_dir: Path,
    candidates: list[Candidate],
    best: Candidate,
    original: str,
    written: bool,
    costs: Sequence[str] = (),
) -> str:
    updated = with_description(original, best.description)
    diff = "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True),
            updated.splitlines(keepends=True),
            f"{skill_dir.name}/SKILL.md",
            f"{skill_dir.name}/SKILL.md (proposed)",
        )
    )
    rows = [
        f"| {c.index} | {_cell(c.train.get('accuracy'))} | {_cell(c.train.get('precision'))} | "
        f"{_cell(c.train.get('recall'))} | {_cell(c.test.get('accuracy'))} | {_cell(c.test.get('precision'))} | "
        f"{_cell(c.test.get('recall'))} | {json.dumps(c.description)}{' (error: ' + c.error + ')' if c.error else ''} |"
        for c in candidates
    ]
    state = "written to SKILL.md (--write)" if written else "SKILL.md unchanged (pass --write to apply it)"
    return "\n".join(
        [
            f"# Description proposal for {skill_dir.name}",
            "",
            f"Winner: candidate {best.index} (train accuracy {_cell(best.train.get('accuracy'))}, held-out test "
            f"accuracy {_cell(best.test.get('accuracy'))}); {state}.",
            "",
            "Candidate 0 is the current description. Train scores chose the winner; test scores are held out (the "
            "proposer never saw those queries).",
            "",
            "| candidate | train accuracy | train precision | train recall | test accuracy | test precision | "
            "test recall | description |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
            *rows,
            "",
            "```diff",
            diff.rstrip("\n") or "(no change)",
            "```",
            "",
            *costs,
        ]
    )


def optimize(args: argparse.Namespace, out: Any = sys.stdout) -> int:
    from pytest_skilleval.results.tree import resolve_results_root
    from verifier.judges.cache import JudgeCache
    from verifier.judges.config import load_config

    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # the proposer is priced by the installed map, never fetched
    skill_dir = args.skill_dir.resolve()
    manifest = skill_dir / "SKILL.md"
    if not manifest.is_file():
        raise OptimizeError(f"{skill_dir}: no SKILL.md here")
    path = find_trigger_set(skill_dir / "evals")
    if path is None:
        raise OptimizeError(f"{skill_dir}/evals: no trigger set; write evals/triggers.json (docs/triggering.md)")
    try:
        triggers = load_trigger_set(path)
    except DatasetError as error:
        raise OptimizeError(str(error)) from None
    train, test = held_out_split(triggers)
    original = manifest.read_text(encoding="utf-8")
    try:
        current = description_of(original)
        _, _, body = front_matter(original)
    except ValueError as error:
        raise OptimizeError(f"{manifest}: {error}") from None
    root = resolve_results_root(skill_dir, args.results_dir, os.environ)
    config = load_config(model=args.model, cache_mode=args.judge_cache, cache_dir=str(root / ".judge-cache"))
    if config is None and args.iterations > 0:  # --iterations 0 only measures the current description
        raise OptimizeError("no proposer model: pass --model MODEL (a litellm name) or set LLM_JUDGE_MODEL")
    cache = JudgeCache(root / ".judge-cache", args.judge_cache)
    run = root / f"optimize-{datetime.now(UTC).strftime('%Y%m%d_%H%M%S')}-{os.getpid()}"
    work = run / "candidates"
    work.mkdir(parents=True)
    spent = 0.0

    def over_budget() -> bool:
        return args.max_cost is not None and spent >= args.max_cost

    candidates = [Candidate(0, current)]
    _measure(args, skill_dir, work, candidates[0], train, test)
    spent += candidates[0].cost_usd or 0.0
    print(f"candidate 0 (current): train accuracy {_cell(candidates[0].train.get('accuracy'))}", file=out)
    for index in range(1, args.iterations + 1):
        if over_budget():
            print(f"stopping: --max-cost {args.max_cost} reached (spent {spent:.4f} USD)", file=out)
            break
        best = max(candidates, key=_score)
        if best.train.get("accuracy") == 1.0:
            print("stopping: a candidate is right on every train query", file=out)
            break
        prompt = prompt_for(
            skill_dir.name,
            best.description,
            body,
            best.failures,
            [(c.description, c.train.get("accuracy")) for c in candidates],
        )
        assert config is not None  # checked above: iterations ask for one
        try:
            proposal = propose(prompt, config, cache)
        except ProposerError as error:
            raise OptimizeError(str(error)) from None
        candidate = Candidate(index, proposal.description, proposer_cost_usd=proposal.cost_usd, cached=proposal.cached)
        spent += proposal.cost_usd or 0.0  # priced by litellm's installed price map, as the judges' requests are
        candidates.append(candidate)
        if over_budget():
            print(f"not measured: --max-cost {args.max_cost} reached by the proposer (spent {spent:.6f} USD)", file=out)
            candidate.error = "not measured: --max-cost reached"
            break
        _measure(args, skill_dir, work, candidate, train, test)
        spent += candidate.cost_usd or 0.0
        source = "cached" if proposal.cached else "proposed"
        print(f"candidate {index} ({source}): train accuracy {_cell(candidate.train.get('accuracy'))}", file=out)
    best = max(candidates, key=_score)
    written = False
    if args.write and best.index != 0:
        manifest.write_text(with_description(original, best.description), encoding="utf-8")
        written = True
    report = run / "description-proposal.md"
    costs = _cost_lines(candidates, config.model if config is not None else None, args.max_cost)
    report.write_text(_report(skill_dir, candidates, best, original, written, costs), encoding="utf-8")
    print(
        f"winner: candidate {best.index}: train accuracy {_cell(best.train.get('accuracy'))}, held-out test "
        f"accuracy {_cell(best.test.get('accuracy'))}",
        file=out,
    )
    print(f"proposal: {report}", file=out)
    return 0


def run_optimize_command(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.iterations < 0 or args.n_attempts < 1:
        print("skilleval optimize-description: --iterations >= 0 and --n-attempts >= 1", file=sys.stderr)
        return 2
    try:
        return optimize(args)
    except OptimizeError as error:
        print(f"skilleval optimize-description: {error}", file=sys.stderr)
        return 1
