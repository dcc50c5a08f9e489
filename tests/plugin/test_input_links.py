"""`evals/files` links are never followed (issue 9, item 4): a link in a case's inputs is a collection error and a
`skilleval validate` error naming it, whether it leaves the skill folder or not, and nothing of its target is staged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_skilleval.authoring.validate import validate_skill
from pytest_skilleval.skill.case_inputs import StagingError, input_sources
from tests.support import LOCAL_REPLAY, SkillProject, simple_entries


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY MATERIAL\n")
    return secret


def _skill(project: SkillProject, files: list[str] | None = None) -> Path:
    data = simple_entries("a")
    if files is not None:
        data["evals"][0]["files"] = files
    skill = project.make_skill("demo", data)
    (skill / "evals" / "files").mkdir()
    (skill / "evals" / "files" / "data.txt").write_text("fine\n")
    return skill


@pytest.mark.parametrize("how", ["file-link", "dir-link", "files-itself", "nested"])
def test_a_link_leaving_the_skill_is_a_collection_and_validate_error(
    skill_project: SkillProject, host_secret: Path, how: str
) -> None:
    skill = _skill(skill_project)
    files = skill / "evals" / "files"
    if how == "file-link":
        os.symlink(host_secret, files / "id_rsa")
        named = "evals/files/id_rsa"
    elif how == "dir-link":
        os.symlink(host_secret.parent, files / "ssh")
        named = "evals/files/ssh"
    elif how == "nested":
        (files / "deep").mkdir()
        os.symlink("/etc/passwd", files / "deep" / "passwd")
        named = "evals/files/deep/passwd"
    else:
        (files / "data.txt").unlink()
        files.rmdir()
        os.symlink(host_secret.parent, files)
        named = "evals/files"
    result = skill_project.run(*LOCAL_REPLAY, "--co")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert f"{named} is a symbolic link" in output and "outside the skill folder" in output

    findings = [f for f in validate_skill(skill).findings if f.rule == "files-entry"]
    assert findings and f"{named} is a symbolic link" in findings[0].message


def test_a_listed_entry_holding_a_link_is_refused(skill_project: SkillProject, host_secret: Path) -> None:
    skill = _skill(skill_project, files=["files/"])
    os.symlink(host_secret, skill / "evals" / "files" / "key")
    with pytest.raises(StagingError, match=r"files entry 'files/' is refused: evals/files/key is a symbolic link"):
        input_sources(skill / "evals", ["files/"], "a")
    report = validate_skill(skill)
    assert any("evals/files/key is a symbolic link" in f.message for f in report.findings)


def test_a_link_inside_the_skill_is_refused_too(skill_project: SkillProject) -> None:
    """The documented choice: inputs are copied as they are, so no link is allowed, even one that stays inside."""
    skill = _skill(skill_project)
    os.symlink(skill / "SKILL.md", skill / "evals" / "files" / "skill.md")
    with pytest.raises(StagingError, match=r"evals/files/skill.md is a symbolic link \(to .*SKILL.md\); inputs"):
        input_sources(skill / "evals", None, "a")


def test_plain_inputs_are_still_staged(skill_project: SkillProject) -> None:
    skill = _skill(skill_project)
    replay = json.loads((skill / "evals" / "replays" / "a.json").read_text())
    replay["steps"][1]["tool_calls"][0]["arguments"]["command"] = "cat /workspace/input/data.txt"
    (skill / "evals" / "replays" / "a.json").write_text(json.dumps(replay))
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--ek", "sandbox=none")
    result.assert_outcomes(passed=1)
    trial = next((skill_project.root / "results" / "demo").glob("2*/replay/with_skill/trials/a.1.json"))
    assert "fine" in json.dumps(json.loads(trial.read_text())["trajectory"])


@pytest.mark.parametrize("files", [None, ["files/big.bin"], ["files"]])
def test_inputs_over_the_size_cap_are_one_collection_error_before_a_byte_is_copied(
    skill_project: SkillProject, files: list[str] | None
) -> None:
    """A sparse file costs the skill folder no disk block, but staging writes every byte: a 1 GiB `truncate` input
    cost the host 1 GiB per trial. Inputs are capped by apparent size, as downloads out of a sandbox are."""
    skill = _skill(skill_project, files)
    with open(skill / "evals" / "files" / "big.bin", "wb") as handle:
        handle.truncate(1024**3 + 1)
    skill_project.make_skill("good", simple_entries("fine"))
    before = sorted((str(path), os.lstat(path).st_size, os.lstat(path).st_mtime_ns) for path in skill.rglob("*"))
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    lines = [line for line in result.stdout.lines if "its inputs hold more than 1 GiB" in line]
    assert len(lines) == 1 and "evals/files/big.bin, 1,073,741,825 bytes" in lines[0], result.stdout.str()
    assert (
        sorted((str(path), os.lstat(path).st_size, os.lstat(path).st_mtime_ns) for path in skill.rglob("*")) == before
    )
    findings = [f for f in validate_skill(skill).findings if "more than 1 GiB" in f.message]
    assert findings and findings[0].severity == "error"


@pytest.mark.parametrize("where", ["evals/files", "scripts"])
def test_a_name_that_is_not_utf8_is_one_collection_error(skill_project: SkillProject, where: str) -> None:
    """Harbor encodes names as UTF-8: an input (or a skill file) named with other bytes crashed the trial with a
    UnicodeEncodeError traceback, and the skill's digest crashed the session."""
    skill = _skill(skill_project)
    (skill / where).mkdir(exist_ok=True)
    with open(os.path.join(os.fsencode(skill / where), b"bad\xff.txt"), "w") as handle:
        handle.write("x")
    skill_project.make_skill("good", simple_entries("fine"))
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    lines = [line for line in output.splitlines() if "is not UTF-8 text; rename it" in line]
    assert len(lines) == 1 and f"{where}/bad\\xff.txt" in lines[0], output
    assert "Traceback" not in output and "UnicodeEncodeError" not in output
