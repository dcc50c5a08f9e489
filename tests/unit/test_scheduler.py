"""The trial scheduler runs its loop on the thread that waits (pytest's main thread), and Ctrl+C there cancels the
waited trial through asyncio's cancellation instead of raising inside whichever trial's coroutine is running."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
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


NEEDS_CTRL_C = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread()
    or signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
    reason="needs the main thread with Python's own Ctrl+C handler")


async def _until_cancelled(started: threading.Event) -> None:
    """A trial's long wait (an agent at work), after telling the test it has begun."""
    started.set()
    await asyncio.sleep(60)


def _scheduler(run_trial, n_concurrent: int = 2) -> TrialScheduler:  # type: ignore[no-untyped-def]
    settings = SimpleNamespace(n_concurrent=n_concurrent, max_agents=None, stop_on_pass=False)
    return TrialScheduler(run_trial, lambda _path: settings, StopOnPass())


def test_trials_run_on_the_waiting_thread_up_to_the_window_at_once() -> None:
    threads: set[str] = set()
    running, most = 0, 0

    async def run_trial(spec: TrialSpec) -> TrialRecord:
        nonlocal running, most
        threads.add(threading.current_thread().name)
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.05)
        running -= 1
        return _record(spec)

    scheduler = _scheduler(run_trial)
    specs = [_spec(f"c{i}") for i in range(4)]
    for spec in specs[1:]:
        scheduler.submit(spec)
    records = [scheduler.result(spec) for spec in specs]
    scheduler.shutdown()

    assert [record.case for record in records] == ["c0", "c1", "c2", "c3"]
    assert threads == {threading.current_thread().name}  # no thread of its own
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


@NEEDS_CTRL_C
def test_ctrl_c_cancels_the_waited_trial_cleanly_and_shutdown_cancels_the_rest() -> None:
    cancelled: list[str] = []
    cleaned: list[str] = []
    started = threading.Event()

    async def run_trial(spec: TrialSpec) -> TrialRecord:
        try:
            await _until_cancelled(started)
        except asyncio.CancelledError:
            cancelled.append(spec.case_id)
            raise
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits, as Harbor's environment stop does
            cleaned.append(spec.case_id)
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
    assert cancelled == cleaned == ["waited"]  # a CancelledError at an await, not an exception mid-step
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert scheduler.pending == 1

    scheduler.shutdown()
    assert sorted(cleaned) == ["ahead", "waited"]
    assert scheduler.pending == 0


@NEEDS_CTRL_C
@pytest.mark.parametrize("signals", [2, 3])
def test_more_signals_during_the_clean_up_never_raise_inside_it(signals: int,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A second Ctrl+C is absorbed (the clean-up ends normally); a third stops waiting for it at once. Neither
    raises KeyboardInterrupt inside the trial's coroutine, which could leave its clean-up half done."""
    cleanup_seconds = 0.6 if signals == 2 else 60.0
    steps: list[str] = []
    started = threading.Event()

    async def run_trial(spec: TrialSpec) -> TrialRecord:
        try:
            await _until_cancelled(started)
        except asyncio.CancelledError:
            steps.append("cancelled")
            try:
                await asyncio.sleep(cleanup_seconds)  # Harbor stopping the environment
                steps.append("cleaned")
            except BaseException as error:  # what reaches the clean-up: only a cancellation is acceptable
                steps.append(type(error).__name__)
                raise
            raise
        return _record(spec)

    def send() -> None:
        started.wait(5)
        for _ in range(signals):
            os.kill(os.getpid(), signal.SIGINT)
            threading.Event().wait(0.1)

    scheduler = _scheduler(run_trial)
    sender = threading.Thread(target=send)
    sender.start()
    began = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            scheduler.result(_spec("waited"))
    finally:
        sender.join()
    waited = time.monotonic() - began
    err = capsys.readouterr().err
    assert "stopping the running trials" in err, (steps, waited, err)
    if signals == 2:
        assert steps == ["cancelled", "cleaned"]
    else:
        assert steps == ["cancelled"] and waited < 10  # not waiting out the 60 s clean-up
        scheduler.shutdown()  # cancels the clean-up itself: a cancellation, never a KeyboardInterrupt
        assert steps == ["cancelled", "CancelledError"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
