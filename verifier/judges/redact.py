"""Judge error text on its way to result files or the terminal: the one redaction pass, then a length cap.

Provider error messages can echo request headers or keys. They go through `verifier.redact` (credential-named
variables' values, token shapes), the same pass as everything else written, and are capped so a verbose gateway
cannot flood the results.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from verifier.redact import Redactor

MAX_REASON = 512


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    return Redactor.from_environment(os.environ if env is None else env).text(text)


def bounded_reason(text: str, env: Mapping[str, str] | None = None) -> str:
    """Redacted and at most 512 characters (509 plus '...')."""
    text = redact(" ".join(text.split()), env)
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."
