"""--regrade: a finished run's stored trials graded again with today's graders, with no agent run."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries


def _runs(project: SkillProject, skill: str) -> list:
    return sorted((project.root / "results" / skill).glob("2*"))


def test_regrade_reruns_the_graders_not_the_agent(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> None:
    skill = skill_project.copy_hello_skill(cases=["explicit-greeting", "negative-arithmetic"])
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none")
    skill_project.run(*args).assert_outcomes(passed=4)
    [first] = _runs(skill_project, "hello-skill")
    before = json.loads((first / "result.json").read_text())

    # Without the replays the agent could not run at all: a regrade that needed it would error.
    shutil.rmtree(skill / "evals" / "replays")
    regraded = skill_project.run(*args, "--regrade", first.name)
    regraded.assert_outcomes(passed=4)
    runs = _runs(skill_project, "hello-skill")
    assert len(runs) == 2 and runs[0] == first
    after = json.loads((runs[1] / "result.json").read_text())
    config = json.loads((runs[1] / "run_config.json").read_text())
    assert config["regraded_from"] == first.name
    score = lambda doc: sorted((t["case"], t["arm"], t["overall"]) for t in doc["trials"])  # noqa: E731
    assert score(after) == score(before)  # same graders, same stored trajectories: same scores
    record = json.loads(next(runs[1].glob("*/with_skill/trials/*.1.json")).read_text())["record"]
    assert record["details"]["regrade"]["source_run"] == first.name
    assert "custom grader was not re-run" in record["details"]["regrade"]["custom_grader"]
    # The summary says what was not graded again, and how to grade it: an edited check would otherwise read as today's.
    said = " ".join(regraded.stdout.str().split())
    assert (
        "hello-skill: --regrade kept the case's checks of 4 trial(s) and the custom grader's reward of 4 trial(s) as "
        "that run stored them, not graded again (it kept no workspace): to grade edited checks or a changed grader, "
        "run with --harbor-keep-jobs, then --regrade" in said
    ), said


def test_regrade_sees_a_changed_expectation(skill_project: SkillProject) -> None:
    """Iterating on grading: a negative control turned positive is graded anew from the same trajectories."""
    skill = skill_project.copy_hello_skill(cases=["explicit-greeting", "negative-arithmetic"])
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--grading-mode", "default")
    skill_project.run(*args)
    [first] = _runs(skill_project, "hello-skill")
    dataset = skill / "evals" / "evals.json"
    data = json.loads(dataset.read_text())
    negative = next(
        e for e in data["evals"] if e.get("expected_skill", "x") is None or e.get("should_trigger") is False
    )
    negative.pop("should_trigger", None)
    negative["expected_skill"] = "hello-skill"
    dataset.write_text(json.dumps(data))
    skill_project.run(*args, "--regrade", first.name)
    second = _runs(skill_project, "hello-skill")[1]
    before = {(t["case"], t["arm"]): t for t in json.loads((first / "result.json").read_text())["trials"]}
    after = {(t["case"], t["arm"]): t for t in json.loads((second / "result.json").read_text())["trials"]}
    key = (negative["id"], "without_skill")
    assert before[key]["metrics"]["skill_execution"] != after[key]["metrics"]["skill_execution"]


def test_regrade_of_an_unknown_run_is_a_usage_error(skill_project: SkillProject) -> None:
    skill_project.copy_hello_skill(cases=["explicit-greeting"])
    result = skill_project.run(*LOCAL_REPLAY, "--regrade", "latest")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--regrade latest: no finished run under" in result.stderr.str()


CHANGED_GRADER = '''
import json, os
from pathlib import Path

workspace = Path(os.environ.get("HARBOR_WORKSPACE_DIR", "/workspace"))
files = sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*") if p.is_file())
verifier = Path(os.environ.get("HARBOR_VERIFIER_DIR", "/logs/verifier"))
verifier.mkdir(parents=True, exist_ok=True)
(verifier / "reward.json").write_text(json.dumps({"overall": 1.0, "regraded": 1.0,
                                                  "workspace_has_files": 1.0 if files else 0.0}))
'''


def test_regrade_reruns_a_changed_grader_on_the_workspace_a_kept_run_recorded(skill_project: SkillProject) -> None:
    """--harbor-keep-jobs records each trial's final /workspace; --regrade then runs today's grader on it through
    Harbor's own regrade, with no agent (the replays are gone)."""
    skill = skill_project.copy_hello_skill(cases=["explicit-greeting", "negative-arithmetic"])
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none")
    skill_project.run(*args, "--harbor-keep-jobs").assert_outcomes(passed=4)
    [first] = _runs(skill_project, "hello-skill")
    before = {(t["case"], t["arm"]): t for t in json.loads((first / "result.json").read_text())["trials"]}

    shutil.rmtree(skill / "evals" / "replays")
    (skill / "evals" / "grader.py").write_text(CHANGED_GRADER)
    regraded = skill_project.run(*args, "--regrade", first.name)
    regraded.assert_outcomes(passed=4)
    second = _runs(skill_project, "hello-skill")[1]
    after = {(t["case"], t["arm"]): t for t in json.loads((second / "result.json").read_text())["trials"]}
    assert after.keys() == before.keys()
    for key, trial in after.items():
        assert trial["custom_metrics"]["regraded"] == 1.0, key  # today's grader ran, in a sandbox
        assert "greeting_present" not in trial["custom_metrics"]  # yesterday's metrics are gone
        record = json.loads(
            (second / trial["agent"] / trial["arm"] / "trials" / f"{trial['case']}.1.json").read_text()
        )["record"]
        assert "re-run on the trial's recorded workspace" in record["details"]["regrade"]["custom_grader"]
        assert record["metrics"]["security"] == before[key]["metrics"]["security"]  # same trajectory, same checks
    # What the agent left in /workspace reached the grader: the with-skill arm wrote the greeting there.
    assert any(
        t["custom_metrics"]["workspace_has_files"] == 1.0 for (_case, arm), t in after.items() if arm == "with_skill"
    )


def test_regrade_latest_takes_its_plan_from_the_run_it_grades(skill_project: SkillProject) -> None:
    """As the docs write it: `--regrade latest` with none of the first run's options grades every stored trial
    (agents, attempts, arms from that run) and says so; a contradicting flag is one line; a regrade that failed never
    becomes `latest` for the next one."""
    skill_project.copy_hello_skill(cases=["explicit-greeting", "negative-arithmetic"])
    first_args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--n-attempts", "2", "--skip-baseline")
    skill_project.run(*first_args).assert_outcomes(passed=4)
    [first] = _runs(skill_project, "hello-skill")

    contradicting = skill_project.run("--env-mode", "local", "--regrade", "latest", "--agents", "codex")
    assert contradicting.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"--regrade {first.name}: --agents codex contradicts that run's replay; drop --agents"
        in contradicting.stderr.str()
    )

    regraded = skill_project.run("--env-mode", "local", "--ek", "sandbox=none", "--regrade", "latest")
    regraded.assert_outcomes(passed=4)
    said = " ".join(regraded.stdout.str().split())
    assert f"--regrade {first.name}: grades that run's trials again with its plan: agents replay, 2 attempts" in said
    second = _runs(skill_project, "hello-skill")[-1]
    assert json.loads((second / "run_config.json").read_text())["regraded_from"] == first.name

    # A regrade whose every trial errors (its source's trial files are gone) is not `latest`, nor the next source.
    shutil.rmtree(second / "replay")
    failed = skill_project.run("--env-mode", "local", "--ek", "sandbox=none", "--regrade", second.name)
    assert failed.ret != 0
    third = _runs(skill_project, "hello-skill")[-1]
    assert json.loads((third / "result.json").read_text())["execution_status"] == "failed"
    assert (skill_project.root / "results" / "hello-skill" / "latest").resolve() == second.resolve()
    again = skill_project.run("--env-mode", "local", "--ek", "sandbox=none", "--regrade", "latest")
    assert f"--regrade {second.name}:" in " ".join(again.stdout.str().split())  # not the failed third


def test_regrade_with_the_runs_agent_model_needs_no_agents(skill_project: SkillProject) -> None:
    """`--regrade RUN --agent-model A=M` as the first run gave it: the run's plan names the agents, so --agents is
    not needed; a model that run did not use is one line naming both."""
    skill_project.copy_hello_skill(cases=["explicit-greeting"])
    local = ("--env-mode", "local", "--ek", "sandbox=none")
    first_args = ("--agents", "replay", "--agent-model", "replay=gw/m", "--skip-baseline", *local)
    skill_project.run(*first_args).assert_outcomes(passed=1)
    [first] = _runs(skill_project, "hello-skill")

    regraded = skill_project.run(*local, "--regrade", "latest", "--agent-model", "replay=gw/m")
    regraded.assert_outcomes(passed=1)
    assert json.loads((_runs(skill_project, "hello-skill")[-1] / "run_config.json").read_text())["regraded_from"] == (
        first.name
    )

    other = skill_project.run(*local, "--regrade", first.name, "--agent-model", "replay=gw/other")
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"--regrade {first.name}: --agent-model replay=gw/other contradicts that run's replay=gw/m; drop --agent-model"
        in other.stderr.str()
    )


def test_regrade_reruns_changed_checks_on_the_workspace_a_kept_run_recorded(skill_project: SkillProject) -> None:
    """A case graded by its checks, with no custom grader in play: --harbor-keep-jobs recorded each trial's
    /workspace, so --regrade runs today's checks on it (an edited check is graded, not the stored result)."""
    skill = skill_project.copy_hello_skill(cases=["explicit-greeting"])
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--grading-mode", "default", "--skip-baseline")
    skill_project.run(*args, "--harbor-keep-jobs").assert_outcomes(passed=1)
    [first] = _runs(skill_project, "hello-skill")

    shutil.rmtree(skill / "evals" / "replays")
    dataset = skill / "evals" / "evals.json"
    data = json.loads(dataset.read_text())
    data["evals"][0]["checks"] = [
        {"type": "file_contains", "path": "output/greeting.txt", "text": "Ada Lovelace", "name": "names Ada"},
        {"type": "file_contains", "path": "output/greeting.txt", "text": "Grace Hopper", "name": "names Grace"},
    ]
    dataset.write_text(json.dumps(data))
    # As the docs write it: no environment options; the regrade grades where that run ran (local, not Docker).
    regraded = skill_project.run("--regrade", first.name)
    assert "--regrade kept" not in regraded.stdout.str()
    assert "1 attempt, with_skill; env mode local" in " ".join(regraded.stdout.str().split())
    regraded.assert_outcomes(passed=1)
    second = _runs(skill_project, "hello-skill")[-1]
    document = json.loads(next(second.glob("*/with_skill/trials/explicit-greeting.1.json")).read_text())
    checks = {check["name"]: check["status"] for check in document["record"]["checks"]}
    assert checks == {"names Ada": "passed", "names Grace": "failed"}  # today's checks, on the recorded workspace
    assert "re-run on the trial's recorded workspace" in document["record"]["details"]["regrade"]["checks"]


def test_regrade_of_a_partial_run_skips_what_that_run_did_not_run(skill_project: SkillProject) -> None:
    """A -k run, graded again with no -k: the trials (and trigger queries) it never ran are skipped, saying so, not
    errors that fail the regrade; what it ran is graded."""
    queries = ["t-say-hello", "t-farewell"]
    skill_project.copy_hello_skill(cases=["explicit-greeting", "negative-arithmetic"], triggers=queries)
    local = ("--env-mode", "local", "--ek", "sandbox=none")
    first_run = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none", "-k", "explicit or t-say-hello")
    first_run.assert_outcomes(passed=3)
    [first] = _runs(skill_project, "hello-skill")

    regraded = skill_project.run(*local, "--regrade", "latest", "-rs")
    regraded.assert_outcomes(passed=3, skipped=3)  # negative-arithmetic's two trials and t-farewell's
    said = " ".join(regraded.stdout.str().split())
    assert f"--regrade: run {first.name} did not run this trial" in said, said
    result = json.loads((_runs(skill_project, "hello-skill")[-1] / "result.json").read_text())
    assert result["execution_status"] == "succeeded"
    assert sorted((t["case"], t["arm"]) for t in result["trials"]) == [
        ("explicit-greeting", "with_skill"),
        ("explicit-greeting", "without_skill"),
    ]
    assert result["coverage"]["skipped_cases"] == ["negative-arithmetic"]


@pytest.mark.parametrize("extra", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_regrade_of_a_run_one_skill_has_no_part_in_grades_the_others(
    skill_project: SkillProject, extra: tuple[str, ...]
) -> None:
    """Two skills, one with a broken evals.json when the run was made, fixed since: `--regrade <id>` stopped at the
    start (no run <id> under results/broken). The skill with the run is graded again; the other is one error naming
    it and the fix, and after that fix (`--resume <id>` runs its trials into the run) the same regrade grades both."""
    skill_project.make_skill("demo", simple_entries("c1"))
    broken = skill_project.make_skill("broken", raw="{not json")
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--skip-baseline", *extra, "skills")
    skill_project.run(*args).assert_outcomes(passed=1, errors=1)
    [first] = _runs(skill_project, "demo")
    assert skill_project.make_skill("broken", simple_entries("c1")) == broken

    regraded = skill_project.run(*args, "--regrade", first.name)
    said = " ".join(regraded.stdout.str().split())
    assert regraded.ret == pytest.ExitCode.TESTS_FAILED, said + regraded.stderr.str()
    regraded.assert_outcomes(passed=1, errors=1)
    [error] = [line for line in regraded.stdout.lines if line.startswith("ERROR ")]
    assert error.startswith("ERROR skills/broken/evals/evals.json"), error
    assert (
        f"--regrade {first.name}: broken has no part in run {first.name} (the session that made it collected or "
        f"selected none of its trials): run its trials into it with --resume {first.name}, then regrade" in said
    ), said
    # the session's start says so too, as a refused --resume does (not nothing for that skill)
    assert (
        f"skilleval: broken: no trials: --regrade {first.name}: broken has no part in run {first.name} (the session "
        "that made it collected or selected none of its trials): run its trials into it with --resume "
        f"{first.name}, then regrade; or leave broken out of the command line (its collection error below)" in said
    ), said
    runs = _runs(skill_project, "demo")
    assert len(runs) == 2 and json.loads((runs[1] / "run_config.json").read_text())["regraded_from"] == first.name
    assert not _runs(skill_project, "broken")

    skill_project.run(*args, "--resume", first.name).assert_outcomes(passed=2)
    again = skill_project.run(*args, "--regrade", first.name)
    again.assert_outcomes(passed=2)
    joined, regraded_too = _runs(skill_project, "broken")
    assert joined.name == first.name
    assert json.loads((regraded_too / "run_config.json").read_text())["regraded_from"] == first.name
    # a run no skill of the session has is still refused at the start
    refused = skill_project.run(*args, "--regrade", "20990101_000000_1_000000000000")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "no run 20990101_000000_1_000000000000" in refused.stderr.str()
