"""The start gate: at most `limit` trials of a process in their start phase at once; its release counts once."""

from __future__ import annotations

import asyncio

import pytest

from pytest_skilleval.harbor.start_gate import STARTING_AT_ONCE, StartGate


def test_no_more_than_the_limit_are_inside_at_once() -> None:
    gate = StartGate(limit=2)
    inside, most = 0, 0

    async def one() -> None:
        nonlocal inside, most
        release = await gate.enter()
        inside += 1
        most = max(most, inside)
        await asyncio.sleep(0.01)
        inside -= 1
        release()

    async def many() -> None:
        await asyncio.gather(*(one() for _ in range(7)))

    asyncio.run(many())
    assert most == 2
    assert inside == 0


def test_a_release_called_twice_frees_one_place() -> None:
    gate = StartGate(limit=1)

    async def go() -> bool:
        release = await gate.enter()
        release()
        release()  # the trial's own finally after its sandbox already released it
        await gate.enter()  # the one place, taken again
        try:
            await asyncio.wait_for(gate.enter(), timeout=0.05)
        except TimeoutError:
            return False  # a second caller waits: the double release did not make two places
        return True

    assert asyncio.run(go()) is False


def test_a_gate_serves_one_event_loop_after_another() -> None:
    """A runner outlives the loop that first used its gate (an in-process run, then another)."""
    gate = StartGate(limit=1)

    async def go() -> None:
        release = await gate.enter()
        await asyncio.sleep(0)
        release()

    asyncio.run(go())
    asyncio.run(go())  # no "bound to a different event loop"


def test_a_waiting_trial_enters_when_one_inside_leaves() -> None:
    gate = StartGate(limit=1)
    order: list[str] = []

    async def first() -> None:
        release = await gate.enter()
        order.append("first in")
        await asyncio.sleep(0.02)
        order.append("first out")
        release()

    async def second() -> None:
        await asyncio.sleep(0)  # after the first
        release = await gate.enter()
        order.append("second in")
        release()

    async def both() -> None:
        await asyncio.gather(first(), second())

    asyncio.run(both())
    assert order == ["first in", "first out", "second in"]


def test_the_default_limit_and_a_limit_below_one() -> None:
    assert StartGate().limit == STARTING_AT_ONCE
    with pytest.raises(ValueError, match="limit 0, expected at least 1"):
        StartGate(limit=0)


def test_a_block_releases_its_place_however_it_ends() -> None:
    """`entered()` lets go when its block raises, and a release called early inside it is not counted again."""
    gate = StartGate(limit=1)

    async def go() -> bool:
        with pytest.raises(RuntimeError):
            async with gate.entered():
                raise RuntimeError("a staging error")
        async with gate.entered() as release:
            release()  # the sandbox's start is over: the place is free before the block ends
            async with gate.entered():
                pass  # taken and given back while the first block still runs
        try:
            async with asyncio.timeout(0.05):
                async with gate.entered():
                    async with gate.entered():
                        return False  # two inside a gate of one
        except TimeoutError:
            return True

    assert asyncio.run(go()) is True
