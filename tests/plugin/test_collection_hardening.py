"""Collection hardening through real pytest runs: host variables need --pass-env, resource bombs and bad durations
are one clear collection error each while other skills still run, and the silent mistakes get words."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, link_from_outside, simple_entries

GOOD = simple_entries("fine")
# Reads the forwarded variable in the verifier and scores 1.0 only when it arrived.
ECHO_TEST = """#!/bin/bash
out="${HARBOR_VERIFIER_DIR:-/logs/verifier}"
mkdir -p "$out"
if [ "$APP_URL" = "http://service.test" ]; then echo 1 > "$out/reward.txt"; else echo 0 > "$out/reward.txt"; fi
"""


def native_task(skill: Path, case: str, toml_extra: str, test_sh: str = ECHO_TEST) -> Path:
    task = skill / "evals" / "harbor" / case
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text(f'schema_version = "1.4"\n[task]\nname = "demo/{case}"\n{toml_extra}')
    (task / "instruction.md").write_text(f"do {case}\n")
    (task / "tests" / "test.sh").write_text(test_sh)
    replays = skill / "evals" / "replays"
    (replays / f"{case}.json").write_bytes(next(replays.glob("*.json")).read_bytes())
    return task


def collect(project: SkillProject, *args: str) -> tuple[pytest.RunResult, str]:
    result = project.run("--collect-only", "-q", *LOCAL_REPLAY, *args, subprocess=False)
    output = result.stdout.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output
    return result, output


# --- host variables (issue 9, item 5) ----------------------------------------------------------------------------


def test_unpassed_host_variable_is_one_collection_error_naming_it(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("other"), grader=False)
    native_task(skill, "t1", '[environment.env]\nDB = "${MY_DB_PASSWORD}"\n')
    skill_project.make_skill("good", GOOD)
    result, output = collect(skill_project, "--grading-mode", "custom_only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "[task-env-host-variable] [environment.env] DB references the host variable MY_DB_PASSWORD" in output
    assert "which looks like a credential" in output and "--pass-env MY_DB_PASSWORD" in output
    assert "1 error" in output
    assert "skills/good/evals/evals.json::fine[replay-with_skill-1]" in output


def test_every_template_form_is_a_host_reference(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> None:
    """Harbor reads `${1PLAIN}` and `${.DOTNAME}` from the host as it reads `${NAME}`: refused the same way."""
    monkeypatch.setenv("1PLAIN", "host-value-1")
    monkeypatch.setenv(".DOTNAME", "host-value-2")
    skill = skill_project.make_skill("native", simple_entries("other"), grader=False)
    native_task(skill, "t1", '[environment.env]\nA = "${1PLAIN}"\nB = "x-${.DOTNAME:-d}"\n')
    result, output = collect(skill_project, "--grading-mode", "custom_only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    for name, ref in (("A", "1PLAIN"), ("B", ".DOTNAME")):
        assert f"[environment.env] {name} references the host variable '{ref}', which is not a variable name" in output
    assert "host-value" not in output and "1 error" in output


def test_passed_host_variable_reaches_the_verifier(
    skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_URL", "http://service.test")
    skill = skill_project.make_skill("native", simple_entries("other"), grader=False)
    native_task(skill, "t1", '[verifier.env]\nAPP_URL = "${APP_URL}"\n')
    refused = skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "--skip-baseline", "-k", "t1")
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    assert "references the host variable APP_URL" in refused.stdout.str()
    result = skill_project.run(
        *LOCAL_REPLAY,
        "--grading-mode",
        "custom_only",
        "--skip-baseline",
        "-k",
        "t1",
        "--ek",
        "sandbox=none",
        "--pass-env",
        "APP_URL",
    )
    result.assert_outcomes(passed=1)
    (trial,) = skill_project.result_json("native")["trials"]
    assert trial["overall"] == 1.0


def test_pass_env_cannot_come_from_the_ini_file(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", simple_entries("other"), grader=False)
    native_task(skill, "t1", '[environment.env]\nAPP_URL = "${APP_URL}"\n')
    ini = skill_project.pytester.makeini("[pytest]\nskilleval_pass_env = APP_URL\n")
    result, _ = collect(skill_project, "--grading-mode", "custom_only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{ini}: skilleval_pass_env: --pass-env is command line only" in result.stderr.str()


# --- resource bombs and bad durations (issue 9, items 9 and 10) --------------------------------------------------

BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{n}: &{n} [" + ", ".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
ENTRY = json.dumps({"id": "c", "prompt": "p", "expected_output": "e"})
BOMBS = {
    "alias-bomb": (
        "evals.yaml",
        "skill_name: b\nevals:\n  - {id: c, prompt: p, expected_output: e}\n" + BOMB,
        "the YAML has more than 250,000 nodes",
    ),
    "deep-json": ("evals.json", "[" * 200_000 + "]" * 200_000, "nested deeper than 64 levels"),
    "entry-flood": ("evals.jsonl", (ENTRY + "\n") * 300_000, "has more than 10,000 entries"),
}


@pytest.mark.parametrize("kind", sorted(BOMBS))
def test_resource_bomb_is_one_collection_error_and_the_rest_runs(skill_project: SkillProject, kind: str) -> None:
    name, text, expected = BOMBS[kind]
    skill_project.make_skill("bomb", raw=text, dataset_name=name)
    skill_project.make_skill("good", GOOD)
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--continue-on-collection-errors", "-rE")
    output = result.stdout.str()
    assert f"skills/bomb/evals/{name}" in output and expected in output
    assert "INTERNALERROR" not in output and "RecursionError" not in output
    result.assert_outcomes(passed=1, errors=1)


def test_alias_bomb_in_config_yml_is_one_collection_error(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("bomb", simple_entries("c"))
    (skill / "evals" / "config.yml").write_text("schema_version: 1\n" + BOMB)
    skill_project.make_skill("good", GOOD)
    result, output = collect(skill_project)
    assert "skills/bomb/evals/config.yml" in output and "more than 250,000 nodes" in output
    assert "skills/good/evals/evals.json::fine[replay-with_skill-1]" in output


def test_attempt_bomb_in_config_yml_is_one_collection_error(skill_project: SkillProject) -> None:
    """Every attempt is an item made at collection: `n_attempts: 100000000` from a skill took all the host's memory
    (a MemoryError traceback under a 3 GB limit, the OOM killer without one) before the first trial."""
    skill = skill_project.make_skill("bomb", simple_entries("c"))
    (skill / "evals" / "config.yml").write_text("schema_version: 1\nharbor:\n  n_attempts: 100000000\n")
    skill_project.make_skill("good", GOOD)
    result, output = collect(skill_project)
    assert f"{skill / 'evals' / 'config.yml'}: harbor.n_attempts: Input should be less than or equal to 100" in output
    assert "skills/good/evals/evals.json::fine[replay-with_skill-1]" in output and "1 error" in output


@pytest.mark.parametrize("value", ["-5", "0", "nan"])
def test_bad_timeout_is_a_collection_error_naming_the_field(skill_project: SkillProject, value: str) -> None:
    skill = skill_project.make_skill("native", simple_entries("t1"))
    native_task(skill, "t1", f"[agent]\ntimeout_sec = {value}\n")
    skill_project.make_skill("good", GOOD)
    result, output = collect(skill_project)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "evals/harbor/t1/task.toml: task.toml field agent.timeout_sec: must be" in output
    assert "skills/good/evals/evals.json::fine[replay-with_skill-1]" in output


# --- links where the run reads evals/ by name --------------------------------------------------------------------

# Each: the name in evals/ made a link to a copy of its real content outside the skill. Before, the dataset, trigger
# set and config file were read through the link (`evals.json -> /etc/passwd` was parsed), a linked evals/ folder was
# run from wherever it pointed, and a linked grader was passed over in silence (the skill ran without it).
EVALS_LINKS = ["evals.json", "config.yml", "triggers.json", "grader.py", "replays", "."]


@pytest.mark.parametrize("name", EVALS_LINKS)
def test_a_link_in_evals_is_one_collection_error_never_followed(
    skill_project: SkillProject, tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    skill = skill_project.copy_hello_skill("linked", triggers=["t-say-hello"], cases=["explicit-greeting"])
    skill_project.copy_hello_skill("good", cases=["explicit-greeting"])
    link = (skill / "evals" / name).resolve()
    outside = link_from_outside(link, tmp_path_factory.mktemp("outside"))
    before = sorted((str(path), os.lstat(path).st_mtime_ns) for path in skill.rglob("*"))
    atime = os.stat(outside).st_atime_ns
    result, output = collect(skill_project)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    lines = [line for line in output.splitlines() if f"{link}: is a symbolic link to {outside}" in line]
    assert len(lines) == 1 and "links in a skill are never followed: copy the" in lines[0], output
    assert "skills/good/evals/evals.json::explicit-greeting[replay-with_skill-1]" in output
    assert "1 error" in output
    if name != "triggers.json":  # a broken trigger set is its own error: the skill's cases still run
        assert "skills/linked/evals/evals.json::" not in output
    assert sorted((str(path), os.lstat(path).st_mtime_ns) for path in skill.rglob("*")) == before
    if outside.is_file():
        os.utime(outside, ns=(atime - 10**9, os.stat(outside).st_mtime_ns))
        collect(skill_project)
        assert os.stat(outside).st_atime_ns == atime - 10**9  # the target was never read


def test_a_fifo_as_config_yml_is_one_collection_error(skill_project: SkillProject) -> None:
    """It was taken for no config at all: the skill ran with the defaults, not the settings its author wrote."""
    skill = skill_project.copy_hello_skill("fifo", cases=["explicit-greeting"])
    (skill / "evals" / "config.yml").unlink()
    os.mkfifo(skill / "evals" / "config.yml")
    skill_project.copy_hello_skill("good", cases=["explicit-greeting"])
    result, output = collect(skill_project)
    assert f"{skill / 'evals' / 'config.yml'}: is not a regular file" in output and "1 error" in output
    assert "skills/good/evals/evals.json::explicit-greeting[replay-with_skill-1]" in output


def test_a_native_task_file_linked_outside_is_one_collection_error(
    skill_project: SkillProject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Harbor reads a native task's instruction.md on the host and hands it to the agent as its prompt: linked to a
    host file (~/.ssh/id_rsa), that file became the prompt. A link inside the task folder is still fine."""
    secret = tmp_path_factory.mktemp("outside") / "id_rsa"
    secret.write_text("PRIVATE KEY MATERIAL\n")
    skill = skill_project.make_skill("native", simple_entries("other"), grader=False)
    task = native_task(skill, "t1", "")
    (task / "instruction.md").unlink()
    (task / "instruction.md").symlink_to(secret)
    inside = native_task(skill, "t2", "")
    (inside / "tests" / "alias.sh").symlink_to("test.sh")
    skill_project.make_skill("good", GOOD)
    result, output = collect(skill_project, "--grading-mode", "custom_only")
    expected = f"{task / 'instruction.md'}: a symbolic link to {secret}, leaving the task folder; links in a skill"
    assert expected in output and "1 error" in output, output
    assert "skills/native/evals/harbor/t2/task.toml::t2[replay-with_skill-1]" in output
    assert "skills/good/evals/evals.json::fine[replay-with_skill-1]" in output


# --- silent mistakes (issue 14) ----------------------------------------------------------------------------------


def test_evals_without_skill_md_says_so(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("nomd", GOOD)
    (skill / "SKILL.md").rename(skill / "skill.md")
    skill_project.make_skill("good", GOOD)
    result, output = collect(skill_project)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "skills/nomd: no SKILL.md here: this folder has evals/ but a skill folder needs SKILL.md" in output
    assert "(found skill.md; the name must be SKILL.md)" in output
    assert "skills/good/evals/evals.json::fine[replay-with_skill-1]" in output


def test_native_tasks_without_skill_md_are_one_error(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("nomd", simple_entries("t1", "t2"))
    for case in ("t1", "t2"):
        native_task(skill, case, "")
    (skill / "evals" / "evals.json").unlink()
    (skill / "SKILL.md").unlink()
    result, output = collect(skill_project, "--grading-mode", "custom_only", "skills/nomd")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert output.count("no SKILL.md here") == 1
    assert "ERROR collecting skills/nomd/evals/harbor/t1/task.toml" in output


@pytest.mark.parametrize(
    "layout, expected",
    [
        ("empty", "no skill here; --skill-eval expects a skill folder: SKILL.md next to evals/"),
        ("skill-md-only", "SKILL.md is here but there is no evals/ folder"),
        ("empty-evals", "no dataset and no native task here, so nothing to run"),
    ],
)
def test_a_path_with_nothing_to_run_says_what_was_expected(
    skill_project: SkillProject, layout: str, expected: str
) -> None:
    target = skill_project.root / "target"
    target.mkdir()
    if layout != "empty":
        (target / "SKILL.md").write_text("---\nname: target\n---\n")
    if layout == "empty-evals":
        (target / "evals").mkdir()
    result = skill_project.run("--collect-only", "-q", "target", subprocess=False)
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "ERROR collecting target" in output
    assert expected in output


def test_a_path_with_ordinary_tests_is_not_an_error(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", GOOD)
    skill_project.pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "skills", "test_plain.py", subprocess=False)
    assert result.ret == pytest.ExitCode.OK
    assert "test_plain.py::test_ok" in result.stdout.str()
    deselected = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, "-k", "nothing-matches", subprocess=False)
    assert "ERROR" not in deselected.stdout.str()


def test_skill_folder_without_the_flag_gets_a_hint_and_nothing_else(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", GOOD)
    result = skill_project.pytester.runpytest("-p", "no:cacheprovider", str(skill))
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [f"skilleval: {skill}: skill evals run only with --skill-eval (try: pytest --skill-eval {skill})"]
    )
    assert not (skill_project.root / "results").exists()
    parent = skill_project.pytester.runpytest("-p", "no:cacheprovider", "skills")
    assert "run only with --skill-eval" in parent.stdout.str()
    elsewhere = skill_project.root / "plain"
    elsewhere.mkdir()
    unrelated = skill_project.pytester.runpytest("-p", "no:cacheprovider", str(elsewhere))
    assert unrelated.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "--skill-eval" not in unrelated.stdout.str()


def test_near_miss_key_is_a_collection_warning(skill_project: SkillProject) -> None:
    data = simple_entries("neg", expected_skil=None, greeting_name="Ada")
    skill_project.make_skill("typo", data)
    result, output = collect(skill_project)
    assert result.ret == pytest.ExitCode.OK
    assert "key 'expected_skil' (entry 0 (id 'neg')) is not a known field but resembles 'expected_skill'" in output
    assert "greeting_name" not in output.split("warnings summary")[-1]


@pytest.mark.parametrize("strict", [("--strict",), ("-o", "strict=true")], ids=["flag", "ini"])
def test_near_miss_key_is_a_collection_error_under_pytest_strict(
    skill_project: SkillProject, strict: tuple[str, ...]
) -> None:
    skill_project.make_skill("typo", simple_entries("neg", expected_skil=None))
    skill_project.make_skill("fine", simple_entries("ok"))
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, *strict)
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "skills/typo/evals/evals.json: key 'expected_skil' (entry 0 (id 'neg')) is not a known field" in output
    assert "(an error under pytest's strict mode)" in output and "1 error" in output
    assert "skills/fine/evals/evals.json::ok[replay-with_skill-1]" in output


def test_yaml_error_points_at_the_line_where_the_problem_starts(skill_project: SkillProject) -> None:
    lines = [
        "skill_name: b",
        "evals:",
        "  - id: a",
        "    prompt: p",
        "    expected_output: e",
        "  - id: b",
        "    prompt: q",
        '    expected_output: "never closed',
        "  - id: c",
        "    prompt: r",
        "    expected_output: s",
    ]
    skill_project.make_skill("badyaml", raw="\n".join(lines) + "\n", dataset_name="evals.yaml")
    _, output = collect(skill_project)
    assert "invalid YAML at line 8 column 22: while scanning a quoted scalar" in output
