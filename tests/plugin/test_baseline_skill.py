"""`--baseline-skill git:REF|PATH`: the skill under test against its previous version, paired by case, with the
edit's lift, interval, McNemar and verdict; the previous version runs from git without touching the working tree,
and nothing of the new version reaches its arm."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pytest_skilleval.authoring.cli import main as skilleval
from tests.support import SkillProject, shell_replay, simple_entries

CASES = [f"c{i}" for i in range(1, 7)]
# The agent reads the installed skill, lists its scripts and runs its answer script with the case id.
WITH_SKILL = (
    "mkdir -p /workspace/output && cp {skills_dir}/demo/SKILL.md /workspace/output/seen.md && "
    "ls {skills_dir}/demo/scripts > /workspace/output/listing.txt && "
    "sh {skills_dir}/demo/scripts/answer.sh CASE > /workspace/output/answer.txt"
)
# custom_only: 1.0 for a right answer; saw_v2 says whether the agent's skill was version 2 in any way.
GRADER = """
import json, os
from pathlib import Path

out = Path(os.environ.get("HARBOR_WORKSPACE_DIR", "/workspace")) / "output"
def read(name):
    path = out / name
    return path.read_text() if path.is_file() else ""
right = read("answer.txt").strip() == "right"
saw_v2 = "version 2" in read("seen.md") or "v2_only" in read("listing.txt")
verifier = Path(os.environ.get("HARBOR_VERIFIER_DIR", "/logs/verifier"))
verifier.mkdir(parents=True, exist_ok=True)
Path(os.environ.get("HARBOR_REWARD_JSON", verifier / "reward.json")).write_text(
    json.dumps({"overall": 1.0 if right else 0.0, "saw_v2": 1.0 if saw_v2 else 0.0})
)
"""
V1_ANSWER = 'case "$1" in c1|c2) echo right ;; *) echo wrong ;; esac\n'
V2_ANSWER = "echo right\n"


def git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, env={**env, "PATH": "/usr/bin:/bin"}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def two_versions(skill_project: SkillProject) -> tuple[Path, str]:
    """skills/demo committed as v1 (tagged), then edited to v2 in the working tree; returns v1's commit."""
    root = skill_project.root
    skill = skill_project.make_skill("demo", simple_entries(*CASES))
    (skill / "evals" / "grader.py").write_text(GRADER)
    for case in CASES:
        replay = shell_replay(WITH_SKILL.replace("CASE", case))
        (skill / "evals" / "replays" / f"{case}.with-skill.json").write_text(json.dumps(replay))
        (skill / "evals" / "replays" / f"{case}.json").unlink()
        (skill / "evals" / "replays" / f"{case}.without-skill.json").write_text(json.dumps(shell_replay("true")))
    (skill / "scripts").mkdir()
    (skill / "scripts" / "answer.sh").write_text(V1_ANSWER)
    (root / ".gitignore").write_text("results/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "v1")
    git(root, "tag", "v1")
    v1 = git(root, "rev-parse", "HEAD")
    # v2, in the working tree only: a right answer everywhere, a new file, and a SKILL.md that says so.
    (skill / "scripts" / "answer.sh").write_text(V2_ANSWER)
    (skill / "scripts" / "v2_only.txt").write_text("new in version 2\n")
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: test skill\n---\n# demo, version 2\n")
    return skill, v1


def test_v2_against_v1_from_git_shows_the_improvement_and_its_interval(
    skill_project: SkillProject, capsys: pytest.CaptureFixture[str]
) -> None:
    root = skill_project.root
    skill, v1 = two_versions(skill_project)
    status_before = git(root, "status", "--porcelain", "--", "skills")
    result = skill_project.run(
        "--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only",
        "--baseline-skill", "git:v1", "--arms", "with_skill,without_skill,baseline_skill", "-v",
    )  # fmt: skip
    out = result.stdout.str()
    short = v1[:7]
    assert f"c3[replay-baseline_skill@{short}-1] PASSED" in out, out
    assert f"Edit lift (with skill - baseline skill git:v1 ({short}), paired by case)" in out, out
    assert "Edit verdict: the edit helps" in out, out
    doc = skill_project.result_json("demo")
    assert doc["baseline_version"] == {"source": "git:v1", "commit": v1, "short": short, "label": f"git:v1 ({short})"}
    agent = doc["agents"]["replay"]
    # v1 answers two cases of six right, v2 all six: the edit's paired lift is +0.6667, its interval above zero.
    edit = agent["edit_lift"]["overall"]
    assert (edit["without_skill"], edit["with_skill"], edit["delta"], edit["n_pairs"]) == (0.3333, 1.0, 0.6667, 6)
    assert edit["ci95"][0] > 0 and edit["ci95"][1] <= 1.0, edit
    assert (
        agent["edit_lift"]["mcnemar"]["only_with_skill"] == 4
        and agent["edit_lift"]["mcnemar"]["only_without_skill"] == 0
    )
    assert agent["edit_verdict"] == "the edit helps"
    # All three arms: Skill Lift against no skill is there too.
    assert agent["lift"]["overall"]["delta"] == 1.0 and agent["without_skill"]["overall"] == 0.0
    # The baseline arm saw version 1 only (its SKILL.md, none of v2's files); the with-skill arm saw version 2.
    assert agent["baseline_skill"]["custom_metrics"]["saw_v2"] == 0.0
    assert agent["with_skill"]["custom_metrics"]["saw_v2"] == 1.0
    assert {t["arm"] for t in doc["trials"]} == {"with_skill", "without_skill", "baseline_skill"}
    card_path = next((root / "results" / "demo").glob("2*/BENCHMARK.md"))
    card = card_path.read_text()
    assert f"## Edit: this version against git:v1 ({short})" in card and "**the edit helps**" in card, card
    # `skilleval compare` of the two versions' arms prints the session's edit lift, to the same 4 places.
    capsys.readouterr()
    assert skilleval(["compare", str(card_path.parent), "--arms", "baseline_skill,with_skill", "--format", "json"]) == 0
    [pair] = json.loads(capsys.readouterr().out)
    assert pair["lift"]["overall"] == agent["edit_lift"]["overall"] and pair["mcnemar"] == agent["edit_lift"]["mcnemar"]
    # The working tree is as it was: no checkout, v2's files in place, nothing added or changed by the export.
    assert git(root, "status", "--porcelain", "--", "skills") == status_before
    assert git(root, "rev-parse", "HEAD") == v1 and (skill / "scripts" / "v2_only.txt").is_file()
    assert (skill / "scripts" / "answer.sh").read_text() == V2_ANSWER


def test_a_baseline_folder_and_bad_baselines(skill_project: SkillProject, tmp_path: Path) -> None:
    """A folder works as the baseline too (named by its path); an unknown ref, a folder without SKILL.md and the
    baseline arm without a version are one clear line each."""
    skill, _ = two_versions(skill_project)
    old = tmp_path / "demo-v1"
    subprocess.run(["git", "-C", str(skill_project.root), "worktree", "add", "-q", str(old), "v1"], check=True)
    result = skill_project.run(
        "--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only",
        "--baseline-skill", str(old / "skills" / "demo"),
    )  # fmt: skip
    doc = skill_project.result_json("demo")
    assert doc["agents"]["replay"]["edit_lift"]["overall"]["delta"] == 0.6667, result.stdout.str()
    assert doc["baseline_version"]["label"] == str(old / "skills" / "demo")
    assert doc["agents"]["replay"]["without_skill"]["execution_status"] == "skipped"
    for args, message in (
        (["--baseline-skill", "git:no-such-ref"], "has no git revision 'no-such-ref'"),
        (["--baseline-skill", str(tmp_path)], "no SKILL.md there"),
        (["--arms", "with_skill,baseline_skill"], "--arms baseline_skill needs --baseline-skill"),
    ):
        bad = skill_project.run("--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none", *args)
        assert bad.ret != pytest.ExitCode.OK
        assert message in bad.stdout.str() + bad.stderr.str(), (args, bad.stdout.str(), bad.stderr.str())


def test_a_baseline_items_location_names_its_version(skill_project: SkillProject) -> None:
    """pytest's location label of a baseline_skill item (what `reportinfo` gives reports and IDEs) says which
    version ran, as its node id does."""
    _, v1 = two_versions(skill_project)
    items, _ = skill_project.pytester.inline_genitems(
        "--skill-eval", "-p", "no:cacheprovider", "--agents", "replay", "--env-mode", "local",
        "--baseline-skill", "git:v1",
    )  # fmt: skip
    labels = {item.location[2] for item in items}
    assert f"c1 [replay-baseline_skill@{v1[:7]}-1]" in labels, labels
    assert "c1 [replay-with_skill-1]" in labels, labels
