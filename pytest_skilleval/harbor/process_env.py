"""What the process needs before Harbor is imported: its environment defaults and its log level.

Kept apart from runner.py (which imports Harbor's trial machinery, ~0.1 s) so `pytest_configure` can apply them
without paying for that import in a run that never starts a trial (`--co`, a selection that deselects everything).
"""

from __future__ import annotations

import logging
import os


def default_env() -> None:
    """Harbor and litellm reach for the internet unless told not to; respect values the user set."""
    os.environ.setdefault("HARBOR_TELEMETRY", "0")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # Harbor (and python-dotenv under it) would read a .env found around the project into this process; only
    # the operator's real environment counts.
    os.environ["PYTHON_DOTENV_DISABLED"] = "1"


def quiet_harbor_logs(level: int = logging.WARNING) -> None:
    """Harbor pins its logger at DEBUG, so pytest's log capture printed every trial's chatter ("does not declare
    an options_model", from any trial in flight) under a failing item; keep its warnings and errors only."""
    import harbor.utils.logger  # noqa: F401 - importing it sets the DEBUG level lowered here, so import it first

    for name in ("harbor", harbor.utils.logger.__name__):
        logger = logging.getLogger(name)
        if logger.level < level:
            logger.setLevel(level)
