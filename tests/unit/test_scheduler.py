"""The trial scheduler keeps up to the window's trials in flight on its own loop, hands each item its own record
(or its own error), and on Ctrl+C leaves the running trials to shutdown(), which cancels them through asyncio's
cancellation so their clean-up runs."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_skilleval.harbor.scheduler import StopOnPass, TrialScheduler
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.skill.plan import TrialSpec

SKILL = Path("/skills/demo")


def _spec(case: str) -> TrialSpec:
    return TrialSpec(skill_dir=SKILL, skill_name="demo", case_id=case, source="dataset", agent="a",
                     arm="with_skill", attempt=1, nodeid=f"demo::{case}")


def _record(spec: TrialSpec) -> TrialRecord:
    return TrialRecord(skill="demo", skill_dir=str(SKILL), case=spec.case_id, agent=spec.agent, arm=spec.arm,
                       attempt=spec.attempt, nodeid=spec.nodeid, status="scored", overall=1.0, passed=True)


def _scheduler(run_trial, n_concurrent: int = 2) -> TrialScheduler:  # type: ignore[no-untyped-def]
    settings = SimpleNamespace(n_concurrent=n_concurrent, max_agents=None, stop_on_pass=False)
    return TrialScheduler(run_trial, lambda _path: settings, StopOnPass())


def test_trials_run_up_to_the_window_at_once_and_each_item_gets_its_own() -> None:
    running, most = 0, 0

    async def run_trial(spec: TrialSpec) -> TrialRecord:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.05)
        running -= 1
        return _record(spec)

    scheduler = _scheduler(run_trial)
    specs = [_spec(f"c{i}") for i in range(4)]
    for spec in specs:
        scheduler.submit(spec)
    records = [scheduler.result(spec) for spec in specs]
    scheduler.shutdown()

    assert [record.case for record in records] == ["c0", "c1", "c2", "c3"]
    assert most == 2
    assert scheduler.pending == 0


def test_a_trials_own_error_reaches_its_item_and_the_others_still_run() -> None:
    async def run_trial(spec: TrialSpec) -> TrialRecord:
        await asyncio.sleep(0.01)
        if spec.case_id == "bad":
            raise RuntimeError("the trial broke")
        return _record(spec)

    scheduler = _scheduler(run_trial)
    bad, good = _spec("bad"), _spec("good")
    scheduler.submit(good)
    with pytest.raises(RuntimeError, match="the trial broke"):
        scheduler.result(bad)
    assert scheduler.result(good).case == "good"
    scheduler.shutdown()


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread()
                    or signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="needs the main thread with Python's own Ctrl+C handler")
def test_ctrl_c_reaches_the_waiting_item_and_shutdown_cancels_the_trials_cleanly() -> None:
    """The interrupt lands in the waiting thread, never inside a trial's coroutine: each trial then ends through a
    CancelledError at an await, and its clean-up (which itself awaits, as Harbor's environment stop does) runs."""
    steps: list[str] = []
    started = threading.Event()

    async def run_trial(spec: TrialSpec) -> TrialRecord:
        started.set()
        try:
            await asyncio.sleep(60)
        except BaseException as error:
            steps.append(f"{spec.case_id}:{type(error).__name__}")
            await asyncio.sleep(0.01)
            steps.append(f"{spec.case_id}:cleaned")
            raise
        return _record(spec)

    scheduler = _scheduler(run_trial)
    waited, ahead = _spec("waited"), _spec("ahead")
    scheduler.submit(ahead)
    timer = threading.Timer(0.2, lambda: started.wait(5) and os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            scheduler.result(waited)
    finally:
        timer.join()
    assert scheduler.pending == 2 and steps == []  # still running: shutdown() is what stops them

    scheduler.shutdown()
    assert sorted(steps) == ["ahead:CancelledError", "ahead:cleaned", "waited:CancelledError", "waited:cleaned"]
    assert scheduler.pending == 0
