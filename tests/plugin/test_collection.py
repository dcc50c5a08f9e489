"""Collection: every dataset form and native tasks become items with the documented node ids."""

from __future__ import annotations

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries

LEGACY = [
    {"id": "q1", "question": "What is 2+2?", "ground_truth": "4", "expected_behavior": ["answers 4"]},
    {"id": 7, "question": "Name a colour", "ground_truth": "red", "acceptable_alternates": "other-skill"},
]


def _ids(result: pytest.RunResult) -> list[str]:
    return [line.strip() for line in result.outlines if "::" in line]


def test_plain_pytest_run_is_unchanged(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("a"))
    skill_project.pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = skill_project.pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q")
    assert _ids(result) == ["test_plain.py::test_ok"]
    result = skill_project.pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("dataset_name", ["evals.json", "evals.jsonl", "evals.yaml", "evals.yml"])
def test_every_dataset_format_collects(skill_project: SkillProject, dataset_name: str) -> None:
    data = simple_entries("alpha", "beta") if dataset_name != "evals.jsonl" else simple_entries("alpha", "beta")["evals"]
    skill_project.make_skill("demo", data, dataset_name=dataset_name)
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    path = f"skills/demo/evals/{dataset_name}"
    assert _ids(result) == [
        f"{path}::alpha[replay-with_skill-1]",
        f"{path}::alpha[replay-without_skill-1]",
        f"{path}::beta[replay-with_skill-1]",
        f"{path}::beta[replay-without_skill-1]",
    ]


def test_legacy_flat_list_and_integer_ids(skill_project: SkillProject) -> None:
    skill_project.make_skill("legacy", LEGACY)
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "--skip-baseline", subprocess=False)
    assert _ids(result) == [
        "skills/legacy/evals/evals.json::q1[replay-with_skill-1]",
        "skills/legacy/evals/evals.json::7[replay-with_skill-1]",
    ]


def test_agents_arms_and_attempts_multiply_in_a_fixed_order(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run("--collect-only", "-q", "--agents", "replay,codex", "--n-attempts", "2",
                               "--env-mode", "local", subprocess=False)
    names = [item.split("::")[1] for item in _ids(result)]
    assert names == [
        "c1[replay-with_skill-1]", "c1[replay-with_skill-2]", "c1[replay-without_skill-1]",
        "c1[replay-without_skill-2]", "c1[codex-with_skill-1]", "c1[codex-with_skill-2]",
        "c1[codex-without_skill-1]", "c1[codex-without_skill-2]",
    ]


def test_skip_flags_and_max_cases(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1", "c2", "c3"))
    only_baseline = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "--skip-with-skill", "--max-cases", "2",
                                      subprocess=False)
    assert [i.split("::")[1] for i in _ids(only_baseline)] == ["c1[replay-without_skill-1]",
                                                               "c2[replay-without_skill-1]"]
    both = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "--skip-with-skill", "--skip-baseline",
                             subprocess=False)
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    assert "leave nothing to run" in both.stderr.str()


def test_native_harbor_task_collects(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("t1"))
    task = skill / "evals" / "harbor" / "t1"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('schema_version = "1.4"\n[metadata]\nentry_id = "t1"\n')
    (task / "instruction.md").write_text("do t1\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (task / "tests" / "test_not_a_pytest_module.py").write_text("def test_x():\n    raise AssertionError\n")
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "--skip-baseline", subprocess=False)
    assert "skills/native/evals/harbor/t1/task.toml::t1[replay-with_skill-1]" in _ids(result)
    assert not any("test_not_a_pytest_module" in line for line in result.outlines)


def test_harbor_keep_jobs_is_accepted_now(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run("--collect-only", "--harbor-keep-jobs", subprocess=False)
    assert result.ret == pytest.ExitCode.OK
    assert "not implemented" not in result.stderr.str()


def test_judge_options_are_checked_at_start(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    bad_mode = skill_project.run("--collect-only", "--judge-cache", "sometimes", subprocess=False)
    assert bad_mode.ret == pytest.ExitCode.USAGE_ERROR and "judge_cache" in bad_mode.stderr.str()
    monkeypatch.setenv("SKILL_EVAL_LLM_MAX_RETRIES", "lots")
    bad_env = skill_project.run("--collect-only", "--judge-model", "openai/x", subprocess=False)
    assert bad_env.ret == pytest.ExitCode.USAGE_ERROR
    assert "SKILL_EVAL_LLM_MAX_RETRIES='lots': expected a number" in bad_env.stderr.str()
    skill_project.pytester.makeini("[pytest]\nskilleval_judge_cache = read\nskilleval_judge_model = openai/x\n")
    monkeypatch.delenv("SKILL_EVAL_LLM_MAX_RETRIES")
    from_ini = skill_project.run("--collect-only", "-q", subprocess=False)
    assert from_ini.ret == pytest.ExitCode.OK and "judge not configured" not in from_ini.stdout.str()


def test_ini_options_apply_and_cli_wins(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    skill_project.pytester.makeini("[pytest]\nskilleval_agents = replay\nskilleval_n_attempts = 3\nskilleval_env_mode = local\n")
    from_ini = skill_project.run("--collect-only", "-q", subprocess=False)
    assert len(_ids(from_ini)) == 6
    cli_wins = skill_project.run("--collect-only", "-q", "--n-attempts", "1", subprocess=False)
    assert len(_ids(cli_wins)) == 2


def test_items_of_one_dataset_share_one_fixture_closure(skill_project: SkillProject) -> None:
    """The closure is computed once per collector (issue 13: collection cost), and still sees conftest fixtures."""
    skill_project.make_skill("demo", simple_entries("alpha", "beta"))
    skill_project.pytester.makeconftest(
        "import pytest\n\n"
        "@pytest.fixture(autouse=True)\n"
        "def conftest_autouse():\n"
        "    yield\n\n"
        "def pytest_collection_modifyitems(items):\n"
        "    infos = {id(item._fixtureinfo) for item in items}\n"
        "    names = [item.fixturenames for item in items]\n"
        "    print(f'INFOS={len(infos)} ITEMS={len(items)}')\n"
        "    print('AUTOUSE=' + str(all('conftest_autouse' in n and 'skilleval_trial' in n for n in names)))\n"
    )
    result = skill_project.run("--collect-only", "-q", "-s", *LOCAL_REPLAY, subprocess=False)
    result.stdout.fnmatch_lines(["INFOS=1 ITEMS=4", "AUTOUSE=True"])
