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
