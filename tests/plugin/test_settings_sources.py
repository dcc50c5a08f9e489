"""Where a setting may come from: isolation-weakening settings only from the command line, never from an ini file
(its keys or its addopts) or evals/config.yml; and one range and one spelling whatever the source."""

from __future__ import annotations

import json

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries


def collect(project: SkillProject, *args: str) -> pytest.RunResult:
    project.make_skill("demo", simple_entries("c1"))
    return project.run("--collect-only", "-q", *LOCAL_REPLAY, *args, subprocess=False)


def refusal_line(result: pytest.RunResult) -> str:
    """The one error line of a refused session."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(lines) == 1, result.stderr.str()
    return lines[0]


@pytest.mark.parametrize(
    "ini_line, flag",
    [
        ("skilleval_ek = sandbox=none", "--ek sandbox=none"),
        ("skilleval_ek = tools=/usr", "--ek tools=/usr"),
        ("skilleval_pass_env = APP_URL", "--pass-env"),
        ("skilleval_harbor_keep_jobs = true", "--harbor-keep-jobs"),
        ("skilleval_agent_kwarg = replay:x=1", "--agent-kwarg"),
        ("skilleval_trust_skill_code = true", "--trust-skill-code"),
    ],
)
def test_an_ini_file_cannot_weaken_isolation(skill_project: SkillProject, ini_line: str, flag: str) -> None:
    ini = skill_project.pytester.makeini(f"[pytest]\n{ini_line}\n")
    line = refusal_line(collect(skill_project))
    key = ini_line.split(" =")[0]
    assert line.startswith(f"ERROR: {ini}: {key}: {flag}") and "command line" in line, line


@pytest.mark.parametrize(
    "addopts", ["--ek sandbox=none", "--ek=tools=/usr", "--pass-env APP_URL", "--harbor-keep-jobs"]
)
def test_ini_addopts_cannot_weaken_isolation_either(skill_project: SkillProject, addopts: str) -> None:
    ini = skill_project.pytester.makeini(f"[pytest]\naddopts = {addopts}\n")
    line = refusal_line(collect(skill_project))
    assert line.startswith(f"ERROR: {ini}: addopts: ") and "command line" in line, line


def test_an_ini_override_is_not_the_flag(skill_project: SkillProject) -> None:
    line = refusal_line(collect(skill_project, "-o", "skilleval_ek=sandbox=none"))
    assert line.startswith("ERROR: -o skilleval_ek: --ek sandbox=none weakens isolation") and "as --ek on" in line


def test_the_ini_sandbox_setting_was_turning_isolation_off(skill_project: SkillProject) -> None:
    """The probe of the security review: this ini used to run every trial with run_config "sandbox": "none"."""
    skill_project.pytester.makeini("[pytest]\nskilleval_ek = sandbox=none\n")
    result = collect(skill_project)
    assert "sandbox=none weakens isolation" in refusal_line(result)
    assert not list((skill_project.root / "results").glob("demo/*/run_config.json"))


def test_the_command_line_still_turns_the_sandbox_off(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run(*LOCAL_REPLAY, "--ek", "sandbox=none")
    result.assert_outcomes(passed=2)
    (config,) = (skill_project.root / "results" / "demo").glob("2*/run_config.json")
    assert json.loads(config.read_text())["sandbox"] == "none"


def test_an_ini_file_may_ask_for_the_sandbox(skill_project: SkillProject) -> None:
    skill_project.pytester.makeini("[pytest]\nskilleval_ek =\n    sandbox=bwrap\nskilleval_n_attempts = 2\n")
    skill_project.pytester.makeconftest(
        "import json, pytest\nfrom pytest_skilleval import options\n\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_configure(config):\n"
        "    with open('ini-settings.json', 'w') as out:\n"
        "        json.dump(options.read_sources(config).ini, out)\n"
    )
    collect(skill_project)
    given = json.loads((skill_project.root / "ini-settings.json").read_text())
    assert given == {"env_kwargs": {"sandbox": "bwrap"}, "n_attempts": 2}


@pytest.mark.parametrize(
    "harbor, key, flag",
    [
        ("ek: {sandbox: none}", "harbor.ek", "--ek"),
        ("env_kwargs: {tools: /usr}", "harbor.env_kwargs", "--ek"),
        ("pass_env: [APP_URL]", "harbor.pass_env", "--pass-env"),
        ("harbor_keep_jobs: true", "harbor.harbor_keep_jobs", "--harbor-keep-jobs"),
        ("trust_skill_code: true", "harbor.trust_skill_code", "--trust-skill-code"),
    ],
)
def test_a_skill_config_cannot_weaken_isolation(skill_project: SkillProject, harbor: str, key: str, flag: str) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    config = skill / "evals" / "config.yml"
    config.write_text(f"schema_version: 1\nharbor:\n  {harbor}\n")
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    output = result.stdout.str() + result.stderr.str()
    assert f"{config}: {key}: {flag} is command line only" in output, output
    assert result.ret != pytest.ExitCode.OK


def test_grading_mode_is_spelled_the_same_on_the_command_line_and_in_config(skill_project: SkillProject) -> None:
    """config.yml took `Custom_Only`; the flag refused it."""
    result = collect(skill_project, "--grading-mode", "Custom_Only")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()


@pytest.mark.parametrize("flag, value", [("--timeout-multiplier", "inf"), ("--pass-threshold", "nan")])
def test_non_finite_numbers_are_refused_on_the_command_line_as_in_config(
    skill_project: SkillProject, flag: str, value: str
) -> None:
    """config.yml refused `.inf`; the flag took `inf` and scaled every timeout by it."""
    line = refusal_line(collect(skill_project, flag, value))
    assert "finite number" in line, line


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--n-attempts", "abc"], "ERROR: --n-attempts: expected a whole number, not 'abc'"),
        (["--n-attempts", "1.5"], "ERROR: --n-attempts: expected a whole number, not '1.5'"),
        (["--n-concurrent", "four"], "ERROR: --n-concurrent: expected a whole number, not 'four'"),
        (["--pass-threshold", "half"], "ERROR: --pass-threshold: expected a number, not 'half'"),
        (
            ["-o", "skilleval_n_attempts=abc"],
            "ERROR: ini option skilleval_n_attempts: expected a whole number, not 'abc'",
        ),
    ],
)
def test_a_value_that_is_not_a_number_is_one_line_naming_the_option(
    skill_project: SkillProject, args: list[str], expected: str
) -> None:
    """Not Python's "invalid literal for int() with base 10": the option, what it takes and what it got."""
    assert refusal_line(collect(skill_project, *args)) == expected
