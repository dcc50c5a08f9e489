"""The pinned agent CLIs install from npm into the cache and run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import require_system
from tests.system_parts import AGENT_CLI_COMMANDS, INSTALL_NODE, AgentCLIs

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


@pytest.mark.agents
def test_concurrent_installs_of_one_set_install_once(tmp_path: Path) -> None:
    if shutil.which("npm") is None:
        require_system("npm", INSTALL_NODE)
    script = Path(__file__).resolve().parents[2] / "scripts" / "install-agent-clis.sh"
    env = {**os.environ, "SKILLEVAL_AGENT_CLI_CACHE": str(tmp_path / "cache")}
    # A tiny package stands in for the CLIs: the lock, not the download, is under test.
    runs = [
        subprocess.Popen(
            [str(script), "is-number@7.0.0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    prefixes = {Path(out.strip()) for out, _ in outputs}
    assert prefixes == {tmp_path / "cache" / "is-number-7.0.0"}
    assert sum("installing" in err for _, err in outputs) == 1
    assert (tmp_path / "cache" / "is-number-7.0.0" / "node_modules" / "is-number" / "package.json").is_file()
