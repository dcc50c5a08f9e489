"""The snapshot program cut from the check runner (`python3 -I -S -c PROGRAM`, the workspace before and after the
agent on a sandbox the host cannot read): it imports no more than the walk needs and prints what `json.dumps` would."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilleval.harbor import case_checks
from pytest_skilleval.harbor.sandbox.command_forms import direct_argv
from verifier import check_runner
from verifier.check_host import Snapshot, diff_snapshots

# Modules a checks run needs and a snapshot does not: each would cost a sandbox's python3 start more.
SYSTEM_PATH = "/usr/bin:/bin"
CHECKS_ONLY = {"json", "re", "subprocess", "tempfile", "signal", "typing", "enum"}


def _imported(source: str, *args: str) -> set[str]:
    argv = [sys.executable, "-I", "-S", "-X", "importtime", "-c", source, *args]
    done = subprocess.run(argv, capture_output=True, text=True, cwd="/")
    assert done.returncode == 0 and check_runner.MARKER in done.stdout, done.stderr[-300:]
    return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def _workspace(root: Path, big: bool) -> str:
    (root / "out").mkdir(parents=True)
    (root / "out" / "small.txt").write_text("small\n")
    (root / "link").symlink_to("/etc/passwd")
    if big:
        (root / "big.bin").write_bytes(b"b" * (check_runner.BIG_FILE + 1))
    return case_checks.snapshot_program().replace(f'ROOT = "{check_runner.ROOT}"', f"ROOT = {str(root)!r}")


def test_a_snapshot_start_imports_only_what_the_walk_needs(tmp_path: Path) -> None:
    program = _workspace(tmp_path / "small", big=False)
    snapshot_only = _imported(program)
    assert {"os", "stat"} <= snapshot_only and not snapshot_only & (CHECKS_ONLY | {"hashlib", "_hashlib"})
    assert len(program) < len(case_checks.runner_source()) / 3  # what the sandbox's python3 compiles, twice a trial
    # A big file is hashed by hashlib (OpenSSL, faster per byte), imported only then.
    assert "hashlib" in _imported(_workspace(tmp_path / "big", big=True))
    # The whole runner (its checks mode) still has what its checks use.
    (tmp_path / "checks.json").write_text("[]")
    checks = _imported(case_checks.runner_source(), "checks", str(tmp_path / "checks.json"))
    assert CHECKS_ONLY - {"typing", "enum"} <= checks


def test_the_snapshot_hashes_are_sha256_whichever_implementation(tmp_path: Path) -> None:
    program = _workspace(tmp_path, big=True)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", program], capture_output=True, text=True, check=True)
    found = case_checks.parse_output(done.stdout).snapshot
    assert found is not None and found == Snapshot.model_validate(check_runner.snapshot(str(tmp_path)))
    expected = {
        "out/small.txt": ["file", 6, hashlib.sha256(b"small\n").hexdigest()],
        "big.bin": ["file", check_runner.BIG_FILE + 1, hashlib.sha256(b"b" * (check_runner.BIG_FILE + 1)).hexdigest()],
        "link": ["link", len("/etc/passwd"), hashlib.sha256(b"/etc/passwd").hexdigest()],
    }
    assert {path: list(entry) for path, entry in found.entries.items()} == expected


def test_the_snapshot_command_starts_python_without_a_shell() -> None:
    if shutil.which("python3", path=SYSTEM_PATH) is None:
        pytest.skip("no python3 in the system folders")
    argv = direct_argv(case_checks.snapshot_command(), SYSTEM_PATH)
    assert argv is not None and argv[1:] == ["-I", "-S", "-c", case_checks.snapshot_program()]


def test_the_snapshot_json_is_what_json_dumps_prints(tmp_path: Path) -> None:
    rng = random.Random(7)
    ranges = [(0, 128), (128, 0x800), (0xD800, 0xE000), (0x10000, 0x110000)]
    names = ["", 'qu"o\\te', "\n\r\t\b\f\x00\x1f\x7f\x80", "café 😀", "\udcff"]
    for _ in range(500):
        names.append("".join(chr(rng.randrange(*rng.choice(ranges))) for _ in range(rng.randrange(12))))
    document = {"snapshot": {"entries": {name: ["file", len(name), name[::-1]] for name in names}, "truncated": False}}
    assert check_runner.to_json(document) == json.dumps(document, ensure_ascii=True)
    for name in ("plain.txt", 'qu"o\\te', "tab\tnew\nline", "café 😀"):
        (tmp_path / name).write_bytes(name.encode())
    (tmp_path / "link").symlink_to("/etc/passwd")
    walked = {"snapshot": check_runner.snapshot(str(tmp_path))}
    assert json.loads(check_runner.to_json(walked)) == json.loads(json.dumps(walked))


def test_a_name_that_is_not_utf8_is_kept_alike_on_the_host_and_in_the_sandbox(tmp_path: Path) -> None:
    """os.listdir keeps undecodable bytes as lone surrogates, which the host's JSON reader refused (the sandbox's
    whole snapshot was lost) and its record writer could not write: the walk names them `\\xNN` on both sides."""
    program = _workspace(tmp_path, big=False)
    root = bytes(tmp_path)
    Path(os.fsdecode(root + b"/bad\xff.txt")).write_bytes(b"x")
    os.mkdir(root + b"/dir\xfe")
    Path(os.fsdecode(root + b"/dir\xfe/inner.txt")).write_bytes(b"y")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", program], capture_output=True, text=True, check=True)
    in_sandbox = case_checks.parse_output(done.stdout).snapshot
    on_host = Snapshot.model_validate(check_runner.snapshot(str(tmp_path)))
    assert in_sandbox is not None and in_sandbox == on_host
    assert on_host.entries["bad\\xff.txt"] == ("file", 1, hashlib.sha256(b"x").hexdigest())
    assert on_host.entries["dir\\xfe/inner.txt"] == ("file", 1, hashlib.sha256(b"y").hexdigest())
    # What the trial keeps of it reads back the same (the before-snapshot file) and its diff can be recorded.
    assert Snapshot.model_validate_json(on_host.model_dump_json()) == on_host
    diff = diff_snapshots(Snapshot(), on_host)
    assert "bad\\xff.txt" in json.loads(diff.model_dump_json())["created"]


def test_a_snapshot_that_cannot_open_its_folder_names_that_folder(tmp_path: Path) -> None:
    """The host reads a sandbox's /workspace from its own path: the error names the path it tried, not /workspace."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "workspace").symlink_to(tmp_path / "elsewhere")  # a workspace swapped for a link: never followed
    assert check_runner.snapshot(str(tmp_path / "gone")) == {"error": f"{tmp_path}/gone: No such file or directory"}
    linked = check_runner.snapshot(str(tmp_path / "workspace"))
    assert linked["error"].startswith(f"{tmp_path}/workspace: ") and "entries" not in linked


def test_a_bounded_snapshot_is_the_whole_snapshot_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`snapshot_within`: the same snapshot as `snapshot` for a folder within the bounds; None past either bound,
    before any file past the byte bound is read."""
    (tmp_path / "sub").mkdir()
    for index in range(5):
        (tmp_path / "sub" / f"f{index}.txt").write_text("x" * 100)
    (tmp_path / "link").symlink_to("/etc/passwd")
    whole = check_runner.snapshot(str(tmp_path))
    assert len(whole["entries"]) == 6
    assert check_runner.snapshot_within(str(tmp_path), (7, 500)) == whole  # 7 names (sub, link, 5 files), 500 bytes
    assert check_runner.snapshot_within(str(tmp_path), (6, 500)) is None  # one name too many
    hashed: list[str] = []
    real_hash = check_runner.file_hash

    def counting_hash(dir_fd: int, name: str, size: int) -> str:
        hashed.append(name)
        return real_hash(dir_fd, name, size)

    monkeypatch.setattr(check_runner, "file_hash", counting_hash)
    (tmp_path / "sub" / "f5.bin").write_bytes(b"b" * 2000)  # sorted first in its folder: past the bound at once
    assert check_runner.snapshot_within(str(tmp_path), (100, 1000)) is None
    assert "f5.bin" not in hashed
