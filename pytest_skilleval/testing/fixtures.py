"""pytest plugin with the `scripted_model` fixture: start scripted model servers, stopped at teardown.

Load it with ``pytest_plugins = ["pytest_skilleval.testing.fixtures"]`` in a conftest. Each server binds its own free
port, so tests under pytest-xdist never share one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.testing.script import Script
from pytest_skilleval.testing.scripted_model import ScriptedModelServer

StartServer = Callable[..., ScriptedModelServer]


@pytest.fixture
def scripted_model() -> Iterator[StartServer]:
    """A factory: ``scripted_model(script=None, *, tls=False, log_path=None)`` returns a running server."""
    servers: list[ScriptedModelServer] = []

    def start(script: Script | dict[str, Any] | str | Path | None = None, **options: Any) -> ScriptedModelServer:
        server = ScriptedModelServer(script, **options)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
