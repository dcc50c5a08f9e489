"""Command output over the 32 MiB cap says where it was cut (issue 9, item 11), through a real exec."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pytest_skilleval.harbor.sandbox.commands import MAX_STREAM_BYTES
from tests.e2e.conftest import make_env

pytestmark = pytest.mark.e2e


def test_output_cut_at_the_cap_carries_a_marker(tmp_path: Path) -> None:
    cap = MAX_STREAM_BYTES

    async def go():  # noqa: ANN202 - one trial environment, started and stopped
        env = make_env(tmp_path, "none")
        await env.start(force_build=False)
        try:
            return await env.exec(f"head -c {cap + 10} /dev/zero | tr '\\0' a; echo tail >&2", timeout_sec=120)
        finally:
            await env.stop(delete=True)

    result = asyncio.run(go())
    assert result.return_code == 0
    assert result.stdout.startswith("a" * 1000)
    assert result.stdout.endswith(f"[output cut at {cap} bytes: 10 more bytes of {cap + 10} were not kept]\n")
    assert result.stderr == "tail\n"
