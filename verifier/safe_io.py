"""Reading and writing files a sandbox produced, without ever following a link it planted.

Why: the `local` environment's sandbox is a folder tree on the host, and Docker's `cp` copies links as links. Code
the agent chose can replace `/logs/agent` or `reward.json` with a symbolic link to any host file; host-side code
that opened such a path would read the host file into the results or write through it onto the host. So every
host-side read or write of a path the sandbox could have touched goes through here: the walk starts at a trusted
directory and opens each component with `O_NOFOLLOW` relative to its parent's descriptor (no `..`, no absolute
parts), so the file reached is always inside that directory. A link is reported as an error naming it; it is never
followed, and never silently replaced when it stands where we write.

Pure standard library (the walk itself is `verifier.safe_paths`); used by the grading engine, the Harbor adapter
and environment, and the results tree.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from verifier.safe_paths import (
    DIR_FLAGS,
    MAX_COPY_DEPTH,
    FileTooLargeError,
    LinkPolicy,
    UnsafePathError,
    link_error,
    open_child_dir,
    open_error,
    open_regular,
    open_root,
    opened_dir,
    read_fd,
    replace_into,
    shown_path,
    split_rel,
    too_large,
    tree_within,
)

__all__ = [
    "CopyLimits",
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
    "tree_within",
    "write_bytes",
    "write_text",
]


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
    parts = split_rel(rel)
    if not parts:
        raise UnsafePathError(f"{rel!s} names no file")
    label = label or str(root)
    with opened_dir(root, parts[:-1], label) as dir_fd:
        fd, st = open_regular(dir_fd, parts[-1], shown_path(label, parts))
        try:
            if tail_bytes is not None:
                os.lseek(fd, max(0, st.st_size - tail_bytes), os.SEEK_SET)
                return os.read(fd, tail_bytes)
            if max_bytes is not None and st.st_size > max_bytes:
                raise too_large(shown_path(label, parts), st.st_size, max_bytes)
            return read_fd(fd, max_bytes, shown_path(label, parts))
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
        root_fd = open_root(root, create=False)
    except OSError:
        return found
    dirs: dict[tuple[str, ...], int | None] = {(): root_fd}
    try:
        for rel in rels:
            parts = split_rel(rel)
            dir_fd = _walk_cached(dirs, parts[:-1], str(root))
            if dir_fd is None or not parts:
                continue
            shown = shown_path(str(root), parts)
            try:
                fd, st = open_regular(dir_fd, parts[-1], shown)
            except OSError:
                continue
            try:
                if rel in tail_bytes:
                    os.lseek(fd, max(0, st.st_size - tail_bytes[rel]), os.SEEK_SET)
                    found[rel] = os.read(fd, tail_bytes[rel])
                elif max_bytes is None or st.st_size <= max_bytes:
                    found[rel] = read_fd(fd, max_bytes, shown)
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
                None if parent is None else open_child_dir(parent, parts[-1], shown_path(label, parts), create=False)
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
        parts = split_rel(rel)
        label = label or str(root)
        with opened_dir(root, parts[:-1], label) as dir_fd:
            fd, st = open_regular(dir_fd, parts[-1], shown_path(label, parts))
            os.close(fd)
            return st.st_size
    except FileNotFoundError:
        return None


def link_on_path(root: Path, rel: str | os.PathLike[str], *, label: str | None = None) -> str | None:
    """A message naming the first component of root/rel that is a symbolic link, or None (missing parts are fine)."""
    parts = split_rel(rel)
    label = label or str(root)
    try:
        fd = open_root(root, create=False)
    except UnsafePathError as error:
        return str(error)
    except OSError:
        return None
    try:
        for index, part in enumerate(parts):
            shown = shown_path(label, parts[: index + 1])
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except OSError:
                return None
            if stat.S_ISLNK(st.st_mode):
                return str(link_error(fd, part, shown))
            if not stat.S_ISDIR(st.st_mode):
                return None
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        return None
    finally:
        os.close(fd)


def lstat(root: Path, rel: str | os.PathLike[str], *, label: str | None = None) -> os.stat_result | None:
    """The lstat of root/rel, or None when it is missing or a component on the way is not a plain directory (a
    link included: what lies behind a link is never looked at). A link at rel itself is reported as the link."""
    parts = split_rel(rel)
    try:
        with opened_dir(root, parts[:-1], label or str(root)) as dir_fd:
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
                child_fd = os.open(child, DIR_FLAGS, dir_fd=fd)
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
    parts = split_rel(rel)
    if not parts:
        raise UnsafePathError(f"{rel!s} names no directory")
    label = label or str(root)
    shown = shown_path(label, parts)
    with opened_dir(root, parts[:-1], label, create=True) as parent:
        try:
            if not stat.S_ISDIR(os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode):
                os.unlink(parts[-1], dir_fd=parent)
        except FileNotFoundError:
            pass
        fd = open_child_dir(parent, parts[-1], shown, create=True)
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
    parts = split_rel(rel)
    with opened_dir(root, parts, label) as top:
        todo = [(os.dup(top), shown_path(label, parts))]
    failed: list[str] = []
    while todo:
        fd, shown = todo.pop()
        try:
            os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | 0o555)
            for name, is_dir in _entries(fd):
                try:
                    if is_dir:
                        todo.append((open_child_dir(fd, name, f"{shown}/{name}", create=False), f"{shown}/{name}"))
                        continue
                    if not stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                        continue  # links, and what is not a file: as chmod -R leaves them (never opened)
                    child, st = open_regular(fd, name, f"{shown}/{name}")  # swapped for a link since: refused
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
        raise OSError(f"{shown_path(label, parts)}: could not make readable: " + "; ".join(failed))


def make_executable(root: Path, rel: str | os.PathLike[str], *, label: str | None = None) -> None:
    """`chmod +x root/rel` without following a link: the file is changed through a descriptor opened without
    following links. Raises UnsafePathError for a link on the way or at rel (never followed), OSError otherwise."""
    label = label or str(root)
    parts = split_rel(rel)
    if not parts:
        raise UnsafePathError(f"{rel!s} names no file")
    with opened_dir(root, parts[:-1], label) as parent:
        fd, st = open_regular(parent, parts[-1], shown_path(label, parts))
    try:
        os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o111)
    finally:
        os.close(fd)


def write_bytes(root: Path, rel: str | os.PathLike[str], data: bytes, *, label: str | None = None) -> None:
    """Write root/rel atomically, creating folders; a link anywhere on the way (or at rel itself) is refused."""
    parts = split_rel(rel)
    if not parts:
        raise UnsafePathError(f"{rel!s} names no file")
    label = label or str(root)
    with opened_dir(root, parts[:-1], label, create=True) as dir_fd:
        replace_into(dir_fd, parts[-1], data, shown_path(label, parts))


def write_text(root: Path, rel: str | os.PathLike[str], text: str, *, label: str | None = None) -> None:
    write_bytes(root, rel, text.encode("utf-8"), label=label)


def remove_file(root: Path, rel: str | os.PathLike[str]) -> None:
    """Unlink root/rel if present (a link itself is removed, its target untouched)."""
    parts = split_rel(rel)
    try:
        with opened_dir(root, parts[:-1], str(root)) as dir_fd:
            os.unlink(parts[-1], dir_fd=dir_fd)
    except (FileNotFoundError, IsADirectoryError):
        pass


@dataclass
class CopyLimits:
    """What one copy out of a sandbox may take, by apparent size (`st_size`: a sparse file of 6 GiB that holds no
    block in the sandbox would still be 6 GiB on the host), and how deep it walks. What they keep out is listed in
    `left_out`, one line each; `copied` is the running total."""

    max_file_bytes: int | None = None
    max_total_bytes: int | None = None
    max_depth: int = MAX_COPY_DEPTH
    copied: int = 0
    left_out: list[str] = field(default_factory=list)

    def admit(self, shown: str, size: int) -> tuple[bool, int | None]:
        """Whether a file of `size` bytes is copied, and the byte limit to copy it under (it may grow meanwhile);
        a file kept out gets its line in left_out."""
        if self.max_file_bytes is not None and size > self.max_file_bytes:
            self.left_out.append(str(too_large(shown, size, self.max_file_bytes)))
            return False, None
        if self.max_total_bytes is None:
            return True, self.max_file_bytes
        room = self.max_total_bytes - self.copied
        if size > room:
            self.left_out.append(f"{shown} is {size} bytes, past the limit of {self.max_total_bytes} bytes in all")
            return False, None
        return True, room if self.max_file_bytes is None else min(room, self.max_file_bytes)


def _copy_leaf(
    src_fd: int,
    name: str,
    dst_fd: int,
    shown: str,
    st: os.stat_result,
    *,
    links: LinkPolicy,
    limits: CopyLimits,
    refused: list[str],
) -> None:
    """One entry that is not a folder: a link (refused or recreated), a regular file (within the limits), or
    anything else (refused)."""
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
            refused.append(str(link_error(src_fd, name, shown)))
        return
    if not stat.S_ISREG(st.st_mode):
        refused.append(f"{shown} is not a regular file, directory or link; it was not copied")
        return
    admitted, limit = limits.admit(shown, st.st_size)
    if not admitted:
        return
    try:
        fd, opened = open_regular(src_fd, name, shown)
    except OSError as error:
        refused.append(str(error))
        return
    try:
        replace_into(dst_fd, name, fd, shown, opened.st_mode, (opened.st_atime_ns, opened.st_mtime_ns), limit)
        limits.copied += os.fstat(fd).st_size
    except (OSError, FileTooLargeError) as error:
        refused.append(str(error))
    finally:
        os.close(fd)


def _sorted_names(dir_fd: int) -> list[str]:
    """A folder's names, last first (the walk pops them in sorted order)."""
    return sorted(os.listdir(dir_fd), reverse=True)


def _copy_dir(
    src_fd: int, dst_fd: int, shown: str, *, links: LinkPolicy, limits: CopyLimits, refused: list[str]
) -> None:
    """Copy the folder src_fd into dst_fd, depth first without recursion (a tree the sandbox built thousands of
    folders deep cannot exhaust the stack); folders deeper than `limits.max_depth` are left out and listed."""
    stack: list[tuple[int, int, str, list[str]]] = [(src_fd, dst_fd, shown, _sorted_names(src_fd))]
    try:
        while stack:
            s_fd, d_fd, where, names = stack[-1]
            if not names:
                stack.pop()
                if stack:  # the caller owns the first pair
                    os.close(s_fd)
                    os.close(d_fd)
                continue
            name = names.pop()
            entry = f"{where}/{name}"
            try:
                st = os.stat(name, dir_fd=s_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(st.st_mode):
                _copy_leaf(s_fd, name, d_fd, entry, st, links=links, limits=limits, refused=refused)
                continue
            if len(stack) > limits.max_depth:
                limits.left_out.append(f"{entry}: more than {limits.max_depth} folders deep; nothing in it was copied")
                continue
            try:
                child_src = os.open(name, DIR_FLAGS, dir_fd=s_fd)
            except OSError as error:
                refused.append(str(open_error(error, s_fd, name, entry)))
                continue
            try:
                child_dst = open_child_dir(d_fd, name, entry, create=True)
            except OSError as error:
                os.close(child_src)
                refused.append(f"{entry}: {error}")
                continue
            try:
                stack.append((child_src, child_dst, entry, _sorted_names(child_src)))
            except OSError as error:
                os.close(child_src)
                os.close(child_dst)
                refused.append(f"{entry}: {error}")
    finally:
        for s_fd, d_fd, *_ in stack[1:]:
            os.close(s_fd)
            os.close(d_fd)


def copy_tree(
    src_root: Path,
    src_rel: str | os.PathLike[str],
    dst_root: Path,
    dst_rel: str | os.PathLike[str] = "",
    *,
    links: LinkPolicy = "refuse",
    max_file_bytes: int | None = None,
    limits: CopyLimits | None = None,
    label: str | None = None,
    dst_label: str | None = None,
) -> list[str]:
    """Copy the folder src_root/src_rel into dst_root/dst_rel (merged), never following a link on either side.

    `links="refuse"` leaves every link out and reports it; `"copy"` recreates it as a link (its target is never
    read). Special files are left out and reported. An existing link in the destination is never written through.
    Returns the refusals (empty when everything was copied). With `limits`, what its caps keep out (by apparent
    size, per file and in total, and by depth) is listed in `limits.left_out` instead; without, files over
    `max_file_bytes` and folders over MAX_COPY_DEPTH deep are among the refusals.
    """
    src_parts, dst_parts = split_rel(src_rel), split_rel(dst_rel)
    label = label or str(src_root)
    refused: list[str] = []
    own = limits is None
    limits = limits or CopyLimits(max_file_bytes=max_file_bytes)
    dst_label = dst_label or str(dst_root)
    with (
        opened_dir(src_root, src_parts, label) as src_fd,
        opened_dir(dst_root, dst_parts, dst_label, create=True) as dst_fd,
    ):
        _copy_dir(src_fd, dst_fd, shown_path(label, src_parts), links=links, limits=limits, refused=refused)
    return refused + limits.left_out if own else refused


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
    src_parts, dst_parts = split_rel(src_rel), split_rel(dst_rel)
    if not src_parts or not dst_parts:
        raise UnsafePathError("copy_file needs a file name on both sides")
    label = label or str(src_root)
    shown = shown_path(label, src_parts)
    with opened_dir(src_root, src_parts[:-1], label) as src_dir:
        fd, st = open_regular(src_dir, src_parts[-1], shown)
        try:
            if max_bytes is not None and st.st_size > max_bytes:
                raise too_large(shown, st.st_size, max_bytes)
            dst_label = dst_label or str(dst_root)
            with opened_dir(dst_root, dst_parts[:-1], dst_label, create=True) as dst_dir:
                replace_into(
                    dst_dir,
                    dst_parts[-1],
                    fd,
                    shown_path(dst_label, dst_parts),
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
