"""What of a skill folder the agent's copy holds (skill/skill_copy.py), and how `stage_skill` and `skilleval
validate` report what cannot be copied: results folders found by their marker, links, caps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_skilleval.authoring.validate import validate_skill
from pytest_skilleval.harbor.staging import StagingError, stage_skill
from pytest_skilleval.results.run_paths import MARKER_FILE, MARKER_TEXT, new_run_id, run_results_folder
from pytest_skilleval.skill import skill_copy
from pytest_skilleval.skill.skill_content import content_digest
from pytest_skilleval.skill.skill_copy import plan_skill_copy


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    (root / "scripts").mkdir(parents=True)
    (root / "evals").mkdir()
    (root / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\n# demo\n")
    (root / "scripts" / "run.py").write_text("print('hi')\n")
    (root / "evals" / "evals.json").write_text(json.dumps({"skill_name": "demo", "evals": []}))
    return root


def _run_folder(results_root: Path, name: str | None = None) -> Path:
    run = results_root / (name or new_run_id())
    run.mkdir(parents=True)
    (run / MARKER_FILE).write_bytes(MARKER_TEXT)
    (run / "result.json").write_text("{}")
    return run


def _staged(skill: Path, tmp_path: Path, **kwargs: object) -> set[str]:
    target = stage_skill(skill, tmp_path / "staging", **kwargs)  # type: ignore[arg-type]
    return {path.relative_to(target).as_posix() for path in target.rglob("*")}


def test_earlier_run_folders_and_results_roots_are_left_out(skill: Path, tmp_path: Path) -> None:
    _run_folder(skill / "ci-results" / "demo")  # an earlier --results-dir ci-results: a results root with a run
    _run_folder(skill / "notes", "renamed-run")  # a run folder under any name, by its marker
    (skill / "notes" / "todo.md").write_text("keep me\n")
    (skill / "other" / "demo").mkdir(parents=True)
    os.symlink(new_run_id(), skill / "other" / "demo" / "latest")  # a results root whose runs were deleted
    staged = _staged(skill, tmp_path)
    assert staged == {"SKILL.md", "scripts", "scripts/run.py", "notes", "notes/todo.md"}
    plan = plan_skill_copy(skill)
    assert sorted(plan.left_out) == ["ci-results/demo", "notes/renamed-run", "other/demo"]
    assert (skill / "ci-results" / "demo").is_dir()  # nothing in the user's folder changed


def test_the_runs_own_results_folder_is_left_out_before_it_holds_a_run(skill: Path, tmp_path: Path) -> None:
    env: dict[str, str] = {}
    assert run_results_folder(skill, str(skill / "out"), env) == skill / "out"
    assert run_results_folder(skill, str(skill), env) == skill / "demo"  # --results-dir . in the skill folder
    assert run_results_folder(skill, str(tmp_path / "elsewhere"), env) is None
    assert run_results_folder(skill, None, {"SKILLEVAL_RESULTS_DIR": str(skill / "r")}) == skill / "r"
    assert run_results_folder(skill, None, env) is None  # the default lies under evals/, never copied
    (skill / "out").mkdir()
    (skill / "out" / "junit.xml").write_text("<testsuite/>")  # no run folder yet: found by the path alone
    assert "out/junit.xml" in _staged(skill, tmp_path / "a")
    assert not any(path.startswith("out") for path in _staged(skill, tmp_path / "b", exclude=[skill / "out"]))


def test_relative_links_inside_stay_links_and_every_other_link_is_refused(skill: Path, tmp_path: Path) -> None:
    os.symlink("run.py", skill / "scripts" / "alias.py")
    os.symlink("scripts", skill / "tools")
    staged = stage_skill(skill, tmp_path / "ok")
    assert os.readlink(staged / "scripts" / "alias.py") == "run.py" and (staged / "tools" / "run.py").is_file()

    outside = tmp_path / "outside.md"
    outside.write_text("host file\n")
    cases = {
        "leaves.md": (str(outside), "leaving the skill folder"),
        "up.md": ("../outside.md", "leaving the skill folder"),
        "absolute.md": (str(skill / "SKILL.md"), "an absolute path"),
        "answers.json": ("evals/evals.json", "a part of the skill the agent is not given"),
        "gone.md": ("missing.md", "its target does not exist"),
        "loop": (".", "the skill folder itself"),
    }
    for name, (target, why) in cases.items():
        os.symlink(target, skill / name)
        with pytest.raises(StagingError, match=rf"demo/{name}: a symbolic link to .*{why}.*copy the file into"):
            stage_skill(skill, tmp_path / f"s-{name}")
        findings = [f for f in validate_skill(skill).findings if f.rule == "skill-link"]
        assert [(f.severity, f.path) for f in findings] == [("error", skill / name)], name
        assert why in findings[0].message
        os.unlink(skill / name)
    assert not any((tmp_path / f"s-{name}").exists() for name in cases)  # nothing staged for a refused skill
    assert [f for f in validate_skill(skill).findings if f.rule.startswith("skill-")] == []


def test_a_distractor_skills_bad_links_are_left_out_not_followed(skill: Path, tmp_path: Path) -> None:
    os.symlink("/etc/passwd", skill / "scripts" / "passwd")
    staged = _staged(skill, tmp_path, strict=False)
    assert "scripts/passwd" not in staged and "scripts/run.py" in staged


def test_the_copy_is_capped_in_files_and_bytes_before_anything_is_read(
    skill: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(5):
        (skill / "scripts" / f"f{index}.txt").write_text("x")
    (skill / "evals" / "big.bin").write_bytes(b"0" * 4096)  # evals/ is never counted: it is never copied
    monkeypatch.setattr(skill_copy, "MAX_SKILL_FILES", 4)
    with pytest.raises(StagingError, match=r"demo: the skill folder holds more than 4 files .*move large"):
        stage_skill(skill, tmp_path / "a")
    monkeypatch.setattr(skill_copy, "MAX_SKILL_FILES", 100)
    monkeypatch.setattr(skill_copy, "MAX_SKILL_BYTES", 1024)
    assert "scripts/f4.txt" in _staged(skill, tmp_path / "b")
    with open(skill / "scripts" / "sparse.bin", "wb") as handle:
        handle.truncate(10 * 1024**3)  # 10 GiB that hold no block: refused by its size, never read
    with pytest.raises(StagingError, match=r"more than 0 MiB"):
        stage_skill(skill, tmp_path / "c")
    assert [f.rule for f in validate_skill(skill).findings if f.rule.startswith("skill-")] == ["skill-size"]


def test_a_special_file_is_refused(skill: Path, tmp_path: Path) -> None:
    os.mkfifo(skill / "scripts" / "pipe")
    with pytest.raises(StagingError, match=r"scripts/pipe: not a regular file, folder or link"):
        stage_skill(skill, tmp_path / "a")


def test_results_inside_the_skill_do_not_change_its_digest(skill: Path) -> None:
    """--resume compares the skill's digest with the run's: results written into the skill are not the skill."""
    before = content_digest(skill, (skill / "out",))
    _run_folder(skill / "ci-results" / "demo")
    (skill / "out").mkdir()
    (skill / "out" / "junit.xml").write_text("<testsuite/>")
    assert content_digest(skill, (skill / "out",)) == before
    (skill / "scripts" / "run.py").write_text("print('changed')\n")
    assert content_digest(skill, (skill / "out",)) != before


def test_the_digest_covers_what_the_copy_gives_and_the_skills_evals(skill: Path) -> None:
    """--resume compares the digest: a host-only folder made inside the skill (a virtualenv, a tox or pycache
    folder), which the agent's copy leaves out, is no change of the skill; every file the copy gives, a link it
    keeps and the skill's own evals/ (what the run reads besides) are."""
    (skill / "scripts" / "lib").mkdir()
    (skill / "scripts" / "lib" / "util.py").write_text("X = 1\n")
    os.symlink("lib", skill / "scripts" / "linked")
    before = content_digest(skill)
    for host_only in (".venv", "venv", ".tox", "scripts/.venv", "evals/.venv", "scripts/__pycache__", "scripts/evals"):
        (skill / host_only / "lib").mkdir(parents=True)
        (skill / host_only / "lib" / "site.py").write_text("import os\n")
    (skill / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert content_digest(skill) == before
    copied = plan_skill_copy(skill)
    assert sorted(copied.files) == ["SKILL.md", "scripts/lib/util.py", "scripts/run.py"]
    for rel in copied.files:
        original = (skill / rel).read_bytes()
        (skill / rel).write_bytes(original + b"\n")
        assert content_digest(skill) != before, rel
        (skill / rel).write_bytes(original)
    assert content_digest(skill) == before
    (skill / "scripts" / "linked").unlink()
    os.symlink("run.py", skill / "scripts" / "linked")
    assert content_digest(skill) != before
    os.unlink(skill / "scripts" / "linked")
    os.symlink("lib", skill / "scripts" / "linked")
    (skill / "evals" / "grader.py").write_text("print(1)\n")  # never copied, but the run grades with it
    assert content_digest(skill) != before
