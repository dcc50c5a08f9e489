"""A container's tar stream is as hostile as the container (its `tar` may be the agent's): the host writes only
folders and regular files within the caps, never a link, and stops reading past the byte limit."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from pytest_skilleval.harbor import download_caps
from pytest_skilleval.harbor.download_caps import StreamTooLong, receive_tar
from verifier import safe_io


def _archive(*members: tuple[tarfile.TarInfo, bytes | None]) -> io.BytesIO:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as archive:
        for info, content in members:
            archive.addfile(info, io.BytesIO(content) if content is not None else None)
    data.seek(0)
    return data


def _file(name: str, content: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(content)
    return info, content


def _entry(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


def test_only_folders_and_regular_files_within_the_caps_arrive(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    stream = _archive(
        _entry("./sub", tarfile.DIRTYPE),
        _file("./sub/kept.txt", b"kept"),
        _entry("./passwd", tarfile.SYMTYPE, "/etc/passwd"),
        _entry("./hard", tarfile.LNKTYPE, "sub/kept.txt"),
        _entry("./dev", tarfile.CHRTYPE),
        _file("/abs.txt", b"x"),
        _file("../outside/escaped.txt", b"x"),
        _file("./big.bin", b"b" * 2000),
        _file("./last.txt", b"z" * 1000),
    )
    limits = safe_io.CopyLimits(max_file_bytes=1000, max_total_bytes=1000)
    target = tmp_path / "target"
    receive_tar(stream, target, "/logs/agent", limits)
    assert sorted(str(path.relative_to(target)) for path in target.rglob("*")) == ["sub", "sub/kept.txt"]
    assert (target / "sub" / "kept.txt").read_bytes() == b"kept"
    assert not outside.exists()
    joined = "\n".join(limits.left_out)
    assert "/logs/agent/passwd is a link to '/etc/passwd'; not copied, not followed" in joined
    assert "/logs/agent/hard is a link to 'sub/kept.txt'" in joined
    assert "/logs/agent/dev is not a regular file or folder" in joined
    assert "/logs/agent//abs.txt: a path outside the folder" in joined
    assert "/logs/agent/../outside/escaped.txt: a path outside the folder" in joined
    assert "/logs/agent/big.bin is 2000 bytes; the limit is 1000 bytes" in joined
    assert "/logs/agent/last.txt is 1000 bytes, past the limit of 1000 bytes in all" in joined


def test_a_link_already_in_the_target_is_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("host file")
    target = tmp_path / "target"
    target.mkdir()
    os.symlink(victim, target / "note.txt")
    with pytest.raises(safe_io.UnsafePathError):
        receive_tar(_archive(_file("note.txt", b"forged")), target, "/logs/agent", safe_io.CopyLimits())
    assert victim.read_text() == "host file"


def test_a_stream_past_the_caps_is_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A member whose header claims more than the caps is skipped, but its bytes still stream: reading stops."""
    stream = _archive(_file("huge.bin", b"h" * (3 * 1024 * 1024)))
    limits = safe_io.CopyLimits(max_file_bytes=1024, max_total_bytes=1024)
    monkeypatch.setattr(download_caps, "STREAM_SLACK_BYTES", 1024 * 1024)
    with pytest.raises(StreamTooLong):
        receive_tar(stream, tmp_path / "target", "/logs/agent", limits)
    assert not (tmp_path / "target" / "huge.bin").exists()
