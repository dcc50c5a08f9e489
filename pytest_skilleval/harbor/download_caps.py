"""What one download out of a sandbox may put on the host, in every environment: caps by apparent size (a sparse
file that costs the sandbox no block would still be written whole), no link and no special file, and a marker
beside the copy naming what was left out (docs/security.md, "Downloads are capped").

The `local` environment copies from its folder tree with `verifier.safe_io`. A container's files reach the host
as a tar stream (`receive_tar`), which is as hostile as the container that made it (the agent may have replaced
`tar` itself): every member is checked here, on the host, while it is written, and the stream is cut past the caps.
"""

from __future__ import annotations

import logging
import tarfile
from pathlib import Path, PurePosixPath
from typing import IO

from verifier import safe_io
from verifier.safe_paths import opened_dir, replace_into, split_rel

MAX_DOWNLOAD_FILE_BYTES = 100 * 1024 * 1024
MAX_DOWNLOAD_BYTES = 1024 * 1024 * 1024
LEFT_OUT_SUFFIX = ".skilleval-left-out.txt"
# Tar headers and padding on top of the files' own bytes before a stream counts as past the caps.
STREAM_SLACK_BYTES = 64 * 1024 * 1024

_log = logging.getLogger(__name__)


def note_left_out(source: str, target: Path, lines: list[str]) -> None:
    """Say what a download's caps kept out: in a marker beside the copy (reviewers find it next to what is there)
    and in the trial's log."""
    marker = target.parent / f"{target.name}{LEFT_OUT_SUFFIX}"
    text = f"pytest-skilleval: left out of the download of {source} (caps: docs/security.md):\n" + "".join(
        f"  {line}\n" for line in lines
    )
    try:
        safe_io.write_text(marker.parent, marker.name, text)
    except OSError as error:
        _log.warning("download: could not write %s: %s", marker, error)
    _log.warning("download of %s left out %d item(s): %s", source, len(lines), "; ".join(lines[:5]))


class StreamTooLong(Exception):
    """The stream passed its byte limit; nothing after that point was read."""


class BoundedReader:
    """A binary stream that raises StreamTooLong instead of reading past `limit` bytes."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self.raw = raw
        self.limit = limit
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        room = self.limit - self.consumed
        if room <= 0:
            raise StreamTooLong(f"the stream passed {self.limit} bytes")
        data = self.raw.read(room if size is None or size < 0 else min(size, room))
        self.consumed += len(data)
        return data


def _member_parts(name: str) -> list[str] | None:
    """A member's path as folder names below the target, or None when it is absolute or climbs out (`..`)."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        return None
    parts = [part for part in path.parts if part != "."]
    try:
        return split_rel("/".join(parts)) if parts else []
    except (ValueError, safe_io.UnsafePathError):
        return None


def receive_tar(stream: IO[bytes], target: Path, shown: str, limits: safe_io.CopyLimits) -> None:
    """Write a tar stream's folders and regular files under `target` (created), never through a link there.
    Links, hard links and special files are left out (never created, never followed), and so are members past
    `limits` (by the size their header gives: the apparent size) and deeper than its depth; each gets a line in
    `limits.left_out`. The stream is read to its end or to the byte limit, past which StreamTooLong is raised."""
    bounded = BoundedReader(stream, (limits.max_total_bytes or MAX_DOWNLOAD_BYTES) + STREAM_SLACK_BYTES)
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=bounded, mode="r|") as archive:  # type: ignore[call-overload]
        for member in archive:
            parts = _member_parts(member.name)
            where = f"{shown}/{member.name.removeprefix('./')}"
            if parts is None:
                limits.left_out.append(f"{where}: a path outside the folder; not copied")
                continue
            if len(parts) > limits.max_depth:
                limits.left_out.append(f"{where}: deeper than {limits.max_depth} folders; not copied")
                continue
            if member.isdir():
                if parts:
                    with opened_dir(target, parts, str(target), create=True):
                        pass
                continue
            if member.issym() or member.islnk():
                limits.left_out.append(f"{where} is a link to {member.linkname!r}; not copied, not followed")
                continue
            if not member.isreg() or not parts:
                limits.left_out.append(f"{where} is not a regular file or folder; not copied")
                continue
            admitted, limit = limits.admit(where, member.size)
            if not admitted:
                continue
            content = archive.extractfile(member)
            assert content is not None  # a regular member always has content
            with opened_dir(target, parts[:-1], str(target), create=True) as dir_fd:
                replace_into(dir_fd, parts[-1], content, where, 0o644 | (member.mode & 0o100), limit=limit)
            limits.copied += member.size
