"""Known secret values removed from files already on disk, in bounded memory: the redaction pass for a folder.

Harbor writes an agent's kwargs into its trial folder (`config.json`, `result.json`) and the agent may print them
anywhere in its logs; a credential passed with `--agent-kwarg` is removed from every file there. The folder is
what the agent touched, so nothing here trusts it: links are never followed, a file is read in chunks of
`CHUNK_BYTES` (with an overlap one byte shorter than the longest secret, so a secret across a chunk boundary is
still found) and never whole, and a sparse file's holes are skipped, not read (a 3 GiB sparse file is a few
blocks of data). A file is rewritten only when a secret occurs in it, through a temporary file in the same folder.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from verifier.redact import REDACTED, secret_forms

CHUNK_BYTES = 1024 * 1024
_MARK = REDACTED.encode()


def secrets_pattern(secrets: Iterable[str]) -> tuple[re.Pattern[bytes], int] | None:
    """One bytes pattern for every form of every secret (as written and as inside a JSON string), longest first,
    and the length of the longest form (the overlap between chunks is one byte less)."""
    forms = sorted({form.encode("utf-8") for form in secret_forms(secrets)}, key=len, reverse=True)
    if not forms:
        return None
    return re.compile(b"|".join(re.escape(form) for form in forms)), len(forms[0])


def scrub_tree(root: Path, secrets: Iterable[str]) -> list[Path]:
    """Replace every known secret in every regular file under `root` (links skipped); the files rewritten."""
    found = secrets_pattern(secrets)
    if found is None:
        return []
    pattern, longest = found
    changed = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [name for name in dirs if not os.path.islink(os.path.join(folder, name))]
        for name in files:
            path = Path(folder) / name
            try:
                if scrub_file(path, pattern, longest):
                    changed.append(path)
            except OSError:
                continue
    return changed


def scrub_file(path: Path, pattern: re.Pattern[bytes], longest: int) -> bool:
    """Rewrite `path` without the secrets `pattern` matches when it holds one; False (untouched) otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as source:
        info = os.fstat(source.fileno())
        if not stat.S_ISREG(info.st_mode):
            return False
        ranges = list(_data_ranges(source.fileno(), info.st_size))
        if not any(_stream(source, start, end, pattern, longest, None) for start, end in ranges):
            return False
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".redacting")
        try:
            with os.fdopen(handle, "wb") as out:
                cursor = 0
                for start, end in ranges:
                    out.seek(start - cursor, os.SEEK_CUR)  # a hole stays a hole
                    _stream(source, start, end, pattern, longest, out)
                    cursor = end
                out.seek(info.st_size - cursor, os.SEEK_CUR)
                out.truncate()
            os.chmod(temp, stat.S_IMODE(info.st_mode))
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    return True


def _data_ranges(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the parts of a file that hold data; a sparse file's holes (all zero bytes) are left out."""
    position = 0
    while position < size:
        try:
            start = os.lseek(fd, position, os.SEEK_DATA)
            end = os.lseek(fd, start, os.SEEK_HOLE)
        except OSError as error:
            if error.errno == errno.ENXIO:  # no data after `position`
                return
            yield position, size  # no hole support here: the whole rest is data
            return
        yield start, min(end, size)
        position = end


def _stream(
    source: BinaryIO, start: int, end: int, pattern: re.Pattern[bytes], longest: int, out: BinaryIO | None
) -> bool:
    """Read bytes [start, end) in chunks; write them with secrets replaced to `out` when given. Whether any matched.

    Bytes within `longest - 1` of the buffer's end are held back until the next chunk, so a match that straddles a
    boundary is seen whole; only matches that start before that margin are replaced in this round.
    """
    source.seek(start)
    remaining = end - start
    buffer = b""
    found = False
    while True:
        chunk = source.read(min(CHUNK_BYTES, remaining)) if remaining > 0 else b""
        remaining -= len(chunk)
        buffer += chunk
        final = not chunk
        limit = len(buffer) if final else len(buffer) - (longest - 1)
        pieces: list[bytes] = []
        cursor = 0
        for match in pattern.finditer(buffer):
            if match.start() >= limit:
                break
            found = True
            if out is None:
                return True
            pieces += [buffer[cursor : match.start()], _MARK]
            cursor = match.end()
        cut = max(cursor, limit, 0)
        if out is not None:
            pieces.append(buffer[cursor:cut])
            out.write(b"".join(pieces))
        buffer = buffer[cut:]
        if final:
            return found
