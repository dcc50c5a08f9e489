"""Cost per trial (the agent's figure, else tokens x litellm's installed price map or a --model-price override),
per arm with its delta and interval, and `--max-cost`: no new trial once spent, a budget-stopped run that
`--resume` finishes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pytest_skilleval.results.run_seal import RunSeal
from pytest_skilleval.results.verdict import EXIT_INCOMPLETE
from tests.support import SkillProject, shell_replay, simple_entries


def _replay(prompt: int, completion: int) -> str:
    replay = shell_replay("mkdir -p /workspace/output && echo done > /workspace/output/done.txt")
    replay["final_metrics"] = {"total_prompt_tokens": prompt, "total_completion_tokens": completion}
    return json.dumps(replay)


def _skill(skill_project: SkillProject, cases: list[str], without: tuple[int, int] | None = None) -> Path:
    skill = skill_project.make_skill("demo", simple_entries(*cases))
    for case in cases:
        (skill / "evals" / "replays" / f"{case}.json").unlink()
        (skill / "evals" / "replays" / f"{case}.with-skill.json").write_text(_replay(10_000, 1_000))
        if without:
            (skill / "evals" / "replays" / f"{case}.without-skill.json").write_text(_replay(*without))
    return skill


def test_tokens_are_priced_by_litellms_installed_map_per_arm_with_the_delta(skill_project: SkillProject) -> None:
    """gpt-4o in litellm's installed map: $2.50 in, $10 out per million tokens, so 10,000 + 1,000 tokens cost
    $0.035 and 20,000 + 1,000 cost $0.06."""
    _skill(skill_project, ["c1", "c2"], without=(20_000, 1_000))
    result = skill_project.run(
        "--agents", "replay", "--agent-model", "replay=openai/gpt-4o", "--env-mode", "local", "--ek", "sandbox=none",
    )  # fmt: skip
    doc = skill_project.result_json("demo")
    costs = {(t["arm"], t["case"]): t["tokens"]["cost_usd"] for t in doc["trials"]}
    assert costs == {
        (arm, c): cost for arm, cost in (("with_skill", 0.035), ("without_skill", 0.06)) for c in ("c1", "c2")
    }
    resources = doc["agents"]["replay"]["resources"]
    assert (resources["with_skill"]["cost_usd"], resources["without_skill"]["cost_usd"]) == (0.07, 0.12)
    assert resources["delta"]["cost_usd"] == -0.05 and resources["delta"]["cost_usd_ci95"] == [-0.05, -0.05]
    out = result.stdout.str()
    row = ["cost", "(USD)", "0.0700", "0.1200", "-0.0500"]
    assert any(line.split()[:5] == row for line in result.stdout.lines), out
    run = next((skill_project.root / "results" / "demo").glob("2*/BENCHMARK.md")).parent
    card, report = (run / "BENCHMARK.md").read_text(), (run / "report.html").read_text()
    assert "cost USD 0.1200 → 0.0700 (-0.0500, 95% [-0.0500, -0.0500])" in card, card
    assert "-0.0500 [-0.0500, -0.0500]" in report


def test_a_budget_stops_new_trials_and_resume_finishes_the_run(skill_project: SkillProject) -> None:
    """At $1.00 a trial (10,000 prompt tokens at a $100-per-million override), --max-cost 2 runs two of four
    trials; the run is budget-stopped (incomplete); --resume with a higher limit runs the other two."""
    _skill(skill_project, ["c1", "c2", "c3", "c4"])
    common = (
        "--agents", "replay", "--agent-model", "replay=gw/m", "--model-price", "gw/m=100/0", "--skip-baseline",
        "--env-mode", "local", "--ek", "sandbox=none", "--n-concurrent", "1",
    )  # fmt: skip
    first = skill_project.run(*common, "--max-cost", "2", "-rs", "--block-on-agent-eval")
    out = first.stdout.str()
    assert "budget reached: $2.0000 spent of --max-cost $2.0000" in out, out
    first.assert_outcomes(passed=2, skipped=2)
    assert first.ret == EXIT_INCOMPLETE  # as for any incomplete run under --block-on-agent-eval
    doc = skill_project.result_json("demo")
    assert doc["coverage"]["budget_stopped"] == "$2.0000 of --max-cost $2.0000"
    assert doc["coverage"]["publication_complete"] is False and len(doc["coverage"]["missing_trials"]) == 2
    assert "budget-stopped" in doc["verdict_reason"]
    assert {t["tokens"]["cost_source"] for t in doc["trials"]} == {"override"}
    second = skill_project.run(*common, "--max-cost", "10", "--resume", "latest")
    second.assert_outcomes(passed=4)
    assert "estimated cost $4.0000 ($1.0000 a trial, the mean of 2 trials of run" in second.stdout.str()
    doc = skill_project.result_json("demo")
    assert doc["coverage"]["publication_complete"] is True and doc["coverage"]["budget_stopped"] is None
    assert doc["agents"]["replay"]["resources"]["with_skill"]["cost_usd"] == 4.0


def test_the_baseline_skill_arm_has_its_cost_and_its_delta_against_with_skill(
    skill_project: SkillProject, tmp_path: Path
) -> None:
    """--baseline-skill: the previous version's arm is priced like the others (its replay 20,000 + 1,000 gpt-4o
    tokens, $0.06 a trial, against with skill's $0.035), with with skill minus it and the paired interval in
    result.json, the terminal's Resources, report.html and BENCHMARK.md."""
    skill = _skill(skill_project, ["c1", "c2"])
    old = tmp_path / "demo-v1"
    shutil.copytree(skill, old)
    for case in ("c1", "c2"):
        (skill / "evals" / "replays" / f"{case}.baseline-skill.json").write_text(_replay(20_000, 1_000))
    result = skill_project.run(
        "--agents", "replay", "--agent-model", "replay=openai/gpt-4o", "--env-mode", "local", "--ek", "sandbox=none",
        "--baseline-skill", str(old), "--arms", "with_skill,baseline_skill",
    )  # fmt: skip
    out = result.stdout.str()
    doc = skill_project.result_json("demo")
    assert {t["tokens"]["cost_usd"] for t in doc["trials"] if t["arm"] == "baseline_skill"} == {0.06}, out
    resources = doc["agents"]["replay"]["resources"]
    assert (resources["with_skill"]["cost_usd"], resources["baseline_skill"]["cost_usd"]) == (0.07, 0.12)
    edit = resources["edit_delta"]
    assert (edit["available"], edit["cost_usd"], edit["cost_usd_ci95"]) == (True, -0.05, [-0.05, -0.05])
    assert edit["total_tokens"] == 22_000 - 42_000
    assert f"Resources against the baseline skill {old}" in out, out
    row = ["cost", "(USD)", "0.0700", "0.1200", "-0.0500", "[-0.0500,", "-0.0500]"]
    assert any(line.split() == row for line in result.stdout.lines), out
    run = next((skill_project.root / "results" / "demo").glob("2*/BENCHMARK.md")).parent
    card, report = (run / "BENCHMARK.md").read_text(), (run / "report.html").read_text()
    assert "- replay: cost USD 0.0700 with the skill\n" in card, card
    edit_line = next(line for line in card.splitlines() if line.startswith("- replay: cost USD against "))
    assert edit_line.endswith(" 0.1200 → 0.0700 (-0.0500, 95% [-0.0500, -0.0500])"), edit_line
    assert "<th>baseline skill</th>" in report and "-0.0500 [-0.0500, -0.0500]" in report


# Settings this release records that a run folder written before the model matrix does not name.
NAMED_SINCE = (
    "autopilot", "baseline_skill", "changed_since", "distractor_skills", "max_cost", "min_lift", "model_prices",
    "no_credential_check", "selected_arms", "trigger_max_turns",
)  # fmt: skip
OLD_JUDGE_REASON = (
    "LLM judge not configured: no judge model (set --judge-model, LLM_JUDGE_MODEL or SKILL_EVAL_JUDGE_MODEL)"
)


def _as_written_before_the_model_matrix(run_dir: Path) -> None:
    """Rewrite the run's run_config.json as that release wrote it (one model per agent as a string, none of the
    settings added since, the judge's old wording), sealed by this machine as the writer seals it."""
    path = run_dir / "run_config.json"
    config = json.loads(path.read_text())
    config["agent_models"] = {agent: models[0] for agent, models in config["agent_models"].items()}
    for name in NAMED_SINCE:
        del config[name]
    config["judge"] = {"enabled": False, "reason": OLD_JUDGE_REASON}
    data = json.dumps(config, indent=2).encode()
    path.write_bytes(data)
    RunSeal.of_this_machine().seal(run_dir, path, data)


def test_a_run_folder_from_before_the_model_matrix_resumes_and_regrades(skill_project: SkillProject) -> None:
    """A run of two cases of four (-k) whose run_config.json has the shape of a release before the model matrix
    (models stored as strings) is the same evaluation: --resume runs the other two in that folder, and --regrade with
    the same --agent-model grades it."""
    _skill(skill_project, ["c1", "c2", "c3", "c4"])
    common = ("--agents", "replay", "--agent-model", "replay=gw/m", "--skip-baseline", "--env-mode", "local")
    common += ("--ek", "sandbox=none")
    skill_project.run(*common, "-k", "c1 or c2").assert_outcomes(passed=2)
    run_dir = (skill_project.root / "results" / "demo" / "latest").resolve()
    _as_written_before_the_model_matrix(run_dir)
    resumed = skill_project.run(*common, "--resume", "latest")
    assert "settings changed" not in resumed.stdout.str() + resumed.stderr.str(), resumed.stderr.str()
    resumed.assert_outcomes(passed=4)
    assert "reuses 2 of 4" in resumed.stdout.str(), resumed.stdout.str()
    doc = skill_project.result_json("demo")
    assert doc["run_id"] == run_dir.name and doc["coverage"]["publication_complete"] is True
    _as_written_before_the_model_matrix(run_dir)
    regraded = skill_project.run(*common[:4], "--env-mode", "local", "--ek", "sandbox=none", "--regrade", run_dir.name)
    assert regraded.ret == 0, regraded.stdout.str() + regraded.stderr.str()


def test_price_overrides_from_the_ini_and_evals_config_yml(skill_project: SkillProject) -> None:
    """A gateway's model priced by the ini (`skilleval_model_price`, lines: 10,000 prompt tokens at $10 and 1,000
    output at $100 per million: $0.20), then by evals/config.yml's `harbor.model_prices`, which wins over the ini
    ($100 in, $0 out: $1.00)."""
    skill = _skill(skill_project, ["c1"])
    skill_project.pytester.makeini("[pytest]\nskilleval_model_price =\n    gw/m=10/100\n")
    common = ("--agents", "replay", "--agent-model", "replay=gw/m", "--skip-baseline", "--env-mode", "local")
    common += ("--ek", "sandbox=none")
    for config, cost in (
        (None, 0.2),
        ("schema_version: 1\nharbor:\n  model_prices:\n    gw/m: {input_per_mtok: 100, output_per_mtok: 0}\n", 1.0),
    ):
        if config is not None:
            (skill / "evals" / "config.yml").write_text(config)
        result = skill_project.run(*common)
        [trial] = skill_project.result_json("demo")["trials"]
        assert (trial["tokens"]["cost_usd"], trial["tokens"]["cost_source"]) == (cost, "override"), result.stdout.str()
