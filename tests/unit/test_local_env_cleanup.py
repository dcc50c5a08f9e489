"""The local sandbox's clean-up makes read-only folders writable to remove them, and never changes a host file
through a link the sandbox planted (issue 21: a host file's mode went from 0400 to 0700)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pytest_skilleval.harbor.sandbox.keeper import make_writable_and_retry


def test_a_failed_remove_changes_no_file_behind_a_link(tmp_path: Path) -> None:
    host = tmp_path / "host-file"
    host.write_text("the invoking user's\n")
    host.chmod(0o400)
    sandbox = tmp_path / "rootfs" / "workspace"
    (sandbox / "ro").mkdir(parents=True)
    (sandbox / "ro" / "link").symlink_to(host)
    (sandbox / "ro").chmod(0o500)
    removed: list[str] = []
    # What shutil.rmtree's onexc gets when unlinking the link failed (as it does for an unprivileged user).
    make_writable_and_retry(removed.append, str(sandbox / "ro" / "link"), PermissionError())
    assert stat.S_IMODE(host.stat().st_mode) == 0o400
    assert stat.S_IMODE((sandbox / "ro").stat().st_mode) == 0o700  # the sandbox's own folder is made writable
    assert removed == [str(sandbox / "ro" / "link")]
    os.unlink(sandbox / "ro" / "link")
    assert host.exists()
