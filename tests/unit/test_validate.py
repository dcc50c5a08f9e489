"""`skilleval validate`: each finding kind, severities, --strict, --skip-baseline, JSON and human output, exit codes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.authoring.findings import ValidationFinding
from pytest_skilleval.authoring.validate import (
    UsageError,
    ValidationReport,
    report_lines,
    validate_skill,
)
from pytest_skilleval.authoring.validate_command import run_validate_command

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "examples" / "hello-skill"
FIXTURES = REPO / "fixtures" / "validate"
ALWAYS_ONE = REPO / "fixtures" / "graders" / "always_one.py"
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def entries(*ids: str, **extra: Any) -> dict[str, Any]:
    return {
        "skill_name": "demo",
        "evals": [{"id": i, "prompt": f"do {i}", "expected_output": "done", "files": [], **extra} for i in ids],
    }


def make_skill(
    root: Path,
    dataset: Any = None,
    *,
    config: str | None = None,
    grader: bool = False,
    replays: bool = True,
    name: str = "demo",
) -> Path:
    """A skill folder; replays for every dataset id unless told otherwise, so 'info' noise stays out."""
    skill = root / name
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n")
    if dataset is not None:
        text = dataset if isinstance(dataset, str) else json.dumps(dataset)
        (skill / "evals" / "evals.json").write_text(text)
    if config is not None:
        (skill / "evals" / "config.yml").write_text(config)
    if grader:
        shutil.copy2(ALWAYS_ONE, skill / "evals" / "grader.py")
    if replays and isinstance(dataset, dict):
        (skill / "evals" / "replays").mkdir()
        for row in dataset.get("evals", []):
            if isinstance(row.get("id"), str):
                (skill / "evals" / "replays" / f"{row['id']}.json").write_text("{}")
    return skill


def native_task(skill: Path, case: str, toml_extra: str = "", instruction: bool = True) -> Path:
    task = skill / "evals" / "harbor" / case
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text(f'schema_version = "1.4"\n[task]\nname = "demo/{case}"\n{toml_extra}')
    if instruction:
        (task / "instruction.md").write_text(f"do {case}\n")
    (task / "tests" / "test.sh").write_text('#!/bin/bash\necho \'{"overall": 1.0}\' > /logs/verifier/reward.json\n')
    (skill / "evals" / "replays").mkdir(exist_ok=True)
    (skill / "evals" / "replays" / f"{case}.json").write_text("{}")
    return task


# Every case of a skill without a grader or checks draws this warning; tests of other rules leave it out.
CORRECTNESS = "correctness-not-measured"


def others(report: ValidationReport) -> list[ValidationFinding]:
    """The findings other than the per-case correctness notice."""
    return [f for f in report.findings if f.rule != CORRECTNESS]


def rules(report: ValidationReport, severity: str | None = None) -> set[str]:
    return {f.rule for f in others(report) if severity is None or f.severity == severity}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = run_validate_command(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------------------------------------
# Clean skills


def test_hello_skill_is_clean_even_with_harbor_contract() -> None:
    report = validate_skill(HELLO, harbor_contract=True)
    assert others(report) == []
    assert report.ok(strict=True)


def test_every_case_without_a_correctness_signal_is_warned_about(tmp_path: Path) -> None:
    report = validate_skill(make_skill(tmp_path, entries("a", "b")))
    found = [f for f in report.findings if f.rule == CORRECTNESS]
    assert [f.message.split("'")[1] for f in found] == ["a", "b"] and {f.severity for f in found} == {"warning"}
    assert "--judge-model" in found[0].message and "evals/grader.py" in found[0].message
    assert not report.ok(strict=True)
    plus = "schema_version: 1\ngrading:\n  mode: default_plus_custom\n"
    measured = validate_skill(make_skill(tmp_path / "graded", entries("a"), grader=True, config=plus))
    assert CORRECTNESS not in {f.rule for f in measured.findings}
    ignored = validate_skill(make_skill(tmp_path / "default", entries("a"), grader=True))  # default: grader not run
    assert CORRECTNESS in {f.rule for f in ignored.findings}
    only = "schema_version: 1\ngrading:\n  mode: custom_only\n"  # the grader's overall is the score
    custom = validate_skill(make_skill(tmp_path / "custom", entries("a"), config=only))
    assert CORRECTNESS not in {f.rule for f in custom.findings} and "grader-missing" in {
        f.rule for f in custom.findings
    }


def test_a_case_judged_only_by_its_assertions_says_so(tmp_path: Path) -> None:
    """Assertions read like checks; the warning says that only a judge grades them."""
    dataset = entries("a", "b")
    dataset["evals"][0]["assertions"] = ["Names the file", "Explains why"]
    dataset["evals"][1]["assertions"] = ["Names the file"]
    found = [f.message for f in validate_skill(make_skill(tmp_path, dataset)).findings if f.rule == CORRECTNESS]
    assert all("(its assertions are graded only by the judge)" in message for message in found)
    bare = validate_skill(make_skill(tmp_path / "bare", entries("a"))).findings
    assert not any("assertion" in f.message for f in bare if f.rule == CORRECTNESS)


def test_minimal_valid_skill_is_clean(tmp_path: Path) -> None:
    assert others(validate_skill(make_skill(tmp_path, entries("a", "b")))) == []


def test_custom_dockerfile_rules_are_errors_naming_the_file(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, entries("a"))
    (skill / "evals" / "environment").mkdir()
    dockerfile = skill / "evals" / "environment" / "Dockerfile"
    dockerfile.write_text("# base\nRUN true\nCOPY environment/x /x\n")
    found = [f for f in validate_skill(skill).findings if f.rule == "custom-dockerfile"]
    assert [f.message for f in found] == [
        "the first instruction must be FROM",
        "COPY/ADD paths are relative to evals/environment/; drop the 'environment/' prefix",
    ]
    assert all(f.path == dockerfile and f.severity == "error" for f in found)
    dockerfile.write_text("FROM debian:12\nCOPY x /x\n")
    assert others(validate_skill(skill)) == []


def test_a_dockerfile_problem_keeps_its_text_under_a_folder_named_with_a_colon(tmp_path: Path) -> None:
    """The problem is its own text, not cut out of a line that also names the file (whose path may hold ': ')."""
    root = tmp_path / "team: evals"
    root.mkdir()
    skill = make_skill(root, entries("a"))
    (skill / "evals" / "environment").mkdir()
    (skill / "evals" / "environment" / "Dockerfile").write_text("RUN true\n")
    found = [f.message for f in validate_skill(skill).findings if f.rule == "custom-dockerfile"]
    assert found == ["the first instruction must be FROM"]


# ---------------------------------------------------------------------------------------------------------------
# config.yml


def test_config_unknown_key_and_runtime_env_blocklist_are_separate_errors(tmp_path: Path) -> None:
    config = "schema_version: 1\nharbor:\n  n_atempts: 2\n  runtime_env:\n    AWS_REGION: us-east-1\n"
    report = validate_skill(make_skill(tmp_path, entries("a"), config=config))
    assert rules(report, "error") == {"config-unknown-key", "config-runtime-env"}
    blocked = next(f for f in report.findings if f.rule == "config-runtime-env")
    assert "AWS_REGION" in blocked.message and blocked.path.name == "config.yml"


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "HARBOR_LOGS_DIR", "PATH", "LD_PRELOAD"])
def test_runtime_env_names_the_run_refuses(tmp_path: Path, name: str) -> None:
    config = f"schema_version: 1\nharbor:\n  runtime_env: [{name}]\n"
    assert "config-runtime-env" in rules(validate_skill(make_skill(tmp_path, entries("a"), config=config)))


def test_runtime_env_value_referencing_a_credential_is_refused(tmp_path: Path) -> None:
    config = "schema_version: 1\nharbor:\n  runtime_env:\n    MY_KEY: ${ANTHROPIC_API_KEY}\n"
    report = validate_skill(make_skill(tmp_path, entries("a"), config=config))
    assert any(f.rule == "config-runtime-env" and "ANTHROPIC_API_KEY" in f.message for f in report.findings)


@pytest.mark.parametrize(
    "config",
    [
        "schema_version: 2\n",
        "schema_version: 1\ngrading:\n  mode: fancy\n",
        "schema_version: 1\nharbor: [1]\n",
        "schema_version: 1\nharbor:\n  pass_threshold: 2\n",
        "schema_version: [\n",
    ],
)
def test_bad_config_values(tmp_path: Path, config: str) -> None:
    assert rules(validate_skill(make_skill(tmp_path, entries("a"), config=config))) == {"config-invalid"}


def test_both_config_names_is_an_error(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, entries("a"), config="schema_version: 1\n")
    (skill / "evals" / "config.yaml").write_text("schema_version: 1\n")
    assert rules(validate_skill(skill)) == {"config-invalid"}


def test_invalid_config_still_judges_with_its_stated_mode(tmp_path: Path) -> None:
    """A typo elsewhere must not hide that custom_only needs a grader."""
    config = "schema_version: 1\ngrading:\n  mode: custom_only\nharbor:\n  typo: 1\n"
    report = validate_skill(make_skill(tmp_path, entries("a"), config=config))
    assert {"config-unknown-key", "grader-missing"} <= rules(report)


# ---------------------------------------------------------------------------------------------------------------
# Dataset


def test_every_bad_entry_is_reported_not_only_the_first(tmp_path: Path) -> None:
    data = entries("ok", "ok", "bad id!")
    data["evals"].append({"id": "no-prompt", "expected_output": "x"})
    report = validate_skill(make_skill(tmp_path, data))
    messages = [f.message for f in report.findings]
    assert rules(report) == {"dataset-id", "dataset-entry"}
    assert any("duplicate id 'ok'" in m for m in messages)
    assert any("'bad id!'" in m for m in messages)
    assert any("no-prompt" in m and "prompt" in m for m in messages)
    assert all(f.path.name == "evals.json" for f in report.findings)


def test_unparseable_dataset(tmp_path: Path) -> None:
    report = validate_skill(make_skill(tmp_path, '{"skill_name": "x", "evals": ['))
    assert rules(report) == {"dataset-invalid"}
    assert "invalid JSON" in report.findings[0].message


def test_empty_dataset_and_unknown_shape(tmp_path: Path) -> None:
    assert rules(validate_skill(make_skill(tmp_path, {"skill_name": "x", "evals": []}))) == {"dataset-invalid"}
    assert rules(validate_skill(make_skill(tmp_path, '"just text"', name="other"))) == {"dataset-invalid"}


def test_two_dataset_files(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, entries("a"))
    (skill / "evals" / "evals.yaml").write_text("skill_name: x\nevals: []\n")
    assert rules(validate_skill(skill)) == {"multiple-datasets"}


def test_legacy_shape_is_a_deprecation_warning(tmp_path: Path) -> None:
    legacy = [{"id": "a", "question": "q", "ground_truth": "g"}]
    skill = make_skill(tmp_path, json.dumps(legacy))
    (skill / "evals" / "replays").mkdir()
    (skill / "evals" / "replays" / "a.json").write_text("{}")
    report = validate_skill(skill)
    # a flat list has no skill_name: its case names no skill, so the skill checks would skip it at 1.0
    assert rules(report) == {"legacy-dataset-shape", "unnamed-skill-cases"}
    assert all(finding.severity == "warning" for finding in report.findings)
    assert report.ok() and not report.ok(strict=True)


def test_no_dataset_and_no_native_tasks(tmp_path: Path) -> None:
    report = validate_skill(make_skill(tmp_path))
    assert rules(report) == {"no-evals"}
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "SKILL.md").write_text("---\nname: bare\ndescription: A bare skill.\n---\n")
    report = validate_skill(bare)
    assert rules(report) == {"no-evals"}
    # the way on from a bare skill, as a run says it: draft a dataset, or let one run draft a starter case
    assert f"draft one with `skilleval create-eval-dataset {bare}`" in report.findings[0].message
    assert f"`pytest --skill-eval {bare} --autopilot`" in report.findings[0].message


# ---------------------------------------------------------------------------------------------------------------
# files


def test_files_entries_follow_the_staging_rules(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, entries("a"))
    (skill / "evals" / "files").mkdir()
    (skill / "evals" / "files" / "ok.txt").write_text("x")
    (skill / "evals" / "tests").mkdir()
    (skill / "evals" / "tests" / "t.txt").write_text("x")
    os.symlink(skill / "SKILL.md", skill / "evals" / "files" / "link.txt")
    bad = ["../SKILL.md", "/etc/passwd", "files/nope.txt", "tests/t.txt", "files/link.txt"]
    data = entries("a")
    data["evals"][0]["files"] = ["files/ok.txt", "evals/files/ok.txt", *bad]
    (skill / "evals" / "evals.json").write_text(json.dumps(data))
    report = validate_skill(skill)
    assert rules(report) == {"files-entry"}
    assert len(others(report)) == len(bad)
    for item, finding in zip(bad, others(report), strict=True):
        assert repr(item) in finding.message and "case 'a'" in finding.message


def test_omitted_files_in_a_multi_case_dataset_warns(tmp_path: Path) -> None:
    data = entries("a", "b")
    del data["evals"][1]["files"]
    skill = make_skill(tmp_path, data)
    assert others(validate_skill(skill)) == []  # no evals/files/: nothing is over-shared
    (skill / "evals" / "files").mkdir()
    report = validate_skill(skill)
    assert rules(report, "warning") == {"files-omitted"}
    assert "'b'" not in others(report)[0].message and "b" in others(report)[0].message


# ---------------------------------------------------------------------------------------------------------------
# expected_script and replays


def test_expected_script_missing_and_unknown(tmp_path: Path) -> None:
    data = entries("plain", "named", "typo", "negative")
    data["evals"][1]["expected_script"] = "greet.py"
    data["evals"][2]["expected_script"] = "scripts/gret.py"
    data["evals"][3]["expected_skill"] = None
    skill = make_skill(tmp_path, data)
    (skill / "scripts").mkdir()
    (skill / "scripts" / "greet.py").write_text("print('hi')\n")
    report = validate_skill(skill)
    by_rule = {f.rule: f for f in others(report)}
    assert set(by_rule) == {"expected-script-missing", "expected-script-unknown"}
    assert "'plain'" in by_rule["expected-script-missing"].message
    assert "'typo'" in by_rule["expected-script-unknown"].message
    assert all(f.severity == "warning" for f in others(report))
    assert len(others(report)) == 2  # the negative case needs no script
    assert 'write "expected_script": null if the case needs none' in by_rule["expected-script-missing"].message


def test_an_explicit_null_expected_script_says_the_case_needs_none(tmp_path: Path) -> None:
    """A skill with a script where one case reads a static file and runs nothing: `"expected_script": null` keeps
    `validate --strict` passing; leaving the key out still warns."""
    data = entries("reads-only", "forgot")
    data["evals"][0]["expected_script"] = None
    skill = make_skill(tmp_path, data)
    (skill / "scripts").mkdir()
    (skill / "scripts" / "with_server.py").write_text("print('serving')\n")
    findings = [f for f in others(validate_skill(skill)) if f.rule == "expected-script-missing"]
    assert [f.message.split(" has no")[0] for f in findings] == ["case 'forgot'"]


def test_missing_replays_are_info_and_never_fail(tmp_path: Path) -> None:
    plus = "schema_version: 1\ngrading:\n  mode: default_plus_custom\n"  # a grader: no correctness warning
    skill = make_skill(tmp_path, entries("a", "b"), replays=False, grader=True, config=plus)
    (skill / "evals" / "replays").mkdir()
    (skill / "evals" / "replays" / "a.with-skill.json").write_text("{}")
    report = validate_skill(skill)
    assert rules(report) == {"replay-missing"}
    assert {f.severity for f in others(report)} == {"info"}
    assert report.ok(strict=True)
    by_case = {f.message.split("'")[1]: f.message for f in others(report)}
    assert "without_skill" in by_case["a"] and "with_skill," not in by_case["a"]
    assert "with_skill, without_skill" in by_case["b"]
    # A with-skill-only run needs only the with-skill replay.
    skipped = validate_skill(skill, skip_baseline=True)
    assert [f.message.split("'")[1] for f in others(skipped)] == ["b"]


# ---------------------------------------------------------------------------------------------------------------
# Graders


def test_grader_missing_in_custom_only(tmp_path: Path) -> None:
    config = "schema_version: 1\ngrading:\n  mode: custom_only\n"
    assert rules(validate_skill(make_skill(tmp_path, entries("a"), config=config))) == {"grader-missing"}
    assert others(validate_skill(make_skill(tmp_path / "b", entries("a"), config=config, grader=True))) == []


def test_grader_ignored_in_default_mode(tmp_path: Path) -> None:
    report = validate_skill(make_skill(tmp_path, entries("a"), grader=True))
    assert rules(report, "warning") == {"grader-ignored"}
    plus = "schema_version: 1\ngrading:\n  mode: aces_plus_custom\n"
    assert others(validate_skill(make_skill(tmp_path / "b", entries("a"), grader=True, config=plus))) == []


def test_default_plus_custom_without_a_grader_warns(tmp_path: Path) -> None:
    plus = "schema_version: 1\ngrading:\n  mode: default_plus_custom\n"
    report = validate_skill(make_skill(tmp_path, entries("a"), config=plus))
    assert rules(report, "warning") == {"grader-absent"}


def test_grader_symlink_is_an_error_and_does_not_count(tmp_path: Path) -> None:
    config = "schema_version: 1\ngrading:\n  mode: custom_only\n"
    skill = make_skill(tmp_path, entries("a"), config=config)
    os.symlink(ALWAYS_ONE, skill / "evals" / "grader.py")
    assert rules(validate_skill(skill)) == {"grader-symlink", "grader-missing"}


def test_grader_that_is_a_directory(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, entries("a"))
    (skill / "evals" / "grader.py").mkdir()
    assert rules(validate_skill(skill)) == {"grader-not-file"}


def test_python_grader_syntax_error(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, entries("a"), config="schema_version: 1\ngrading:\n  mode: custom_only\n")
    (skill / "evals" / "grader.py").write_text("def broken(:\n")
    report = validate_skill(skill)
    assert "grader-syntax" in rules(report)
    assert "line 1" in next(f.message for f in report.findings if f.rule == "grader-syntax")


@needs_bash
def test_shell_grader_syntax_error_and_shadowing(tmp_path: Path) -> None:
    config = "schema_version: 1\ngrading:\n  mode: default_plus_custom\n"
    skill = make_skill(tmp_path, entries("a"), config=config)
    (skill / "evals" / "grader.sh").write_text("if then fi (\n")
    assert rules(validate_skill(skill)) == {"grader-syntax"}
    (skill / "evals" / "grader.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    shutil.copy2(ALWAYS_ONE, skill / "evals" / "grader.py")
    report = validate_skill(skill)
    assert rules(report) == {"grader-shadowed"}
    assert report.findings[0].path.name == "grader.sh"


def test_native_task_grader_symlink(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, entries("t1"))
    task = native_task(skill, "t1")
    os.symlink(ALWAYS_ONE, task / "tests" / "grader.py")  # leaving the task folder: the task is refused, naming it
    report = validate_skill(skill)
    (invalid,) = [finding for finding in report.findings if finding.rule == "native-task-invalid"]
    assert f"tests/grader.py: a symbolic link to {ALWAYS_ONE}, leaving the task folder" in invalid.message
    (task / "tests" / "grader.py").unlink()
    shutil.copy2(ALWAYS_ONE, task / "tests" / "real.py")
    os.symlink("real.py", task / "tests" / "grader.py")  # inside the task folder: the grader rule still names it
    assert "grader-symlink" in rules(validate_skill(skill))


# ---------------------------------------------------------------------------------------------------------------
# Native tasks


@pytest.mark.parametrize("mode", ["default", "default_plus_custom"])
def test_native_entry_id_must_match_in_standard_modes(tmp_path: Path, mode: str) -> None:
    config = f"schema_version: 1\ngrading:\n  mode: {mode}\n"
    skill = make_skill(tmp_path, entries("a"), config=config, grader=mode != "default")
    native_task(skill, "t1")
    native_task(skill, "t2", '[metadata]\nentry_id = "a"\n')
    report = validate_skill(skill)
    mismatches = [f for f in report.findings if f.rule == "entry-id-mismatch"]
    assert len(mismatches) == 1 and "'t1'" in mismatches[0].message
    assert mismatches[0].path == (skill / "evals" / "harbor" / "t1" / "task.toml").resolve()


def test_native_entry_id_is_free_in_custom_only(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, config="schema_version: 1\ngrading:\n  mode: custom_only\n")
    native_task(skill, "t1")
    assert others(validate_skill(skill)) == []


def test_native_task_without_dataset_in_default_mode(tmp_path: Path) -> None:
    skill = make_skill(tmp_path)
    native_task(skill, "t1")
    assert rules(validate_skill(skill)) == {"missing-dataset"}


def test_grading_mode_override_beats_config(tmp_path: Path) -> None:
    skill = make_skill(tmp_path)
    native_task(skill, "t1")
    assert others(validate_skill(skill, grading_mode="custom_only")) == []
    assert validate_skill(skill, grading_mode="aces_default").ok() is False


def test_paired_rules_apply_unless_skip_baseline(tmp_path: Path) -> None:
    config = "schema_version: 1\ngrading:\n  mode: custom_only\nharbor:\n  pre_agent_setup: [echo hi]\n"
    skill = make_skill(tmp_path, config=config)
    native_task(skill, "t1", '[environment.healthcheck]\ncommand = "true"\n')
    (skill / "evals" / "harbor" / "t1" / "trajectory.json").write_text("{}")
    paired = validate_skill(skill)
    assert rules(paired) == {"paired-healthcheck", "paired-prior-trajectory", "paired-pre-agent-setup"}
    setup = next(f for f in paired.findings if f.rule == "paired-pre-agent-setup")
    assert setup.path is not None and setup.path.name == "config.yml"
    assert others(validate_skill(skill, skip_baseline=True)) == []


def test_native_task_rule_checks_are_reported(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, entries("t1", "t2"))
    native_task(skill, "t1", '[environment]\nos = "windows"\n[verifier.env]\nOPENAI_API_KEY = "x"\n')
    native_task(skill, "t2", instruction=False)
    (skill / "evals" / "harbor" / "t2" / "steps" / "s" / "tests").mkdir(parents=True)
    (skill / "evals" / "harbor" / "t2" / "steps" / "s" / "tests" / "t.sh").write_text("x")
    assert {"windows-environment", "task-env-control", "missing-instruction", "step-tests-overlay"} <= rules(
        validate_skill(skill)
    )


def test_unreadable_and_odd_native_folders(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, config="schema_version: 1\ngrading:\n  mode: custom_only\n")
    native_task(skill, "good")
    bad = native_task(skill, "bad-toml")
    (bad / "task.toml").write_text("this is = = not toml")
    native_task(skill, "Good")
    (skill / "evals" / "harbor" / "notes").mkdir()
    (skill / "evals" / "harbor" / "results").mkdir()  # ignored by discovery, like the run
    report = validate_skill(skill)
    assert rules(report) == {"native-task-invalid", "native-task-duplicate", "native-task-no-toml"}
    assert report.ok() is False


def test_bad_case_folder_name(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, config="schema_version: 1\ngrading:\n  mode: custom_only\n")
    native_task(skill, "bad name")
    report = validate_skill(skill)
    assert rules(report) == {"native-task-invalid"}
    assert "valid case id" in report.findings[0].message


# ---------------------------------------------------------------------------------------------------------------
# --harbor-contract


def test_harbor_contract_reports_what_harbor_rejects(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, config="schema_version: 1\ngrading:\n  mode: custom_only\n")
    task = native_task(skill, "t1")
    (task / "tests" / "test.sh").unlink()
    (task / "tests" / "grader.py").write_text("print(1)\n")
    assert others(validate_skill(skill)) == []
    report = validate_skill(skill, harbor_contract=True)
    assert rules(report) == {"harbor-task-rejected"}
    assert "test" in report.findings[0].message


def test_harbor_contract_loads_generated_and_staged_tasks(tmp_path: Path) -> None:
    config = "schema_version: 1\ngrading:\n  mode: default_plus_custom\n"
    skill = make_skill(tmp_path, entries("a", "b"), config=config, grader=True)
    native_task(skill, "a")
    assert others(validate_skill(skill, harbor_contract=True)) == []


def test_harbor_contract_reports_a_generated_task_harbor_rejects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_skilleval.harbor.staging as staging

    original = staging.stage_dataset_task

    def broken(spec: Any, task_dir: Path, mode: str, grader: Path | None) -> Path:
        result = original(spec, task_dir, mode, grader)
        (result / "instruction.md").unlink()
        return result

    monkeypatch.setattr(staging, "stage_dataset_task", broken)
    report = validate_skill(make_skill(tmp_path, entries("a")), harbor_contract=True)
    assert rules(report) == {"harbor-generated-task-rejected"}
    assert "'a'" in report.findings[0].message


# ---------------------------------------------------------------------------------------------------------------
# Command line: output, strict, exit codes


def test_exit_0_on_clean_skill(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(HELLO))
    assert code == 0 and err == ""
    assert out.strip().endswith("ok: 0 error(s), 0 warning(s)")


def test_errors_exit_1_with_human_lines(capsys: pytest.CaptureFixture[str]) -> None:
    skill = FIXTURES / "broken-config"
    code, out, _ = run(capsys, str(skill))
    assert code == 1
    lines = out.splitlines()
    assert (
        f"error: {skill}/evals/config.yml: [config-unknown-key] harbor.n_atempts: unknown key (did you mean 'n_attempts'?)"
        in lines
    )
    assert any(line.startswith(f"error: {skill}/evals: [grader-missing] ") for line in lines)
    assert lines[-1] == "broken-config: FAILED: 3 error(s), 0 warning(s)"


def test_strict_makes_warnings_fail(capsys: pytest.CaptureFixture[str]) -> None:
    skill = str(FIXTURES / "legacy-warnings")
    code, out, _ = run(capsys, skill)
    assert code == 0 and "warning: " in out
    code, out, _ = run(capsys, skill, "--strict")
    assert code == 1 and "(--strict: warnings fail)" in out


def test_strict_ignores_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plus = "schema_version: 1\ngrading:\n  mode: default_plus_custom\n"  # a grader measures correctness
    skill = make_skill(tmp_path, entries("a"), replays=False, grader=True, config=plus)
    code, out, _ = run(capsys, str(skill), "--strict")
    assert code == 0 and "info: " in out and "[replay-missing]" in out


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(FIXTURES / "legacy-warnings"), "--json", "--strict")
    assert code == 1
    document = json.loads(out)
    assert set(document) >= {"skill", "ok", "errors", "warnings"}
    assert document["skill"] == "legacy-warnings" and document["ok"] is False
    assert document["errors"] == []
    assert {w["rule"] for w in document["warnings"]} == {
        "legacy-dataset-shape",
        "unnamed-skill-cases",  # l1 names no skill (l2's explicit null makes it a negative control)
        "expected-script-missing",
        "grader-ignored",
        "correctness-not-measured",  # the grader is ignored in default mode: nothing measures correctness
    }
    for finding in document["warnings"] + document["info"]:
        assert set(finding) == {"rule", "severity", "message", "path"}
    grader = next(w for w in document["warnings"] if w["rule"] == "grader-ignored")
    assert grader["severity"] == "warning"
    assert grader["path"] == str(FIXTURES / "legacy-warnings" / "evals" / "grader.py")


def test_json_output_when_ok(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(HELLO), "--json")
    assert code == 0
    assert json.loads(out) == {
        "skill": "hello-skill",
        "ok": True,
        "strict": False,
        "errors": [],
        "warnings": [],
        "info": [],
    }


def test_paths_are_shown_as_the_user_spelled_the_skill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_skill(tmp_path, entries("a"), grader=True)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "demo")
    assert code == 0
    assert out.splitlines()[0].startswith("warning: demo/evals/evals.json: [correctness-not-measured] case 'a'")
    assert out.splitlines()[1].startswith("warning: demo/evals/grader.py: [grader-ignored] ")


@pytest.mark.parametrize(
    "argv",
    [[], ["--bogus", "x"], ["{skill}", "--grading-mode", "nope"], ["{missing}"], ["{not_skill}"], ["{file}"]],
)
def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    skill = make_skill(tmp_path, entries("a"))
    (tmp_path / "plain").mkdir()
    (tmp_path / "f.txt").write_text("x")
    names = {"skill": skill, "missing": tmp_path / "nope", "not_skill": tmp_path / "plain", "file": tmp_path / "f.txt"}
    code, out, err = run(capsys, *[a.format(**names) for a in argv])
    assert code == 2 and out == ""
    assert err.startswith("skilleval validate: error: ") and len(err.strip().splitlines()) == 1


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for flag in ("--harbor-contract", "--strict", "--json", "--skip-baseline"):
        assert flag in out


def test_validate_skill_raises_usage_error_for_non_skills(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        validate_skill(tmp_path)


def test_report_lines_order_errors_first(tmp_path: Path) -> None:
    data = entries("a", "bad id!")
    skill = make_skill(tmp_path, data, grader=True)
    report = validate_skill(skill)
    lines = report_lines(report, strict=False, shown_as=Path("demo"))
    assert lines[0].startswith("error: ") and lines[1].startswith("warning: ")


# ---------------------------------------------------------------------------------------------------------------
# Collection hardening (issue 9 items 5, 9, 10; issue 14): each collection error is a validate error too


def test_host_variable_in_a_native_task_needs_pass_env(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill = make_skill(tmp_path, entries("t1"))
    native_task(skill, "t1", '[environment.env]\nDB = "${MY_DB_PASSWORD}"\n')
    report = validate_skill(skill)
    assert rules(report, "error") == {"task-env-host-variable"}
    message = report.errors[0].message
    assert "MY_DB_PASSWORD, which looks like a credential" in message and "--pass-env MY_DB_PASSWORD" in message
    assert rules(validate_skill(skill, pass_env=["MY_DB_PASSWORD"]), "error") == set()
    code, out, _ = run(capsys, str(skill), "--pass-env", "MY_DB_PASSWORD")
    assert code == 0, out
    code, out, _ = run(capsys, str(skill))
    assert code == 1 and "[task-env-host-variable]" in out


def test_pass_env_must_be_a_variable_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(make_skill(tmp_path, entries("a"))), "--pass-env", "A=1")
    assert code == 2 and "--pass-env expects a variable name" in err


@pytest.mark.parametrize(
    "toml, field",
    [
        ("[agent]\ntimeout_sec = -5\n", "agent.timeout_sec"),
        ("[verifier]\ntimeout_sec = 0\n", "verifier.timeout_sec"),
        ("[environment]\nbuild_timeout_sec = nan\n", "environment.build_timeout_sec"),
    ],
)
def test_bad_task_durations_are_errors(tmp_path: Path, toml: str, field: str) -> None:
    skill = make_skill(tmp_path, entries("t1"))
    native_task(skill, "t1", toml)
    report = validate_skill(skill)
    assert rules(report, "error") == {"native-task-invalid"}
    assert f"task.toml field {field}: must be" in report.errors[0].message


def test_resource_bombs_are_errors_not_crashes(tmp_path: Path) -> None:
    skill = make_skill(tmp_path, "[" * 200_000 + "]" * 200_000)
    report = validate_skill(skill)
    assert [f.message for f in report.errors] == ["nested deeper than 64 levels"]
    (skill / "evals" / "evals.json").unlink()
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{n}: &{n} [" + ", ".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    (skill / "evals" / "evals.yaml").write_text("skill_name: demo\nevals: []\n" + bomb)
    (skill / "evals" / "config.yml").write_text("schema_version: 1\n" + bomb)
    report = validate_skill(skill)
    assert rules(report, "error") == {"dataset-invalid", "config-invalid"}
    assert all("more than 250,000 nodes" in f.message for f in report.errors)


def test_too_many_entries_is_an_error(tmp_path: Path) -> None:
    rows = "".join(json.dumps({"id": f"c{i}", "prompt": "p", "expected_output": "e"}) + "\n" for i in range(10_001))
    skill = make_skill(tmp_path)
    (skill / "evals" / "evals.jsonl").write_text(rows)
    report = validate_skill(skill)
    assert [f.message for f in report.errors] == ["has more than 10,000 entries (the limit per dataset)"]


def test_near_miss_key_is_a_warning_and_fails_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill = make_skill(tmp_path, entries("a", expected_scirpt="run.py", greeting_name="Ada"))
    report = validate_skill(skill)
    assert rules(report, "warning") == {"dataset-key-typo"}
    assert "key 'expected_scirpt'" in report.warnings[0].message and "'expected_script'" in report.warnings[0].message
    assert run(capsys, str(skill))[0] == 0
    code, out, _ = run(capsys, str(skill), "--strict")
    assert code == 1 and "[dataset-key-typo]" in out


def test_near_miss_key_is_reported_even_when_an_entry_is_broken(tmp_path: Path) -> None:
    data = entries("a", expected_skil=None)
    data["evals"].append({"id": "b"})
    report = validate_skill(make_skill(tmp_path, data))
    assert rules(report) >= {"dataset-entry", "dataset-key-typo"}


def test_yaml_error_line_is_where_the_problem_starts(tmp_path: Path) -> None:
    skill = make_skill(tmp_path)
    lines = [
        "skill_name: demo",
        "evals:",
        "  - id: a",
        "    prompt: p",
        "    expected_output: e",
        "  - id: b",
        "    prompt: q",
        '    expected_output: "open',
        "  - id: c",
        "    prompt: r",
        "    expected_output: s",
    ]
    (skill / "evals" / "evals.yaml").write_text("\n".join(lines) + "\n")
    (message,) = [f.message for f in validate_skill(skill).errors]
    assert message.startswith("invalid YAML at line 8 column 22: while scanning a quoted scalar")


def test_pytest_files_a_run_refuses_are_named(tmp_path: Path) -> None:
    """validate says what a run would refuse: a conftest.py anywhere in the skill, and a pytest config file that
    pytest would choose (one that sets nothing for pytest is not named)."""
    skill = make_skill(tmp_path, entries("a"))
    (skill / "scripts" / "tests").mkdir(parents=True)
    (skill / "scripts" / "tests" / "conftest.py").write_text("")
    (skill / "tox.ini").write_text("[pytest]\naddopts = -p evilplug\n")
    (skill / "setup.cfg").write_text("[metadata]\nname = demo\n")
    (skill / "evals" / "pyproject.toml").write_text('[tool.pytest.ini_options]\nskilleval_ek = "sandbox=none"\n')
    found = {(f.rule, f.severity, f.path) for f in others(validate_skill(skill))}
    assert found == {
        ("skill-conftest", "error", skill.resolve() / "scripts" / "tests" / "conftest.py"),
        ("skill-pytest-config", "warning", skill.resolve() / "tox.ini"),
        ("skill-pytest-config", "warning", skill.resolve() / "evals" / "pyproject.toml"),
    }


# ---------------------------------------------------------------------------------------------------------------
# Several skills: a folder of skills, or several paths


def test_a_folder_of_skills_is_checked_skill_by_skill_with_one_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repository of skills: every skill below the folder, as a run would collect them; a bare one is a finding."""
    make_skill(tmp_path / "skills", {**entries("a"), "skill_name": "good"}, name="good")
    make_skill(tmp_path / "skills" / "nested", {**entries("bad id!"), "skill_name": "broken"}, name="broken")
    bare = tmp_path / "skills" / "bare"
    bare.mkdir()
    (bare / "SKILL.md").write_text("---\nname: bare\ndescription: d\n---\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "skills")
    lines = out.splitlines()
    assert code == 1 and err == ""
    assert "bare: FAILED: 1 error(s), 0 warning(s)" in lines and "good: ok: 0 error(s), 1 warning(s)" in lines
    assert any(line.startswith("error: skills/nested/broken/evals/evals.json: ") for line in lines), out
    assert lines[-1] == "3 skills: 1 ok, 2 FAILED: skills/bare, skills/nested/broken"

    code, out, _ = run(capsys, "skills/good", "skills/good/", "--json")  # one skill named twice: checked once
    document = json.loads(out)
    assert code == 0 and document["ok"] is True and [s["skill"] for s in document["skills"]] == ["good"]
    assert document["skills"][0]["warnings"][0]["rule"] == CORRECTNESS

    code, out, _ = run(capsys, "skills/good", "--json")  # one skill folder: one report object, as before
    assert code == 0 and json.loads(out)["skill"] == "good"


def test_a_folder_with_no_skill_below_it_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "docs" / "evals").mkdir(parents=True)
    code, out, err = run(capsys, str(tmp_path / "docs"))
    assert code == 2 and out == ""
    assert err.strip() == (
        f"skilleval validate: error: {tmp_path / 'docs'}: not a skill folder (no SKILL.md here or in any folder "
        "below it)"
    )


def test_cases_with_the_same_finding_share_a_line_and_json_keeps_one_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = entries("a", "b", "c")
    dataset["evals"][2]["assertions"] = ["Says hello"]  # a different message: its own line
    make_skill(tmp_path, dataset)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "demo")
    lines = [line for line in out.splitlines() if CORRECTNESS in line]
    assert code == 0 and len(lines) == 2, out
    assert lines[0].startswith(f"warning: demo/evals/evals.json: [{CORRECTNESS}] cases 'a', 'b': correctness is not")
    assert lines[1].startswith(f"warning: demo/evals/evals.json: [{CORRECTNESS}] case 'c': correctness is not")
    assert out.splitlines()[-1] == "demo: ok: 0 error(s), 3 warning(s)"  # counted one per case, as JSON lists them
    code, out, _ = run(capsys, "demo", "--json")
    assert [w["message"].split("'")[1] for w in json.loads(out)["warnings"]] == ["a", "b", "c"]


def test_missing_replays_of_several_cases_share_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    plus = "schema_version: 1\ngrading:\n  mode: default_plus_custom\n"  # a grader measures correctness
    make_skill(tmp_path, entries("a", "b"), replays=False, grader=True, config=plus)
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "demo")
    assert "info: demo/evals/replays: [replay-missing] cases 'a', 'b': no replay for with_skill, without_skill " in out


def test_missing_replays_of_several_trigger_queries_share_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """skill-creator's trigger set is 20 queries with no ids: it printed 20 lines `trigger query 'query-1' has no
    replay ...`, where the cases beside it shared one."""
    plus = "schema_version: 1\ngrading:\n  mode: default_plus_custom\n"
    skill = make_skill(tmp_path, entries("a"), grader=True, config=plus)
    queries = [{"query": f"request {n}", "should_trigger": n % 2 == 0} for n in range(4)]
    (skill / "evals" / "triggers.json").write_text(json.dumps(queries))
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "demo")
    lines = [line for line in out.splitlines() if "[replay-missing]" in line]
    assert lines == [
        "info: demo/evals/replays: [replay-missing] trigger queries 'query-1', 'query-2', 'query-3', 'query-4': no "
        "replay (evals/replays/<query id>.json); only the replay agent needs one"
    ], out
    code, out, _ = run(capsys, "demo", "--json")
    assert len(json.loads(out)["info"]) == 4  # one finding each, as for cases
