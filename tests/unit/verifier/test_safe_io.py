"""verifier.safe_io: reads and writes under a trusted folder never follow a link, and sizes are checked first."""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from verifier import safe_io


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    target = tmp_path / "host" / "secret.txt"
    target.parent.mkdir()
    target.write_text("HOST SECRET\n")
    return target


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root" / "logs").mkdir(parents=True)
    return tmp_path / "root"


def test_read_refuses_a_link_as_the_file(root: Path, host_file: Path) -> None:
    (root / "logs" / "reward.json").symlink_to(host_file)
    with pytest.raises(safe_io.UnsafePathError, match=r"logs/reward.json is a symbolic link \(to .*secret.txt\)"):
        safe_io.read_text(root, "logs/reward.json")


def test_read_refuses_a_link_on_the_way(root: Path, host_file: Path) -> None:
    (root / "logs" / "agent").symlink_to(host_file.parent)
    with pytest.raises(safe_io.UnsafePathError, match=r"/logs/agent is a symbolic link"):
        safe_io.read_text(root, "logs/agent/secret.txt", label="/")


def test_read_refuses_escapes_and_special_files(root: Path) -> None:
    with pytest.raises(safe_io.UnsafePathError, match="'..'"):
        safe_io.read_text(root, "logs/../../etc/passwd")
    with pytest.raises(safe_io.UnsafePathError, match="relative"):
        safe_io.read_text(root, "/etc/passwd")
    os.mkfifo(root / "logs" / "pipe")  # opening it must not hang
    with pytest.raises(safe_io.UnsafePathError, match="not a regular file"):
        safe_io.read_text(root, "logs/pipe")


def test_size_is_checked_before_reading(root: Path) -> None:
    with open(root / "logs" / "big", "wb") as handle:
        handle.truncate(10_000)
    with pytest.raises(safe_io.FileTooLargeError, match="is 10000 bytes; the limit is 100 bytes"):
        safe_io.read_bytes(root, "logs/big", max_bytes=100)
    assert safe_io.file_size(root, "logs/big") == 10_000
    assert safe_io.file_size(root, "logs/absent") is None


def test_write_never_writes_through_a_link(root: Path, host_file: Path) -> None:
    (root / "logs" / "out.txt").symlink_to(host_file)
    with pytest.raises(safe_io.UnsafePathError, match="is a symbolic link"):
        safe_io.write_text(root, "logs/out.txt", "overwritten")
    (root / "logs" / "dir").symlink_to(host_file.parent)
    with pytest.raises(safe_io.UnsafePathError, match="is a symbolic link"):
        safe_io.write_text(root, "logs/dir/new.txt", "planted")
    assert host_file.read_text() == "HOST SECRET\n"
    assert sorted(p.name for p in host_file.parent.iterdir()) == ["secret.txt"]
    safe_io.write_text(root, "logs/new/deeper.txt", "ok")
    assert (root / "logs" / "new" / "deeper.txt").read_text() == "ok"


def test_copy_tree_leaves_links_out_and_names_them(root: Path, host_file: Path, tmp_path: Path) -> None:
    (root / "logs" / "keep.txt").write_text("kept")
    (root / "logs" / "sub").mkdir()
    (root / "logs" / "sub" / "script.sh").write_text("#!/bin/sh\n")
    (root / "logs" / "sub" / "script.sh").chmod(0o755)
    (root / "logs" / "leak").symlink_to(host_file)
    (root / "logs" / "leakdir").symlink_to(host_file.parent)
    refused = safe_io.copy_tree(root, "logs", tmp_path / "out", label="/")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["keep.txt", "sub"]
    assert os.access(tmp_path / "out" / "sub" / "script.sh", os.X_OK)
    assert any("/logs/leak is a symbolic link" in r for r in refused)
    assert any("/logs/leakdir is a symbolic link" in r for r in refused)


def test_copy_tree_refuses_a_linked_source_or_destination(root: Path, host_file: Path, tmp_path: Path) -> None:
    (root / "logs" / "agent").symlink_to(host_file.parent)
    with pytest.raises(safe_io.UnsafePathError, match="/logs/agent is a symbolic link"):
        safe_io.copy_tree(root, "logs/agent", tmp_path / "out", label="/")
    source = tmp_path / "src"
    source.mkdir()
    (source / "secret.txt").write_text("from the host\n")
    with pytest.raises(safe_io.UnsafePathError, match="/logs/agent is a symbolic link"):
        safe_io.copy_tree(source, "", root, "logs/agent", links="copy", dst_label="/")
    assert host_file.read_text() == "HOST SECRET\n"


def test_copy_tree_can_recreate_links_without_reading_them(root: Path, host_file: Path, tmp_path: Path) -> None:
    (root / "logs" / "leak").symlink_to(host_file)
    assert safe_io.copy_tree(root, "logs", tmp_path / "out", links="copy") == []
    assert os.readlink(tmp_path / "out" / "leak") == str(host_file)


def test_copy_tree_checks_sizes_before_copying(root: Path, tmp_path: Path) -> None:
    with open(root / "logs" / "huge", "wb") as handle:
        handle.truncate(1024**3)
    refused = safe_io.copy_tree(root, "logs", tmp_path / "out", max_file_bytes=1024)
    assert not (tmp_path / "out" / "huge").exists()
    assert refused and "is 1073741824 bytes; the limit is 1024 bytes" in refused[0]


def test_link_on_path_names_the_first_link(root: Path, host_file: Path) -> None:
    assert safe_io.link_on_path(root, "logs/agent/trajectory.json", label="/") is None
    (root / "logs" / "agent").symlink_to(host_file.parent)
    assert "/logs/agent is a symbolic link" in str(safe_io.link_on_path(root, "logs/agent/trajectory.json", label="/"))


def test_read_capped_says_where_output_was_cut() -> None:
    handle = io.BytesIO(b"a" * 150)
    text = safe_io.read_capped(handle, 100)
    assert text.startswith("a" * 100)
    assert "[output cut at 100 bytes: 50 more bytes of 150 were not kept]" in text
    assert safe_io.read_capped(io.BytesIO(b"short"), 100) == "short"


def test_empty_dir_keeps_the_folder_and_unlinks_links_inside(root: Path, host_file: Path) -> None:
    folder = root / "logs" / "verifier"
    (folder / "deep" / "er").mkdir(parents=True)
    (folder / "deep" / "er" / "f.txt").write_text("x")
    (folder / ".hidden").write_text("x")
    (folder / "deep" / "hostdir").symlink_to(host_file.parent)
    (folder / "hostfile").symlink_to(host_file)
    os.mkfifo(folder / "pipe")
    inode = folder.stat().st_ino
    safe_io.empty_dir(root, "logs/verifier", mode=0o777)
    assert folder.stat().st_ino == inode and list(folder.iterdir()) == []
    assert folder.stat().st_mode & 0o7777 == 0o777
    assert host_file.read_text() == "HOST SECRET\n"
    assert sorted(p.name for p in host_file.parent.iterdir()) == ["secret.txt"]


def test_empty_dir_replaces_a_link_or_a_file_at_the_folder(root: Path, host_file: Path) -> None:
    (root / "logs" / "agent").symlink_to(host_file.parent)
    safe_io.empty_dir(root, "logs/agent")
    assert (root / "logs" / "agent").is_dir() and not (root / "logs" / "agent").is_symlink()
    assert host_file.read_text() == "HOST SECRET\n"
    (root / "logs" / "file").write_text("not a folder")
    safe_io.empty_dir(root, "logs/file")
    assert (root / "logs" / "file").is_dir() and list((root / "logs" / "file").iterdir()) == []


def test_empty_dir_creates_parents_and_refuses_a_link_or_file_on_the_way(root: Path, host_file: Path) -> None:
    safe_io.empty_dir(root, "new/sub/dir")
    assert (root / "new" / "sub" / "dir").is_dir()
    (root / "linked").symlink_to(host_file.parent)
    with pytest.raises(safe_io.UnsafePathError, match=r"/linked is a symbolic link \(to .*host\)"):
        safe_io.empty_dir(root, "linked/secret.txt", label="/")
    (root / "plain").write_text("x")
    with pytest.raises(safe_io.UnsafePathError, match="/plain is not a directory"):
        safe_io.empty_dir(root, "plain/sub", label="/")
    assert host_file.read_text() == "HOST SECRET\n"
    assert (root / "plain").read_text() == "x"


def test_empty_dir_names_what_it_could_not_remove(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (root / "logs" / "v" / "sub").mkdir(parents=True)
    (root / "logs" / "v" / "sub" / "stuck").write_text("x")
    (root / "logs" / "v" / "gone").write_text("x")
    unlink = os.unlink

    def refusing(name: str, *args: object, **kwargs: object) -> None:
        if name == "stuck":  # what a read-only folder does to a user without CAP_DAC_OVERRIDE
            raise PermissionError(1, "Operation not permitted")
        unlink(name, *args, **kwargs)

    monkeypatch.setattr(safe_io.os, "unlink", refusing)
    with pytest.raises(
        OSError,
        match=r"/logs/v could not be emptied: /logs/v/sub/stuck: Operation not permitted; "
        r"/logs/v/sub: Directory not empty",
    ):
        safe_io.empty_dir(root, "logs/v", label="/")
    assert sorted(p.name for p in (root / "logs" / "v").rglob("*")) == ["stuck", "sub"]


def test_empty_dir_walks_without_recursion(root: Path) -> None:
    deep = root / "logs" / "/".join(["d"] * 300)
    deep.mkdir(parents=True)
    (deep / "f").write_text("x")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100)  # a sandbox can build a tree deeper than any recursion limit
    try:
        safe_io.empty_dir(root, "logs")
    finally:
        sys.setrecursionlimit(limit)
    assert list((root / "logs").iterdir()) == []


def test_lstat_never_looks_behind_a_link(root: Path, host_file: Path) -> None:
    (root / "logs" / "f.txt").write_text("x")
    (root / "logs" / "to_dir").symlink_to(host_file.parent)
    (root / "linked").symlink_to(root / "logs")
    assert stat.S_ISDIR(safe_io.lstat(root, "logs").st_mode)
    assert stat.S_ISREG(safe_io.lstat(root, "logs/f.txt").st_mode)
    assert stat.S_ISLNK(safe_io.lstat(root, "logs/to_dir").st_mode)
    assert safe_io.lstat(root, "logs/to_dir/secret.txt") is None
    assert safe_io.lstat(root, "linked/f.txt") is None
    assert safe_io.lstat(root, "logs/f.txt/x") is None
    assert safe_io.lstat(root, "logs/missing") is None


def test_make_readable_is_chmod_a_plus_r_capital_x_that_follows_no_link(tmp_path: Path) -> None:
    root, outside = tmp_path / "rootfs", tmp_path / "outside"
    skill = root / "runtime" / "skills" / "demo"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("x")
    (skill / "scripts" / "run.sh").write_text("x")
    outside.mkdir()
    (outside / "secret").write_text("s")
    for path, mode in [
        (skill / "SKILL.md", 0o600),
        (skill / "scripts" / "run.sh", 0o700),
        (skill / "scripts", 0o700),
        (skill, 0o700),
        (outside / "secret", 0o600),
        (outside, 0o700),
    ]:
        path.chmod(mode)
    (skill / "planted").symlink_to(outside / "secret")
    (skill / "planted-dir").symlink_to(outside)

    safe_io.make_readable(root, "runtime/skills/demo")

    modes = {
        path.relative_to(skill).as_posix(): stat.S_IMODE(path.lstat().st_mode)
        for path in [skill, skill / "SKILL.md", skill / "scripts", skill / "scripts" / "run.sh"]
    }
    assert modes == {".": 0o755, "SKILL.md": 0o644, "scripts": 0o755, "scripts/run.sh": 0o755}
    assert stat.S_IMODE((outside / "secret").stat().st_mode) == 0o600  # behind a link: untouched
    assert stat.S_IMODE(outside.stat().st_mode) == 0o700
    (root / "runtime" / "skills" / "linked").symlink_to(skill)
    with pytest.raises(safe_io.UnsafePathError):
        safe_io.make_readable(root, "runtime/skills/linked")  # a link at the folder itself is refused


def test_a_copy_is_capped_by_apparent_size_per_file_and_in_total(tmp_path: Path) -> None:
    """A sparse file costs its folder no block; by apparent size it is still over the cap, and left out."""
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "sparse.bin", "wb") as handle:
        handle.truncate(6 * 1024**3)
    for name in ("a.txt", "b.txt", "c.txt"):
        (src / name).write_bytes(b"x" * 400)
    limits = safe_io.CopyLimits(max_file_bytes=1000, max_total_bytes=1000)
    assert safe_io.copy_tree(src, "", tmp_path / "dst", limits=limits) == []
    assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == ["a.txt", "b.txt"]
    assert limits.copied == 800
    assert limits.left_out == [
        f"{src}/c.txt is 400 bytes, past the limit of 1000 bytes in all",
        f"{src}/sparse.bin is {6 * 1024**3} bytes; the limit is 1000 bytes (nothing of it was read)",
    ]


def test_a_tree_thousands_deep_is_cut_at_the_depth_limit_and_the_rest_copied(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    fd = os.open(src, os.O_RDONLY)
    try:
        for _ in range(3000):  # deeper than any path the kernel takes whole, and than Python's recursion limit
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)
    (src / "z.txt").write_text("after the deep folder\n")
    limits = safe_io.CopyLimits(max_depth=5)
    assert safe_io.copy_tree(src, "", tmp_path / "dst", limits=limits) == []
    assert (tmp_path / "dst" / "z.txt").read_text() == "after the deep folder\n"
    assert (tmp_path / "dst" / "d" / "d" / "d" / "d" / "d").is_dir()
    assert not (tmp_path / "dst" / "d" / "d" / "d" / "d" / "d" / "d").exists()
    assert limits.left_out == [f"{src}/d/d/d/d/d/d: more than 5 folders deep; nothing in it was copied"]
    # Without limits of its own, the default depth still holds, and what it cut is a refusal.
    refused = safe_io.copy_tree(src, "", tmp_path / "dst2")
    assert len(refused) == 1 and f"more than {safe_io.MAX_COPY_DEPTH} folders deep" in refused[0]
    shutil.rmtree(src)


def test_tree_within_counts_names_and_file_bytes_without_following_links(tmp_path: Path) -> None:
    """A small folder is within its bounds; one name or one byte more is not; a link is a name, never followed
    (what it points at counts nothing); an unreadable or missing folder is not within (the copy says why)."""
    root = tmp_path / "root"
    (root / "logs" / "sub").mkdir(parents=True)
    (root / "logs" / "a.txt").write_bytes(b"a" * 300)
    (root / "logs" / "sub" / "b.txt").write_bytes(b"b" * 200)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "huge.bin").write_bytes(b"h" * 10_000)
    (root / "logs" / "to-outside").symlink_to(outside)
    assert safe_io.tree_within(root, "logs", (4, 500))  # a.txt, sub, to-outside, sub/b.txt; 500 bytes
    assert not safe_io.tree_within(root, "logs", (3, 500))
    assert not safe_io.tree_within(root, "logs", (4, 499))
    assert not safe_io.tree_within(root, "missing", (100, 100))
    (root / "linked").symlink_to(root / "logs")
    assert not safe_io.tree_within(root, "linked", (100, 100_000))  # a link at the folder itself: never walked
