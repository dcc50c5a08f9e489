"""Harbor 0.24 hands every environment its own log folders as bind mounts (0.25 passes them apart); the local
environment takes those (it does not mount, so Harbor downloads the logs) and still refuses any other mount."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import make_env


def _log_mounts(trial_dir: Path) -> list[dict]:
    return [
        {"type": "bind", "source": str(trial_dir / "agent"), "target": "/logs/agent", "bind": {"selinux": "z"}},
        {"type": "bind", "source": str(trial_dir / "verifier"), "target": "/logs/verifier"},
        {"type": "bind", "source": str(trial_dir / "artifacts" / "logs"), "target": "/logs/artifacts"},
    ]


def test_harbor_own_log_mounts_are_taken(tmp_path: Path, sandbox_mode: str):
    env = make_env(tmp_path, sandbox_mode, {"mounts": _log_mounts(tmp_path / "trial")})
    assert env.capabilities.mounted is False


@pytest.mark.parametrize(
    "mount",
    [
        {"type": "bind", "source": "/etc", "target": "/logs/agent"},
        {"type": "bind", "source": "TRIAL/agent", "target": "/workspace/data"},
        {"type": "volume", "target": "/logs/agent"},
    ],
    ids=["host-source", "non-log-target", "no-source"],
)
def test_any_other_mount_is_refused(tmp_path: Path, sandbox_mode: str, mount: dict):
    mount = {k: (v.replace("TRIAL", str(tmp_path / "trial")) if isinstance(v, str) else v) for k, v in mount.items()}
    with pytest.raises(ValueError, match="the local environment does not support extra mounts"):
        make_env(tmp_path, sandbox_mode, {"mounts": [*_log_mounts(tmp_path / "trial"), mount]})
