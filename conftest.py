"""Repo-wide test setup: Harbor kept offline, pytester, the `skill_project` and `scripted_model` fixtures and
the system-part fixtures."""

from __future__ import annotations

import os

# Loaded for the whole session, as yaml is below: pygal (report.html's charts, imported when a run's report is rendered in the test's process, e.g. by an
# in-process `skilleval view`): it imports the importlib_metadata backport, which appends its finder to
# sys.meta_path on import; pytester's restore then removes the backport's modules but not the finder, and every
# later test saw no installed distribution at all (no pytest11 entry point: `--skill-eval` unrecognised in-process).
import pygal  # noqa: F401
import pytest

# Loaded for the whole session: the plugin imports PyYAML only when it reads a YAML file, and pytester restores
# sys.modules after each test, so a YAML run would import yaml.events afresh while PyYAML's C parser (an extension
# module, never loaded twice) still makes events of the first import's classes, which the new composer then fails
# to recognise.
import yaml  # noqa: F401

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.support import SkillProject

# docker_available, test_base_image, chromium_path, agent_clis: system parts, skipped (failed in CI) when missing.
pytest_plugins = ["pytest_skilleval.testing.fixtures", "tests.system_parts"]


@pytest.fixture
def skill_project(pytester: pytest.Pytester) -> SkillProject:
    return SkillProject(pytester)
