"""Reading and writing files a sandbox produced, without ever following a link it planted.

Why: the `local` environment's sandbox is a folder tree on the host, and Docker's `cp` copies links as links. Code
the agent chose can replace `/logs/agent` or `reward.json` with a symbolic link to any host file; host-side code
that opened such a path would read the host file into the results or write through it onto the host. So every
host-side read or write of a path the sandbox could have touched goes through here: the walk starts at a trusted
directory and opens each component with `O_NOFOLLOW` relative to its parent's descriptor (no `..`, no absolute
parts), so the file reached is always inside that directory. A link is reported as an error naming it; it is never
followed, and never silently replaced when it stands where we write.

Pure standard library; used by the grading engine, the Harbor adapter and environment, and the results tree.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Literal

__all__ = [
    "FileTooLargeError",
    "UnsafePathError",
    "copy_file",
    "copy_tree",
    "empty_dir",
    "file_size",
    "link_on_path",
    "lstat",
    "make_readable",
    "read_bytes",
    "read_capped",
    "read_files",
    "read_text",
    "remove_file",
    "write_bytes",
    "write_text",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
# O_NONBLOCK: opening a FIFO the sandbox left behind must not hang the host; regular files ignore the flag.
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_CHUNK = 1024 * 1024

LinkPolicy = Literal["refuse", "copy"]


class UnsafePathError(OSError):
    """A link, a special file or an escaping path where a file from the sandbox was expected; never followed."""


class FileTooLargeError(ValueError):
    """A file over the size limit; nothing of it was copied or parsed."""


def _parts(rel: str | os.PathLike[str]) -> list[str]:
    """The components of a relative path; absolute paths and `..` are refused (the result must stay inside)."""
    text = os.fspath(rel)
    path = PurePosixPath(text)
    if path.is_absolute():
        raise UnsafePathError(f"{text} must be relative to its trusted directory")
    parts = [part for part in path.parts if part != "."]
    if ".." in parts:
        raise UnsafePathError(f"{text} must not contain '..'")
    return parts


def _shown(label: str, parts: list[str]) -> str:
    return "/".join([label.rstrip("/"), *parts]) if parts else label


def _link_error(dir_fd: int, name: str, shown: str) -> UnsafePathError:
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return UnsafePathError(f"{shown} is not a regular file or directory; it was not followed")
    return UnsafePathError(f"{shown} is a symbolic link (to {target}); links from the sandbox are never followed")


def _open_error(error: OSError, dir_fd: int, name: str, shown: str) -> OSError:
    """Turn ELOOP/ENOTDIR from an O_NOFOLLOW open into an error that names the link."""
    if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return error
        if stat.S_ISLNK(st.st_mode):
            return _link_error(dir_fd, name, shown)
        if error.errno == errno.ENOTDIR:
            return UnsafePathError(f"{shown} is not a directory")
    return error


def _open_root(root: Path, create: bool) -> int:
    """The trusted directory itself; its own last component must not be a link either."""
    root = Path(os.path.abspath(root))
    if create:
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(root)
        except FileExistsError:
            pass
    parent = os.open(root.parent, _DIR_FLAGS & ~_NOFOLLOW)
    try:
        return _open_child_dir(parent, root.name, str(root), create=False)
    finally:
        os.close(parent)


def _open_child_dir(dir_fd: int, name: str, shown: str, *, create: bool) -> int:
    if not name:  # the file-system root
        return os.dup(dir_fd)
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise FileNotFoundError(errno.ENOENT, "no such directory", shown) from None
    except OSError as error:
        raise _open_error(error, dir_fd, name, shown) from None
    try:
        os.mkdir(name, 0o755, dir_fd=dir_fd)
    except FileExistsError:
        pass
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as error:
        raise _open_error(error, dir_fd, name, shown) from None


@contextmanager
def _directory(root: Path, parts: list[str], label: str, *, create: bool = False) -> Iterator[int]:
    """A descriptor of root/parts, each component opened without following links."""
    fd = _open_root(root, create)
    try:
        for index, part in enumerate(parts):
            child = _open_child_dir(fd, part, _shown(label, parts[: index + 1]), create=create)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_regular(dir_fd: int, name: str, shown: str) -> tuple[int, os.stat_result]:
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such file", shown) from None
    except OSError as error:
        raise _open_error(error, dir_fd, name, shown) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafePathError(f"{shown} is not a regular file")
    return fd, st


def _read_fd(fd: int, limit: int | None, shown: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if limit is not None and total > limit:
            raise FileTooLargeError(f"{shown} grew past {limit} bytes while being read; the limit is {limit} bytes")
        chunks.append(chunk)


def _too_large(shown: str, size: int, limit: int) -> FileTooLargeError:
    return FileTooLargeError(f"{shown} is {size} bytes; the limit is {limit} bytes (nothing of it was read)")


def read_bytes(
    root: Path,
    rel: str | os.PathLike[str],
    *,
    max_bytes: int | None = None,
    tail_bytes: int | None = None,
    label: str | None = None,
) -> bytes:
    """The bytes of the regular file root/rel, reached without following any link; size checked before reading.

    `tail_bytes` reads only the last that many bytes of a larger file instead of refusing it.
    Raises FileNotFoundError when it is missing, UnsafePathError for a link or special file, FileTooLargeError.
    """
    parts = _parts(rel)
    if not parts:
        raise UnsafePathError(f"{rel!s} names no file")
    label = label or str(root)
    with _directory(root, parts[:-1], label) as dir_fd:
        fd, st = _open_regular(dir_fd, parts[-1], _shown(label, parts))
        try:
            if tail_bytes is not None:
                os.lseek(fd, max(0, st.st_size - tail_bytes), os.SEEK_SET)
                return os.read(fd, tail_bytes)
            if max_bytes is not None and st.st_size > max_bytes:
                raise _too_large(_shown(label, parts), st.st_size, max_bytes)
            return _read_fd(fd, max_bytes, _shown(label, parts))
        finally:
            os.close(fd)


def read_files(
    root: Path, rels: list[str], *, max_bytes: int | None = None, tail_bytes: dict[str, int] | None = None
) -> dict[str, bytes]:
    """The readable ones of several files under root, by path: each reached as `read_bytes` reaches it (no link
    followed, size checked first), but each directory opened once rather than once per file. Files that are
    missing, links, special or over the limit are left out (the results tree copies what it can)."""
    tail_bytes = tail_bytes or {}
    found: dict[str, bytes] = {}
    try:
        root_fd = _open_root(root, create=False)
    except OSError:
        return found
    dirs: dict[tuple[str, ...], int | None] = {(): root_fd}
    try:
        for rel in rels:
            parts = _parts(rel)
            dir_fd = _walk_cached(dirs, parts[:-1], str(root))
            if dir_fd is None or not parts:
                continue
            shown = _shown(str(root), parts)
            try:
                fd, st = _open_regular(dir_fd, parts[-1], shown)
            except OSError:
                continue
            try:
                if rel in tail_bytes:
                    os.lseek(fd, max(0, st.st_size - tail_bytes[rel]), os.SEEK_SET)
                    found[rel] = os.read(fd, tail_bytes[rel])
                elif max_bytes is None or st.st_size <= max_bytes:
                    found[rel] = _read_fd(fd, max_bytes, shown)
            except (OSError, FileTooLargeError):
                pass
            finally:
                os.close(fd)
    finally:
        for held in dirs.values():
            if held is not None:
                os.close(held)
    return found


def _walk_cached(dirs: dict[tuple[str, ...], int | None], parts: list[str], label: str) -> int | None:
    """The descriptor of root/parts, opening (without following links) only the components not opened yet."""
    key = tuple(parts)
    if key not in dirs:
        parent = _walk_cached(dirs, parts[:-1], label)
        try:
            dirs[key] = (
                None if parent is None else _open_child_dir(parent, parts[-1], _shown(label, parts), create=False)
            )
        except OSError:
            dirs[key] = None
    return dirs[key]


def read_text(
    root: Path,
    rel: str | os.PathLike[str],
    *,
    max_bytes: int | None = None,
    errors: str = "strict",
    label: str | None = None,
) -> str:
    """`read_bytes` decoded as UTF-8."""
    return read_bytes(root, rel, max_bytes=max_bytes, label=label).decode("utf-8", errors=errors)


def file_size(root: Path, rel: str | os.PathLike[str], *, label: str | None = None) -> int | None:
    """Size of the regular file root/rel, None when missing; a link anywhere on the way is an UnsafePathError."""
    try:
        parts = _parts(rel)
        label = label or str(root)
        with _directory(root, parts[:-1], label) as dir_fd:
            fd, st = _open_regular(dir_fd, parts[-1], _shown(label, parts))
            os.close(fd)
            return st.st_size
    except FileNotFoundError:
        return None


def link_on_path(root: Path, rel: str | os.PathLike[str], *, label: str | None = None) -> str | None:
    """A message naming the first component of root/rel that is a symbolic link, or None (missing parts are fine)."""
    parts = _parts(rel)
    label = label or str(root)
    try:
        fd = _open_root(root, create=False)
    except UnsafePathError as error:
        return str(error)
    except OSError:
        return None
    try:
        for index, part in enumerate(parts):
            shown = _shown(label, parts[: index + 1])
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except OSError:
                return None
            if stat.S_ISLNK(st.st_mode):
                return str(_link_error(fd, part, shown))
            if not stat.S_ISDIR(st.st_mode):
                return None
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        return None
    finally:
        os.close(fd)


def lstat(root: Path, rel: str | os.PathLike[str], *, label: str | None = None) -> os.stat_result | None:
    """The lstat of root/rel, or None when it is missing or a component on the way is not a plain directory (a
    link included: what lies behind a link is never looked at). A link at rel itself is reported as the link."""
    parts = _parts(rel)
    try:
        with _directory(root, parts[:-1], label or str(root)) as dir_fd:
            return os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False) if parts else os.fstat(dir_fd)
    except OSError:
        return None


def _entries(dir_fd: int) -> list[tuple[str, bool]]:
    """The names in a folder, each with whether it is a folder itself (a link never is)."""
    with os.scandir(dir_fd) as listing:
        return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]


def _clear_dir(top_fd: int, shown: str) -> list[str]:
    """Remove everything inside the folder top_fd, depth first without recursion (a deep tree the sandbox built
    cannot exhaust the stack). Folders are opened with O_NOFOLLOW relative to their parent, links and files are
    unlinked, so nothing behind a link is touched even when an entry is swapped for a link meanwhile."""
    failed: list[str] = []
    stack: list[tuple[int, str, str, list[tuple[str, bool]]]] = [(top_fd, "", shown, _entries(top_fd))]
    try:
        while stack:
            fd, name, where, entries = stack[-1]
            if not entries:
                stack.pop()
                if stack:
                    os.close(fd)
                    try:
                        os.rmdir(name, dir_fd=stack[-1][0])
                    except FileNotFoundError:
                        pass
                    except OSError as error:
                        failed.append(f"{where}: {error.strerror}")
                continue
            child, is_dir = entries.pop()
            try:
                if not is_dir:
                    os.unlink(child, dir_fd=fd)
                    continue
                child_fd = os.open(child, _DIR_FLAGS, dir_fd=fd)
                try:
                    stack.append((child_fd, child, f"{where}/{child}", _entries(child_fd)))
                except BaseException:
                    os.close(child_fd)
                    raise
            except FileNotFoundError:
                pass
            except OSError as error:
                failed.append(f"{where}/{child}: {error.strerror}")
    finally:
        for fd, *_ in stack[1:]:
            os.close(fd)
    return failed


def empty_dir(root: Path, rel: str | os.PathLike[str], *, mode: int | None = None, label: str | None = None) -> None:
    """Make root/rel an empty directory, keeping it (the same inode) when it already is one.

    What `if [ -L d ] || [ ! -d d ]; then rm -rf d; fi; mkdir -p d; rm -rf d/*` does, without following links: a
    link or other non-directory at rel is unlinked (the link itself, never its target), missing parents are
    created, and every entry inside is removed (links unlinked, never followed). `mode` is then set on the folder.
    A link or non-directory on the way to rel raises UnsafePathError: it is neither followed nor replaced. Entries
    that could not be removed raise OSError naming them.
    """
    parts = _parts(rel)
    if not parts:
        raise UnsafePathError(f"{rel!s} names no directory")
    label = label or str(root)
    shown = _shown(label, parts)
    with _directory(root, parts[:-1], label, create=True) as parent:
        try:
            if not stat.S_ISDIR(os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode):
                os.unlink(parts[-1], dir_fd=parent)
        except FileNotFoundError:
            pass
        fd = _open_child_dir(parent, parts[-1], shown, create=True)
    try:
        failed = _clear_dir(fd, shown)
        if mode is not None:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)
    if failed:
        raise OSError(f"{shown} could not be emptied: " + "; ".join(failed))


def make_readable(root: Path, rel: str | os.PathLike[str], *, label: str | None = None) -> None:
    """`chmod -R a+rX root/rel` without following a link: every folder gets a+rx, every regular file a+r (and a+x
    where anyone may already run it). Links are left alone, neither followed nor changed; each file is changed
    through a descriptor opened without following links, so a link swapped in is never changed through. Raises
    UnsafePathError for a link on the way to rel or at rel, OSError for what could not be changed."""
    label = label or str(root)
    parts = _parts(rel)
    with _directory(root, parts, label) as top:
        todo = [(os.dup(top), _shown(label, parts))]
    failed: list[str] = []
    while todo:
        fd, shown = todo.pop()
        try:
            os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | 0o555)
            for name, is_dir in _entries(fd):
                try:
                    if is_dir:
                        todo.append((_open_child_dir(fd, name, f"{shown}/{name}", create=False), f"{shown}/{name}"))
                        continue
                    if not stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                        continue  # links, and what is not a file: as chmod -R leaves them (never opened)
                    child, st = _open_regular(fd, name, f"{shown}/{name}")  # swapped for a link since: refused
                except OSError as error:
                    failed.append(f"{shown}/{name}: {error}")
                    continue
                try:
                    mode = stat.S_IMODE(st.st_mode)
                    os.fchmod(child, mode | 0o444 | (0o111 if mode & 0o111 else 0))
                finally:
                    os.close(child)
        finally:
            os.close(fd)
    if failed:
        raise OSError(f"{_shown(label, parts)}: could not make readable: " + "; ".join(failed))


def _replace_into(
    dir_fd: int,
    name: str,
    data_source: int | bytes,
    shown: str,
    mode: int = 0o644,
    times: tuple[int, int] | None = None,
    limit: int | None = None,
) -> None:
    """Write a temp file in dir_fd and rename it over `name`: an existing link at `name` is refused, not followed."""
    try:
        existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISLNK(existing.st_mode):
        raise _link_error(dir_fd, name, shown)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise UnsafePathError(f"{shown} exists and is not a regular file")
    tmp = f".{name[:64]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        try:
            if isinstance(data_source, bytes):
                view = memoryview(data_source)
                while view:
                    view = view[os.write(fd, view) :]
            else:
                copied = 0
                while chunk := os.read(data_source, _CHUNK):
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


def write_bytes(root: Path, rel: str | os.PathLike[str], data: bytes, *, label: str | None = None) -> None:
    """Write root/rel atomically, creating folders; a link anywhere on the way (or at rel itself) is refused."""
    parts = _parts(rel)
    if not parts:
        raise UnsafePathError(f"{rel!s} names no file")
    label = label or str(root)
    with _directory(root, parts[:-1], label, create=True) as dir_fd:
        _replace_into(dir_fd, parts[-1], data, _shown(label, parts))


def write_text(root: Path, rel: str | os.PathLike[str], text: str, *, label: str | None = None) -> None:
    write_bytes(root, rel, text.encode("utf-8"), label=label)


def remove_file(root: Path, rel: str | os.PathLike[str]) -> None:
    """Unlink root/rel if present (a link itself is removed, its target untouched)."""
    parts = _parts(rel)
    try:
        with _directory(root, parts[:-1], str(root)) as dir_fd:
            os.unlink(parts[-1], dir_fd=dir_fd)
    except (FileNotFoundError, IsADirectoryError):
        pass


def _copy_entry(
    src_fd: int,
    name: str,
    dst_fd: int,
    shown: str,
    st: os.stat_result,
    *,
    links: LinkPolicy,
    max_file_bytes: int | None,
    refused: list[str],
) -> None:
    if stat.S_ISLNK(st.st_mode):
        if links == "copy":
            try:
                existing = os.stat(name, dir_fd=dst_fd, follow_symlinks=False)
            except FileNotFoundError:
                existing = None
            if existing is not None:
                refused.append(f"{shown}: the destination already has an entry of that name")
                return
            os.symlink(os.readlink(name, dir_fd=src_fd), name, dir_fd=dst_fd)
        else:
            refused.append(str(_link_error(src_fd, name, shown)))
        return
    if stat.S_ISDIR(st.st_mode):
        try:
            child_src = os.open(name, _DIR_FLAGS, dir_fd=src_fd)
        except OSError as error:
            refused.append(str(_open_error(error, src_fd, name, shown)))
            return
        try:
            child_dst = _open_child_dir(dst_fd, name, shown, create=True)
        except OSError as error:
            os.close(child_src)
            refused.append(f"{shown}: {error}")
            return
        try:
            _copy_dir(child_src, child_dst, shown, links=links, max_file_bytes=max_file_bytes, refused=refused)
        finally:
            os.close(child_src)
            os.close(child_dst)
        return
    if not stat.S_ISREG(st.st_mode):
        refused.append(f"{shown} is not a regular file, directory or link; it was not copied")
        return
    if max_file_bytes is not None and st.st_size > max_file_bytes:
        refused.append(str(_too_large(shown, st.st_size, max_file_bytes)))
        return
    try:
        fd, opened = _open_regular(src_fd, name, shown)
    except OSError as error:
        refused.append(str(error))
        return
    try:
        _replace_into(dst_fd, name, fd, shown, opened.st_mode, (opened.st_atime_ns, opened.st_mtime_ns), max_file_bytes)
    except (OSError, FileTooLargeError) as error:
        refused.append(str(error))
    finally:
        os.close(fd)


def _copy_dir(
    src_fd: int, dst_fd: int, shown: str, *, links: LinkPolicy, max_file_bytes: int | None, refused: list[str]
) -> None:
    for name in sorted(os.listdir(src_fd)):
        try:
            st = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        _copy_entry(
            src_fd, name, dst_fd, f"{shown}/{name}", st, links=links, max_file_bytes=max_file_bytes, refused=refused
        )


def copy_tree(
    src_root: Path,
    src_rel: str | os.PathLike[str],
    dst_root: Path,
    dst_rel: str | os.PathLike[str] = "",
    *,
    links: LinkPolicy = "refuse",
    max_file_bytes: int | None = None,
    label: str | None = None,
    dst_label: str | None = None,
) -> list[str]:
    """Copy the folder src_root/src_rel into dst_root/dst_rel (merged), never following a link on either side.

    `links="refuse"` leaves every link out and reports it; `"copy"` recreates it as a link (its target is never
    read). Special files and files over `max_file_bytes` are left out and reported. An existing link in the
    destination is never written through. Returns the refusals (empty when everything was copied).
    """
    src_parts, dst_parts = _parts(src_rel), _parts(dst_rel)
    label = label or str(src_root)
    refused: list[str] = []
    dst_label = dst_label or str(dst_root)
    with (
        _directory(src_root, src_parts, label) as src_fd,
        _directory(dst_root, dst_parts, dst_label, create=True) as dst_fd,
    ):
        _copy_dir(src_fd, dst_fd, _shown(label, src_parts), links=links, max_file_bytes=max_file_bytes, refused=refused)
    return refused


def copy_file(
    src_root: Path,
    src_rel: str | os.PathLike[str],
    dst_root: Path,
    dst_rel: str | os.PathLike[str],
    *,
    max_bytes: int | None = None,
    label: str | None = None,
    dst_label: str | None = None,
) -> None:
    """Copy one regular file (mode and times kept); links and oversize files raise instead of being copied."""
    src_parts, dst_parts = _parts(src_rel), _parts(dst_rel)
    if not src_parts or not dst_parts:
        raise UnsafePathError("copy_file needs a file name on both sides")
    label = label or str(src_root)
    shown = _shown(label, src_parts)
    with _directory(src_root, src_parts[:-1], label) as src_dir:
        fd, st = _open_regular(src_dir, src_parts[-1], shown)
        try:
            if max_bytes is not None and st.st_size > max_bytes:
                raise _too_large(shown, st.st_size, max_bytes)
            dst_label = dst_label or str(dst_root)
            with _directory(dst_root, dst_parts[:-1], dst_label, create=True) as dst_dir:
                _replace_into(
                    dst_dir,
                    dst_parts[-1],
                    fd,
                    _shown(dst_label, dst_parts),
                    st.st_mode,
                    (st.st_atime_ns, st.st_mtime_ns),
                    max_bytes,
                )
        finally:
            os.close(fd)


def read_capped(handle: IO[bytes], max_bytes: int) -> str:
    """Command output kept up to `max_bytes`; when more was written, a last line says where it was cut."""
    handle.seek(0, os.SEEK_END)
    total = handle.tell()
    handle.seek(0)
    text = handle.read(max_bytes).decode("utf-8", errors="replace")
    if total > max_bytes:
        text += f"\n[output cut at {max_bytes} bytes: {total - max_bytes} more bytes of {total} were not kept]\n"
    return text
