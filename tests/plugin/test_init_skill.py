"""`skilleval init`: a new skill that validates clean and runs offline at once, written only into a new folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.authoring.cli import main
from pytest_skilleval.authoring.validate import validate_skill
from tests.support import LOCAL_REPLAY, SkillProject


def test_a_new_skill_validates_and_runs_both_arms_offline(
    skill_project: SkillProject, capsys: pytest.CaptureFixture[str]
) -> None:
    skill = skill_project.root / "skills" / "note-taker"
    assert main(["init", str(skill)]) == 0
    said = capsys.readouterr().out
    assert f"next: pytest --skill-eval {skill} --agents replay --env-mode local" in said
    # The starter case has no correctness signal until it gets checks: validate says so, and nothing else.
    assert [f.rule for f in validate_skill(skill).findings if f.rule != "correctness-not-measured"] == []
    result = skill_project.run(*LOCAL_REPLAY)
    result.assert_outcomes(passed=2)
    trials = {t["arm"]: t for t in skill_project.result_json("note-taker")["trials"]}
    trial = trials["with_skill"]
    assert trial["status"] == "scored" and trial["metrics"]["skill_execution"] == 1.0
    # The starter case carries a check: the skill's note is right, the baseline's hand-written one is not.
    assert [c["status"] for c in trial["checks"]] == ["passed"] and trial["metrics"]["checks"] == 1.0
    assert trials["without_skill"]["metrics"]["checks"] == 0.0


def test_init_never_writes_over_an_existing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill = tmp_path / "mine"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: mine\ndescription: mine\n---\n")
    assert main(["init", str(skill)]) == 2
    assert "the folder is not empty" in capsys.readouterr().err
    assert [p.name for p in skill.iterdir()] == ["SKILL.md"]
    assert (skill / "SKILL.md").read_text() == "---\nname: mine\ndescription: mine\n---\n"


def test_a_name_that_cannot_be_a_skill_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "has space")]) == 2
    assert "the folder's name is the skill's name" in capsys.readouterr().err
    assert not (tmp_path / "has space").exists()


@pytest.mark.parametrize(
    ("name", "suggested"),
    [
        ("bad_name", "bad-name"),
        ("Upper", "upper"),
        ("two--hyphens", "two-hyphens"),
        ("-lead", "lead"),
        ("a" * 65, "a" * 64),
    ],
)
def test_a_name_against_the_agent_skills_rules_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, suggested: str
) -> None:
    """Agent Skills: a name is <= 64 of a-z, 0-9 and single inner hyphens (agentskills.io/specification)."""
    assert main(["init", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "(Agent Skills rules)" in err and f"such as {suggested!r}" in err
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize(("description", "reason"), [("", "is empty"), ("  ", "is empty"), ("d" * 1025, "1025")])
def test_a_description_against_the_agent_skills_rules_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], description: str, reason: str
) -> None:
    assert main(["init", str(tmp_path / "x"), "--description", description]) == 2
    err = capsys.readouterr().err
    assert err.startswith("skilleval init: --description ") and reason in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_a_description_of_1024_characters_is_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "x"), "--description", "d" * 1024]) == 0
    assert f"description: {'d' * 1024}\n" in (tmp_path / "x" / "SKILL.md").read_text()


def test_a_path_under_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("not a folder\n")
    assert main(["init", str(tmp_path / "afile" / "x")]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"skilleval init: {tmp_path / 'afile' / 'x'}: {tmp_path / 'afile'} is a file, not a folder; pick a path under a folder\n"
    )
