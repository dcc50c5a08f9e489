"""Eval layouts of other skill-eval tools that this plugin does not read: named in one line, with the section of
docs/datasets.md that maps their fields onto ours, instead of an error that says only what is wrong.

agent-crucible keeps `evals/evals.yaml` (suite settings: `agent`, `run`, `tasks`, `groups`) beside
`evals/task-*.yaml` and `evals/triggers.yaml`; agent-exam keeps `evals/config.yaml` (`default_harness`,
`skills_dirs`, ...) and `evals/suites/<suite>/tasks/*.yaml`. Both file names collide with ours, so without this a
crucible suite reads as a dataset of unknown shape and an agent-exam config as a config.yml full of unknown keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

DOCS = "docs/datasets.md"
CRUCIBLE_SUITE_KEYS = frozenset({"agent", "run", "tasks", "groups"})
EXAM_CONFIG_KEYS = frozenset({"default_harness", "skills_dirs", "harnesses", "default_task_timeout_seconds"})
CRUCIBLE = (
    "this is an agent-crucible suite (evals.yaml with task-*.yaml and triggers.yaml), which pytest-skilleval does "
    f"not read; write its tasks as entries of evals/evals.json: {DOCS}#from-agent-crucible maps each field"
)
EXAM = (
    "this is an agent-exam layout (evals/config.yaml and evals/suites/<suite>/tasks/*.yaml), which pytest-skilleval "
    f"does not read; write its tasks as entries of evals/evals.json: {DOCS}#from-agent-exam maps each field"
)


def crucible_suite(data: Any) -> bool:
    """A parsed `evals.yaml` that is agent-crucible's suite settings, not a dataset."""
    return isinstance(data, Mapping) and bool(CRUCIBLE_SUITE_KEYS & set(data)) and not {"evals", "cases"} & set(data)


def exam_config(data: Any) -> bool:
    """A parsed `evals/config.yaml` that is agent-exam's configuration, not ours."""
    return isinstance(data, Mapping) and bool(EXAM_CONFIG_KEYS & set(data))


def foreign_layout(evals_dir: Path) -> str | None:
    """The line naming another tool's layout found in `evals_dir` (by its files alone, nothing parsed), or None."""
    try:
        if (evals_dir / "suites").is_dir():
            return EXAM
        if any(evals_dir.glob("task-*.yaml")):  # its triggers.yaml alone could be ours: a trigger set
            return CRUCIBLE
    except OSError:
        return None
    return None
