"""The skip -> failure switch for missing system parts: local runs skip with how to install, CI fails."""

from __future__ import annotations

import shutil
import uuid

import pytest

from tests.support import REQUIRE_SYSTEM_ENV

NEEDS_MISSING_PART = """
from tests.support import require_system

def test_needs_the_frobnicator():
    require_system("The frobnicator", "apt-get install frobnicator")
"""


def test_a_missing_system_part_skips_with_how_to_install(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REQUIRE_SYSTEM_ENV, raising=False)
    pytester.makepyfile(NEEDS_MISSING_PART)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*The frobnicator is not available here: apt-get install frobnicator*"])


@pytest.mark.parametrize("value", ["1", "true"])
def test_under_ci_a_missing_system_part_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(REQUIRE_SYSTEM_ENV, value)
    pytester.makepyfile(NEEDS_MISSING_PART)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*apt-get install frobnicator ({REQUIRE_SYSTEM_ENV} is set*"])


def test_a_fixture_for_a_missing_part_skips_and_marks_the_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REQUIRE_SYSTEM_ENV, raising=False)
    monkeypatch.setenv("PATH", str(pytester.path / "empty-bin"))
    pytester.makepyfile("def test_browser(chromium_path):\n    raise AssertionError('must not run')\n")
    result = pytester.runpytest("-p", "tests.system_parts", "-rs", "-m", "browser")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*Chromium is not available here: apt-get install chromium*"])
    deselected = pytester.runpytest("-p", "tests.system_parts", "-m", "not browser")
    deselected.assert_outcomes(deselected=1)


def test_without_debootstrap_the_image_fixture_skips_saying_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, docker_available: str
) -> None:
    # A PATH with docker and what the build script runs, but no debootstrap; an image name that does not exist.
    bin_dir = pytester.mkdir("bin")
    for tool in ("bash", "dirname", "flock"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (bin_dir / "docker").symlink_to(docker_available)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("SKILLEVAL_TEST_IMAGE", f"skilleval-test-base:absent-{uuid.uuid4().hex[:8]}")
    monkeypatch.delenv(REQUIRE_SYSTEM_ENV, raising=False)
    pytester.makepyfile("def test_image(test_base_image):\n    raise AssertionError('must not run')\n")
    result = pytester.runpytest("-p", "tests.system_parts", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*debootstrap (builds the offline test image) is not available here*"])


# A conftest, as in this repository: a plugin named by a test module loads after the header is printed.
SYSTEM_PARTS_CONFTEST = 'pytest_plugins = ["tests.system_parts"]\n'
USES_AGENT_CLIS = """
def test_needs_the_clis(agent_clis):
    raise AssertionError("the opt-out must stop the install before this runs")
"""


def test_opting_out_of_the_agent_clis_skips_their_tests_and_the_header_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(REQUIRE_SYSTEM_ENV, raising=False)
    monkeypatch.setenv("SKILLEVAL_SKIP_AGENT_CLIS", "1")
    pytester.makeconftest(SYSTEM_PARTS_CONFTEST)
    pytester.makepyfile(USES_AGENT_CLIS)
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["agent CLIs: not installed (SKILLEVAL_SKIP_AGENT_CLIS is set*", "*SKIPPED*SKILLEVAL_SKIP_AGENT_CLIS is set*"]
    )


def test_the_header_says_what_the_agent_tests_install_and_where(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SKILLEVAL_SKIP_AGENT_CLIS", raising=False)
    monkeypatch.setenv("SKILLEVAL_AGENT_CLI_CACHE", "/nonexistent/cli-cache")
    pytester.makeconftest(SYSTEM_PARTS_CONFTEST)
    pytester.makepyfile("def test_nothing():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "agent CLIs: the `agents` tests install codex, claude-code and opencode*/nonexistent/cli-cache*SKILLEVAL_SKIP_AGENT_CLIS=1 skips them"
        ]
    )


def test_under_ci_the_opt_out_does_not_hide_the_agent_tests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REQUIRE_SYSTEM_ENV, "1")
    monkeypatch.setenv("SKILLEVAL_SKIP_AGENT_CLIS", "1")
    pytester.makeconftest(SYSTEM_PARTS_CONFTEST)
    pytester.makepyfile(USES_AGENT_CLIS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SKILLEVAL_SKIP_AGENT_CLIS is set*"])
