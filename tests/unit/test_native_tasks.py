"""Native Harbor tasks: discovery, every rejection rule, entry-id matching and both arms' staging."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pytest_skilleval.harbor.native_staging import stage_native_task, task_skills_dirs
from pytest_skilleval.skill.native_claims import claimed_entry_id
from pytest_skilleval.skill.native_tasks import (
    NativeTask,
    NativeTaskError,
    check_native_task,
    check_native_tasks,
    discover_native_tasks,
    load_native_task,
)

BASE_TOML = """\
# authored by hand
schema_version = "1.4"

[task]
name = "acme/{case}"  # keep this comment

[agent]
timeout_sec = 300.0

[verifier]
timeout_sec = 180.0
"""


def make_task(
    evals: Path,
    case: str = "case-1",
    toml: str | None = None,
    extra: str = "",
    files: dict[str, str] | None = None,
) -> Path:
    task_dir = evals / "harbor" / case
    (task_dir / "tests").mkdir(parents=True, exist_ok=True)
    (task_dir / "environment").mkdir(exist_ok=True)
    (task_dir / "task.toml").write_text((toml if toml is not None else BASE_TOML.format(case=case)) + extra)
    (task_dir / "instruction.md").write_text("Do the thing.\n")
    (task_dir / "tests" / "test.sh").write_text("#!/usr/bin/env bash\necho 1 > /logs/verifier/reward.txt\n")
    for rel, content in (files or {}).items():
        path = task_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return task_dir


def rules(
    task: NativeTask,
    mode: str = "default",
    paired: bool = True,
    dataset_ids: set[str] | None = None,
    **kwargs: object,
) -> set[str]:
    ids = {"case-1"} if dataset_ids is None else dataset_ids
    findings = check_native_task(task, grading_mode=mode, paired=paired, dataset_ids=ids, **kwargs)
    return {f.rule for f in findings}


@pytest.fixture
def evals(tmp_path: Path) -> Path:
    return tmp_path / "evals"


def loaded(evals: Path, **kwargs: object) -> NativeTask:
    return load_native_task(make_task(evals, **kwargs))  # type: ignore[arg-type]


# --- discovery ---------------------------------------------------------------------------------------------------


def test_discovery_finds_cases_and_skips_the_rest(evals: Path) -> None:
    make_task(evals, "b-case")
    make_task(evals, "a-case")
    (evals / "harbor" / "_draft").mkdir()
    (evals / "harbor" / "_draft" / "task.toml").write_text("")
    (evals / "harbor" / ".hidden").mkdir()
    (evals / "harbor" / "results").mkdir()
    (evals / "harbor" / "no-toml").mkdir()
    (evals / "harbor" / "dataset.toml").write_text("")
    tasks = discover_native_tasks(evals)
    assert [t.case_id for t in tasks] == ["a-case", "b-case"]
    assert tasks[0].config.task is not None and tasks[0].config.task.name == "acme/a-case"


def test_no_harbor_dir(evals: Path) -> None:
    assert discover_native_tasks(evals) == []


@pytest.mark.parametrize("name", ["-starts-with-dash", "ends.", "has space", "x" * 129, "CON", "ünïcode"])
def test_invalid_case_folder_names(evals: Path, name: str) -> None:
    make_task(evals, name, toml='schema_version = "1.4"\n')
    with pytest.raises(NativeTaskError, match="not a valid case id|reserved"):
        discover_native_tasks(evals)


def test_case_id_at_128_chars_is_fine(evals: Path) -> None:
    name = "a" * 128
    make_task(evals, name, toml='schema_version = "1.4"\n')
    assert discover_native_tasks(evals)[0].case_id == name


def test_case_folders_differing_in_case_collide(evals: Path, tmp_path: Path) -> None:
    make_task(evals, "Case", toml='schema_version = "1.4"\n')
    make_task(evals, "case", toml='schema_version = "1.4"\n')
    if len(list((evals / "harbor").iterdir())) < 2:
        pytest.skip("case-insensitive file system")
    with pytest.raises(NativeTaskError, match="letter case"):
        discover_native_tasks(evals)


@pytest.mark.parametrize(
    "toml, match",
    [
        ("schema_version = [", "not valid TOML"),
        ("schema_version = 1.4\n", "schema_version"),
        ('[task]\nname = "no-org"\n', "task.name"),
        ('[metadata]\nentry_id = true\n', "entry_id"),
        ('[metadata]\nentry_id = "bad id"\n', "entry_id"),
    ],
)
def test_unreadable_task_toml_names_the_file(evals: Path, toml: str, match: str) -> None:
    task_dir = make_task(evals, toml=toml)
    with pytest.raises(NativeTaskError, match=match) as info:
        load_native_task(task_dir)
    assert str(task_dir / "task.toml") in str(info.value)


def test_entry_id_from_metadata_or_folder(evals: Path) -> None:
    assert loaded(evals).entry_id == "case-1"
    task = loaded(evals, case="folder", extra="\n[metadata]\nentry_id = 42\n")
    assert task.case_id == "folder" and task.entry_id == "42"


# --- a clean task ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["default", "default_plus_custom", "custom_only", "aces_plus_custom"])
@pytest.mark.parametrize("paired", [True, False])
def test_clean_task_has_no_findings(evals: Path, mode: str, paired: bool) -> None:
    assert rules(loaded(evals), mode=mode, paired=paired) == set()


# --- entry ids ---------------------------------------------------------------------------------------------------


def test_entry_id_must_match_dataset_in_standard_modes(evals: Path) -> None:
    task = loaded(evals)
    for mode in ("default", "default_plus_custom"):
        assert rules(task, mode=mode, dataset_ids={"other"}) == {"entry-id-mismatch"}
        assert rules(task, mode=mode, dataset_ids={"case-1", "other"}) == set()
    assert rules(task, mode="custom_only", dataset_ids={"other"}) == set()


def test_metadata_entry_id_is_what_matches(evals: Path) -> None:
    task = loaded(evals, extra='\n[metadata]\nentry_id = "dataset-id"\n')
    assert rules(task, dataset_ids={"case-1"}) == {"entry-id-mismatch"}
    assert rules(task, dataset_ids={"dataset-id"}) == set()


def test_no_dataset_in_standard_mode(evals: Path) -> None:
    task = loaded(evals)
    findings = check_native_task(task, grading_mode="default", paired=True, dataset_ids=None)
    assert [f.rule for f in findings] == ["missing-dataset"]
    assert check_native_task(task, grading_mode="custom_only", paired=True, dataset_ids=None) == []


def test_duplicate_entry_ids_across_tasks(evals: Path) -> None:
    a = loaded(evals, case="a", extra='\n[metadata]\nentry_id = "same"\n')
    b = loaded(evals, case="b", extra='\n[metadata]\nentry_id = "same"\n')
    findings = check_native_tasks([a, b], grading_mode="custom_only", paired=True, dataset_ids=None)
    assert [f.rule for f in findings] == ["duplicate-entry-id"]


# --- every mode --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["default", "custom_only"])
def test_windows_task_environment(evals: Path, mode: str) -> None:
    task = loaded(evals, extra='\n[environment]\nos = "windows"\n', files={"tests/test.bat": "@echo 1"})
    assert "windows-environment" in rules(task, mode=mode, paired=False)


@pytest.mark.parametrize("mode", ["default", "custom_only"])
def test_windows_verifier_environment(evals: Path, mode: str) -> None:
    task = loaded(
        evals,
        extra='environment_mode = "separate"\n[verifier.environment]\nos = "windows"\n',
        files={"tests/test.bat": "@echo 1"},
    )
    assert "windows-environment" in rules(task, mode=mode, paired=False)


def test_windows_step_verifier(evals: Path) -> None:
    toml = (
        'schema_version = "1.4"\n[[steps]]\nname = "one"\n[steps.verifier]\nenvironment_mode = "separate"\n'
        '[steps.verifier.environment]\nos = "windows"\n'
    )
    task = loaded(evals, toml=toml, files={"steps/one/instruction.md": "x"})
    assert "windows-environment" in rules(task, mode="custom_only", paired=False)


@pytest.mark.parametrize("grader", ["tests/grader.py", "tests/grader.sh"])
@pytest.mark.parametrize(
    "dedicated, files",
    [
        ('\n[verifier.environment]\ndocker_image = "python:3.12"\n', {}),
        ('environment_mode = "separate"\n', {"tests/Dockerfile": "FROM python:3.12"}),
        ('environment_mode = "separate"\n', {"tests/docker-compose.yaml": "services: {}"}),
    ],
)
def test_grader_with_dedicated_verifier_image(evals: Path, grader: str, dedicated: str, files: dict[str, str]) -> None:
    task = loaded(evals, extra=dedicated, files={**files, grader: "print()"})
    assert "grader-with-dedicated-verifier-image" in rules(task, mode="custom_only", paired=False)
    clean = loaded(evals, case="case-2", extra=dedicated, files=files)
    assert "grader-with-dedicated-verifier-image" not in rules(clean, mode="custom_only", paired=False)


def test_top_level_evals_grader_counts_for_dedicated_image(evals: Path) -> None:
    task = loaded(evals, extra='environment_mode = "separate"\n', files={"tests/Dockerfile": "FROM x"})
    (evals / "grader.py").write_text("print()")
    assert "grader-with-dedicated-verifier-image" in rules(task, mode="custom_only", paired=False)


def test_dedicated_image_needs_its_own_test_script(evals: Path) -> None:
    task = loaded(evals, extra='environment_mode = "separate"\n', files={"tests/Dockerfile": "FROM x"})
    (task.path / "tests" / "test.sh").unlink()
    assert "dedicated-verifier-missing-test" in rules(task, mode="custom_only", paired=False)


def test_missing_instruction(evals: Path) -> None:
    task = loaded(evals)
    (task.path / "instruction.md").unlink()
    assert "missing-instruction" in rules(task)


def test_custom_only_without_grader_needs_test_script(evals: Path) -> None:
    task = loaded(evals)
    (task.path / "tests" / "test.sh").unlink()
    assert rules(task, mode="custom_only", paired=False) == {"missing-test-script"}
    (task.path / "tests" / "grader.py").write_text("print()")
    assert rules(task, mode="custom_only", paired=False) == set()
    assert "missing-test-script" not in rules(task, mode="default", paired=False)


def test_unknown_task_fields_warn(evals: Path) -> None:
    task = loaded(evals, extra="timeout_secs = 3\n[environment]\ncpu = 2\n")
    findings = check_native_task(task, grading_mode="custom_only", paired=False, dataset_ids=None)
    assert {(f.rule, f.severity) for f in findings} == {("unknown-task-field", "warning")}
    assert {f.message.split("'")[1] for f in findings} == {"verifier.timeout_secs", "environment.cpu"}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_legacy_keys_do_not_warn(evals: Path) -> None:
    task = loaded(evals, toml='version = "1.0"\n[environment]\nmemory = "2G"\n')
    assert rules(task, mode="custom_only", paired=False) == set()


# --- standard modes only -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    ['environment_mode = "separate"\n', '[verifier.environment]\ncpus = 1\n'],
)
def test_separate_verifier_rejected_in_standard_modes(evals: Path, extra: str) -> None:
    task = loaded(evals, extra=extra)
    assert "separate-verifier" in rules(task, mode="default")
    assert "separate-verifier" in rules(task, mode="default_plus_custom")
    assert "separate-verifier" not in rules(task, mode="custom_only")


def test_step_tests_overlay(evals: Path) -> None:
    toml = 'schema_version = "1.4"\n[[steps]]\nname = "one"\n'
    task = loaded(evals, toml=toml, files={"steps/one/instruction.md": "x", "steps/one/tests/test.sh": "exit 0"})
    assert rules(task, mode="default") == {"step-tests-overlay"}
    assert rules(task, mode="custom_only") == set()
    empty = loaded(evals, case="case-2", toml=toml, files={"steps/one/instruction.md": "x"})
    (empty.path / "steps" / "one" / "tests").mkdir()
    assert rules(empty, mode="default", dataset_ids={"case-2"}) == set()


def test_collect_hooks(evals: Path) -> None:
    task = loaded(evals, extra='[[verifier.collect]]\ncommand = "cp x y"\n')
    assert rules(task, mode="default_plus_custom") == {"collect-hooks"}
    assert rules(task, mode="custom_only") == set()
    toml = 'schema_version = "1.4"\n[[steps]]\nname = "one"\n[[steps.verifier.collect]]\ncommand = "true"\n'
    step = loaded(evals, case="case-2", toml=toml, files={"steps/one/instruction.md": "x"})
    assert rules(step, mode="default", dataset_ids={"case-2"}) == {"collect-hooks"}


@pytest.mark.parametrize(
    "table, name",
    [
        ("environment.env", "HARBOR_LOGS_DIR"),
        ("environment.env", "PATH"),
        ("environment.env", "BASH_ENV"),
        ("environment.env", "LD_PRELOAD"),
        ("environment.env", "PYTHONPATH"),
        ("environment.env", "HTTPS_PROXY"),
        ("environment.env", "https_proxy"),
        ("environment.env", "SSL_CERT_FILE"),
        ("environment.env", "CODEX_HOME"),
        ("environment.env", "OPENAI_API_KEY"),
        ("environment.env", "AWS_REGION"),
        ("environment.env", "LLM_JUDGE_MODEL"),
        ("verifier.env", "HARBOR_TESTS_DIR"),
        ("verifier.env", "OPENAI_BASE_URL"),
        ("solution.env", "NODE_OPTIONS"),
    ],
)
def test_task_env_controls_rejected_in_standard_modes(evals: Path, table: str, name: str) -> None:
    task = loaded(evals, extra=f'\n[{table}]\n{name} = "x"\n')
    assert rules(task, mode="default") == {"task-env-control"}
    assert rules(task, mode="custom_only") == set()


def test_task_env_reference_to_credential(evals: Path) -> None:
    task = loaded(evals, extra='\n[environment.env]\nMY_KEY = "${ANTHROPIC_API_KEY}"\n')
    # Not passed by the operator: refused in every mode, naming the variable and calling it a credential.
    for mode in ("default", "custom_only"):
        findings = check_native_task(task, grading_mode=mode, paired=False, dataset_ids={"case-1"})
        assert [(f.rule, f.severity) for f in findings] == [("task-env-host-variable", "error")]
        assert "ANTHROPIC_API_KEY, which looks like a credential" in findings[0].message
        assert "--pass-env ANTHROPIC_API_KEY" in findings[0].message
    # Passed: the standard modes still keep a credential out of the agent's environment; custom_only warns.
    assert rules(task, mode="default", staged_env={"ANTHROPIC_API_KEY"}) == {"task-env-control"}
    findings = check_native_task(
        task, grading_mode="custom_only", paired=False, dataset_ids=None, staged_env={"ANTHROPIC_API_KEY"}
    )
    assert [(f.rule, f.severity) for f in findings] == [("task-env-credential", "warning")]


def test_ordinary_task_env_allowed(evals: Path) -> None:
    task = loaded(evals, extra='\n[environment.env]\nAPP_MODE = "test"\n')
    assert rules(task, mode="default") == set()


@pytest.mark.parametrize(
    "table, value, ref, credential",
    [
        ("environment.env", "${MY_DB_PASSWORD}", "MY_DB_PASSWORD", True),
        ("environment.env", "${SERVICE_TOKEN}", "SERVICE_TOKEN", True),
        ("environment.env", "postgres://u:${DB_SECRET:-x}@db", "DB_SECRET", True),
        ("environment.env", "${AWS_REGION}", "AWS_REGION", True),
        ("environment.env", "${APP_URL}", "APP_URL", False),
        ("verifier.env", "$SERVICE_HOST/api", "SERVICE_HOST", False),
        ("verifier.env", "${GITHUB_TOKEN}", "GITHUB_TOKEN", True),
        ("solution.env", "%USER_SIGNING_KEY%", "USER_SIGNING_KEY", True),
    ],
)
def test_host_variables_need_the_operators_pass_env(
    evals: Path, table: str, value: str, ref: str, credential: bool
) -> None:
    task = loaded(evals, extra=f'\n[{table}]\nTARGET = "{value}"\n')
    for mode in ("default", "custom_only"):
        findings = check_native_task(task, grading_mode=mode, paired=False, dataset_ids={"case-1"})
        assert [f.rule for f in findings] == ["task-env-host-variable"], mode
        message = findings[0].message
        assert f"[{table}] TARGET references the host variable {ref}" in message
        assert ("looks like a credential" in message) is credential
    assert rules(task, mode="custom_only", staged_env={ref}) <= {"task-env-credential"}
    if not ref.startswith("AWS_"):
        assert rules(task, mode="default", staged_env={ref}) == set()


def test_step_tables_need_pass_env_too(evals: Path) -> None:
    toml = BASE_TOML.format(case="case-1") + '\n[[steps]]\nname = "one"\n[steps.verifier.env]\nX = "${HOST_X}"\n'
    task = loaded(evals, toml=toml, files={"steps/one/instruction.md": "x"})
    findings = check_native_task(task, grading_mode="custom_only", paired=False, dataset_ids=None)
    assert [f.rule for f in findings] == ["task-env-host-variable"]
    assert "[[steps]] 'one' verifier.env X references the host variable HOST_X" in findings[0].message
    assert (
        check_native_task(task, grading_mode="custom_only", paired=False, dataset_ids=None, staged_env={"HOST_X"}) == []
    )


def test_exact_forward_of_staged_judge_control_in_verifier_env(evals: Path) -> None:
    task = loaded(evals, extra='\n[verifier.env]\nLLM_JUDGE_MODEL = "${LLM_JUDGE_MODEL}"\n')
    assert rules(task, mode="default", staged_env={"LLM_JUDGE_MODEL"}) == set()
    # Not passed by the operator: one error that says how to pass it.
    assert rules(task, mode="default") == {"task-env-host-variable"}
    other = loaded(evals, case="case-2", extra='\n[verifier.env]\nLLM_JUDGE_MODEL = "gpt-x"\n')
    assert rules(other, mode="default", dataset_ids={"case-2"}, staged_env={"LLM_JUDGE_MODEL"}) == {"task-env-control"}
    agent_side = loaded(evals, case="case-3", extra='\n[environment.env]\nOPENAI_API_KEY = "${OPENAI_API_KEY}"\n')
    assert rules(agent_side, mode="default", dataset_ids={"case-3"}, staged_env={"OPENAI_API_KEY"}) == {
        "task-env-control"
    }
    renamed = loaded(evals, case="case-4", extra='\n[verifier.env]\nLLM_JUDGE_MODEL = "${OTHER_MODEL}"\n')
    assert rules(renamed, mode="default", dataset_ids={"case-4"}, staged_env={"OTHER_MODEL"}) == {"task-env-control"}


# --- paired runs -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["default", "custom_only"])
def test_paired_healthcheck(evals: Path, mode: str) -> None:
    task = loaded(evals, extra='\n[environment.healthcheck]\ncommand = "true"\n')
    assert rules(task, mode=mode, paired=True) == {"paired-healthcheck"}
    assert rules(task, mode=mode, paired=False) == set()


def test_paired_step_healthcheck(evals: Path) -> None:
    toml = 'schema_version = "1.4"\n[[steps]]\nname = "one"\n[steps.healthcheck]\ncommand = "true"\n'
    task = loaded(evals, toml=toml, files={"steps/one/instruction.md": "x"})
    assert rules(task, mode="custom_only", paired=True) == {"paired-healthcheck"}
    assert rules(task, mode="custom_only", paired=False) == set()


def test_paired_step_workdir(evals: Path) -> None:
    toml = 'schema_version = "1.4"\n[[steps]]\nname = "one"\n'
    task = loaded(evals, toml=toml, files={"steps/one/instruction.md": "x", "steps/one/workdir/setup.sh": "true"})
    assert rules(task, mode="custom_only", paired=True) == {"paired-step-workdir"}
    assert rules(task, mode="custom_only", paired=False) == set()


def test_paired_prior_trajectory_single_step(evals: Path) -> None:
    task = loaded(evals, files={"trajectory.json": "{}"})
    assert rules(task, mode="custom_only", paired=True) == {"paired-prior-trajectory"}
    assert rules(task, mode="custom_only", paired=False) == set()


def test_paired_prior_trajectory_first_step_only(evals: Path) -> None:
    toml = 'schema_version = "1.4"\n[[steps]]\nname = "one"\n[[steps]]\nname = "two"\n'
    files = {"steps/one/instruction.md": "x", "steps/two/instruction.md": "y"}
    second = loaded(evals, toml=toml, files={**files, "steps/two/trajectory.json": "{}"})
    assert rules(second, mode="custom_only", paired=True) == set()
    first = loaded(evals, case="case-2", toml=toml, files={**files, "steps/one/trajectory.json": "{}"})
    assert rules(first, mode="custom_only", paired=True) == {"paired-prior-trajectory"}


def test_paired_pre_agent_setup(evals: Path) -> None:
    task = loaded(evals)
    assert rules(task, mode="custom_only", paired=True, pre_agent_setup=["make deps"]) == {"paired-pre-agent-setup"}
    assert rules(task, mode="custom_only", paired=False, pre_agent_setup=["make deps"]) == set()


@pytest.mark.parametrize(
    ("extra", "files", "named"),
    [
        ('\n[environment]\nskills_dir = "/skills"\n', {}, "skills_dir = '/skills'"),
        ("", {"environment/Dockerfile": "FROM ubuntu\nCOPY skills/ /skills/\n"}, "COPY skills/ /skills/"),
        ("", {"environment/Dockerfile": "FROM ubuntu\nadd ./skills /root/.claude/skills\n"}, "add ./skills"),
        ("", {"environment/skills/pdf/SKILL.md": "---\nname: pdf\n---\n"}, "environment/skills/ holds pdf"),
    ],
)
def test_paired_shipped_skills_are_refused_with_the_reason(evals: Path, extra: str, files: dict, named: str) -> None:
    task = loaded(evals, extra=extra, files=files)
    findings = check_native_task(task, grading_mode="custom_only", paired=True, dataset_ids={"case-1"})
    (finding,) = [f for f in findings if f.rule == "paired-shipped-skills"]
    assert finding.severity == "error" and named in finding.message
    assert "baseline would get the skill too" in finding.message and "--skip-baseline" in finding.message
    assert rules(task, mode="custom_only", paired=False) == set()


def test_dockerfile_without_skills_is_fine(evals: Path) -> None:
    task = loaded(evals, files={"environment/Dockerfile": "FROM ubuntu\nCOPY app/ /app/\nRUN echo skills\n"})
    assert rules(task, mode="custom_only", paired=True) == set()


def test_claimed_entry_id_holds_for_tasks_harbor_refuses(evals: Path) -> None:
    """A task Harbor's model refuses (name not org/name) still claims its entry, like any refused task."""
    bad_name = make_task(evals, "case-1", toml='schema_version = "1.4"\n[task]\nname = "no-slash"\n')
    with pytest.raises(NativeTaskError):
        load_native_task(bad_name)
    assert claimed_entry_id(bad_name) == "case-1"
    with_meta = make_task(evals, "case-2", toml='[task]\nname = "x"\n[metadata]\nentry_id = "entry-9"\n')
    assert claimed_entry_id(with_meta) == "entry-9"
    broken = make_task(evals, "case-3", toml="not [toml")
    assert claimed_entry_id(broken) == "case-3"
    assert claimed_entry_id(make_task(evals, "case-4")) == "case-4"


def test_every_finding_names_its_rule_and_a_message(evals: Path) -> None:
    task = loaded(evals, extra='\n[environment.healthcheck]\ncommand = "true"\n')
    for finding in check_native_task(task, grading_mode="default", paired=True, dataset_ids=set()):
        assert finding.rule and finding.message and finding.severity in ("error", "warning")


# --- staging -----------------------------------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("arm, suffix", [("with_skill", "-with-skill"), ("without_skill", "-without-skill")])
def test_stage_both_arms(evals: Path, tmp_path: Path, arm: str, suffix: str) -> None:
    task = loaded(evals, files={"environment/Dockerfile": "FROM x\n"})
    before = snapshot(task.path)
    staged = stage_native_task(task, tmp_path / "run" / arm / "case-1", arm)
    assert snapshot(task.path) == before  # the source is untouched
    text = (staged / "task.toml").read_text()
    data = tomllib.loads(text)
    assert data["task"]["name"] == f"acme/case-1{suffix}"
    assert data["metadata"]["entry_id"] == "case-1"
    assert "# keep this comment" in text and "# authored by hand" in text
    assert (staged / "environment" / "Dockerfile").read_text() == "FROM x\n"
    assert (staged / "tests" / "test.sh").is_file()


def test_stage_keeps_authored_entry_id(evals: Path, tmp_path: Path) -> None:
    task = loaded(evals, extra='\n[metadata]\nentry_id = "the-entry"\nowner = "me"\n')
    data = tomllib.loads((stage_native_task(task, tmp_path / "s", "without-skill") / "task.toml").read_text())
    assert data["metadata"] == {"entry_id": "the-entry", "owner": "me"}
    assert data["task"]["name"] == "acme/case-1-without-skill"


def test_stage_adds_entry_id_to_existing_metadata(evals: Path, tmp_path: Path) -> None:
    task = loaded(evals, extra='\n[metadata]\nowner = "me"\n')
    data = tomllib.loads((stage_native_task(task, tmp_path / "s", "with_skill") / "task.toml").read_text())
    assert data["metadata"] == {"entry_id": "case-1", "owner": "me"}


def test_stage_without_task_table(evals: Path, tmp_path: Path) -> None:
    task = loaded(evals, toml='schema_version = "1.4"\n')
    staged = stage_native_task(task, tmp_path / "case-1-with-skill", "with_skill")
    data = tomllib.loads((staged / "task.toml").read_text())
    assert "task" not in data and data["metadata"]["entry_id"] == "case-1"


def test_stage_inline_task_table_falls_back_to_rewrite(evals: Path, tmp_path: Path) -> None:
    task = loaded(evals, toml='schema_version = "1.4"\ntask = { name = "acme/x" }\nmetadata = { a = 1 }\n')
    data = tomllib.loads((stage_native_task(task, tmp_path / "s", "with_skill") / "task.toml").read_text())
    assert data["task"]["name"] == "acme/x-with-skill" and data["metadata"] == {"a": 1, "entry_id": "case-1"}


def test_stage_refuses_existing_or_nested_destination(evals: Path, tmp_path: Path) -> None:
    task = loaded(evals)
    (tmp_path / "exists").mkdir()
    with pytest.raises(NativeTaskError, match="already exists"):
        stage_native_task(task, tmp_path / "exists", "with_skill")
    with pytest.raises(NativeTaskError, match="outside the task source"):
        stage_native_task(task, task.path / "staged", "with_skill")
    with pytest.raises(ValueError):
        stage_native_task(task, tmp_path / "x", "baseline")


def test_staged_copy_loads_in_harbor(evals: Path, tmp_path: Path) -> None:
    from harbor.models.task.task import Task

    task = loaded(evals)
    staged = stage_native_task(task, tmp_path / "s", "with_skill")
    assert Task(staged).name == "acme/case-1-with-skill"


# --- durations (issue 9, item 10) --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, field, got",
    [
        ("\n[agent]\ntimeout_sec = -5.0\n", "agent.timeout_sec", "-5"),
        ("\n[verifier]\ntimeout_sec = 0\n", "verifier.timeout_sec", "0"),
        ("\n[verifier]\ntimeout_sec = nan\n", "verifier.timeout_sec", "nan"),
        ("\n[agent]\ntimeout_sec = inf\n", "agent.timeout_sec", "inf"),
        ("\n[environment]\nbuild_timeout_sec = -1\n", "environment.build_timeout_sec", "-1"),
        (
            '\n[environment.healthcheck]\ncommand = "true"\ninterval_sec = 0\n',
            "environment.healthcheck.interval_sec",
            "0",
        ),
        ('\n[[verifier.collect]]\ncommand = "true"\ntimeout_sec = -3\n', "verifier.collect[0].timeout_sec", "-3"),
    ],
)
def test_bad_durations_are_refused_naming_the_field(evals: Path, extra: str, field: str, got: str) -> None:
    toml = (
        BASE_TOML.format(case="case-1")
        .replace("[agent]\ntimeout_sec = 300.0\n", "")
        .replace("[verifier]\ntimeout_sec = 180.0\n", "")
        + extra
    )
    with pytest.raises(NativeTaskError) as caught:
        load_native_task(make_task(evals, toml=toml))
    message = str(caught.value)
    assert f"task.toml field {field}: must be" in message and f"(got {got})" in message
    assert "greater than 0" in message


def test_step_durations_name_the_step(evals: Path) -> None:
    toml = BASE_TOML.format(case="case-1") + '\n[[steps]]\nname = "one"\n[steps.agent]\ntimeout_sec = -1\n'
    with pytest.raises(NativeTaskError, match=r"field steps\[0\] \('one'\)\.agent\.timeout_sec: must be"):
        load_native_task(make_task(evals, toml=toml, files={"steps/one/instruction.md": "x"}))


def test_zero_grace_period_and_positive_durations_are_fine(evals: Path) -> None:
    extra = (
        '\n[environment]\nbuild_timeout_sec = 30\n[environment.healthcheck]\ncommand = "true"\nstart_period_sec = 0\n'
    )
    task = load_native_task(make_task(evals, extra=extra))
    assert task.config.environment.healthcheck.start_period_sec == 0


def test_deep_or_huge_task_toml_is_a_clean_error(evals: Path) -> None:
    with pytest.raises(NativeTaskError, match="nested too deeply"):
        load_native_task(make_task(evals, toml="x = " + "[" * 100_000 + "]" * 100_000 + "\n"))
    with pytest.raises(NativeTaskError, match="larger than 1024 KiB"):
        load_native_task(make_task(evals, case="case-2", toml="# pad\n" * 200_000))


def test_a_task_with_its_own_skills_folder_tells_the_grader(evals: Path, tmp_path: Path) -> None:
    """Harbor hands the task's `[environment] skills_dir` to the agent; a skill loaded from there is under test."""
    from verifier.checks._execution_parts import check_activation
    from verifier.evidence import ToolCallRecord

    plain = stage_native_task(loaded(evals), tmp_path / "plain", "with_skill")
    assert task_skills_dirs(plain) is None
    own = make_task(evals, "own", extra='\n[environment]\nskills_dir = "/opt/skills"\n')
    staged = stage_native_task(load_native_task(own), tmp_path / "own", "with_skill")
    folders = task_skills_dirs(staged)
    assert folders is not None and folders[-1] == "/opt/skills" and "/runtime/skills" in folders
    read = [ToolCallRecord(index=0, tool="Read", arguments={"file_path": "/opt/skills/demo/SKILL.md"})]
    assert check_activation(read, ["demo"])["score"] == 0.0
    assert check_activation(read, ["demo"], skills_dirs=tuple(folders))["score"] == 1.0
