"""What the process needs before Harbor is imported: its environment defaults, its log level and its deprecation
warnings quieted; each trial's warnings and errors held for the item that ran it (`TrialLogs`); and, after each
trial, the loggers Harbor made for it let go.

Kept apart from runner.py (which imports Harbor's trial machinery, slow to import) so `pytest_configure` can apply them
without paying for that import in a run that never starts a trial (`--co`, a selection that deselects everything).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import warnings


def default_env() -> None:
    """Harbor and litellm reach for the internet unless told not to; respect values the user set."""
    os.environ.setdefault("HARBOR_TELEMETRY", "0")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # Harbor (and python-dotenv under it) would read a .env found around the project into this process; only
    # the operator's real environment counts.
    os.environ["PYTHON_DOTENV_DISABLED"] = "1"


def prepare_process(*, hold_logs: bool) -> None:
    """What a process that runs trials sets before Harbor is imported: the environment defaults, its soft limits
    raised, and (`hold_logs`, unless the user asked for a log level) Harbor's chatter quieted and each trial's
    warnings held for its own item."""
    default_env()
    raise_open_file_limit()
    raise_process_limit()
    if hold_logs:
        quiet_harbor_logs()
        hold_trial_logs()


def quiet_harbor_logs(level: int = logging.WARNING) -> None:
    """Harbor pins its logger at DEBUG, so pytest's log capture printed every trial's chatter ("does not declare
    an options_model", from any trial in flight) under a failing item; keep its warnings and errors only."""
    import harbor.utils.logger  # importing it sets the DEBUG level lowered here, so import it first

    for name in ("harbor", harbor.utils.logger.__name__):
        logger = logging.getLogger(name)
        if logger.level < level:
            logger.setLevel(level)


# Harbor's per-trial loggers: `harbor.utils.logger` + `.harbor.trial.trial.<trial name>`, its agent's and others below.
TRIAL_LOGGERS = "harbor.utils.logger.harbor.trial.trial"
# pytest's own log format, so a trial's lines read as they did when pytest captured them.
_LINE_FORMAT = "%(levelname)-8s %(name)s:%(filename)s:%(lineno)d %(message)s"


class TrialLogs(logging.Handler):
    """Each trial's Harbor warnings and errors, held by trial name until the item that ran the trial reports them.

    Harbor's per-trial loggers propagate to the root logger, where pytest's capture files every record under the item
    that is in setup when it arrives: with several trials in flight, an ERROR item listed other trials' lines as its
    own. Held here, each line is shown under its own trial's item (`take`), and only there."""

    MAX_LINES = 50  # per trial: a trial that logs in a loop does not fill memory
    MAX_TRIALS = 1000  # lines no item claimed (an interrupted run) are dropped, oldest first

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(logging.Formatter(_LINE_FORMAT))
        self._lines: dict[str, list[str]] = {}
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        trial = record.name[len(TRIAL_LOGGERS) + 1 :].split(".", 1)[0]
        try:
            line = self.format(record)
        except Exception:  # noqa: BLE001 - logging's own contract: a bad record never raises into the caller
            self.handleError(record)
            return
        self.hold(trial, [line])

    def hold(self, trial: str, lines: list[str]) -> None:
        """Keep `lines` for the trial named `trial`, within the caps."""
        with self._guard:
            held = self._lines.setdefault(trial, [])
            held.extend(lines[: max(0, self.MAX_LINES - len(held))])
            while len(self._lines) > self.MAX_TRIALS:
                self._lines.pop(next(iter(self._lines)))

    def take(self, trial: str) -> list[str]:
        """The lines the trial named `trial` logged, handed over once."""
        with self._guard:
            return self._lines.pop(trial, [])


_trial_logs: TrialLogs | None = None


def hold_trial_logs() -> None:
    """Hand Harbor's per-trial loggers' records to one `TrialLogs` as well (once per process); `not_a_trial_record`
    then keeps them out of pytest's capture. Only when the plugin sets Harbor's log level: a level the user asked
    for keeps pytest's own capture of everything."""
    global _trial_logs
    if _trial_logs is None:
        _trial_logs = TrialLogs()
        logging.getLogger(TRIAL_LOGGERS).addHandler(_trial_logs)


def not_a_trial_record(record: logging.LogRecord) -> bool:
    """A filter for pytest's capture handlers (they also attach to non-propagating loggers, so propagation cannot
    keep a record from them): a held trial's record is reported under its own item instead."""
    return _trial_logs is None or not record.name.startswith(TRIAL_LOGGERS + ".")


def hand_over_trial_logs(trial: str, lines: list[str]) -> None:
    """Lines a trial logged in another process (a trial process), held here as if logged here."""
    if _trial_logs is not None:
        _trial_logs.hold(trial, lines)


def trial_log_lines(trial: str) -> list[str]:
    """What the trial named `trial` logged at WARNING or above (empty when the logs are not held)."""
    return _trial_logs.take(trial) if _trial_logs is not None else []


def forget_logger(name: str) -> None:
    """Drop the logger `name` and every logger under it from logging's registry, once nothing logs to them.

    Harbor gives each trial a logger of its own (`harbor.utils.logger.harbor.trial.trial.<trial name>`, with its
    agent's, environment's and verifier's loggers under it). `logging` keeps every logger it ever made, and the
    placeholders of their shared ancestors list each one as a child: memory kept per trial in a pytest process that
    runs thousands (`harbor run` keeps them too, but exits after its job). A logger asked for again after this is
    made afresh, with the same parent.
    """
    manager = logging.Logger.manager
    with getattr(logging, "_lock", contextlib.nullcontext()):  # the lock logging.getLogger takes
        registry = manager.loggerDict
        doomed = [key for key in registry if key == name or key.startswith(name + ".")]
        removed = {entry for key in doomed if isinstance(entry := registry.pop(key), logging.Logger)}
        head = name.rpartition(".")[0]
        while head:  # the ancestors' placeholders list the top logger (the ones below stop at it)
            above = registry.get(head)
            if isinstance(above, logging.PlaceHolder):
                for logger in removed:
                    above.loggerMap.pop(logger, None)  # placeholders list loggers only
            elif above is not None:
                break  # a real logger: loggers hold no list of their children
            head = head.rpartition(".")[0]


def quiet_harbor_deprecations() -> None:
    """Harbor warns about its own API churn on every trial; that is not the skill author's concern."""
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"harbor\.")


def raise_open_file_limit() -> tuple[int, int]:
    """Raise this process's soft limit on open files to its hard limit (never above it), once at start: each trial
    in flight holds its own pipes, log files and sandbox sockets, and the usual soft limit of 1024 runs out near a
    hundred trials in flight. Returns the (soft, hard) limits now in force."""
    import resource

    return _raise_soft_limit(resource.RLIMIT_NOFILE)


def raise_process_limit() -> tuple[int, int]:
    """Raise the soft limit on this user's processes (RLIMIT_NPROC, threads included) to its hard limit, once at
    start: each trial in flight runs a few processes (its sandbox's keeper and bwrap, the command it runs).
    Returns the (soft, hard) limits now in force."""
    import resource

    return _raise_soft_limit(resource.RLIMIT_NPROC)


def _raise_soft_limit(which: int) -> tuple[int, int]:
    import resource

    soft, hard = resource.getrlimit(which)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(which, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass  # a platform that refuses keeps its limit; the preflight says when it is too low
    return soft, hard
