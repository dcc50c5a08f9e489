"""evals/config.yml settings that shape the sandbox and the task list are applied, not just accepted."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries


def _native(skill: Path, case: str) -> None:
    task = skill / "evals" / "harbor" / case
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text(f'schema_version = "1.4"\n[task]\nname = "demo/{case}"\n')
    (task / "instruction.md").write_text(f"do {case}\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("auto", {"evals.json::t2", "task.toml::t1"}),
        ("evals_json", {"evals.json::t1", "evals.json::t2"}),
        ("native_harbor", {"task.toml::t1"}),
    ],
)
def test_task_source_chooses_the_tasks(skill_project: SkillProject, source: str, expected: set[str]) -> None:
    skill = skill_project.make_skill("demo", simple_entries("t1", "t2"))
    _native(skill, "t1")
    (skill / "evals" / "config.yml").write_text(f"schema_version: 1\nharbor:\n  task_source: {source}\n")
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "--skip-baseline", subprocess=False)
    ids = {
        line.split("/evals/")[1].split("/")[-1].split("[")[0].replace("harbor/t1/", "")
        for line in result.stdout.lines
        if "/evals/" in line and "[" in line
    }
    assert ids == expected


def _trial_dir(project: SkillProject, skill: str, case: str) -> Path:
    """The Harbor trial folder the results tree's trial file names."""
    (found,) = (project.root / "results" / skill).glob(f"2*/replay/with_skill/trials/{case}.1.json")
    return Path(json.loads(found.read_text())["trial_dir"])


def test_workdir_resources_and_runtime_env_reach_the_trial(
    skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "config.yml").write_text(
        "schema_version: 1\nharbor:\n  agent_workdir: /srv/work\n  resources: {cpus: 1, memory_mb: 1024}\n"
        "  runtime_env:\n    SERVICE_URL: http://${SVC_HOST}:8080\n    MODE: demo\n"
    )
    monkeypatch.setenv("SVC_HOST", "db.internal")
    result = skill_project.run(
        *LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline", "--pass-env", "SVC_HOST", "--harbor-keep-jobs"
    )
    result.assert_outcomes(passed=1)
    trial_dir = _trial_dir(skill_project, "demo", "c1")
    config = json.loads((trial_dir / "config.json").read_text())
    table = tomllib.loads((Path(config["task"]["path"]) / "task.toml").read_text())["environment"]
    assert (table["workdir"], table["cpus"], table["memory_mb"]) == ("/srv/work", 1, 1024)
    assert config["environment"]["env"] == {"SERVICE_URL": "http://db.internal:8080", "MODE": "demo"}


def test_trial_folders_are_deleted_unless_kept(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline").assert_outcomes(passed=1)
    trial_dir = _trial_dir(skill_project, "demo", "c1")  # the results tree kept its own copies
    assert trial_dir.name.startswith("skilleval-c1__") and not trial_dir.exists()
    assert not trial_dir.parent.parent.exists()  # the trial's own folder went with it


def test_pre_agent_setup_runs_before_the_agent_when_not_paired(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("ok", "broken"))
    (skill / "evals" / "config.yml").write_text("schema_version: 1\nharbor:\n  pre_agent_setup: test -d /workspace\n")
    skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline").assert_outcomes(passed=2)
    (skill / "evals" / "config.yml").write_text("schema_version: 1\nharbor:\n  setup_commands: [exit 3]\n")
    result = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline", "-k", "broken")
    result.assert_outcomes(errors=1)
    assert "Healthcheck" in result.stdout.str() or "healthcheck" in result.stdout.str()


def test_group_workspace_installs_included_skills_in_both_arms(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    helper = skill_project.root / "skills" / "helper"
    helper.mkdir()
    (helper / "SKILL.md").write_text("---\nname: helper\ndescription: helps\n---\n# helper\n")
    (skill / "evals" / "config.yml").write_text(
        "schema_version: 1\nskill_workspace:\n  mode: group\n  include: [../helper]\n"
    )
    skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "--harbor-keep-jobs").assert_outcomes(passed=2)
    for arm in ("with_skill", "without_skill"):
        (found,) = (skill_project.root / "results" / "demo").glob(f"2*/replay/{arm}/trials/c1.1.json")
        trial_dir = Path(json.loads(found.read_text())["trial_dir"])
        config = json.loads((trial_dir / "config.json").read_text())
        names = sorted(
            Path(s).name if isinstance(s, str) else Path(s["path"]).name for s in config["agent"].get("skills", [])
        )
        assert names == (["demo", "helper"] if arm == "with_skill" else ["helper"])
        entry = json.loads((trial_dir.parent.parent / "tests" / "entry.json").read_text())  # the trial's own
        assert entry["skill_workspace_mode"] == "group"
        assert entry["workspace_skill_names"] == names


def test_group_workspace_refuses_the_evaluated_skill_under_another_name(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    alias = skill_project.root / "skills" / "alias"
    alias.mkdir()
    (alias / "SKILL.md").write_bytes((skill / "SKILL.md").read_bytes())
    (skill / "evals" / "config.yml").write_text(
        "schema_version: 1\nskill_workspace:\n  mode: group\n  include: [../alias]\n"
    )
    result = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-with-skill")
    result.assert_outcomes(errors=1)
    assert "is the evaluated skill itself; the baseline must not see it" in result.stdout.str()


@pytest.mark.parametrize("how", ["absolute", "up-two", "link"])
def test_group_workspace_never_reaches_outside_the_folder_holding_the_skill(
    skill_project: SkillProject, tmp_path_factory: pytest.TempPathFactory, how: str
) -> None:
    """A skill's config.yml named any host folder holding a SKILL.md (`/home/me/.claude/skills/private`) and the
    agent of both arms could read all of it in the sandbox."""
    victim = tmp_path_factory.mktemp("host") / "victim"
    victim.mkdir()
    (victim / "SKILL.md").write_text("---\nname: victim\ndescription: private\n---\n")
    (victim / "secret.txt").write_text("VICTIM-SECRET\n")
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    include = {"absolute": str(victim), "up-two": os.path.relpath(victim, skill), "link": "../victim"}[how]
    if how == "link":
        (skill_project.root / "skills" / "victim").symlink_to(victim)
    (skill / "evals" / "config.yml").write_text(
        f"schema_version: 1\nskill_workspace:\n  mode: group\n  include: ['{include}']\n"
    )
    skill_project.make_skill("good", simple_entries("fine"))
    result = skill_project.run(*LOCAL_REPLAY, "--skip-with-skill", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    expected = "goes through a link" if how == "link" else "leaves the folder holding the skill"
    assert "skill_workspace.include" in output and expected in output, output
    assert not [p for p in (skill_project.root / "results").rglob("*") if p.is_file() and b"VICTIM" in p.read_bytes()]
