"""A skill library in CI: `--changed-since REF` runs only the skills whose folder changed, says which and why, and
exits 0 when none did; a case's `tags` are pytest markers (`-m "not slow"`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries


def git(root: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, env={**env, "PATH": "/usr/bin:/bin"}
    )
    assert done.returncode == 0, done.stderr


def library(skill_project: SkillProject) -> Path:
    root = skill_project.root
    for name in ("alpha", "beta", "gamma"):
        skill_project.make_skill(name, simple_entries("c1"))
    (root / ".gitignore").write_text("results/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "library")
    git(root, "tag", "base")
    return root


def test_only_changed_skills_run_and_the_header_says_why(skill_project: SkillProject) -> None:
    root = library(skill_project)
    (root / "skills" / "alpha" / "SKILL.md").write_text("---\nname: alpha\ndescription: edited\n---\n# alpha\n")
    (root / "skills" / "gamma" / "scripts").mkdir()
    (root / "skills" / "gamma" / "scripts" / "new.sh").write_text("echo new\n")  # untracked counts too
    result = skill_project.run(
        *LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline", "--changed-since", "base", "skills"
    )
    out = result.stdout.str()
    assert (
        "skilleval: --changed-since base: keeps alpha (1 changed: SKILL.md), gamma (1 changed: scripts/new.sh); "
        "leaves out beta (no change)"
    ) in " ".join(out.split()), out
    result.assert_outcomes(passed=2)
    assert sorted(p.name for p in (root / "results").iterdir()) == ["alpha", "gamma"]


def test_no_changed_skill_exits_0_and_says_so(skill_project: SkillProject) -> None:
    library(skill_project)
    result = skill_project.run(*LOCAL_REPLAY, "--changed-since", "base", "skills")
    assert "skilleval: --changed-since base: no skill changed (3 looked at); nothing to run" in result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


def test_an_unknown_revision_is_one_line(skill_project: SkillProject) -> None:
    library(skill_project)
    result = skill_project.run(*LOCAL_REPLAY, "--changed-since", "no-such-ref", "skills")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--changed-since no-such-ref:" in result.stderr.str() and "has no-such-ref" in result.stderr.str()


def test_case_tags_are_markers(skill_project: SkillProject) -> None:
    dataset = simple_entries("quick", "slow-one")
    dataset["evals"][1]["tags"] = ["slow", "network"]
    skill_project.make_skill("demo", dataset)
    listed = skill_project.run(*LOCAL_REPLAY, "--collect-only", "-q", "-m", "not slow", "--strict-markers")
    assert [line for line in listed.stdout.lines if "::" in line] == [
        "skills/demo/evals/evals.json::quick[replay-with_skill-1]",
        "skills/demo/evals/evals.json::quick[replay-without_skill-1]",
    ], listed.stdout.str() + listed.stderr.str()
    picked = skill_project.run(*LOCAL_REPLAY, "--collect-only", "-q", "-m", "network")
    assert len([line for line in picked.stdout.lines if "::" in line]) == 2


def test_a_tag_that_is_not_a_marker_name_is_refused(skill_project: SkillProject) -> None:
    dataset = simple_entries("c1")
    dataset["evals"][0]["tags"] = ["skip"]
    skill_project.make_skill("demo", dataset)
    result = skill_project.run(*LOCAL_REPLAY, "--collect-only")
    assert "tags: 'skip' is one of pytest's or the plugin's own marks" in result.stdout.str(), result.stdout.str()
