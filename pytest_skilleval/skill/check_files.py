"""A `file_equals` check's expected file under `evals/files/`: found, checked and hashed when the dataset is read.

Only its size and sha256 travel to the sandbox, so the comparison never needs the file there. The file is the
author's, but the rules of `files` hold: no link, nothing outside `evals/files/`, a size limit.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from verifier import safe_io
from verifier.check_spec import MAX_EQUALS_FILE_BYTES

FILES_DIR = "files"


def _relative(name: str) -> str | None:
    """`files/x.txt` or `x.txt` -> `x.txt`, relative to evals/files/; None for a path that leaves it."""
    text = name.strip().removeprefix("evals/").removeprefix(f"{FILES_DIR}/")
    if not text or text.startswith("/") or "\\" in text or any(part in ("", "..") for part in text.split("/")):
        return None
    return text


def expected_files(case: Any, evals_dir: Path) -> tuple[str, str] | None:
    """Hash each `file_equals` check's `file` into the check; (field, message) for the first that is refused."""
    for index, check in enumerate(case.checks or ()):
        if getattr(check, "type", None) != "file_equals" or check.file is None:
            continue
        field = f"checks[{index}].file"
        rel = _relative(check.file)
        if rel is None:
            return field, (
                f"{check.file!r} is not a file under evals/files/; put the expected file there and name it "
                f"relative to evals/files/ (e.g. 'expected/result.txt')"
            )
        try:
            data = safe_io.read_bytes(
                evals_dir / FILES_DIR, rel, max_bytes=MAX_EQUALS_FILE_BYTES, label=f"{evals_dir.name}/{FILES_DIR}"
            )
        except FileNotFoundError:
            return field, f"evals/files/{rel} does not exist; add it or fix the name"
        except (safe_io.UnsafePathError, safe_io.FileTooLargeError, OSError) as error:
            return field, f"evals/files/{rel} cannot be used: {error}"
        check.expected_sha256 = hashlib.sha256(data).hexdigest()
        check.expected_size = len(data)
    return None
