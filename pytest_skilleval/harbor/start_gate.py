"""How many trials of one process are in their start phase at once.

A trial's start (its task staged, Harbor's trial created, a `local` sandbox started) is work on this host's cores;
its agent phase mostly waits. With many trials in flight and none gated, the first ones all start together, slow
each other down alike, reach their agents and end together, and every later wave does the same: the cores are
crowded while a wave starts and ends and idle while it waits. Letting a few start at a time spreads the waves out.
A sandbox whose start is waiting on something else (a cloud sandbox's API, Docker's daemon) leaves the gate once
its trial is created, so it never queues behind another's wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Callable

# Per process that runs trials (the pytest process, each trial process): measured on 2 cores with two trial
# processes at 100 in flight (docs/performance.md, issue 28, stop 38).
STARTING_AT_ONCE = 4


class StartGate:
    """At most `limit` trials of this process between entering and their release; one semaphore per event loop
    (a runner may serve more than one loop, one after the other)."""

    def __init__(self, limit: int = STARTING_AT_ONCE) -> None:
        if limit < 1:
            raise ValueError(f"start gate: limit {limit}, expected at least 1")
        self.limit = limit
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        found = self._by_loop.get(loop)
        if found is None:
            found = self._by_loop[loop] = asyncio.Semaphore(self.limit)
        return found

    async def enter(self) -> Callable[[], None]:
        """Wait for a place; returns the release, which may be called any number of times (only the first counts)."""
        semaphore = self._semaphore()
        await semaphore.acquire()
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                semaphore.release()

        return release

    @contextlib.asynccontextmanager
    async def entered(self) -> AsyncIterator[Callable[[], None]]:
        """`enter` for a block: yields the release, to hand on to whatever ends the start phase early (a sandbox's
        start), and calls it when the block ends, however it ends."""
        release = await self.enter()
        try:
            yield release
        finally:
            release()
