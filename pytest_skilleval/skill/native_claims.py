"""Which dataset entry a native task folder claims, whether or not the task can be read."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pytest_skilleval.skill.case_ids import CaseIdError, canonical_case_id
from pytest_skilleval.skill.native_tasks import TASK_FILE, NativeTaskError, load_native_task


def claimed_entry_id(task_dir: Path) -> str | None:
    """The dataset entry a native task folder replaces, even when the task cannot be read.

    One rule for every refusal: a task refused by Harbor's own model (say a task name not in `org/name` form) claims
    its entry exactly as one refused by a plugin rule does, so the entry never runs silently in its place; the
    task's collector reports why it was refused. The id comes from `[metadata] entry_id` when the TOML parses, else
    from the folder name; None when neither is a valid case id.
    """
    try:
        return load_native_task(task_dir).entry_id
    except NativeTaskError:
        pass
    try:
        raw = tomllib.loads((Path(task_dir) / TASK_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        raw = {}
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    for candidate in ((metadata or {}).get("entry_id") if isinstance(metadata, dict) else None, Path(task_dir).name):
        if candidate is None:
            continue
        try:
            return canonical_case_id(candidate)
        except CaseIdError:
            continue
    return None
