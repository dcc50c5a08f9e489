"""The host's address on Docker's default bridge, which the NVIDIA bridge and the tests' scripted servers listen on
for `docker` trials: Docker's IPAM gateway, or the bridge interface's own address where Docker's config leaves the
gateway out (Debian's dockerd 20.10 does on some hosts). A stand-in `docker` on PATH answers the inspect query."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from pytest_skilleval.harbor.nv_bridge import BridgeError, bridge_host, docker_bridge_gateway


def _docker_printing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str, status: int = 0) -> None:
    fake = tmp_path / "docker"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' '{output}'\nexit {status}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")


def test_the_ipam_gateway_is_taken_when_docker_gives_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _docker_printing(tmp_path, monkeypatch, "172.18.0.1 |docker0")
    assert docker_bridge_gateway() == "172.18.0.1"
    assert bridge_host("docker") == "172.18.0.1"


def test_without_an_ipam_gateway_the_bridge_interface_address_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The loopback interface stands for docker0: every host has it, with 127.0.0.1.
    _docker_printing(tmp_path, monkeypatch, " |lo")
    assert docker_bridge_gateway() == "127.0.0.1"


@pytest.mark.parametrize(("output", "status"), [(" |skilleval-none0", 0), ("", 1), ("172.17.0.1 |docker0", 1)])
def test_no_address_or_a_failed_inspect_is_a_bridge_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str, status: int
) -> None:
    _docker_printing(tmp_path, monkeypatch, output, status)
    with pytest.raises(BridgeError, match="docker network inspect bridge"):
        docker_bridge_gateway()


def test_local_trials_reach_the_bridge_on_loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _docker_printing(tmp_path, monkeypatch, "", 1)  # never asked
    assert bridge_host("local") == "127.0.0.1"
