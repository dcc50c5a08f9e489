"""Trials in flight inside one pytest process: one event loop, bounded by --n-concurrent and --max-agents.

pytest runs items one at a time; a trial is mostly waiting (on a model, a container, a sandboxed command). So when an
item's setup asks for its trial, the items that come next in this process are submitted too, up to the skill's
`n_concurrent`, and all of them run on the scheduler's loop while pytest waits for the current one. Items still report
one by one in pytest's order, each with exactly the record a serial run would give it.

The loop runs on the thread that waits (pytest's main thread), as `harbor run -n N` keeps its N trials on the main
thread's loop: between two items, while pytest reports one and sets up the next (a few milliseconds), the trials'
Python side pauses and their commands run on. A loop on a thread of its own runs through those milliseconds but
competes with pytest's thread for the interpreter lock, and each hand-over between the threads (a trial's result to
pytest, a worker thread's answer to the loop) can wait for a lock switch, which made the trials slower in
benchmarks/bench_vs_harbor.py (figures in docs/performance.md).

A trial is submitted only when its fate (harbor/fate.py) is to run. Stop-on-pass is checked again when it is about
to start, not when it is submitted, and under it attempt k of a case waits for this process's earlier attempts of
that case to end: a pass skips it, whatever the window. The look-ahead fills the window with other cases' attempts
meanwhile. Across xdist workers attempts of one case can still overlap (each worker orders only its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
import threading
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TypeVar, cast

from pytest_skilleval.harbor.budget import Budget
from pytest_skilleval.harbor.fate import StopOnPass, condition_key
from pytest_skilleval.harbor.interrupts import import_safe_int_handler, is_plain_int_handler
from pytest_skilleval.harbor.process_env import quiet_harbor_deprecations
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings

RunTrial = Callable[[TrialSpec], Awaitable[TrialRecord]]
SettingsFor = Callable[[Path], RunSettings]
CANCEL_GRACE_SECONDS = 30.0
T = TypeVar("T")


class _AgentGate:
    """At most `limit` distinct agents with trials running at once (None: no limit)."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.running: Counter[str] = Counter()
        self.changed = asyncio.Condition()

    def _may_enter(self, agent: str) -> bool:
        return self.limit is None or agent in self.running or len(self.running) < self.limit

    async def enter(self, agent: str) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: self._may_enter(agent))
            self.running[agent] += 1

    async def leave(self, agent: str) -> None:
        async with self.changed:
            self.running[agent] -= 1
            if self.running[agent] <= 0:
                del self.running[agent]
            self.changed.notify_all()


class TrialScheduler:
    """Owns the loop; `submit` is idempotent per node id, `result` runs the loop until that trial is done."""

    def __init__(
        self,
        run_trial: RunTrial,
        settings_for: SettingsFor,
        stop_on_pass: StopOnPass,
        budget_for: Callable[[Path], Budget | None] = lambda _: None,
        closing: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._budget_for = budget_for
        self._closing = closing  # at shutdown, once the trials are cancelled: what ran them ends (trial processes)
        self._run_trial = run_trial
        self._settings_for = settings_for
        self._stop_on_pass = stop_on_pass
        self._tasks: dict[str, asyncio.Task[TrialRecord]] = {}
        # Every attempt submitted, by case/agent/arm condition: --stop-on-pass orders the attempts of one condition.
        self._attempts: dict[tuple[Path, str, str, str], dict[int, asyncio.Task[TrialRecord]]] = {}
        self._slots: dict[Path, asyncio.Semaphore] = {}
        self._gates: dict[Path, _AgentGate] = {}
        self._loop = asyncio.new_event_loop()
        # A signal caught by another thread still wakes the loop (as asyncio's own signal handling does), so the
        # main thread runs its handler at once instead of when the loop next wakes for something else.
        self._wakeup_read, self._wakeup_write = socket.socketpair()
        for end in (self._wakeup_read, self._wakeup_write):
            end.setblocking(False)
        self._loop.add_reader(self._wakeup_read.fileno(), self._drain_wakeups)

    def _drain_wakeups(self) -> None:
        with contextlib.suppress(OSError):
            while self._wakeup_read.recv(4096):
                pass

    def window(self, spec: TrialSpec) -> int:
        """How many trials of this skill may be in flight at once."""
        return self._settings_for(spec.skill_dir).n_concurrent

    async def _after_earlier_attempts(self, spec: TrialSpec) -> None:
        """Under --stop-on-pass, attempt k starts only once this process's earlier attempts of the same case, agent
        and arm have ended: a pass among them skips it instead of paying for it (the window meanwhile holds other
        cases' attempts, since a waiting attempt holds no slot)."""
        key = condition_key(spec)
        earlier = [
            task for attempt, task in self._attempts.get(key, {}).items() if attempt < spec.attempt and not task.done()
        ]
        if earlier:
            await asyncio.wait(earlier)

    async def _guarded(self, spec: TrialSpec) -> TrialRecord:
        settings = self._settings_for(spec.skill_dir)
        ordered = settings.stop_on_pass and spec.source != "trigger"  # a query's attempts all run
        if ordered:
            await self._after_earlier_attempts(spec)
        slots = self._slots.setdefault(spec.skill_dir, asyncio.Semaphore(settings.n_concurrent))
        gate = self._gates.setdefault(spec.skill_dir, _AgentGate(settings.max_agents))
        await gate.enter(spec.agent)
        try:
            async with slots:
                if ordered and (skipped := self._stop_on_pass.skipped_record(spec)) is not None:
                    return skipped
                budget = self._budget_for(spec.skill_dir)
                if budget is not None:
                    budget.check()  # raises BudgetReached: the trial does not start
                record = await self._run_trial(spec)
                if budget is not None:
                    budget.add(record)
        finally:
            await gate.leave(spec.agent)
        if ordered:
            self._stop_on_pass.note(spec, record)
        return record

    def submit(self, spec: TrialSpec) -> asyncio.Task[TrialRecord]:
        """Queue this trial; it starts the next time the loop runs (while pytest waits for an item)."""
        task = self._tasks.get(spec.nodeid)
        if task is None:
            task = self._tasks[spec.nodeid] = self._loop.create_task(self._guarded(spec))
            self._attempts.setdefault(condition_key(spec), {})[spec.attempt] = task
        return task

    def waits_for_earlier_attempt(self, spec: TrialSpec) -> bool:
        """Whether an earlier attempt of this trial's case, agent and arm is still in flight here (under
        --stop-on-pass it would only wait, so the look-ahead fills the window with other trials instead)."""
        attempts = self._attempts.get(condition_key(spec), {})
        return any(attempt < spec.attempt and not task.done() for attempt, task in attempts.items())

    def _run(self, awaitable: Awaitable[T]) -> T:
        future = asyncio.ensure_future(awaitable, loop=self._loop)
        with warnings.catch_warnings(), _ctrl_c_stops(self._loop, self._wakeup_write.fileno()) as interrupted:
            quiet_harbor_deprecations()
            try:
                value = self._loop.run_until_complete(future)
            except BaseException:
                # Interrupted, whatever the loop was doing: stopped by the handler, or a trial's own error when the
                # terminal's Ctrl+C also reached a child (docker compose exits 130). The run stops either way.
                if interrupted:
                    raise KeyboardInterrupt from None
                raise
            if interrupted:  # it finished in the same step as the Ctrl+C: the interrupt still stops the run
                with contextlib.suppress(RuntimeError):  # the queued loop.stop() runs now, not in shutdown()
                    self._loop.run_until_complete(asyncio.sleep(0))
                raise KeyboardInterrupt
            return value

    def result(self, spec: TrialSpec) -> TrialRecord:
        """Run the loop (every trial in flight, not only this one) until this item's trial is done; a delivered
        trial is forgotten. An interrupted wait (Ctrl+C) leaves the trial to shutdown() to cancel."""
        task = self.submit(spec)
        try:
            return self._run(task)
        finally:
            if task.done():
                self._tasks.pop(spec.nodeid, None)

    @property
    def pending(self) -> int:
        return sum(1 for task in self._tasks.values() if not task.done())

    def shutdown(self) -> None:
        """Cancel what was submitted but not delivered (queued trials never start; running ones stop through
        Harbor's cancellation, which stops their environments), then close the loop."""
        waiting = [task for task in self._tasks.values() if not task.done()]
        for task in waiting:
            task.cancel()
        self._tasks.clear()
        if self._closing is not None:
            self._run(self._closing())
        if self._drain():
            # BaseEventLoop's shutdown takes a timeout: a stuck thread is left behind, not waited on for good
            loop = cast(asyncio.BaseEventLoop, self._loop)
            self._run(loop.shutdown_default_executor(CANCEL_GRACE_SECONDS))
            self._loop.remove_reader(self._wakeup_read.fileno())
            self._loop.close()
            self._wakeup_read.close()
            self._wakeup_write.close()

    def _drain(self) -> bool:
        """Wait until the cancelled trials' tasks (and any they started) have finished their cleanup on the loop;
        True when none is left."""
        self._run(_stop_litellm_logging())
        left = [task for task in asyncio.all_tasks(self._loop) if not task.done()]
        if left:
            self._run(asyncio.wait(left, timeout=CANCEL_GRACE_SECONDS))
        return all(task.done() for task in asyncio.all_tasks(self._loop))


async def _stop_litellm_logging() -> None:
    """litellm's logging worker, started on this loop by an agent's first litellm call (terminus-2), runs until it is
    stopped: its queued callbacks are flushed, then it is stopped, so the session's end does not wait out the grace
    period on a task that never ends. Nothing is imported when no agent loaded litellm."""
    module = sys.modules.get("litellm.litellm_core_utils.logging_worker")
    if module is None:
        return
    worker = module.GLOBAL_LOGGING_WORKER
    with contextlib.suppress(Exception):
        await asyncio.wait_for(worker.flush(), CANCEL_GRACE_SECONDS)
    with contextlib.suppress(Exception):
        await worker.stop(timeout=CANCEL_GRACE_SECONDS)


@contextlib.contextmanager
def _ctrl_c_stops(loop: asyncio.AbstractEventLoop, wakeup_fd: int) -> Iterator[list[int]]:
    """While the loop runs on the main thread, Ctrl+C stops it between two steps (as asyncio.Runner's handler
    avoids a KeyboardInterrupt inside whichever coroutine runs at that moment, which could break a clean-up half-way);
    the caller raises KeyboardInterrupt to pytest, whose session end then cancels every trial through Harbor's own
    cancellation (shutdown()), saying what Docker containers it removes, as with a loop on a thread of its own.
    Another handler (the session's, once a run is interrupted) is left alone."""
    stopped: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not is_plain_int_handler(previous):
        yield stopped
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if not loop.is_running():  # a stale copy of this handler, kept by someone after the run
            import_safe_int_handler(signum, frame)
            return
        stopped.append(signum)
        loop.call_soon_threadsafe(loop.stop)

    signal.signal(signal.SIGINT, on_sigint)
    previous_wakeup = signal.set_wakeup_fd(wakeup_fd, warn_on_full_buffer=False)
    try:
        yield stopped
    finally:
        signal.set_wakeup_fd(previous_wakeup)
        if signal.getsignal(signal.SIGINT) is on_sigint:
            signal.signal(signal.SIGINT, previous)
