"""A path is not a secret, and the agent-kwarg scrub of a trial folder never reads a file whole (issues 21, 23, 28).

The replay agent's `replay_dir` (32+ characters with digits) was taken for key material: every trial folder was
scrubbed and the stored config said `"replay_dir": "[REDACTED]"`; with a 3 GiB sparse file in the folder the scrub
read it whole (6.2 GB peak). Now only credential names and token shapes are secrets, and the scrub streams.
"""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import pytest

from pytest_skilleval.harbor.runner import scrub_agent_kwarg_secrets
from pytest_skilleval.skill.kwarg_values import redacted_kwargs
from verifier import redact_files
from verifier.redact import REDACTED, kwarg_secrets

REPLAY_DIR = "/tmp/pytest-of-ci/pytest-1234/test_replays0/skills/demo-2026-12-01-0123456789/evals/replays"
SECRET = "Kw-0123456789abcdef"


def test_a_path_is_not_a_secret_but_named_and_shaped_values_are() -> None:
    kwargs = {"replay_dir": REPLAY_DIR, "case_id": "c1", "db_pass": SECRET, "endpoint": "sk-abc123def456"}
    assert kwarg_secrets(kwargs) == [SECRET, "sk-abc123def456"]
    assert redacted_kwargs(kwargs) == {**kwargs, "db_pass": REDACTED, "endpoint": REDACTED}


def test_the_trial_folder_is_not_scrubbed_for_a_path(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"agent": {"kwargs": {"replay_dir": REPLAY_DIR}}}))
    before = config.read_bytes()
    scrub_agent_kwarg_secrets(tmp_path, {"replay_dir": REPLAY_DIR, "case_id": "c1"})
    assert config.read_bytes() == before


def test_a_secret_across_a_chunk_boundary_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redact_files, "CHUNK_BYTES", 64)
    log = tmp_path / "agent" / "log.txt"
    log.parent.mkdir()
    # Secrets straddling every chunk boundary from 1 to len-1 bytes into the next chunk, and a JSON-escaped one.
    text = "".join("x" * (64 - k) + SECRET + "y" * k for k in range(1, len(SECRET)))
    log.write_text(text + json.dumps({"v": 'q"' + SECRET}))
    log.chmod(0o640)
    scrub_agent_kwarg_secrets(tmp_path, {"llm_kwargs": {"api_key": SECRET}})
    scrubbed = log.read_text()
    assert SECRET not in scrubbed and scrubbed.count(REDACTED) == len(SECRET)
    assert scrubbed.startswith("x" * 63 + REDACTED + "y")
    assert log.stat().st_mode & 0o777 == 0o640


def test_a_secret_with_regex_characters_across_a_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redact_files, "CHUNK_BYTES", 16)
    secret = "a|b|c|d|e|f|g|h|i|j"
    (tmp_path / "log.txt").write_text("x" * 10 + secret + "y" * 10)
    scrub_agent_kwarg_secrets(tmp_path, {"db_pass": secret})
    assert (tmp_path / "log.txt").read_text() == "x" * 10 + REDACTED + "y" * 10


def test_links_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(f"host file {SECRET}")
    trial = tmp_path / "trial"
    trial.mkdir()
    (trial / "link.txt").symlink_to(outside)
    (trial / "dir").symlink_to(tmp_path)
    scrub_agent_kwarg_secrets(trial, {"api_key": SECRET})
    assert outside.read_text() == f"host file {SECRET}"


def test_a_large_sparse_file_is_streamed_and_stays_sparse(tmp_path: Path) -> None:
    big = tmp_path / "workspace" / "sparse.bin"
    big.parent.mkdir()
    size = 512 * 1024 * 1024
    with big.open("wb") as handle:
        handle.seek(size // 2)
        handle.write(b"start " + SECRET.encode() + b" end")
        handle.truncate(size)
    if big.stat().st_blocks * 512 > 16 * 1024 * 1024:
        pytest.skip("this filesystem does not keep sparse files")
    tracemalloc.start()
    try:
        scrub_agent_kwarg_secrets(tmp_path, {"api_key": SECRET})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 1024 * 1024  # chunks, never the whole file
    info = big.stat()
    assert info.st_size == size - len(SECRET) + len(REDACTED)
    assert info.st_blocks * 512 < 16 * 1024 * 1024  # the holes stayed holes
    with big.open("rb") as handle:
        handle.seek(size // 2)
        assert handle.read(40).startswith(b"start " + REDACTED.encode() + b" end")
    assert os.path.getsize(big) == info.st_size
