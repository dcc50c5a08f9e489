"""--keep-runs N: older run folders this machine wrote are pruned after a run; nothing else in the results folder."""

from __future__ import annotations

import json
import os
import shutil

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries


def test_keep_runs_prunes_only_our_older_run_folders(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline")
    for _ in range(3):
        skill_project.run(*args).assert_outcomes(passed=1)
    root = skill_project.root / "results" / "demo"
    ours = sorted(root.glob("2*"))
    assert len(ours) == 3
    # Look-alikes that are not ours: a copied run folder (its seal is for another run id) and a user's own files.
    foreign = root / "20000101_000000_1_aaaaaaaaaaaa"
    shutil.copytree(ours[0], foreign)
    (root / "notes.txt").write_text("mine\n")
    (root / "20000101_000000_2_bbbbbbbbbbbb").mkdir()

    result = skill_project.run(*args, "--keep-runs", "2")
    result.assert_outcomes(passed=1)
    newest = sorted(root.glob("2*"))[-1]
    assert sorted(p.name for p in root.glob("2*")) == sorted(
        [foreign.name, "20000101_000000_2_bbbbbbbbbbbb", ours[2].name, newest.name]
    )
    assert (root / "notes.txt").read_text() == "mine\n"
    assert os.readlink(root / "latest") == newest.name
    said = " ".join(result.stdout.str().split())
    assert f"demo: --keep-runs 2: removed 2 older run folder(s) ({ours[0].name}, {ours[1].name})" in said
    assert json.loads((newest / "result.json").read_text())["execution_status"] == "succeeded"


def test_keep_runs_never_deletes_the_newest_complete_run_for_a_partial_one(skill_project: SkillProject) -> None:
    """An author who ran every case once and then iterates on one with -k keeps the full run."""
    skill_project.make_skill("demo", simple_entries("c1", "c2"))
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline")
    skill_project.run(*args).assert_outcomes(passed=2)
    root = skill_project.root / "results" / "demo"
    (full,) = root.glob("2*")
    skill_project.run(*args, "-k", "c1").assert_outcomes(passed=1, deselected=1)

    result = skill_project.run(*args, "-k", "c1", "--keep-runs", "1")
    result.assert_outcomes(passed=1, deselected=1)
    left = sorted(p.name for p in root.glob("2*"))
    newest = os.readlink(root / "latest")
    assert len(left) == 2 and left == sorted([full.name, newest]), left
    assert json.loads((full / "result.json").read_text())["coverage"]["publication_complete"] is True
    said = " ".join(result.stdout.str().split())
    assert "demo: --keep-runs 1: removed 1 older run folder(s)" in said

    # Once a newer complete run exists, the older complete one goes like any other.
    skill_project.run(*args, "--keep-runs", "1").assert_outcomes(passed=2)
    assert [p.name for p in root.glob("2*")] == [os.readlink(root / "latest")]
