"""End of session, on the controller: aggregate the records, write the results, prepare the summary lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_skilleval.session import SkillEvalSession, compact_table


def _results_root(skill_dir: Path, results_dir: str | None) -> Path:
    if results_dir:
        return Path(results_dir).expanduser().resolve() / skill_dir.name
    return skill_dir / "evals" / "results"


def finish_session(state: SkillEvalSession, session: pytest.Session, exitstatus: int) -> None:
    # Under xdist the controller collects nothing: the skills to report come from the records themselves.
    for skill_dir in sorted({Path(record.skill_dir) for record in state.records.values()}):
        skill = state.skill(skill_dir)
        records = state.records_for(str(skill_dir))
        root = _results_root(skill_dir, skill.settings.results_dir)
        run_dir = root / state.run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        payload = {
            "schema_version": "2.0",
            "run_id": state.run_id,
            "skill": skill.name,
            "trials": [record.model_dump(mode="json") for record in records],
        }
        tmp = run_dir / ".result.json.tmp"
        tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, run_dir / "result.json")
        state.results_paths.append(run_dir)
        state.summary_lines.append(f"skill {skill.name}")
        state.summary_lines.extend(compact_table(records))
        state.summary_lines.append(f"results: {run_dir / 'result.json'}")
