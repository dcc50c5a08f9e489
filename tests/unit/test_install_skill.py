"""`skilleval install-skill`: the shipped create-custom-grader skill, its copy rules and refusals."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pytest_skilleval.authoring import cli
from pytest_skilleval.authoring.install_skill import (
    NOT_SHIPPED,
    InstallError,
    available_skills,
    install_skill,
    shipped_skills_root,
)
from tests.support import REPO

REPO_SKILL = REPO / "skills" / "create-custom-grader"


def _skill_files(root: Path) -> dict[str, bytes]:
    """Relative path -> content of every file an agent should see (no evals/, no caches)."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not NOT_SHIPPED & set(path.relative_to(root).parts) and path.suffix != ".pyc"
    }


def test_shipped_copy_equals_the_repository_skill() -> None:
    shipped = shipped_skills_root() / "create-custom-grader"
    assert "create-custom-grader" in available_skills()
    assert _skill_files(shipped) == _skill_files(REPO_SKILL)
    assert "SKILL.md" in _skill_files(REPO_SKILL)


def test_package_data_globs_put_every_skill_file_in_a_wheel() -> None:
    """The wheel holds what pyproject's package-data names; that must be the whole skill minus its evals."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = config["package-data"]["pytest_skilleval.authoring"]
    base = REPO / "pytest_skilleval" / "authoring"
    packaged = {
        p.relative_to(base / "skills" / "create-custom-grader").as_posix()
        for pattern in patterns
        for p in base.glob(pattern)
        if p.is_relative_to(base / "skills" / "create-custom-grader")
    }
    assert packaged == set(_skill_files(REPO_SKILL))
    assert any(e.startswith("pytest_skilleval.authoring.skills") for e in config["packages"]["find"]["exclude"])


def test_install_copies_the_skill_without_its_evals(tmp_path: Path) -> None:
    target = install_skill("create-custom-grader", tmp_path / ".claude" / "skills")
    assert target == tmp_path / ".claude" / "skills" / "create-custom-grader"
    assert _skill_files(target) == _skill_files(REPO_SKILL)
    assert not (target / "evals").exists()


def test_install_refuses_to_overwrite_unless_forced(tmp_path: Path) -> None:
    target = install_skill("create-custom-grader", tmp_path)
    (target / "SKILL.md").write_text("edited by hand")
    (target / "stale.txt").write_text("old")
    with pytest.raises(InstallError, match="already exists; pass --force"):
        install_skill("create-custom-grader", tmp_path)
    assert (target / "SKILL.md").read_text() == "edited by hand"
    install_skill("create-custom-grader", tmp_path, force=True)
    assert (target / "SKILL.md").read_bytes() == (REPO_SKILL / "SKILL.md").read_bytes()
    assert not (target / "stale.txt").exists()


def test_install_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "create-custom-grader").write_text("not a folder")
    with pytest.raises(InstallError, match="is not a directory"):
        install_skill("create-custom-grader", tmp_path, force=True)


def test_cli_routes_install_skill_and_lists_skills_for_unknown_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["install-skill", "create-custom-grader", str(tmp_path)]) == 0
    assert "installed create-custom-grader" in capsys.readouterr().out
    assert cli.main(["install-skill", "create-custom-grader", str(tmp_path)]) == 1
    assert "--force" in capsys.readouterr().err
    assert cli.main(["install-skill", "create-custom-grader", str(tmp_path), "--force"]) == 0
    capsys.readouterr()
    assert cli.main(["install-skill", "no-such-skill", str(tmp_path)]) == 1
    assert "unknown skill 'no-such-skill'; available: create-custom-grader" in capsys.readouterr().err
    assert cli.main(["install-skill", "--list"]) == 0
    assert capsys.readouterr().out.split() == ["create-custom-grader"]
    assert cli.main(["install-skill"]) == 2
    assert "available: create-custom-grader" in capsys.readouterr().err
