"""report.html in a real browser: headless Chromium opens the demo run's report; the rendered DOM shows the verdict,
one row per case and a trial drill-down, the page logs no console error and fetches nothing; a screenshot is kept
for a person to look at (the test's tmp dir; `SKILLEVAL_REPORT_SCREENSHOT=path` also copies it there)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.cdp_pipe import Browser
from tests.support import LOCAL_REPLAY, SkillProject, require_system

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

INSTALL_CHROMIUM = "apt-get install -y chromium (Debian); as root it runs with --no-sandbox"


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        exe = shutil.which(name)
        if exe:
            return exe
    require_system("Chromium", INSTALL_CHROMIUM)


@pytest.fixture
def demo_report(skill_project: SkillProject) -> Path:
    skill = skill_project.copy_hello_skill()
    result = skill_project.run(str(skill), *LOCAL_REPLAY, "--n-attempts", "2")
    result.assert_outcomes(passed=16)
    run_dir = (skill_project.root / "results" / "hello-skill" / "latest").resolve()
    report = run_dir / "report.html"
    assert report.is_file() and (run_dir / "BENCHMARK.md").is_file()
    return report


def test_demo_report_renders_in_chromium(demo_report: Path, tmp_path: Path) -> None:
    browser = Browser(_chromium(), tmp_path / "profile")
    try:
        browser.open(demo_report.as_uri())
        verdict = browser.evaluate("document.getElementById('verdict-text').textContent.trim()")
        case_rows = browser.evaluate("document.querySelectorAll('section.agent tr.case-row').length")
        cases = browser.evaluate("[...document.querySelectorAll('tr.case-row')].map(r => r.dataset.case)")
        charts = browser.evaluate("document.querySelectorAll('.chart svg').length")
        trials = browser.evaluate("document.querySelectorAll('details.trial').length")
        # Open one trial's drill-down (and its trajectory and grader details) so the screenshot shows it.
        steps = browser.evaluate(
            "(() => { const c = document.querySelector('details.case-trials'); c.open = true;"
            " const t = c.querySelector('details.trial'); t.open = true;"
            " t.querySelectorAll('details').forEach(d => d.open = true);"
            " t.scrollIntoView(); return t.querySelectorAll('.step').length; })()"
        )
        resources = browser.evaluate("performance.getEntriesByType('resource').map(e => e.name)")
        shot = tmp_path / "report.png"
        browser.screenshot(shot)
    finally:
        browser.close()

    assert verdict == "Verdict: NEUTRAL"
    assert case_rows == 4
    assert sorted(cases) == ["contextual-greeting", "explicit-greeting", "implicit-greeting", "negative-arithmetic"]
    assert charts == 3  # with vs without per case, lift forest plot, pass@k curves
    assert trials == 16
    assert steps > 0
    assert resources == []  # nothing fetched: the page is self-contained
    assert browser.errors == []
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("SKILLEVAL_REPORT_SCREENSHOT")
    if keep:
        shutil.copy2(shot, keep)


def test_a_raw_terminus2_run_reads_as_plans_in_chromium(tmp_path: Path) -> None:
    """A terminus-2 run recorded with raw_content (its messages are the model's JSON replies, no tool calls) shows in
    the report's trajectory as the plan's text and the commands it typed, not as raw JSON."""
    from pytest_skilleval.results.aggregate import aggregate
    from pytest_skilleval.results.models import RunPlan
    from pytest_skilleval.results.publish import write_run_reports
    from pytest_skilleval.results.records import TrialRecord
    from pytest_skilleval.results.tree import write_results_tree
    from tests.support import FIXTURES

    recorded = FIXTURES / "trajectories" / "terminus-2-recorded" / "raw-content"
    records = []
    for arm in ("with_skill", "without_skill"):
        trial = tmp_path / "harbor" / arm
        (trial / "agent").mkdir(parents=True)
        shutil.copy2(recorded / arm / "trajectory.json", trial / "agent" / "trajectory.json")
        records.append(
            TrialRecord(
                skill="hello-skill",
                case="explicit-greeting",
                agent="terminus-2",
                arm=arm,  # type: ignore[arg-type]
                attempt=1,
                status="scored",  # type: ignore[arg-type]
                overall=1.0 if arm == "with_skill" else 0.5,
                passed=arm == "with_skill",
                metrics={"security": 1.0},
                trial_dir=str(trial),
            )
        )
    plan = RunPlan(skill="hello-skill", cases=["explicit-greeting"], agents=["terminus-2"], n_attempts=1)
    run = write_results_tree(aggregate(records, plan), records, tmp_path / "results", "20260102_030405_1_0123456789ab")
    write_run_reports(run)

    browser = Browser(_chromium(), tmp_path / "profile")
    try:
        browser.open((run / "report.html").as_uri())
        steps = browser.evaluate(
            "(() => { document.querySelectorAll('details').forEach(d => d.open = true);"
            " const t = [...document.querySelectorAll('details.trial')].find(t => t.textContent.includes('with_skill'))"
            "   || document.querySelector('details.trial');"
            " return [...t.querySelectorAll('.step.s-agent')].map(s => ({"
            "   message: (s.querySelector(':scope > pre') || {}).innerText || '',"
            "   calls: [...s.querySelectorAll('.tool')].map(c => [c.querySelector('b').innerText,"
            "     c.querySelector('pre').innerText]) })); })()"
        )
    finally:
        browser.close()

    assert steps, "no agent step shown"
    first = steps[0]
    assert first["message"] == "Analysis: Scripted.\nPlan: Follow the script."
    assert first["calls"][0] == ["bash_command", "cat /runtime/skills/hello-skill/SKILL.md\n"]
    assert any("greet.py" in keys for _, keys in first["calls"])
    assert steps[-1]["calls"] == [["mark_task_complete", ""]]
    assert not any('"commands"' in step["message"] for step in steps)
    assert browser.errors == []
