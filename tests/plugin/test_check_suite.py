"""`skilleval check-suite` against real local trials: an agent that does nothing runs every case of a skill whose
grader already passes one positive case on the untouched workspace and fails one negative control; each gets one
line and the exit status is 1. A suite where every case can fail exits 0, and the skill folder is left as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import SkillProject

GRADER = """
import json, os
from pathlib import Path

workspace = Path(os.environ.get("HARBOR_WORKSPACE_DIR", "/workspace"))
entry = json.loads(Path(os.environ.get("HARBOR_ENTRY_JSON", "/tests/entry.json")).read_text())
if entry["id"] in ("already-true", "neg-strict"):
    # the first looks at an input the task stages itself; the second wants an output a negative control never makes
    path = workspace / ("input/data.txt" if entry["id"] == "already-true" else "output/result.txt")
else:
    path = workspace / "output/result.txt"
score = 1.0 if path.exists() else 0.0
if entry["id"] == "neg-fine":
    score = 0.0 if path.exists() else 1.0
Path(os.environ.get("HARBOR_REWARD_JSON", "/logs/verifier/reward.json")).write_text(
    json.dumps({"overall": score, "file_ok": score})
)
"""


def _skill(project: SkillProject, cases: list[dict]) -> Path:
    skill = project.make_skill("suite", {"skill_name": "suite", "evals": cases}, grader=False)
    (skill / "evals" / "grader.py").write_text(GRADER)
    (skill / "evals" / "config.yml").write_text("schema_version: 1\ngrading:\n  mode: default_plus_custom\n")
    (skill / "evals" / "files").mkdir()
    (skill / "evals" / "files" / "data.txt").write_text("rows\n")
    return skill


def _case(case_id: str, **extra: object) -> dict:
    return {"id": case_id, "prompt": f"do {case_id}", "expected_output": "result.txt written", "files": [], **extra}


def _check_suite(skill: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "pytest_skilleval.authoring.cli", "check-suite", str(skill), "--env-mode", "local"]
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=600, check=False)


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_a_case_that_cannot_fail_and_a_negative_that_fails_are_each_one_line(skill_project: SkillProject) -> None:
    skill = _skill(
        skill_project,
        [
            _case("already-true", files=["files/data.txt"]),
            _case("needs-work"),
            _case("absent-check", checks=[{"type": "file_absent", "path": "output/never.txt"}]),
            _case("neg-strict", should_trigger=False),
            _case("neg-fine", should_trigger=False),
        ],
    )
    before = _tree(skill)
    done = _check_suite(skill, skill_project.root)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3, lines
    # a check that holds on the untouched workspace cannot fail either (the grader scores this case 0)
    assert lines[0].startswith(f"{skill}: case 'absent-check': cannot fail: ") and "checks 1.00" in lines[0]
    assert "grader" not in lines[0]
    assert lines[1].startswith(f"{skill}: case 'already-true': cannot fail: ")
    assert "grader overall 1.00" in lines[1]
    assert lines[2].startswith(f"{skill}: case 'neg-strict': negative control fails for an agent that does nothing")
    assert "grader overall 0.00" in lines[2]
    assert _tree(skill) == before  # nothing written into the skill folder (no evals/results/)


def test_a_suite_where_every_case_can_fail_exits_0(skill_project: SkillProject) -> None:
    skill = _skill(skill_project, [_case("needs-work"), _case("neg-fine", should_trigger=False)])
    done = _check_suite(skill, skill_project.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        done.stdout.strip() == f"{skill}: every case can fail, and every negative control passes when nothing is done"
    )


def test_not_a_skill_folder_is_a_usage_error(tmp_path: Path) -> None:
    done = _check_suite(tmp_path, tmp_path)
    assert done.returncode == 2 and "not a skill folder (no SKILL.md)" in done.stderr
    assert json.dumps(done.stdout) == '""'


def test_a_flat_list_case_nothing_measures_cannot_fail(skill_project: SkillProject) -> None:
    """agent-skill-eval's flat evals.json: no skill_name, text assertions only. With no judge, nothing measures the
    result and the skill checks skip the unlabelled case at 1.0, so a do-nothing agent passes it."""
    rows = [{"id": "check-title", "prompt": "check the PR title", "expected_output": "valid", "assertions": ["ok"]}]
    skill = skill_project.make_skill("flat", rows, grader=False)
    done = _check_suite(skill, skill_project.root)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith(f"{skill}: case 'check-title': cannot fail: a do-nothing agent passes it with overall 1.00")
    assert "nothing measures its result" in line
