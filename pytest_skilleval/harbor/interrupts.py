"""Ctrl+C as Python handles it by default (KeyboardInterrupt), made safe for the import machinery.

Python raises KeyboardInterrupt wherever the main thread happens to be. Raised in importlib's own code, between its
`_imp.acquire_lock()` and the `try` that releases it, it leaves the global import lock held for good, so every other
thread's import hangs; raised in importlib's module-lock weakref callback, the exception is discarded, so the
interrupt is lost too. A run whose report warm-up thread was importing ignored one Ctrl+C that way. Here the signal
is delivered again a moment later instead, when the main thread runs something else. The session's signal guard
installs this handler in place of Python's; the scheduler's loop treats both alike.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

REDELIVER_SECONDS = 0.05  # a Ctrl+C that lands in the import machinery is delivered again this much later
_IMPORT_MACHINERY = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")


def import_safe_int_handler(signum: int, frame: FrameType | None) -> None:
    """KeyboardInterrupt, unless the main thread is in the import machinery's own code: then the same signal again
    in REDELIVER_SECONDS (from a timer thread)."""
    if deferred_while_importing(signum, frame):
        return
    signal.default_int_handler(signum, frame)


def deferred_while_importing(signum: int, frame: FrameType | None) -> bool:
    """Whether `frame` is the import machinery's own code; if so, `signum` is sent again in REDELIVER_SECONDS, and
    the handler must return without raising (the SIGTERM handler, which raises KeyboardInterrupt too, asks this)."""
    if frame is None or frame.f_code.co_filename not in _IMPORT_MACHINERY:
        return False
    timer = threading.Timer(REDELIVER_SECONDS, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()
    return True


def is_plain_int_handler(handler: object) -> bool:
    """Whether SIGINT is handled as Python does by default (KeyboardInterrupt), by Python's handler or ours."""
    return handler is signal.default_int_handler or handler is import_safe_int_handler
