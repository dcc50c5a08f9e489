"""The agent cannot set its own grade: what the agent phase plants or leaves running never reaches the score.

Each probe is a replay whose shell commands forge a grade the way an agent could (a reward file planted in
/logs/verifier, a detached loop that swaps the grader, a tmux session that rewrites the reward after the grader
wrote it), graded by a grader that always writes 0.0. The with-skill trial must score the grader's 0.0 and fail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support import FIXTURES, LOCAL_REPLAY, SkillProject, shell_replay, simple_entries

# A loop that keeps a forged grader at PATH: whenever the file is not the forged one, it is written again. Shell
# builtins only, so it wins every race against an upload followed by a process start.
SWAP_LOOP = """f={path}
while :; do
  first=; {{ read -r _; read -r first; }} < "$f"
  [ "$first" = "# forged" ] || printf '#!/bin/bash\\n# forged\\necho 1.0 > /logs/verifier/reward.txt\\n' > "$f"
done
"""
# A loop that puts 1.0 back into reward.txt whenever anything else (the grader's 0.0) is there.
REWRITE_LOOP = """f=/logs/verifier/reward.txt
while :; do
  v=; read -r v < "$f"
  [ "$v" = 1.0 ] || echo 1.0 > "$f"
done
"""


def _detached(name: str, script: str, how: str) -> str:
    """Shell lines that write `script` to /tmp/NAME.sh and leave it running after the agent's command ends."""
    write = f"cat > /tmp/{name}.sh <<'EOF'\n{script}EOF\n"
    if how == "tmux":
        return write + f"tmux new-session -d -s {name} 'bash /tmp/{name}.sh 2>/dev/null'\n"
    return write + f"setsid -f bash /tmp/{name}.sh </dev/null >/dev/null 2>&1\n"


FORGERIES = {
    "planted_reward_json": "mkdir -p /logs/verifier && printf '{\"overall\": 1.0, \"quality\": 1.0}' "
    "> /logs/verifier/reward.json",
    "planted_reward_txt": "mkdir -p /logs/verifier && echo 1.0 > /logs/verifier/reward.txt "
    "&& chmod 0444 /logs/verifier/reward.txt",
    "swapped_grader": _detached("swap", SWAP_LOOP.format(path="/tests/grader.sh"), "setsid"),
    "rewritten_after_grader": _detached("rewrite", REWRITE_LOOP, "tmux"),
}


def _replay(command: str) -> dict:
    """The replay committing `command`, then a wait so a detached loop is surely running."""
    return shell_replay(command + "\nsleep 0.2", message="Grading myself.")


def forging_skill(project: SkillProject, forgery: str) -> Path:
    """A skill graded by `always_zero.sh`, whose replay for case c1 commits `forgery`."""
    skill = project.make_skill("demo", simple_entries("c1"), grader=False)
    shutil.copy2(FIXTURES / "graders" / "always_zero.sh", skill / "evals" / "grader.sh")
    (skill / "evals" / "replays" / "c1.json").write_text(json.dumps(_replay(FORGERIES[forgery])))
    return skill


def with_skill_trial(project: SkillProject, skill: str = "demo") -> dict:
    return next(t for t in project.result_json(skill)["trials"] if t["arm"] == "with_skill")


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forged_grade_never_beats_the_graders_zero(skill_project: SkillProject, forgery: str) -> None:
    forging_skill(skill_project, forgery)
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "custom_only")
    result.assert_outcomes(failed=1)
    trial = with_skill_trial(skill_project)
    assert trial["overall"] == 0.0, trial
    assert trial["custom_metrics"] == {}


def test_a_planted_reward_json_adds_no_custom_metric(skill_project: SkillProject) -> None:
    """default_plus_custom: the grader wrote no custom metric, so none is published (the plant had `quality`)."""
    forging_skill(skill_project, "planted_reward_json")
    skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "default_plus_custom")
    trial = with_skill_trial(skill_project)
    assert trial["custom_metrics"] == {}, trial


NATIVE_TEST = "#!/bin/bash\necho 0.0 > /logs/verifier/reward.txt\nsleep 0.3\n"


@pytest.mark.parametrize("forgery", ["swapped_grader", "rewritten_after_grader"])
def test_a_native_tasks_own_test_sh_is_not_forged_either(skill_project: SkillProject, forgery: str) -> None:
    skill = skill_project.make_skill("native", simple_entries("t1"), grader=False)
    task = skill / "evals" / "harbor" / "t1"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('schema_version = "1.4"\n[task]\nname = "demo/t1"\n')
    (task / "instruction.md").write_text("do t1\n")
    (task / "tests" / "test.sh").write_text(NATIVE_TEST)
    command = FORGERIES[forgery].replace("/tests/grader.sh", "/tests/test.sh")
    (skill / "evals" / "replays" / "t1.json").write_text(json.dumps(_replay(command)))
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--grading-mode", "custom_only", "-k", "task.toml")
    result.assert_outcomes(failed=1)
    assert with_skill_trial(skill_project, "native")["overall"] == 0.0


def test_no_forgery_survives_into_a_docker_grader(skill_project: SkillProject, test_base_image: str) -> None:
    """Docker: every forgery at once (any one of them used to score 1.0); the container's processes of the agent
    phase are killed before the grader, the container itself keeps running for it."""
    skill = forging_skill(skill_project, "planted_reward_json")
    everything = "\n".join(FORGERIES[name] for name in sorted(FORGERIES))
    (skill / "evals" / "replays" / "c1.json").write_text(json.dumps(_replay(everything)))
    result = skill_project.run(
        "--agents", "replay", "--env-mode", "docker", "--base-image", test_base_image,
        "--skip-baseline", "--grading-mode", "custom_only",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    trial = with_skill_trial(skill_project)
    assert trial["overall"] == 0.0, trial
    assert trial["custom_metrics"] == {}
