"""A finished trial's loggers leave logging's registry (issue 13: memory per trial): Harbor names one logger per
trial, with its agent's, environment's and verifier's under it, and logging would keep them all for the process."""

from __future__ import annotations

import gc
import logging
import weakref

from pytest_skilleval.harbor.process_env import forget_logger

BASE = "skilleval-test-base"  # a real logger, as harbor.utils.logger is


def _trial_loggers(name: str) -> logging.Logger:
    """What Harbor makes for one trial: the trial's logger under a module path, and children under it."""
    trial = logging.getLogger(BASE).getChild(f"harbor.trial.trial.{name}")
    for module in ("harbor.agents.base", "harbor.environments.base", "harbor.verifier.base"):
        trial.getChild(module)
    return trial


def _placeholders_above(name: str) -> list[logging.PlaceHolder]:
    registry = logging.Logger.manager.loggerDict
    parts = name.split(".")
    found = (registry.get(".".join(parts[:i])) for i in range(1, len(parts)))
    return [p for p in found if isinstance(p, logging.PlaceHolder)]


def test_a_trials_loggers_are_forgotten_and_freed_and_the_others_kept() -> None:
    logging.getLogger(BASE)
    first, other = _trial_loggers("t1"), _trial_loggers("t2")
    name, children = first.name, [f"{first.name}.harbor.agents.base", f"{first.name}.harbor.verifier.base"]
    registry = logging.Logger.manager.loggerDict
    assert name in registry and all(child in registry for child in children)
    assert any(first in p.loggerMap for p in _placeholders_above(name))  # the shared ancestors list it
    gone = weakref.ref(first)

    forget_logger(name)
    assert not [key for key in registry if key == name or key.startswith(name + ".")]
    assert not any(first in p.loggerMap for p in _placeholders_above(name))
    del first
    gc.collect()
    assert gone() is None  # nothing holds the trial's loggers any more

    # Another trial's loggers, and the shared ones above, are untouched and still log through the same parents.
    assert registry[other.name] is other and other in _placeholders_above(other.name)[-1].loggerMap
    assert f"{other.name}.harbor.agents.base" in registry
    assert isinstance(registry[BASE], logging.Logger)
    again = logging.getLogger(name)  # asked for again: made afresh, under the same real ancestor
    assert again.parent is logging.getLogger(BASE)
    forget_logger(other.name)
    forget_logger(name)


def test_a_name_that_only_shares_a_prefix_is_not_forgotten() -> None:
    kept = _trial_loggers("t10")
    forget_logger(kept.name[:-1])  # ".../t1": not an ancestor of ".../t10"
    assert logging.Logger.manager.loggerDict[kept.name] is kept
    forget_logger(kept.name)


def test_trial_logs_hold_each_trials_lines_apart_capped_and_hand_them_over_once() -> None:
    from pytest_skilleval.harbor.process_env import TRIAL_LOGGERS, TrialLogs

    logs = TrialLogs()

    def log(trial: str, message: str) -> None:
        name = f"{TRIAL_LOGGERS}.{trial}.harbor.agents.base"
        logs.handle(logging.LogRecord(name, logging.WARNING, "terminus_2.py", 7, message, None, None))

    for n in range(TrialLogs.MAX_LINES + 10):
        log("t1", f"line {n}")
    log("t2", "other trial")
    first = logs.take("t1")
    assert len(first) == TrialLogs.MAX_LINES and first[0].startswith("WARNING  ") and first[0].endswith("line 0")
    assert "terminus_2.py:7 line 0" in first[0]
    assert logs.take("t1") == []  # handed over once
    assert [line.rsplit(" ", 2)[-2:] for line in logs.take("t2")] == [["other", "trial"]]
    for n in range(TrialLogs.MAX_TRIALS + 5):
        log(f"unclaimed-{n}", "x")
    assert logs.take("unclaimed-0") == [] and logs.take(f"unclaimed-{TrialLogs.MAX_TRIALS + 4}") != []
