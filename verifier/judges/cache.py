"""A content-addressed cache of judge verdicts under the results root.

The key is the hash of everything that decides a verdict (judge, prompt, models, request parameters, schema), so a
rerun or regrade of an unchanged trial costs no judge call, and any change to the evidence, the model or the
parameters misses. Only scored verdicts are stored; failures are always retried on the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_DIR_NAME = ".judge-cache"
CACHE_VERSION = 1


def cache_key(material: dict[str, Any]) -> str:
    text = json.dumps({"v": CACHE_VERSION, **material}, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgeCache:
    """Read and/or write verdicts in `root`, as the mode allows (on, off, read, write)."""

    def __init__(self, root: str | Path | None, mode: str) -> None:
        self.root = Path(root) if root else None
        self.mode = mode if self.root is not None else "off"

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
        if not self.reads:
            return None
        path = self._path(key)
        if self._through_symlink(path) or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("key") == key else None

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
                json.dump({"key": key, **verdict}, out, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
