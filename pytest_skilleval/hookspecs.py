"""The plugin's own hooks, so other plugins can extend it (registered in `pytest_addhooks`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.hookspec
def pytest_skilleval_aggregate(config: pytest.Config, skill: str, result: Any, run_dir: Path) -> None:
    """Called once per skill on the controller with the finished aggregate (`AggregateResult`) and the results
    directory it was written to, e.g. to post the verdict and lift elsewhere."""
