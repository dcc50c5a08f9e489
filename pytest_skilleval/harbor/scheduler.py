"""Trials in flight inside one pytest process: one background event loop, bounded by --n-concurrent and --max-agents.

pytest runs items one at a time; a trial is mostly waiting (on a model, a container, a sandboxed command). So when an
item's setup asks for its trial, the items that come next in this process are submitted too, up to the skill's
`n_concurrent`, and run on the scheduler's loop while pytest waits for the current one. Items still report one by
one in pytest's order, each with exactly the record a serial run would give it. Harbor's own `harbor run -n N`
keeps N trials on one loop the same way.

Stop-on-pass is decided when a trial is about to start, not when it is submitted: a trial already running when an
earlier attempt passes finishes and counts; one that has not started becomes a skipped record.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from pytest_skilleval.harbor.runner import quiet_harbor_deprecations
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings

RunTrial = Callable[[TrialSpec], Awaitable[TrialRecord]]
SettingsFor = Callable[[Path], RunSettings]
CANCEL_GRACE_SECONDS = 30.0


def condition_key(spec: TrialSpec) -> tuple[str, str, str, str]:
    return (str(spec.skill_dir), spec.case_id, spec.agent, spec.arm)


class StopOnPass:
    """Which case/agent/arm conditions already have a passing attempt (thread-safe: the loop writes, pytest reads)."""

    def __init__(self) -> None:
        self._passed: dict[tuple[str, str, str, str], int] = {}
        self._lock = threading.Lock()

    def note(self, spec: TrialSpec, record: TrialRecord) -> None:
        if record.passed and record.status == "scored":
            with self._lock:
                key = condition_key(spec)
                self._passed[key] = min(self._passed.get(key, spec.attempt), spec.attempt)

    def skipped_record(self, spec: TrialSpec) -> TrialRecord | None:
        """The skipped record for an attempt that need not run, or None when it must run."""
        with self._lock:
            passed_at = self._passed.get(condition_key(spec))
        if passed_at is None or passed_at >= spec.attempt:
            return None
        return TrialRecord(
            skill=spec.skill_name, skill_dir=str(spec.skill_dir), case=spec.case_id, agent=spec.agent, arm=spec.arm,
            attempt=spec.attempt, nodeid=spec.nodeid, status="skipped", stopped_on_pass=True,
            reason=f"--stop-on-pass: attempt {passed_at} of this case already passed",
        )


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
    """Owns the background loop; `submit` is idempotent per node id, `result` waits for one trial."""

    def __init__(self, run_trial: RunTrial, settings_for: SettingsFor, stop_on_pass: StopOnPass) -> None:
        self._run_trial = run_trial
        self._settings_for = settings_for
        self._stop_on_pass = stop_on_pass
        self._futures: dict[str, concurrent.futures.Future[TrialRecord]] = {}
        self._slots: dict[Path, asyncio.Semaphore] = {}
        self._gates: dict[Path, _AgentGate] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="skilleval-trials", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        with warnings.catch_warnings():
            quiet_harbor_deprecations()
            self._loop.run_forever()

    def window(self, spec: TrialSpec) -> int:
        """How many trials of this skill may be in flight at once."""
        return self._settings_for(spec.skill_dir).n_concurrent

    async def _guarded(self, spec: TrialSpec) -> TrialRecord:
        settings = self._settings_for(spec.skill_dir)
        slots = self._slots.setdefault(spec.skill_dir, asyncio.Semaphore(settings.n_concurrent))
        gate = self._gates.setdefault(spec.skill_dir, _AgentGate(settings.max_agents))
        await gate.enter(spec.agent)
        try:
            async with slots:
                if settings.stop_on_pass and (skipped := self._stop_on_pass.skipped_record(spec)) is not None:
                    return skipped
                record = await self._run_trial(spec)
        finally:
            await gate.leave(spec.agent)
        if settings.stop_on_pass:
            self._stop_on_pass.note(spec, record)
        return record

    def submit(self, spec: TrialSpec) -> concurrent.futures.Future[TrialRecord]:
        future = self._futures.get(spec.nodeid)
        if future is None:
            future = asyncio.run_coroutine_threadsafe(self._guarded(spec), self._loop)
            self._futures[spec.nodeid] = future
        return future

    def result(self, spec: TrialSpec) -> TrialRecord:
        """Wait for this item's trial (submitting it if the look-ahead has not); it is forgotten once delivered."""
        future = self.submit(spec)
        try:
            record = future.result()
        except Exception:  # the trial's own failure; an interrupted wait leaves it to shutdown() to cancel
            self._futures.pop(spec.nodeid, None)
            raise
        self._futures.pop(spec.nodeid, None)
        return record

    @property
    def pending(self) -> int:
        return sum(1 for future in self._futures.values() if not future.done())

    def shutdown(self) -> None:
        """Cancel what was submitted but not delivered (queued trials never start; running ones stop through
        Harbor's cancellation, which stops their environments), then stop the loop."""
        waiting = [future for future in self._futures.values() if not future.done()]
        for future in waiting:
            future.cancel()
        if waiting:
            concurrent.futures.wait(waiting, timeout=CANCEL_GRACE_SECONDS)
            self._drain()
        self._futures.clear()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=CANCEL_GRACE_SECONDS)

    def _drain(self) -> None:
        """Wait until the cancelled trials' tasks have really finished their cleanup on the loop."""
        async def remaining() -> None:
            current = asyncio.current_task()
            tasks = [task for task in asyncio.all_tasks() if task is not current]
            if tasks:
                await asyncio.wait(tasks, timeout=CANCEL_GRACE_SECONDS)

        try:
            asyncio.run_coroutine_threadsafe(remaining(), self._loop).result(timeout=CANCEL_GRACE_SECONDS + 5)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
