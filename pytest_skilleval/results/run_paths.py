"""Where a run's results go and what its folders are called: the results root, the run id and the fixed file names.

Plain functions of strings and paths, so the session and collection know them without importing the results tree's
writer and the result models (`tree`, `models`).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

ENV_RESULTS_DIR = "SKILLEVAL_RESULTS_DIR"
MARKER_FILE = ".skilleval-generated-output"
RUN_CONFIG_FILE = "run_config.json"
DATASET_DIGEST_FILE = "dataset_digest.json"
LATEST = "latest"
RUN_ID_PATTERN = re.compile(r"^\d{8}_\d{6}_\d+_[0-9a-f]{12}$")


def new_run_id(now: datetime | None = None, pid: int | None = None) -> str:
    """`YYYYMMDD_HHMMSS_<pid>_<12 hex>` in UTC: sortable by time, unique across concurrent sessions."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%d_%H%M%S")
    return f"{stamp}_{os.getpid() if pid is None else pid}_{uuid.uuid4().hex[:12]}"


def resolve_results_root(skill_dir: str | Path, cli_results_dir: str | Path | None, env: Mapping[str, str]) -> Path:
    """`--results-dir D` -> D/<skill>; else SKILLEVAL_RESULTS_DIR=E -> E/<skill>; else <skill>/evals/results."""
    skill = Path(os.path.abspath(os.path.expanduser(str(skill_dir))))
    for base in (cli_results_dir, env.get(ENV_RESULTS_DIR)):
        if base is not None and str(base).strip():
            return Path(os.path.abspath(os.path.expanduser(str(base)))) / skill.name
    return skill / "evals" / "results"
