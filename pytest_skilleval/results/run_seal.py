"""Which files of a run folder this machine wrote: an HMAC per file, kept in the folder's seal log.

Why: `--resume` publishes a run folder's stored trials as results and `--regrade` grades them again, and the
default results root sits inside the skill folder, which may be someone else's. A run folder shipped with a skill
(named to sort as `latest`, its trial files saying 1.0 PASSED) would otherwise be taken for your own run. So every
file the writer puts in a run folder that these two read back (run_config.json, dataset_digest.json, result.json,
the trial files) gets a line in `<run>/.skilleval-seals`: the HMAC-SHA256, under this machine's key (the one the
judge cache uses, `~/.cache/pytest-skilleval/judge-cache.key`), of the run id, the file's path in the run folder
and its bytes. A file is trusted only when its bytes verify against a line for its path; no key, no line, or
other bytes: it is not this machine's.

One append per file (not a second file beside each: creating files is most of what writing a large run costs).
Pure except for the file system; imports neither pytest nor Harbor.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from pathlib import Path

from verifier import safe_io
from verifier.judges.cache import machine_key, machine_key_path

SEAL_FILE = ".skilleval-seals"
SEAL_FORMAT = b"skilleval-run-seal/1"
# 20,000 trials written twice, ~100 bytes a line, with room to spare; a larger log is not ours.
MAX_SEAL_LOG_BYTES = 64 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _mac(key: bytes, run_id: str, rel: str, data: bytes) -> str:
    mac = hmac.new(key, SEAL_FORMAT, hashlib.sha256)
    for part in (run_id.encode(), rel.encode(), data):
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.hexdigest()


def _rel(run_dir: Path, path: Path) -> str:
    return path.relative_to(run_dir).as_posix()


class RunSeal:
    """Seals files written into run folders and checks them when read back; `key` None: nothing verifies."""

    def __init__(self, key: bytes | None) -> None:
        self.key = key
        self._logs: dict[Path, dict[str, set[str]]] = {}

    @classmethod
    def of_this_machine(cls) -> RunSeal:
        return cls(machine_key())

    def seal(self, run_dir: Path, path: Path, data: bytes, durable: bool = False) -> None:
        """Record `data` as what this machine wrote at `path` (inside run_dir, which the caller has checked is a
        real folder). Appended without following a link at the log's name; `durable`: fsynced now."""
        if self.key is None:
            return
        rel = _rel(run_dir, path)
        line = f"{_mac(self.key, run_dir.name, rel, data)} {rel}\n".encode()
        log = run_dir / SEAL_FILE
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise safe_io.UnsafePathError(f"{log} is not a regular file")
            os.write(fd, line)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        self._logs.pop(run_dir, None)

    def _log(self, run_dir: Path) -> dict[str, set[str]]:
        """The seal lines of a run folder by path (read once, through safe_io: no link followed, size capped)."""
        if run_dir not in self._logs:
            lines: dict[str, set[str]] = {}
            try:
                data = safe_io.read_bytes(run_dir, SEAL_FILE, max_bytes=MAX_SEAL_LOG_BYTES)
            except (OSError, safe_io.FileTooLargeError):
                data = b""
            for raw in data.decode("utf-8", errors="replace").splitlines():
                mac, _, rel = raw.partition(" ")
                if len(mac) == 64 and rel:
                    lines.setdefault(rel, set()).add(mac)
            self._logs[run_dir] = lines
        return self._logs[run_dir]

    def verifies(self, run_dir: Path, path: Path, data: bytes) -> bool:
        """Whether this machine wrote exactly these bytes at this path of this run folder."""
        if self.key is None:
            return False
        expected = self._log(run_dir).get(_rel(run_dir, path), set())
        mac = _mac(self.key, run_dir.name, _rel(run_dir, path), data)
        return any(hmac.compare_digest(mac, found) for found in expected)

    def read(self, run_dir: Path, path: Path, max_bytes: int) -> bytes | None:
        """A file of the run folder (no link followed, size capped) when this machine sealed these bytes; else None."""
        try:
            data = safe_io.read_bytes(path.parent, path.name, max_bytes=max_bytes)
        except (OSError, safe_io.FileTooLargeError):
            return None
        return data if self.verifies(run_dir, path, data) else None

    def foreign_reason(self, run_dir: Path, name: str) -> str:
        """Why `name` of run_dir is not trusted, for the one line a refusal prints."""
        if self.key is None:
            return f"this machine has no run key ({machine_key_path()} could not be read or made)"
        if not self._log(run_dir):
            return f"it has no {SEAL_FILE}: it was not written by pytest-skilleval on this machine"
        return f"its {name} is not one this machine wrote (no matching seal)"
