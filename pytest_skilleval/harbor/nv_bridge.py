"""The compatibility bridge of the NVIDIA single-key route: litellm's own proxy, run as a child process of the run.

codex speaks the OpenAI Responses API and claude-code the Anthropic Messages API; NVIDIA Build speaks OpenAI chat
completions. litellm's proxy serves `/v1/responses` and `/v1/messages` and translates both into chat completions
for an OpenAI-compatible upstream (`nvidia_nim/<catalog id>` at NVIDIA Build's URL), so no translator is written
here. The proxy's extra modules come with `pip install 'pytest-skilleval[nv-bridge]'` (docs/agents.md says why not
`litellm[proxy]`).

One bridge per process, started on the first trial that needs it and stopped at session end (or process exit):

- it listens on one host address (127.0.0.1 for `local` trials, which share the host's network; Docker's bridge
  gateway for `docker` trials) on a free port;
- a random token made for this run is its only accepted key (litellm's `master_key`); the trial gets the token, never
  `NVIDIA_API_KEY`;
- its config file holds no secret: the key and the token reach the proxy only through its environment
  (`os.environ/NAME` references), and its output is kept in memory, redacted before it is ever shown.
"""

from __future__ import annotations

import atexit
import collections
import fcntl
import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from pytest_skilleval.harbor.nv_route import BRIDGE_TOKEN_VAR, NVIDIA_KEY_VAR

START_TIMEOUT = 300.0  # the proxy imports most of litellm; on a busy 2-core machine that took ~60 s
OUTPUT_LINES = 200
# The proxy's own environment: what Python and litellm need, the key and the token; nothing else of the host.
PASSED_VARS = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NO_PROXY")
QUIET = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of the price list from GitHub
    "LITELLM_TELEMETRY": "False",
    "DISABLE_ADMIN_UI": "True",
    "LITELLM_LOG": "ERROR",
}


class BridgeError(RuntimeError):
    """The bridge could not start; the message is redacted and names the fix."""


def bridge_config(upstream: str) -> str:
    """litellm proxy's config: any model name goes to NVIDIA Build under its own name; secrets by reference."""
    return (
        "model_list:\n"
        '  - model_name: "*"\n'
        "    litellm_params:\n"
        '      model: "nvidia_nim/*"\n'
        f'      api_base: "{upstream}"\n'
        f'      api_key: "os.environ/{NVIDIA_KEY_VAR}"\n'
        "litellm_settings:\n"
        "  drop_params: true\n"  # what NVIDIA Build does not take (codex's reasoning settings) is dropped, not an error
        "  num_retries: 0\n"  # the agents retry themselves
        "general_settings:\n"
        f'  master_key: "os.environ/{BRIDGE_TOKEN_VAR}"\n'
    )


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class NvBridge:
    """One litellm proxy process between the trials' agents and NVIDIA Build."""

    def __init__(self, folder: Path, upstream: str, host: str = "127.0.0.1", token: str | None = None) -> None:
        self.folder = folder
        self.upstream = upstream
        self.host = host
        self.port = 0
        self.token = token or "sk-" + secrets.token_hex(24)
        self._process: subprocess.Popen[bytes] | None = None
        self._output: collections.deque[str] = collections.deque(maxlen=OUTPUT_LINES)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, environ: dict[str, str] | None = None) -> None:
        """Start the proxy and wait until it answers; BridgeError (redacted) when it cannot."""
        environ = dict(os.environ) if environ is None else environ
        key = environ.get(NVIDIA_KEY_VAR, "")
        if not key:
            raise BridgeError(f"the NVIDIA single-key route needs {NVIDIA_KEY_VAR} set on the host")
        try:
            import litellm.proxy.proxy_cli  # noqa: F401  (the proxy's own module; its extras are checked below)
        except ImportError as error:
            raise BridgeError(
                f"the NVIDIA bridge needs litellm's proxy modules ({error}): pip install 'pytest-skilleval[nv-bridge]'"
            ) from None
        os.environ[BRIDGE_TOKEN_VAR] = self.token  # Harbor resolves the agents' `${...}` templates from here
        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "litellm-bridge.yaml"
        config.write_text(bridge_config(self.upstream), encoding="utf-8")
        self.port = _free_port(self.host)
        env = {name: environ[name] for name in PASSED_VARS if name in environ}
        env.update(QUIET, **{NVIDIA_KEY_VAR: key, BRIDGE_TOKEN_VAR: self.token})
        command = [
            sys.executable,
            "-m",
            "litellm.proxy.proxy_cli",
            "--config",
            str(config),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--num_workers",
            "1",
            "--telemetry",
            "False",
        ]
        self._process = subprocess.Popen(
            command,
            env=env,
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() ends the proxy and anything it started
        )
        threading.Thread(target=self._drain, daemon=True).start()
        atexit.register(self.stop)
        self._wait_ready()

    def _drain(self) -> None:
        process = self._process
        if process is None or process.stdout is None:
            return
        for raw in process.stdout:
            self._output.append(raw.decode("utf-8", "replace").rstrip())

    def output(self) -> str:
        """The proxy's last lines, with the key and the token redacted."""
        from verifier.redact import Redactor

        secrets_known = [value for value in (os.environ.get(NVIDIA_KEY_VAR), self.token) if value]
        return Redactor(secrets_known).text("\n".join(self._output))

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not self.running:
                raise BridgeError(f"the NVIDIA bridge (litellm proxy) exited at start:\n{self.output()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health/liveliness", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise BridgeError(f"the NVIDIA bridge did not answer within {START_TIMEOUT:.0f} s:\n{self.output()[-2000:]}")

    def stop(self) -> None:
        """End the proxy's process group (SIGTERM, then SIGKILL) and forget the token."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if os.environ.get(BRIDGE_TOKEN_VAR) == self.token:
            os.environ.pop(BRIDGE_TOKEN_VAR, None)


def bridge_host(env_mode: str) -> str:
    """The host address the bridge listens on: loopback for `local` trials (they share the host's network), the
    Docker bridge's gateway for `docker` trials (reachable from the trial's containers, not from other hosts)."""
    return "127.0.0.1" if env_mode != "docker" else docker_bridge_gateway()


def docker_bridge_gateway() -> str:
    """The host's address on Docker's default `bridge` network: its IPAM gateway, or, where Docker leaves that out
    of the network's config (seen with Debian's dockerd 20.10), the IPv4 address of the bridge's host interface."""
    query = '{{range .IPAM.Config}}{{.Gateway}} {{end}}|{{index .Options "com.docker.network.bridge.name"}}'
    try:
        done = subprocess.run(
            ["docker", "network", "inspect", "bridge", "--format", query], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BridgeError(f"the NVIDIA bridge needs Docker's bridge network address: {error}") from None
    gateways, _, interface = done.stdout.strip().rpartition("|")
    gateway = next((part for part in gateways.split() if part.count(".") == 3), None)
    if gateway is None and done.returncode == 0 and interface:
        gateway = interface_ipv4(interface)
    if done.returncode != 0 or gateway is None:
        raise BridgeError("the NVIDIA bridge needs Docker's `bridge` network (docker network inspect bridge)")
    return gateway


def interface_ipv4(name: str) -> str | None:
    """The IPv4 address of the host's network interface `name` (SIOCGIFADDR), or None when it has none."""
    request = struct.pack("256s", name.encode()[:15])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            answer = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, request)
        except OSError:
            return None
    return socket.inet_ntoa(answer[20:24])


SIOCGIFADDR = 0x8915


_bridges: dict[str, NvBridge] = {}
_lock = threading.Lock()
_TOKEN = "sk-" + secrets.token_hex(24)  # one per process: every bridge it starts takes the same one


def shared_bridge(folder: Path, upstream: str, host: str) -> NvBridge:
    """This process's bridge on `host`, started on first use (trials in flight ask from several threads)."""
    with _lock:
        bridge = _bridges.get(host)
        if bridge is None or not bridge.running:
            bridge = NvBridge(folder / f"nv-bridge-{host}", upstream, host, _TOKEN)
            bridge.start()
            _bridges[host] = bridge
        return bridge


def stop_bridges() -> None:
    """Stop every bridge this process started (session end)."""
    with _lock:
        for bridge in _bridges.values():
            bridge.stop()
        _bridges.clear()
