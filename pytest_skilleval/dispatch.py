"""Gives each item its trial record as the trial's fate says (harbor/fate.py: run, reuse, regrade, skip), decided
once per trial; a trial to run goes through the in-process scheduler with look-ahead, or serially through a runner
that a conftest supplied (any object with `run(spec)`).

The look-ahead is the items this process will run next: `session.items` after this one, or, under xdist, the
worker's own queue (the indices the controller sent it), so a worker never starts another worker's trial.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilleval.collect import SkillEvalItem
from pytest_skilleval.harbor.budget import BudgetReached
from pytest_skilleval.harbor.fate import Fate, Regrade, Reuse, Run, Skip, StopOnPass, decide
from pytest_skilleval.harbor.scheduler import TrialScheduler
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.resume import UnrunTrials, unrun_trials
from pytest_skilleval.session import SkillEvalSession
from pytest_skilleval.skill.plan import TrialSpec

if TYPE_CHECKING:
    from pytest_skilleval.harbor.trial_processes import TrialProcesses

SCHEDULER_KEY = pytest.StashKey[TrialScheduler]()
PROCESSES_KEY = pytest.StashKey["TrialProcesses"]()
STOP_ON_PASS_KEY = pytest.StashKey[StopOnPass]()
POSITIONS_KEY = pytest.StashKey[dict[str, int]]()
FATES_KEY = pytest.StashKey[dict[str, Fate]]()
UNRUN_KEY = pytest.StashKey[dict[Path, UnrunTrials | None]]()
QUEUE_HOLDER_KEY = pytest.StashKey[Any]()
_UNSEEN = object()


def _queue_holder(config: pytest.Config) -> Any:
    """pytest-xdist's worker plugin, which holds the worker's queue of items, or None outside a worker: looked for
    among every plugin once per run, not once per item."""
    holder = config.stash.get(QUEUE_HOLDER_KEY, _UNSEEN)
    if holder is _UNSEEN:
        holder = next(
            (
                plugin
                for plugin in config.pluginmanager.get_plugins()
                if hasattr(getattr(plugin, "torun", None), "lock") and hasattr(plugin, "nextitem_index")
            ),
            None,
        )
        config.stash[QUEUE_HOLDER_KEY] = holder
    return holder


def _worker_queue(config: pytest.Config) -> list[int] | None:
    """Under xdist: the indices into session.items this worker has been given and not started, in order."""
    plugin = _queue_holder(config)
    if plugin is None:
        return None
    upcoming = [plugin.nextitem_index]
    with plugin.torun.lock() as items:
        upcoming.extend(items)
    return [index for index in upcoming if isinstance(index, int)]


def upcoming_items(item: pytest.Item, count: int) -> list[SkillEvalItem]:
    """The next `count` skilleval items this process will run after `item`."""
    if count <= 0:
        return []
    session = item.session
    indices: Sequence[int] | None = _worker_queue(session.config)
    if indices is None:
        positions = session.stash.get(POSITIONS_KEY, None)
        if positions is None:
            positions = {candidate.nodeid: index for index, candidate in enumerate(session.items)}
            session.stash[POSITIONS_KEY] = positions
        start = positions.get(item.nodeid, len(session.items)) + 1
        indices = range(start, min(start + count * 2, len(session.items)))
    found = [session.items[index] for index in indices if index < len(session.items)]
    return [candidate for candidate in found if isinstance(candidate, SkillEvalItem)][:count]


def _scheduler(session: pytest.Session, runner: Any, state: SkillEvalSession) -> TrialScheduler | None:
    if not hasattr(runner, "run_async"):
        return None
    scheduler = session.stash.get(SCHEDULER_KEY, None)
    if scheduler is None:
        processes = _trial_processes(runner, state)
        if processes is not None:
            session.stash[PROCESSES_KEY] = processes
        scheduler = TrialScheduler(
            _routed(runner, state, processes),
            lambda path: state.skill(path).settings,
            stop_on_pass(session),
            state.budget,
            closing=processes.close if processes is not None else None,
        )
        session.stash[SCHEDULER_KEY] = scheduler
    return scheduler


def _trial_processes(runner: Any, state: SkillEvalSession) -> TrialProcesses | None:
    """The trial processes (--trial-processes), when a skill asks for them and the runner is the plugin's own."""
    from pytest_skilleval.harbor.runner import SkillEvalRunner

    if not isinstance(runner, SkillEvalRunner):
        return None
    settings = {}
    for path in state.skills:
        with contextlib.suppress(Exception):  # a skill whose settings do not load has no trial to run
            settings[path] = state.skill(path).settings
    workers = _xdist_workers(state.config)
    count = max((trial_process_count(found.trial_processes, workers=workers) for found in settings.values()), default=0)
    if count == 0:
        return None
    from pytest_skilleval.harbor.trial_processes import TrialProcesses
    from pytest_skilleval.pytest_outputs import pytest_outputs

    return TrialProcesses(count, runner.run_dir, runner.run_id, settings, pytest_outputs(state.config))


def trial_process_count(asked: int | str, cores: int | None = None, workers: int = 1) -> int:
    """`--trial-processes`: N as asked; `auto`: one per core this process may run on, shared among the session's
    `workers` (xdist's), and none when that leaves fewer than two (measured: one trial process beside pytest's is
    slower than none, since it then carries every trial's work alone)."""
    if asked != "auto":
        return int(asked)
    if cores is None:
        from pytest_skilleval.harbor.trial_processes import usable_cores

        cores = usable_cores()
    share = cores // max(workers, 1)
    return share if share >= 2 else 0


def _xdist_workers(config: pytest.Config) -> int:
    """How many xdist workers share this machine: this session's (its worker input), not an environment variable
    a parent pytest run left behind."""
    workerinput = getattr(config, "workerinput", None)
    return int(workerinput.get("workercount", 1)) if isinstance(workerinput, dict) else 1


def _routed(runner: Any, state: SkillEvalSession, processes: TrialProcesses | None = None) -> Any:
    """The scheduler's trial function: in a trial process when the skill asks for them (and its trials are not
    Docker's, whose Ctrl+C clean-up lives in this process), else here on the loop."""
    from pytest_skilleval.harbor.trial_driver import run_spec

    workers = _xdist_workers(state.config)
    sent: dict[Path, bool] = {}  # by skill folder: decided on its first trial (`auto` reads the usable cores)

    def in_processes(skill_dir: Path) -> bool:
        found = sent.get(skill_dir)
        if found is None:
            settings = state.skill(skill_dir).settings
            asked = trial_process_count(settings.trial_processes, workers=workers)
            found = sent[skill_dir] = asked > 0 and settings.env_mode != "docker"
        return found

    async def run(spec: TrialSpec) -> Any:
        if processes is not None and in_processes(spec.skill_dir):
            return await processes.run(spec)
        return await run_spec(runner, spec)

    return run


def stop_on_pass(session: pytest.Session) -> StopOnPass:
    tracker = session.stash.get(STOP_ON_PASS_KEY, None)
    if tracker is None:
        tracker = session.stash[STOP_ON_PASS_KEY] = StopOnPass()
    return tracker


def fate_of(spec: TrialSpec, state: SkillEvalSession, session: pytest.Session) -> Fate:
    """The trial's fate, decided once: from the resumed or regraded run and the attempts that passed so far. A
    passing record reused from the resumed run counts for --stop-on-pass as it did in the run that stored it."""
    if spec.source == "trigger":  # no --stop-on-pass; --regrade reads the verdict again from the stored trajectory
        return decide(spec, state.stored_trigger(spec), state.regrade_source(spec.skill_dir), None)
    tracker = stop_on_pass(session)
    passed_at = tracker.passed_at(spec) if state.skill(spec.skill_dir).settings.stop_on_pass else None
    fate = decide(spec, state.stored_record(spec), state.regrade_source(spec.skill_dir), passed_at)
    if isinstance(fate, Reuse) and isinstance(fate.record, TrialRecord):
        tracker.note(spec, fate.record)
    return fate


def _decided(session: pytest.Session) -> dict[str, Fate]:
    """The fates decided ahead (for the items the scheduler looks ahead to), by node id, until their item runs."""
    decided = session.stash.get(FATES_KEY, None)
    if decided is None:
        decided = session.stash[FATES_KEY] = {}
    return decided


def trial_record(item: SkillEvalItem, runner: Any, state: SkillEvalSession) -> Any:
    """This item's record (a `TriggerRecord` for a trigger item), as its fate says; while it runs, the trials of the items that follow and will run are
    started too, unless the run is stopping."""
    session = item.session
    decided = _decided(session)
    fate = decided.pop(item.nodeid, None) or fate_of(item.spec, state, session)
    budget = state.budget(item.spec.skill_dir)
    if isinstance(fate, Reuse) and budget is not None and item.nodeid not in state.budget_counted:
        state.budget_counted.add(item.nodeid)
        budget.add(fate.record)  # a resumed run's trial was paid for
    if isinstance(fate, Reuse | Skip):
        return fate.record
    if isinstance(fate, Regrade):
        _skip_if_never_run(item, fate.source_run)
        if item.spec.source == "trigger":
            from pytest_skilleval.harbor.trigger_regrade import regrade_trigger

            return regrade_trigger(item.spec, fate.source_run, _regrade_dir(runner))
        return _regrade(item, fate.source_run, runner, state)
    try:
        return _run_trial(item, runner, state, decided)
    except BudgetReached as reached:
        pytest.skip(str(reached))


def _run_trial(item: SkillEvalItem, runner: Any, state: SkillEvalSession, decided: dict[str, Fate]) -> TrialRecord:
    """Run this item's trial, and start the ones after it that will run (look-ahead), unless the run is stopping."""
    session = item.session
    scheduler = _scheduler(session, runner, state)
    if scheduler is None:
        if item.spec.source == "trigger":
            from pytest_skilleval.harbor.runner import TrialError

            raise TrialError("trigger items need the plugin's own runner (the skilleval_runner fixture was replaced)")
        budget = state.budget(item.spec.skill_dir)
        if budget is not None:
            budget.check()
        record = runner.run(item.spec)
        if budget is not None:
            budget.add(record)
        stop_on_pass(session).note(item.spec, record)
        return record
    scheduler.submit(item.spec)  # first: the look-ahead sees it as in flight
    if not (session.shouldstop or session.shouldfail):
        window = scheduler.window(item.spec) - 1
        ordered = state.skill(item.spec.skill_dir).settings.stop_on_pass
        # Under --stop-on-pass an attempt whose earlier attempt is still in flight would only wait: look further.
        for upcoming in upcoming_items(item, window * 4 if ordered else window):
            if window <= 0:
                break
            if upcoming.nodeid not in decided:
                decided[upcoming.nodeid] = fate_of(upcoming.spec, state, session)
            if not isinstance(decided[upcoming.nodeid], Run):
                continue
            if ordered and scheduler.waits_for_earlier_attempt(upcoming.spec):
                continue
            scheduler.submit(upcoming.spec)
            window -= 1
    return scheduler.result(item.spec)


def _skip_if_never_run(item: SkillEvalItem, source: Path) -> None:
    """--regrade of a run that ran part of its plan (-k, -m, --max-cases, a stop): a trial it never ran has nothing
    to grade, so its item is skipped saying so (an error would fail the regrade for what was never asked of it)."""
    known = item.session.stash.setdefault(UNRUN_KEY, {})
    if source not in known:
        known[source] = unrun_trials(source)
    unrun, spec = known[source], item.spec
    if unrun is None:
        return
    if spec.source == "trigger":
        never = unrun.trigger_trial(spec.agent, spec.case_id, spec.attempt)
    else:
        never = unrun.case_trial(spec.agent, spec.arm, spec.case_id, spec.attempt)
    if never:
        pytest.skip(f"--regrade: run {source.name} did not run this trial (it ran part of its plan); nothing to grade")


def _regrade_dir(runner: Any) -> Path:
    """Where a regrade lays out the stored trajectories it grades: the runner's scratch folder, else a new one."""
    return Path(getattr(runner, "run_dir", None) or tempfile.mkdtemp(prefix="skilleval-regrade-")) / "_regrade"


def _regrade(item: SkillEvalItem, source: Path, runner: Any, state: SkillEvalSession) -> TrialRecord:
    """--regrade: today's host-side graders on the stored trial; the agent is not run."""
    from pytest_skilleval.harbor.regrade import Regrader
    from pytest_skilleval.skill.judging import verifier_judge_kwargs

    skill = state.skill(item.spec.skill_dir)
    settings = skill.settings
    work = _regrade_dir(runner)
    judge = (
        None
        if settings.grading_mode == "custom_only"
        else verifier_judge_kwargs(settings, state.results_root(item.spec.skill_dir))
    )
    rerun = getattr(runner, "regrade", None)  # a conftest's own runner may not have it: stored rewards are kept
    return Regrader(source, work, rerun if callable(rerun) else None).regrade(
        item.spec, settings, judge, has_grader=skill.grader is not None
    )


def reap(session: pytest.Session) -> None:
    """Wait for the trial processes stopped by `shutdown` to exit (called once the results are written)."""
    processes = session.stash.get(PROCESSES_KEY, None)
    if processes is not None:
        del session.stash[PROCESSES_KEY]
        processes.reap()


def shutdown(session: pytest.Session) -> None:
    """Cancel trials that were started ahead for items that will not run (-x, --maxfail, Ctrl+C).

    Cancelled Docker trials remove their containers, networks and volumes; a Ctrl+C during that wait skips it and
    says what may be left and how to find it.
    """
    from pytest_skilleval.harbor.docker_cleanup import active_projects, leftovers_message, remove_project
    from pytest_skilleval.lifecycle import say

    scheduler = session.stash.get(SCHEDULER_KEY, None)
    if scheduler is None:
        return
    del session.stash[SCHEDULER_KEY]
    running = active_projects()
    if running:
        say(
            session.config,
            f"skilleval: stopping; removing the Docker containers of {len(running)} running "
            "trial(s) (Ctrl+C again to skip)",
        )
    try:
        scheduler.shutdown()
        # A trial whose wait was interrupted is no longer the scheduler's to cancel: remove what is left of it.
        for project in active_projects():
            remove_project(project)
    except KeyboardInterrupt:
        left = active_projects() or running
        if left:
            say(session.config, leftovers_message(left))
        raise
    if running:
        say(session.config, "skilleval: removed the Docker containers, networks and volumes of the stopped trials")
