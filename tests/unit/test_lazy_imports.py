"""A replay run's process never imports litellm (several seconds of start-up in every `pytest --skill-eval` process
of the suite): only a replay of terminus-2 keystrokes, judges and pricing need it, and they import it when they run."""

from __future__ import annotations

import subprocess
import sys


def test_the_plugin_and_the_replay_agent_load_without_litellm() -> None:
    code = (
        "import sys\n"
        "import pytest_skilleval.plugin, pytest_skilleval.harbor.runner, pytest_skilleval.harbor.replay_agent\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'litellm'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout[-500:]
