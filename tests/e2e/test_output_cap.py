"""Command output over the 32 MiB cap says where it was cut (issue 9, item 11)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from pytest_skilleval.harbor import local_env

pytestmark = pytest.mark.e2e


def test_output_cut_at_the_cap_carries_a_marker(tmp_path: Path) -> None:
    cap = local_env._MAX_STREAM_BYTES
    result = asyncio.run(local_env.run_process_tree(
        ["/bin/bash", "-c", f"head -c {cap + 10} /dev/zero | tr '\\0' a; echo tail >&2"],
        cwd=str(tmp_path), env=dict(os.environ), timeout_sec=120))
    assert result.return_code == 0
    assert result.stdout.startswith("a" * 1000)
    assert result.stdout.endswith(f"[output cut at {cap} bytes: 10 more bytes of {cap + 10} were not kept]\n")
    assert result.stderr == "tail\n"
