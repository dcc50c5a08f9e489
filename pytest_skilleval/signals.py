"""SIGTERM and a second Ctrl+C end a run the way one Ctrl+C does.

Why: one Ctrl+C cancels the running trial (asyncio cancels Harbor's task, the environment kills what it started)
and the session writes `result.json` marked interrupted without moving `latest`. Two things broke that: SIGTERM
killed the process outright (no result, and in `sandbox=none` the running command lived on), and a second Ctrl+C
landing while pytest reports the first one skipped pytest's own bookkeeping, so the run was recorded as succeeded
and `latest` moved to a partial run.

So: SIGTERM is handed to whatever handles SIGINT at that moment (asyncio's graceful cancel during a trial, else
pytest's KeyboardInterrupt), and under xdist the controller passes it on to its workers as SIGINT, as a terminal's
Ctrl+C would (a worker killed outright would leave its trial's commands running); the first interrupt is remembered here, whatever pytest's exit status says later; and
from then on further SIGINT/SIGTERM are absorbed (with one line on stderr) until the process exits, so the run's
results are written and its exit status stays "interrupted". A third signal stops without waiting.

While the guard is installed, Python's own Ctrl+C handler is replaced by `harbor/interrupts.import_safe_int_handler`,
which behaves the same except inside the import machinery: a KeyboardInterrupt raised there can leave the global
import lock held (every other thread's import then hangs) and be discarded, so it is delivered again 50 ms later.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from pytest_skilleval.harbor.interrupts import deferred_while_importing, import_safe_int_handler, is_plain_int_handler

FORCE_AFTER = 2  # signals absorbed after the first interrupt; the next one stops at once


class SignalGuard:
    """Installed once per session in the main thread; `restore()` puts the previous handlers back."""

    def __init__(self) -> None:
        self.interrupted = False
        self._saved: dict[int, Any] = {}
        self._absorbed = 0
        self.workers: Callable[[], list[int]] | None = None  # set on an xdist controller

    @staticmethod
    def _main_thread() -> bool:
        return threading.current_thread() is threading.main_thread()

    def install(self) -> None:
        if not self._main_thread() or signal.SIGTERM in self._saved:
            return
        self._saved[signal.SIGTERM] = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._saved[signal.SIGINT] = signal.default_int_handler
            signal.signal(signal.SIGINT, import_safe_int_handler)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        """Act as Ctrl+C: asyncio's handler cancels the trial task gracefully; otherwise KeyboardInterrupt (not in
        the import machinery's code: the SIGTERM comes again a moment later, see `import_safe_int_handler`)."""
        handler = signal.getsignal(signal.SIGINT)  # looked up before marking, which replaces it
        raises = not callable(handler) or handler is self._on_repeat or is_plain_int_handler(handler)
        if raises and deferred_while_importing(signum, frame):
            return
        for pid in self.workers() if self.workers else []:
            try:
                os.kill(pid, signal.SIGINT)
            except OSError:
                pass
        self.mark_interrupted()
        if not raises and callable(handler):
            handler(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt

    def mark_interrupted(self) -> None:
        """The run is interrupted: remember it and absorb the signals that follow while results are written."""
        if self.interrupted:
            return
        self.interrupted = True
        if not self._main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._saved.setdefault(signum, signal.getsignal(signum))
            signal.signal(signum, self._on_repeat)

    def _on_repeat(self, signum: int, frame: FrameType | None) -> None:
        self._absorbed += 1
        if self._absorbed > FORCE_AFTER:
            self.restore()
            raise KeyboardInterrupt
        sys.stderr.write(
            "\nskilleval: already stopping; writing this run's results as interrupted "
            "(signal again to stop without them)\n"
        )
        from pytest_skilleval.harbor.docker_cleanup import active_projects, leftovers_message

        running = active_projects()
        if running:  # what stopping now would leave behind, and how to find it
            sys.stderr.write(leftovers_message(running).replace("clean-up skipped; ", "if you stop now, ", 1) + "\n")
        sys.stderr.flush()

    def release(self, process_ends: bool) -> None:
        """The session is over. An interrupted run whose process ends now keeps absorbing signals to the end: one
        landing during the interpreter's exit would turn the recorded "interrupted" status into a kill. Anywhere
        else (an in-process run inside another program) the previous handlers come back."""
        if self.interrupted and process_ends:
            atexit.register(self._ignore_while_exiting)
            return
        self.restore()

    @staticmethod
    def _ignore_while_exiting() -> None:
        """Last Python code of the process: the interpreter puts every Python-level handler back to the OS default
        as it finalizes (a signal then kills it), but leaves an ignored signal ignored."""
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)

    def restore(self) -> None:
        if not self._main_thread():
            return
        for signum, handler in self._saved.items():
            try:
                signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
            except (TypeError, ValueError):
                pass
        self._saved.clear()


def child_pids() -> list[int]:
    """This process's direct children (the xdist workers on a controller); empty where /proc is missing."""
    me, found = os.getpid(), []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(me):
            found.append(int(stat_file.parent.name))
    return found
