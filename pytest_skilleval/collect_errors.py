"""Collection errors: one broken skill is one error and every other skill still runs; any other error (a user's
test module, a conftest) keeps pytest's rule, which stops the session before any trial.

pytest's loop stops a session on any collection error unless --continue-on-collection-errors; rather than set that
option for the whole session, the loop is shown no failures when every one so far is a skill's, and they count again
once it ends (exit status 1, as with the option).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.skill.dataset import DATASET_NAMES
from pytest_skilleval.skill.host_code import enclosing_skill
from pytest_skilleval.skill.triggers import TRIGGER_NAMES


class CollectionErrors:
    """The session's failed collection reports, told apart: a skill's (its folder or eval files, or a path given with
    nothing to run, `hints`) or another's."""

    def __init__(self) -> None:
        self.skill = 0
        self.other = 0
        self.skill_nodeids: set[str] = set()  # the reports `hints` made for a path with nothing to run
        self.stopped = 0  # pytest's rule stopped the session before any trial: how many errors

    def seen(self, report: pytest.CollectReport, rootpath: Path) -> None:
        path = report.nodeid.split("::", 1)[0]
        if report.nodeid in self.skill_nodeids or (path and in_a_skill(rootpath / path)):
            self.skill += 1
        else:
            self.other += 1

    def hide(self, session: pytest.Session) -> int:
        """Take from `session.testsfailed` (pytest's loop checks it) what are all skills' collection errors, and
        return how many to add back once the loop ends; under --co, or when any error is not a skill's, none (and
        `stopped` says pytest's rule will stop the session)."""
        config = session.config
        collect_only = bool(config.option.collectonly)
        hidden = 0
        if not (collect_only or self.other or hasattr(config, "workerinput")):
            hidden = min(session.testsfailed, self.skill)
        session.testsfailed -= hidden
        if session.testsfailed and not (collect_only or getattr(config.option, "continue_on_collection_errors", False)):
            self.stopped = session.testsfailed + hidden
        return hidden

    def summary_line(self) -> str | None:
        """What stopped a session before any trial ran, for the skilleval summary (None when nothing did)."""
        if not self.stopped:
            return None
        plural = "s" if self.stopped != 1 else ""
        return (
            f"skilleval: no trial ran: pytest stopped the session at collection ({self.stopped} error{plural} during "
            "collection, listed above; not all of them a skill's, so pytest's rule applies); fix them, or pass "
            "--continue-on-collection-errors to run the rest"
        )


def in_a_skill(path: Path) -> bool:
    """A collection error's path is a skill's (its folder or a file in it), or an eval file of an evals/ folder
    without SKILL.md beside it (`collect.OrphanEvalsFile`)."""
    if enclosing_skill(path) is not None:
        return True
    return "evals" in path.parts and path.name in (*DATASET_NAMES, *TRIGGER_NAMES, "task.toml")
