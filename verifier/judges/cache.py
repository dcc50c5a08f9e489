"""A content-addressed cache of judge verdicts under the results root.

The key is the hash of everything that decides a verdict (judge, prompt, models, request parameters, schema), so a
rerun or regrade of an unchanged trial costs no judge call, and any change to the evidence, the model or the
parameters misses. Only scored verdicts are stored; failures are always retried on the next run.

The default results root sits inside the skill folder, which may be someone else's: a `.judge-cache` shipped with a
skill would hand its own verdicts to your run. So every entry carries an HMAC made with a key that exists only on
this machine (`~/.cache/pytest-skilleval/judge-cache.key`, created 0600 on first use); an entry whose MAC does not
verify is a miss, never a verdict.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

CACHE_DIR_NAME = ".judge-cache"
CACHE_VERSION = 2
KEY_FILE = "judge-cache.key"
# A verdict is a score and a short reason; anything larger is not an entry we wrote.
MAX_ENTRY_BYTES = 1024 * 1024


def machine_key_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-skilleval" / KEY_FILE


def machine_key(path: Path | None = None) -> bytes | None:
    """This machine's cache key, created on first use (0600, never overwritten); None when it cannot be had."""
    path = path or machine_key_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(handle, "w") as out:
                out.write(secrets.token_hex(32))
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(handle) as source:
            key = source.read().strip()
    except OSError:
        return None
    return key.encode() if len(key) == 64 else None


def _mac(secret: bytes, key: str, verdict: dict[str, Any]) -> str:
    body = json.dumps({"key": key, "verdict": verdict}, sort_keys=True, ensure_ascii=False, default=str)
    return hmac.new(secret, body.encode("utf-8"), hashlib.sha256).hexdigest()


def cache_key(material: dict[str, Any]) -> str:
    text = json.dumps({"v": CACHE_VERSION, **material}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgeCache:
    """Read and/or write verdicts in `root`, as the mode allows (on, off, read, write)."""

    def __init__(self, root: str | Path | None, mode: str, secret: bytes | None = None) -> None:
        self.root = Path(root) if root else None
        self.secret = secret if secret is not None else (machine_key() if root and mode != "off" else None)
        self.mode = mode if self.root is not None and self.secret is not None else "off"

    @property
    def reads(self) -> bool:
        return self.mode in ("on", "read")

    @property
    def writes(self) -> bool:
        return self.mode in ("on", "write")

    def _through_symlink(self, path: Path) -> bool:
        """True when the entry, its folder, the cache folder or the results root is a symlink: refused, since the
        results root may sit inside a skill folder someone else wrote."""
        assert self.root is not None
        return any(level.is_symlink() for level in (path, path.parent, self.root, self.root.parent))

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored verdict, or None: a bad entry (unreadable, oversized, nested past the parser's depth, not
        ours) is a miss, never an error, so the judge is simply asked again."""
        if not self.reads:
            return None
        path = self._path(key)
        if self._through_symlink(path) or not path.is_file():
            return None
        try:
            handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(handle, "rb") as source:
                raw = source.read(MAX_ENTRY_BYTES + 1)
            if len(raw) > MAX_ENTRY_BYTES:
                return None
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("verdict"), dict):
                return None
            assert self.secret is not None
            if not hmac.compare_digest(str(data.get("mac", "")), _mac(self.secret, key, data["verdict"])):
                return None  # not written on this machine (a planted cache), or altered since
        except (OSError, ValueError, RecursionError):
            return None
        return data["verdict"]

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        if not self.writes:
            return
        path = self._path(key)
        if self._through_symlink(path):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                assert self.secret is not None
                json.dump(
                    {"key": key, "verdict": verdict, "mac": _mac(self.secret, key, verdict)},
                    out,
                    ensure_ascii=False,
                    default=str,
                )
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
