"""Collection: every dataset form and native tasks become items with the documented node ids."""

from __future__ import annotations

import json

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
    data = (
        simple_entries("alpha", "beta") if dataset_name != "evals.jsonl" else simple_entries("alpha", "beta")["evals"]
    )
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
    result = skill_project.run(
        "--collect-only", "-q", "--agents", "replay,codex", "--n-attempts", "2", "--env-mode", "local", subprocess=False
    )
    names = [item.split("::")[1] for item in _ids(result)]
    assert names == [
        "c1[replay-with_skill-1]",
        "c1[replay-with_skill-2]",
        "c1[replay-without_skill-1]",
        "c1[replay-without_skill-2]",
        "c1[codex-with_skill-1]",
        "c1[codex-with_skill-2]",
        "c1[codex-without_skill-1]",
        "c1[codex-without_skill-2]",
    ]


def test_skip_flags_and_max_cases(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1", "c2", "c3"))
    only_baseline = skill_project.run(
        "--collect-only", "-q", *LOCAL_REPLAY, "--skip-with-skill", "--max-cases", "2", subprocess=False
    )
    assert [i.split("::")[1] for i in _ids(only_baseline)] == [
        "c1[replay-without_skill-1]",
        "c2[replay-without_skill-1]",
    ]
    both = skill_project.run(
        "--collect-only", "-q", *LOCAL_REPLAY, "--skip-with-skill", "--skip-baseline", subprocess=False
    )
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
    skill_project.pytester.makeini(
        "[pytest]\nskilleval_agents = replay\nskilleval_n_attempts = 3\nskilleval_env_mode = local\n"
    )
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


def test_an_items_spec_is_built_when_asked_and_matches_the_item(skill_project: SkillProject) -> None:
    """Collection keeps no TrialSpec per item (issue 13: collection cost); the spec built on demand carries the
    item's own node id, case, agent, arm and attempt, and the case's entry (one dict shared by its items)."""
    skill_project.make_skill("demo", simple_entries("alpha", "beta"))
    skill_project.pytester.makeconftest(
        "def pytest_collection_modifyitems(items):\n"
        "    print('BUILT=' + str(any('spec' in vars(item) for item in items)))\n"
        "    for item in items:\n"
        "        s = item.spec\n"
        "        assert s.nodeid == item.nodeid and item.spec is s\n"
        "        assert s.case_id == item.originalname and s.entry['id'] == s.case_id and s.source == 'dataset'\n"
        "        assert item.name == f'{s.case_id}[{s.agent}-{s.arm}-{s.attempt}]'\n"
        "        assert item.get_closest_marker('skilleval').kwargs == dict(agent=s.agent, arm=s.arm,\n"
        "                                                                   attempt=s.attempt, case=s.case_id)\n"
        "    entries = {id(item.spec.entry) for item in items}\n"
        "    print(f'ENTRIES={len(entries)} ITEMS={len(items)}')\n"
    )
    result = skill_project.run("--collect-only", "-q", "-s", *LOCAL_REPLAY, subprocess=False)
    result.stdout.fnmatch_lines(["BUILT=False", "ENTRIES=2 ITEMS=4"])


def test_collect_only_does_not_import_the_trial_machinery(skill_project: SkillProject) -> None:
    """`--co` never starts a trial, so it does not pay for importing the runner and Harbor's trial code."""
    skill_project.make_skill("demo", simple_entries("alpha"))
    skill_project.pytester.makeconftest(
        "import sys\n\n"
        "def pytest_unconfigure():\n"
        "    print('RUNNER=' + str('pytest_skilleval.harbor.runner' in sys.modules))\n"
    )
    result = skill_project.run("--collect-only", "-q", "-s", *LOCAL_REPLAY)
    result.stdout.fnmatch_lines(["RUNNER=False"])


# What `--co` must not import: the record and result models, the results tree's writer and the end-of-session
# reporting, the staging of Harbor tasks, the preflight, the skill checks' engine, Harbor and litellm, and PyYAML
# for JSON files. Collection reads datasets and settings only; these cost a plain `pytest --co` a third of a second
# (docs/performance.md).
HEAVY_FOR_COLLECTION = (
    "pytest_skilleval.results.records",
    "pytest_skilleval.results.models",
    "pytest_skilleval.results.triggering",
    "pytest_skilleval.results.tree",
    "pytest_skilleval.reporting",
    "pytest_skilleval.harbor.staging",
    "pytest_skilleval.harbor.preflight",
    "verifier.checks.skill_execution",
    "harbor",
    "litellm",
    "yaml",
)


def test_collect_only_imports_neither_the_result_models_nor_harbor(skill_project: SkillProject) -> None:
    """`pytest --skill-eval --co` on a dataset and a trigger set imports only what reading them needs, and freezes
    what it made before pytest's two forced garbage collections at exit walk it all."""
    skill = skill_project.make_skill("demo", simple_entries("alpha", "beta"))
    (skill / "evals" / "triggers.json").write_text(
        json.dumps([{"query": "use demo", "should_trigger": True}, {"query": "weather?", "should_trigger": False}])
    )
    skill_project.pytester.makeconftest(
        "import gc, sys\n\n"
        f"HEAVY = {HEAVY_FOR_COLLECTION!r}\n\n"
        "def pytest_unconfigure():\n"
        "    loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in HEAVY))\n"
        "    print('HEAVY=' + ','.join(loaded))\n"
        "    print(f'FROZEN={gc.get_freeze_count() > 0}')\n"
    )
    result = skill_project.run("--collect-only", "-q", "-s", *LOCAL_REPLAY)
    result.stdout.fnmatch_lines(
        ["*demo/evals/evals.json::alpha*", "*demo/evals/triggers.json::*", "HEAVY=", "FROZEN=True"]
    )


def test_native_tasks_collect_reading_the_dataset_and_claims_once(skill_project: SkillProject) -> None:
    """Each native task's collector needs the dataset's ids and, under --max-cases, the staged order over every
    task's claim: read once per session, not once per task (which made collecting n tasks cost n^2 reads)."""
    ids = [f"t{i}" for i in range(6)]
    skill = skill_project.make_skill("native", simple_entries(*ids))
    for case_id in ids:
        task = skill / "evals" / "harbor" / case_id
        (task / "tests").mkdir(parents=True)
        (task / "task.toml").write_text(f'schema_version = "1.4"\n[metadata]\nentry_id = "{case_id}"\n')
        (task / "instruction.md").write_text(f"do {case_id}\n")
        (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    skill_project.pytester.makeconftest(
        "import pytest_skilleval.skill.dataset as dataset, pytest_skilleval.skill.native_claims as claims\n"
        "calls = {'parse': 0, 'claim': 0}\n"
        "def counted(name, function):\n"
        "    def wrapper(*args, **kwargs):\n"
        "        calls[name] += 1\n"
        "        return function(*args, **kwargs)\n"
        "    return wrapper\n"
        "import pytest_skilleval.skill.folder as folder\n"
        "folder.parse_dataset = counted('parse', dataset.parse_dataset)\n"
        "claims.claimed_entry_id = counted('claim', claims.claimed_entry_id)\n\n"
        "def pytest_collection_finish(session):\n"
        "    print(f\"PARSED={calls['parse']} CLAIMS={calls['claim']} ITEMS={len(session.items)}\")\n"
    )
    # in a subprocess: the counters patch modules for the whole process
    result = skill_project.run("--collect-only", "-q", "-s", *LOCAL_REPLAY, "--skip-baseline", "--max-cases", "4")
    # claims: once for the plan's --max-cases cut and once for the dataset's collector (which drops claimed entries)
    result.stdout.fnmatch_lines(["PARSED=1 CLAIMS=12 ITEMS=4"])


def test_a_skill_md_no_agent_can_list_is_a_warning_not_a_stopped_run(skill_project: SkillProject) -> None:
    """No front matter (so no name or description to find the skill by): the run still collects, with a warning."""
    skill = skill_project.make_skill("demo", simple_entries("alpha"))
    (skill / "SKILL.md").write_text("# demo\nGreets people.\n")
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY)
    result.stdout.fnmatch_lines(
        ["*demo/evals/evals.json::alpha*", "*[[]skill-md-front-matter[]] SKILL.md has no front matter*"]
    )
    assert result.ret == 0


def test_a_folder_run_names_the_skills_below_it_that_have_no_evals(skill_project: SkillProject) -> None:
    """A repository of skills where some have no evals/ yet: the run runs the others and says which it passed over
    (it said nothing of them: 14 of anthropics/skills' 17 were left out in silence), with the way to give them cases."""
    skill_project.make_skill("with-cases", simple_entries("c1"))
    for name in ("bare-b", "bare-a"):
        bare = skill_project.root / "skills" / name
        bare.mkdir(parents=True)
        (bare / "SKILL.md").write_text(f"---\nname: {name}\ndescription: a skill with no evals yet\n---\n")
    result = skill_project.run("skills", "--agents", "replay", "--env-mode", "local", "--collect-only")
    out = result.stdout.str()
    assert "with-cases: 2 trials planned" in out, out
    line = "skilleval: skills: 2 skills have no evals/ and are not run: bare-a, bare-b"
    assert line in out and "skilleval create-eval-dataset" in out and "--autopilot" in out, out
    assert result.ret == 0
    # a folder whose skills all have evals says nothing more, and a skill named alone is not "below a folder"
    result = skill_project.run("skills/with-cases", "--agents", "replay", "--env-mode", "local", "--collect-only")
    assert "not run" not in result.stdout.str()
