"""Ctrl+C made safe for the import machinery: KeyboardInterrupt as Python raises it, except in importlib's own code,
where raising leaves the global import lock held (or, in its weakref callback, loses the interrupt); there the same
signal comes again a moment later. The session's signal guard puts this handler in place of Python's."""

from __future__ import annotations

import importlib._bootstrap as bootstrap
import signal
import sys
import threading
from collections.abc import Iterator

import pytest

from pytest_skilleval.harbor.interrupts import import_safe_int_handler, is_plain_int_handler
from pytest_skilleval.signals import SignalGuard


@pytest.fixture
def caught() -> Iterator[threading.Event]:
    """SIGINT recorded instead of handled, for the signal the handler sends again; Python's handler put back after."""
    event = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda signum, frame: event.set())
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, previous)


def test_anywhere_else_it_raises_keyboard_interrupt_at_once(caught: threading.Event) -> None:
    with pytest.raises(KeyboardInterrupt):
        import_safe_int_handler(signal.SIGINT, sys._getframe())
    assert not caught.wait(0.3)  # and sends nothing again


def test_in_the_import_machinery_it_comes_again_instead_of_raising(caught: threading.Event) -> None:
    # A real frame of importlib's bootstrap code: the one that calls sys._getframe here.
    frame = bootstrap._call_with_frames_removed(sys._getframe)
    assert frame.f_code.co_filename == "<frozen importlib._bootstrap>"
    import_safe_int_handler(signal.SIGINT, frame)  # no KeyboardInterrupt inside importlib
    assert caught.wait(5), "the interrupt was not delivered again"


def test_the_session_guard_puts_it_in_place_of_pythons_handler_and_back() -> None:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    guard = SignalGuard()
    try:
        guard.install()
        assert signal.getsignal(signal.SIGINT) is import_safe_int_handler
        assert is_plain_int_handler(signal.getsignal(signal.SIGINT))
        guard.restore()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        guard.restore()
        signal.signal(signal.SIGINT, previous)


def test_a_handler_of_someone_elses_is_left_alone() -> None:
    def theirs(signum: int, frame: object) -> None:
        pass

    previous = signal.signal(signal.SIGINT, theirs)
    guard = SignalGuard()
    try:
        guard.install()
        assert signal.getsignal(signal.SIGINT) is theirs
        assert not is_plain_int_handler(theirs)
    finally:
        guard.restore()
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def caught_sigterm() -> Iterator[threading.Event]:
    """SIGTERM recorded instead of handled, and Python's Ctrl+C handler in place, both put back after."""
    event = threading.Event()
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: event.set())
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield event
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, previous_int)


def test_sigterm_in_the_import_machinery_comes_again_instead_of_raising(caught_sigterm: threading.Event) -> None:
    """SIGTERM acts as Ctrl+C, so it too must not raise KeyboardInterrupt inside importlib: an xdist controller
    stopped that way hung at the session end, importing jsonschema behind the import lock it had left held."""
    guard = SignalGuard()
    frame = bootstrap._call_with_frames_removed(sys._getframe)
    try:
        guard._on_sigterm(signal.SIGTERM, frame)  # no KeyboardInterrupt inside importlib
        assert not guard.interrupted  # counted when it comes again, not twice
        assert caught_sigterm.wait(5), "the SIGTERM was not delivered again"
        with pytest.raises(KeyboardInterrupt):
            guard._on_sigterm(signal.SIGTERM, sys._getframe())
        assert guard.interrupted
    finally:
        guard.restore()
