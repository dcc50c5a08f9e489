"""Every `skilleval` command runs offline by default, like the plugin: litellm's price map and Harbor's telemetry
stay local unless the user set otherwise (offline, litellm's fetch of its price map stalls doctor and grade)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pytest_skilleval.authoring.cli import main

PROBE = (
    "import os, sys\n"
    "from pytest_skilleval.authoring import cli\n"
    "cli.COMMANDS['probe'] = lambda argv: print(os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'),"
    " os.environ.get('HARBOR_TELEMETRY')) or 0\n"
    "sys.exit(cli.main(['probe']))\n"
)


def _run_probe(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_command_sees_the_offline_defaults() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("LITELLM_LOCAL_MODEL_COST_MAP", "HARBOR_TELEMETRY")}
    assert _run_probe(env) == "True 0"


def test_a_value_the_user_set_is_kept() -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "False", "HARBOR_TELEMETRY": "1"}
    assert _run_probe(env) == "False 1"


def test_the_help_still_answers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "usage: skilleval" in capsys.readouterr().out
