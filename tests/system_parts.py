"""Fixtures for tests that need a system part: Docker, the offline test image, Chromium, the agent CLIs.

System parts are installed by `.ci/run`; these fixtures only find them (skipping, or failing under CI, with
the way to install them when missing). What the tests build themselves, the test image and the npm CLIs,
is made here on first use by the scripts in scripts/ and cached across runs and xdist workers.
A test that uses one of these fixtures gets its marker (docker, browser, agents) automatically.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import REPO, require_system

SCRIPTS = REPO / "scripts"
INSTALL_DOCKER = (
    "run `scripts/ensure-docker.sh` as root (Debian's docker.io, the Compose v2 and buildx plugins, a running dockerd)"
)
INSTALL_CHROMIUM = "apt-get install chromium (or run .ci/run)"
INSTALL_NODE = "apt-get install nodejs npm (or run .ci/run)"
FIXTURE_MARKERS = {
    "docker_available": "docker",
    "test_base_image": "docker",
    "chromium_path": "browser",
    "agent_clis": "agents",
}
# Set to 1 to skip the tests that need the agent CLIs instead of installing them (~1.2 GB from npm).
SKIP_AGENT_CLIS_ENV = "SKILLEVAL_SKIP_AGENT_CLIS"
# The executable each pinned npm package puts in node_modules/.bin.
AGENT_CLI_COMMANDS = {"@openai/codex": "codex", "@anthropic-ai/claude-code": "claude", "opencode-ai": "opencode"}


def _agent_cli_cache() -> str:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-skilleval" / "agent-clis"
    return os.environ.get("SKILLEVAL_AGENT_CLI_CACHE") or str(default)


def _skip_agent_clis() -> bool:
    return os.environ.get(SKIP_AGENT_CLIS_ENV, "").strip() not in ("", "0")


def pytest_report_header() -> str:
    """Say up front what the agent tests download and where, and how to opt out (the install is silent and long)."""
    if _skip_agent_clis():
        return f"agent CLIs: not installed ({SKIP_AGENT_CLIS_ENV} is set; the `agents` tests that need them skip)"
    return (
        f"agent CLIs: the `agents` tests install codex, claude-code and opencode (~1.2 GB, npm, pinned in "
        f"scripts/install-agent-clis.sh) into {_agent_cli_cache()} on first use; {SKIP_AGENT_CLIS_ENV}=1 skips them"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests by the system parts they use, so `-m "not docker"` leaves them out without a list to keep."""
    for item in items:
        for fixture, marker in FIXTURE_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)


def _run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="session")
def docker_available() -> str:
    """The docker CLI's path, once a daemon answers and the Compose v2 plugin (which Harbor uses) works."""
    docker = shutil.which("docker")
    if docker is None:
        require_system("Docker", INSTALL_DOCKER)
    info = _run([docker, "info", "--format", "{{.ServerVersion}}"], timeout=30)
    if info.returncode != 0:
        require_system("The Docker daemon", f"{INSTALL_DOCKER}; `docker info` said: {info.stderr.strip()[-300:]}")
    if _run([docker, "compose", "version"], timeout=30).returncode != 0:
        require_system("Docker Compose v2 (`docker compose`)", INSTALL_DOCKER)
    return docker


@pytest.fixture(name="test_base_image", scope="session")
def _test_base_image(docker_available: str) -> str:
    """An offline Debian image (bash, python3, tmux) for `--base-image`, built once with debootstrap and cached.

    SKILLEVAL_TEST_IMAGE names another image to use (built the same way if it does not exist).
    """
    env = {**os.environ, "SKILLEVAL_NO_INSTALL": "1"}
    built = _run([str(SCRIPTS / "build-test-image.sh")], timeout=900, env=env)
    if built.returncode == 3:
        require_system("debootstrap (builds the offline test image)", "apt-get install debootstrap (or run .ci/run)")
    if built.returncode != 0:
        pytest.fail(f"scripts/build-test-image.sh failed:\n{built.stderr[-2000:]}", pytrace=False)
    return built.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Path of a Chromium that starts; run it with `chromium_command` (headless, no sandbox as root)."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        exe = shutil.which(name)
        if exe is not None:
            break
    else:
        require_system("Chromium", INSTALL_CHROMIUM)
    version = _run([exe, "--version"], timeout=60)
    if version.returncode != 0:
        require_system("A working Chromium", f"{INSTALL_CHROMIUM}; `{exe} --version` said: {version.stderr[-300:]}")
    return exe


@dataclass(frozen=True)
class AgentCLIs:
    """The pinned agent CLIs, installed in one npm prefix (hand `prefix` to a run as its tools folder)."""

    prefix: Path
    versions: dict[str, str]

    @property
    def bin_dir(self) -> Path:
        """Holds `codex`, `claude` and `opencode`; put it on PATH."""
        return self.prefix / "node_modules" / ".bin"

    def command(self, package: str) -> Path:
        """The executable of one npm package, e.g. command("@openai/codex")."""
        return self.bin_dir / AGENT_CLI_COMMANDS[package]


@pytest.fixture(scope="session")
def agent_clis() -> AgentCLIs:
    """codex, claude-code and opencode at pinned versions, installed from npm into a cache folder on first use."""
    if _skip_agent_clis():
        require_system("An agent CLI install", f"{SKIP_AGENT_CLIS_ENV} is set; unset it to install them from npm")
    if shutil.which("node") is None or shutil.which("npm") is None:
        require_system("Node.js and npm (install the agent CLIs)", INSTALL_NODE)
    done = _run([str(SCRIPTS / "install-agent-clis.sh")], timeout=900)
    if done.returncode != 0:
        pytest.fail(f"scripts/install-agent-clis.sh failed:\n{done.stderr[-2000:]}", pytrace=False)
    prefix = Path(done.stdout.strip().splitlines()[-1])
    versions = {
        package: json.loads((prefix / "node_modules" / package / "package.json").read_text())["version"]
        for package in AGENT_CLI_COMMANDS
    }
    return AgentCLIs(prefix=prefix, versions=versions)


@dataclass(frozen=True)
class RenderedPage:
    """What headless Chromium made of a page: the DOM after its scripts ran, and its console lines."""

    dom: str
    console: list[str]


def chromium_command(chromium: str, profile_dir: Path, *args: str) -> list[str]:
    """argv for a headless Chromium with its own profile (so parallel runs do not share one); no sandbox as root."""
    no_sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []
    return [
        chromium,
        "--headless",
        *no_sandbox,
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile_dir}",
        *args,
    ]


def render_page(
    chromium: str, url: str, workdir: Path, screenshot: Path | None = None, window: str = "1280,900"
) -> RenderedPage:
    """Load `url` headless: return the rendered DOM and console messages (uncaught errors included) and,
    when `screenshot` is given, write a PNG of the page there for a person to look at."""
    workdir.mkdir(parents=True, exist_ok=True)
    base = chromium_command(
        chromium, workdir / "chromium-profile", f"--window-size={window}", "--virtual-time-budget=5000"
    )
    dumped = _run([*base, "--enable-logging=stderr", "--v=0", "--dump-dom", url], timeout=120)
    if dumped.returncode != 0:
        pytest.fail(f"chromium --dump-dom {url} failed:\n{dumped.stderr[-2000:]}", pytrace=False)
    console = [line.split("] ", 1)[-1] for line in dumped.stderr.splitlines() if ":CONSOLE" in line]
    if screenshot is not None:
        shot = _run([*base, f"--screenshot={screenshot}", url], timeout=120)
        if shot.returncode != 0 or not screenshot.is_file():
            pytest.fail(f"chromium --screenshot {url} failed:\n{shot.stderr[-2000:]}", pytrace=False)
    return RenderedPage(dom=dumped.stdout, console=console)
