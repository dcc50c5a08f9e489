"""The trial scheduler runs its loop on the thread that waits (pytest's main thread), and Ctrl+C there cancels the
waited trial through asyncio's cancellation instead of raising inside whichever trial's coroutine is running."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_skilleval.harbor.fate import StopOnPass
from pytest_skilleval.harbor.interrupts import import_safe_int_handler
from pytest_skilleval.harbor.scheduler import TrialScheduler
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.skill.plan import TrialSpec

SKILL = Path("/skills/demo")


def _spec(case: str) -> TrialSpec:
    return TrialSpec(
        skill_dir=SKILL,
        skill_name="demo",
        case_id=case,
        source="dataset",
        agent="a",
        arm="with_skill",
        attempt=1,
        nodeid=f"demo::{case}",
    )


def _record(spec: TrialSpec) -> TrialRecord:
    return TrialRecord(
        skill="demo",
        skill_dir=str(SKILL),
        case=spec.case_id,
        agent=spec.agent,
        arm=spec.arm,
        attempt=spec.attempt,
        nodeid=spec.nodeid,
        status="scored",
        overall=1.0,
        passed=True,
    )


@pytest.fixture(params=[signal.default_int_handler, import_safe_int_handler], ids=["python", "import-safe"])
def ctrl_c(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Python's own Ctrl+C handler, as in a terminal's foreground job, or the session's import-safe one in its place
    (the loop treats both alike): a test run started in the background by a script (`make test &`) inherits SIGINT
    ignored, and these tests would then wait for an interrupt that never comes. Tests run on the main thread
    (xdist's workers too), where the handler can be set."""
    previous = signal.signal(signal.SIGINT, request.param)
    try:
        yield request.param
    finally:
        signal.signal(signal.SIGINT, previous)


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


def test_ctrl_c_stops_the_wait_at_once_and_shutdown_cancels_the_trials_cleanly(ctrl_c: Any) -> None:
    """The interrupt reaches the waiting item without being raised inside a trial's coroutine; shutdown() then ends
    every trial through a CancelledError at an await, and each clean-up (itself awaiting, as Harbor's environment stop
    does) runs to its end."""
    steps: list[str] = []
    started = threading.Event()

    async def run_trial(spec: TrialSpec) -> TrialRecord:
        try:
            await _until_cancelled(started)
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
    began = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            scheduler.result(waited)
    finally:
        timer.join()
    assert time.monotonic() - began < 10  # not the trial's 60 s
    assert steps == [] and scheduler.pending == 2  # nothing raised inside them: shutdown() is what stops them
    assert signal.getsignal(signal.SIGINT) is ctrl_c  # the handler the wait found is back

    scheduler.shutdown()
    assert sorted(steps) == ["ahead:CancelledError", "ahead:cleaned", "waited:CancelledError", "waited:cleaned"]
    assert scheduler.pending == 0


@pytest.mark.usefixtures("ctrl_c")
def test_a_signal_caught_by_another_thread_still_stops_the_wait_at_once() -> None:
    """With SIGINT blocked in this thread the kernel hands it to another one; the wakeup fd still wakes the loop,
    so the handler runs now rather than when the loop next wakes for something else (here: in 60 s)."""
    started = threading.Event()

    async def run_trial(spec: TrialSpec) -> TrialRecord:
        await _until_cancelled(started)
        return _record(spec)

    def send_from_here() -> None:
        started.wait(5)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        os.kill(os.getpid(), signal.SIGINT)

    scheduler = _scheduler(run_trial)
    sender = threading.Thread(target=send_from_here)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # inherited by the sender: it unblocks its own
    try:
        sender.start()
        began = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            scheduler.result(_spec("waited"))
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        sender.join()
    assert time.monotonic() - began < 10
    scheduler.shutdown()


def test_session_end_flushes_and_stops_litellms_logging_worker_without_waiting_out_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent's litellm call (terminus-2's) starts litellm's logging worker on the trials' loop, a task that runs
    until stopped: shutdown delivers its queued success callback and stops it, instead of waiting 30 s on it."""
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    logged: list[str] = []

    class Recorder(CustomLogger):
        async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):  # type: ignore[no-untyped-def]
            logged.append(kwargs["model"])

    monkeypatch.setattr(litellm, "callbacks", [Recorder()])

    async def run_trial(spec: TrialSpec) -> TrialRecord:
        await litellm.acompletion(
            model="openai/scripted", api_key="k", messages=[{"role": "user", "content": "hi"}], mock_response="done"
        )
        return _record(spec)

    scheduler = _scheduler(run_trial)
    assert scheduler.result(_spec("one")).case == "one"
    began = time.monotonic()
    scheduler.shutdown()
    assert time.monotonic() - began < 10  # not CANCEL_GRACE_SECONDS (30)
    assert logged == ["scripted"]
