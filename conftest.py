"""Repo-wide test setup: Harbor kept offline, pytester, the `skill_project` and `scripted_model` fixtures and
the system-part fixtures."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.support import SkillProject

# docker_available, test_base_image, chromium_path, agent_clis: system parts, skipped (failed in CI) when missing.
pytest_plugins = ["pytest_skilleval.testing.fixtures", "tests.system_parts"]


@pytest.fixture
def skill_project(pytester: pytest.Pytester) -> SkillProject:
    return SkillProject(pytester)
