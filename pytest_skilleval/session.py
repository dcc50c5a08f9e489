"""Session state: the skills seen, the trial records reported, and what happens once at the end.

Records arrive through `pytest_runtest_logreport`, which runs on the controller for every worker's reports under
xdist and in the only process otherwise, so the aggregate is the same either way and a crashed worker loses
only its own trials.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.options import SettingsSources
from pytest_skilleval.outcome import USER_PROPERTY_KEY, TrialRecord
from pytest_skilleval.skill import SkillFolder

STATE_KEY = pytest.StashKey["SkillEvalSession"]()


class SkillEvalSession:
    def __init__(self, config: pytest.Config, sources: SettingsSources, run_id: str) -> None:
        self.config = config
        self.sources = sources
        self.run_id = run_id
        self.skills: dict[Path, SkillFolder] = {}
        self.records: dict[str, TrialRecord] = {}
        self.planned: dict[str, list[str]] = {}  # skill dir -> node ids collected
        self.results_paths: list[Path] = []
        self.summary_lines: list[str] = []

    def skill(self, path: Path) -> SkillFolder:
        path = path.resolve()
        if path not in self.skills:
            self.skills[path] = SkillFolder(path, self.sources)
        return self.skills[path]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Registered as a plugin: sees every report, the workers' included when this is the controller."""
        for key, value in report.user_properties:
            if key == USER_PROPERTY_KEY:
                record = TrialRecord.model_validate(json.loads(value) if isinstance(value, str) else value)
                self.records[record.nodeid or report.nodeid] = record

    def records_for(self, skill_dir: str) -> list[TrialRecord]:
        return [record for record in self.records.values() if record.skill_dir == skill_dir]


def get_state(config: pytest.Config) -> SkillEvalSession | None:
    return config.stash.get(STATE_KEY, None)


def record_property_value(record: TrialRecord) -> str:
    """JSON text: xdist ships user_properties between processes, so only plain strings cross."""
    return record.model_dump_json()


def compact_table(records: list[TrialRecord]) -> list[str]:
    """One row per case x agent x arm (mean score, passes/attempts) and the with-minus-without difference."""
    rows: dict[tuple[str, str, str], list[TrialRecord]] = {}
    for record in records:
        rows.setdefault((record.case, record.agent, record.arm), []).append(record)
    if not rows:
        return []
    lines = [f"{'case':<28} {'agent':<14} {'arm':<14} {'mean':>8} {'passed':>8}"]
    for (case, agent, arm), group in sorted(rows.items()):
        scored = [r.overall for r in group if r.overall is not None]
        mean = f"{sum(scored) / len(scored):.4f}" if scored else "NO SCORE"
        passed = sum(1 for r in group if r.passed)
        lines.append(f"{case[:28]:<28} {agent[:14]:<14} {arm:<14} {mean:>8} {passed:>4}/{len(group):<3}")
    for agent in sorted({record.agent for record in records}):
        means: dict[str, Any] = {}
        for arm in ("with_skill", "without_skill"):
            scored = [r.overall for r in records if r.agent == agent and r.arm == arm and r.overall is not None]
            means[arm] = sum(scored) / len(scored) if scored else None
        if means["with_skill"] is None or means["without_skill"] is None:
            lines.append(f"{agent}: with-skill minus without-skill: N/A")
        else:
            lines.append(f"{agent}: with-skill minus without-skill: {means['with_skill'] - means['without_skill']:+.4f}")
    return lines
