"""The pinned agent CLIs install from npm into the cache and run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.system_parts import AGENT_CLI_COMMANDS, AgentCLIs

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("package", sorted(AGENT_CLI_COMMANDS))
def test_each_agent_cli_prints_its_pinned_version(agent_clis: AgentCLIs, package: str, tmp_path: Path) -> None:
    exe = agent_clis.command(package)
    assert exe.parent == agent_clis.bin_dir
    # A fresh HOME: the CLIs may write config there, never into the user's.
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{agent_clis.bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert agent_clis.versions[package] in done.stdout


def test_the_cli_cache_is_reused(agent_clis: AgentCLIs) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "install-agent-clis.sh"
    again = subprocess.run([str(script)], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert Path(again.stdout.strip()) == agent_clis.prefix
    assert "installing" not in again.stderr
