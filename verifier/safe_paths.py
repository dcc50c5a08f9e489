"""The walk under `verifier.safe_io`: each path component opened with `O_NOFOLLOW` relative to its parent's
descriptor, starting at a trusted directory, so the file reached is always inside it and a link is an error naming
it. Kept apart so `safe_io` holds only the operations its callers use (read, write, copy, clear).

Pure standard library.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | CLOEXEC
# O_NONBLOCK: opening a FIFO the sandbox left behind must not hang the host; regular files ignore the flag.
READ_FLAGS = os.O_RDONLY | NOFOLLOW | CLOEXEC | getattr(os, "O_NONBLOCK", 0)
CHUNK = 1024 * 1024
# How deep a copy walks: deeper folders are left out and reported (no legitimate output nests this far).
MAX_COPY_DEPTH = 128

LinkPolicy = Literal["refuse", "copy"]


class UnsafePathError(OSError):
    """A link, a special file or an escaping path where a file from the sandbox was expected; never followed."""


class FileTooLargeError(ValueError):
    """A file over the size limit; nothing of it was copied or parsed."""


def split_rel(rel: str | os.PathLike[str]) -> list[str]:
    """The components of a relative path; absolute paths and `..` are refused (the result must stay inside)."""
    text = os.fspath(rel)
    if text.startswith("/"):
        raise UnsafePathError(f"{text} must be relative to its trusted directory")
    parts = [part for part in text.split("/") if part not in ("", ".")]  # PurePosixPath(text).parts, no object made
    if ".." in parts:
        raise UnsafePathError(f"{text} must not contain '..'")
    return parts


def shown_path(label: str, parts: list[str]) -> str:
    """How a path is named in messages: the trusted directory's label, then the components."""
    return "/".join([label.rstrip("/"), *parts]) if parts else label


def link_error(dir_fd: int, name: str, shown: str) -> UnsafePathError:
    """The error for a link (or special file) found at `name`: it names the link and where it points."""
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return UnsafePathError(f"{shown} is not a regular file or directory; it was not followed")
    return UnsafePathError(f"{shown} is a symbolic link (to {target}); links from the sandbox are never followed")


def open_error(error: OSError, dir_fd: int, name: str, shown: str) -> OSError:
    """Turn ELOOP/ENOTDIR from an O_NOFOLLOW open into an error that names the link."""
    if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return error
        if stat.S_ISLNK(st.st_mode):
            return link_error(dir_fd, name, shown)
        if error.errno == errno.ENOTDIR:
            return UnsafePathError(f"{shown} is not a directory")
    return error


def open_root(root: Path, create: bool) -> int:
    """The trusted directory itself; its own last component must not be a link either."""
    text = os.path.abspath(root)  # strings, not a Path: this runs for every file operation on a sandbox
    parent_dir, name = os.path.split(text)
    if create:
        os.makedirs(parent_dir, exist_ok=True)
        try:
            os.mkdir(text)
        except FileExistsError:
            pass
    parent = os.open(parent_dir, DIR_FLAGS & ~NOFOLLOW)
    try:
        return open_child_dir(parent, name, text, create=False)
    finally:
        os.close(parent)


def open_child_dir(dir_fd: int, name: str, shown: str, *, create: bool) -> int:
    """One folder below `dir_fd`, opened without following a link (made first when `create`)."""
    if not name:  # the file-system root
        return os.dup(dir_fd)
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise FileNotFoundError(errno.ENOENT, "no such directory", shown) from None
    except OSError as error:
        raise open_error(error, dir_fd, name, shown) from None
    try:
        os.mkdir(name, 0o755, dir_fd=dir_fd)
    except FileExistsError:
        pass
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError as error:
        raise open_error(error, dir_fd, name, shown) from None


@contextmanager
def opened_dir(root: Path, parts: list[str], label: str, *, create: bool = False) -> Iterator[int]:
    """A descriptor of root/parts, each component opened without following links."""
    fd = open_root(root, create)
    try:
        for index, part in enumerate(parts):
            child = open_child_dir(fd, part, shown_path(label, parts[: index + 1]), create=create)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def open_regular(dir_fd: int, name: str, shown: str) -> tuple[int, os.stat_result]:
    """A regular file below `dir_fd`, opened without following a link; a FIFO or device is refused."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", shown) from None
    except OSError as error:
        raise open_error(error, dir_fd, name, shown) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafePathError(f"{shown} is not a regular file")
    return fd, st


def read_fd(fd: int, limit: int | None, shown: str) -> bytes:
    """All of an open file, refusing it once it grows past `limit` while being read."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if limit is not None and total > limit:
            raise FileTooLargeError(f"{shown} grew past {limit} bytes while being read; the limit is {limit} bytes")
        chunks.append(chunk)


def too_large(shown: str, size: int, limit: int) -> FileTooLargeError:
    """The error for a file over its size limit (nothing of it was read)."""
    return FileTooLargeError(f"{shown} is {size} bytes; the limit is {limit} bytes (nothing of it was read)")


def replace_into(
    dir_fd: int,
    name: str,
    data_source: int | bytes | IO[bytes],
    shown: str,
    mode: int = 0o644,
    times: tuple[int, int] | None = None,
    limit: int | None = None,
) -> None:
    """Write a temp file in dir_fd (from bytes, a descriptor or a binary stream, up to `limit` bytes) and rename it
    over `name`: an existing link at `name` is refused, not followed."""
    try:
        existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISLNK(existing.st_mode):
        raise link_error(dir_fd, name, shown)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise UnsafePathError(f"{shown} exists and is not a regular file")
    tmp = f".{name[:64]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        try:
            if isinstance(data_source, bytes):
                view = memoryview(data_source)
                while view:
                    view = view[os.write(fd, view) :]
            else:
                copied = 0
                source = data_source
                read = (lambda: os.read(source, CHUNK)) if isinstance(source, int) else (lambda: source.read(CHUNK))
                while chunk := read():
                    copied += len(chunk)
                    if limit is not None and copied > limit:
                        raise FileTooLargeError(f"{shown} grew past the limit of {limit} bytes while being copied")
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(fd, view) :]
            os.fchmod(fd, mode & 0o777)
            if times is not None:
                os.utime(fd, ns=times)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def tree_within(root: Path, rel: str | os.PathLike[str], within: tuple[int, int]) -> bool:
    """Whether the folder root/rel holds at most `within` (names, bytes of its regular files), counted without
    following a link or reading a file, and stopping as soon as either is passed: a caller copies a small folder at
    once and a larger one where the copy holds nothing up. False when it cannot be read (the copy says why)."""
    names_left, bytes_left = within

    def fits(dir_fd: int) -> bool:
        nonlocal names_left, bytes_left
        with os.scandir(dir_fd) as found:
            entries = list(found)
        names_left -= len(entries)
        if names_left < 0:
            return False
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
                try:
                    if not fits(sub):
                        return False
                finally:
                    os.close(sub)
            elif entry.is_file(follow_symlinks=False):
                bytes_left -= entry.stat(follow_symlinks=False).st_size
                if bytes_left < 0:
                    return False
        return True

    try:
        with opened_dir(root, split_rel(rel), str(root)) as top:
            return fits(top)
    except (OSError, ValueError):
        return False
