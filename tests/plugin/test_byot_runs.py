"""Native Harbor tasks (BYOT) through the plugin: staged per arm, graded per mode, refused when they break a rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries

OWN_TEST = """#!/bin/bash
out="${HARBOR_VERIFIER_DIR:-/logs/verifier}"
mkdir -p "$out"
if [ -f "${HARBOR_WORKSPACE_DIR:-/workspace}/output/ran.txt" ]; then echo '{"overall": 0.8, "ran": 1}' > "$out/reward.json"
else echo '{"overall": 0.1, "ran": 0}' > "$out/reward.json"; fi
"""


def _native_task(skill: Path, case: str, toml_extra: str = "", test_sh: str = OWN_TEST) -> Path:
    task = skill / "evals" / "harbor" / case
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text(f'schema_version = "1.4"\n[task]\nname = "demo/{case}"\n{toml_extra}')
    (task / "instruction.md").write_text(f"do {case}\n")
    (task / "tests" / "test.sh").write_text(test_sh)
    return task


def test_custom_only_native_task_runs_its_own_test_sh(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("other"), grader=False)
    task = _native_task(skill, "t1")
    before = {p: p.read_bytes() for p in task.rglob("*") if p.is_file()}
    (skill / "evals" / "replays" / "t1.json").write_bytes((skill / "evals" / "replays" / "other.json").read_bytes())
    result = skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "--ek", "sandbox=none", "-k", "t1")
    result.assert_outcomes(passed=2)
    trials = {(t["case"], t["arm"]): t for t in skill_project.result_json("native")["trials"]}
    assert trials[("t1", "with_skill")]["overall"] == 0.8
    assert trials[("t1", "with_skill")]["custom_metrics"] == {"ran": 1.0}
    # The user's task folder is untouched.
    assert {p: p.read_bytes() for p in task.rglob("*") if p.is_file()} == before


def test_standard_mode_native_task_is_graded_on_the_host(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("t1"), grader=False)
    _native_task(skill, "t1")
    result = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "-k", "task.toml")
    result.assert_outcomes(passed=2)
    trial = next(t for t in skill_project.result_json("native")["trials"] if t["arm"] == "with_skill")
    assert trial["metrics"]["security"] == 1.0


def test_unmatched_entry_id_refuses_the_run(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("other"), grader=False)
    _native_task(skill, "t1")
    result = skill_project.run("--collect-only", *LOCAL_REPLAY, subprocess=False)
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "native task refused" in output and "t1" in output
    assert "Traceback" not in output


def test_windows_task_is_refused_naming_the_rule(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("t1"), grader=False)
    _native_task(skill, "t1", toml_extra='[environment]\nos = "windows"\n')
    result = skill_project.run("--collect-only", *LOCAL_REPLAY, subprocess=False)
    output = result.stdout.str()
    assert "native task refused" in output
    assert "windows" in output.lower()


def test_nested_reward_from_own_test_sh_surfaces_harbors_error(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("other"), grader=False)
    nested = (
        '#!/bin/bash\nout="${HARBOR_VERIFIER_DIR:-/logs/verifier}"\nmkdir -p "$out"\n'
        'echo \'{"overall": 1, "details": {"a": 1}}\' > "$out/reward.json"\n'
    )
    _native_task(skill, "t1", test_sh=nested)
    (skill / "evals" / "replays" / "t1.json").write_bytes((skill / "evals" / "replays" / "other.json").read_bytes())
    result = skill_project.run(
        *LOCAL_REPLAY, "--grading-mode", "custom_only", "--ek", "sandbox=none", "--skip-baseline", "-k", "task.toml"
    )
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert "VerifierOutputParseError" in output and "Non-numeric reward" in output


def test_native_task_replaces_the_generated_task_for_its_entry(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("t1", "t2"), grader=False)
    _native_task(skill, "t1")
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "--skip-baseline", subprocess=False)
    ids = [line.strip() for line in result.outlines if "::" in line]
    assert ids == [
        "skills/native/evals/evals.json::t2[replay-with_skill-1]",
        "skills/native/evals/harbor/t1/task.toml::t1[replay-with_skill-1]",
    ]


@pytest.mark.parametrize(
    ("toml", "why"),
    [
        ('schema_version = "1.4"\n[task]\nname = "no-slash"\n', "task.toml field"),  # refused by Harbor's model
        (
            'schema_version = "1.4"\n[task]\nname = "demo/t1"\n[environment]\nskills_dir = "/skills"\n',
            "paired-shipped-skills",
        ),  # refused by a plugin rule
    ],
)
def test_a_refused_native_task_never_falls_back_to_its_dataset_entry(
    skill_project: SkillProject, toml: str, why: str
) -> None:
    """One rule, whoever refuses the task: the entry it replaces does not run silently in its place."""
    skill = skill_project.make_skill("native", simple_entries("t1", "t2"), grader=False)
    task = _native_task(skill, "t1")
    (task / "task.toml").write_text(toml)
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED and why in out
    assert "evals.json::t1[" not in out


HEALTHCHECK = '[environment.healthcheck]\ncommand = "touch /tmp/seeded"\n'


@pytest.mark.parametrize(
    "arms",
    [(), ("--skip-with-skill",), ("--baseline-skill", "PREVIOUS")],
    ids=["paired", "baseline only", "previous version"],
)
def test_a_native_healthcheck_never_runs_in_the_baseline(skill_project: SkillProject, arms: tuple[str]) -> None:
    """The baseline arm alone (--skip-with-skill) keeps the baseline's rules: a task healthcheck would run
    skill-owned commands in it before the agent. So does the previous version's arm (--baseline-skill): the
    version under test's commands would run there."""
    skill = skill_project.make_skill("native", simple_entries("t1"), grader=False)
    _native_task(skill, "t1", toml_extra=HEALTHCHECK)
    previous = skill_project.root / "previous" / "native"
    previous.mkdir(parents=True)
    (previous / "SKILL.md").write_text((skill / "SKILL.md").read_text())
    arms = tuple(str(previous) if arg == "PREVIOUS" else arg for arg in arms)
    result = skill_project.run("--collect-only", *LOCAL_REPLAY, *arms, subprocess=False)
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "[paired-healthcheck] [environment.healthcheck] is authored" in output
    assert "the baseline arm never gets them (--skip-with-skill and --baseline-skill too)" in output


def test_a_native_healthcheck_runs_in_a_with_skill_only_run(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("t1"), grader=False)
    _native_task(skill, "t1", toml_extra=HEALTHCHECK)
    result = skill_project.run("--collect-only", *LOCAL_REPLAY, "--skip-baseline", subprocess=False)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*1 test collected*"])
