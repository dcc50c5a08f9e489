"""A misconfigured run stops at session start with one line per problem, before any image build or trial."""

from __future__ import annotations

import pytest

from tests.plugin.test_byot_runs import _native_task
from tests.support import LOCAL_REPLAY, SkillProject, simple_entries

CREDENTIALS = ("OPENAI_API_KEY", "CODEX_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)


def _stopped_before_any_trial(project: SkillProject, result: pytest.RunResult) -> str:
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert "skilleval preflight failed (nothing was started)" in output
    assert "Traceback" not in output
    assert " passed" not in output and "error during collection" not in output
    assert not (project.root / "results").exists()  # no trial, so no results tree
    return output


def test_missing_agent_credential_is_one_line(skill_project: SkillProject, no_credentials: None) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    (skill_project.root / ".env").write_text("OPENAI_API_KEY=sk-from-a-dotenv-file-1234\n")  # never loaded
    result = skill_project.run("--agents", "codex,claude,replay", "--env-mode", "local")
    output = _stopped_before_any_trial(skill_project, result)
    assert "agent codex: no credential: set OPENAI_API_KEY (or CODEX_API_KEY) in the environment" in output
    assert "agent claude-code: no credential: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)" in output
    assert "agent replay" not in output
    # Under `local` the sandbox cannot install a CLI: the line says so and how to provide it (no raw apt-get error).
    assert "agent codex CLI: no codex CLI is available: the local sandbox cannot install it; run `npm install" in output


def test_unreachable_docker_daemon_is_one_line(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    output = _stopped_before_any_trial(skill_project, skill_project.run("--agents", "replay", "--env-mode", "docker"))
    lines = [line for line in output.splitlines() if "unreachable" in line]
    assert len(lines) == 1 and "tcp://127.0.0.1:9" in lines[0], output


def test_unknown_environment_kwarg_is_one_line(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run("--agents", "replay", "--env-mode", "docker", "--ek", "bogus=1")
    output = _stopped_before_any_trial(skill_project, result)
    assert "environment kwargs: --ek bogus: unknown to the docker environment (it accepts: none)" in output


def test_unknown_environment_mode_is_one_line(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    output = _stopped_before_any_trial(skill_project, skill_project.run("--agents", "replay", "--env-mode", "dokcer"))
    assert "--env-mode dokcer: unknown" in output


def test_runtime_env_reference_needs_pass_env(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "config.yml").write_text("schema_version: 1\nharbor:\n  runtime_env:\n    DB: ${MY_DB_URL}\n")
    output = _stopped_before_any_trial(skill_project, skill_project.run(*LOCAL_REPLAY))
    assert "harbor.runtime_env DB references the host variable MY_DB_URL; pass it with --pass-env MY_DB_URL" in output


@pytest.mark.parametrize(
    "arms", [(), ("--skip-with-skill",), ("--baseline-skill", "BASELINE")], ids=["paired", "baseline only", "version"]
)
def test_pre_agent_setup_is_refused_wherever_the_baseline_runs(skill_project: SkillProject, arms: tuple[str]) -> None:
    """The baseline arm alone (--skip-with-skill) gets the baseline's rules: it ran the skill's setup commands. So
    does the previous version's arm (--baseline-skill): the version under test's setup would run there."""
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "config.yml").write_text("schema_version: 1\nharbor:\n  pre_agent_setup: echo hi\n")
    previous = skill_project.root / "previous" / "demo"
    previous.mkdir(parents=True)
    (previous / "SKILL.md").write_text((skill / "SKILL.md").read_text())
    arms = tuple(str(previous) if arg == "BASELINE" else arg for arg in arms)
    output = _stopped_before_any_trial(skill_project, skill_project.run(*LOCAL_REPLAY, *arms))
    assert "a paired run refuses it, and so does --skip-with-skill (the baseline arm never runs them" in output
    if "--baseline-skill" in arms:
        assert "the version under test's commands would run in the baseline_skill arm; use --arms with_skill" in output


def test_pre_agent_setup_runs_in_the_with_skill_arm_alone_beside_a_baseline_version(
    skill_project: SkillProject,
) -> None:
    """The way out the refusal names works: --arms with_skill with --baseline-skill runs the setup."""
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "config.yml").write_text("schema_version: 1\nharbor:\n  pre_agent_setup: echo hi\n")
    previous = skill_project.root / "previous" / "demo"
    previous.mkdir(parents=True)
    (previous / "SKILL.md").write_text((skill / "SKILL.md").read_text())
    result = skill_project.run(*LOCAL_REPLAY, "--baseline-skill", str(previous), "--arms", "with_skill")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*1 passed*"])


def test_blocked_runtime_env_name_stops_the_run_with_one_line(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    (skill / "evals" / "config.yml").write_text("schema_version: 1\nharbor:\n  runtime_env: [OPENAI_API_KEY]\n")
    result = skill_project.run(*LOCAL_REPLAY)
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # a collection error: nothing ran
    assert "harbor.runtime_env: contains operator-owned credential name(s): OPENAI_API_KEY" in output
    assert " passed" not in output and "Traceback" not in output
    assert not (skill_project.root / "results").exists()


def test_an_unknown_agent_gets_the_nearest_names_and_a_sorted_list(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run("--agents", "codx", "--env-mode", "local")
    output = _stopped_before_any_trial(skill_project, result)
    line = next(line for line in output.splitlines() if "agent codx:" in line)
    assert "unknown agent 'codx': did you mean codex" in line
    listed = line.split("known agents: ", 1)[1].split(" (or a module:Class", 1)[0].split(", ")
    assert listed == sorted(listed)
    assert {"replay", "claude", "claude-code", "terminus-2", "codex"} <= set(listed)


def test_an_open_file_limit_below_the_concurrency_stops_the_run_naming_the_limit(skill_project: SkillProject) -> None:
    import resource
    import subprocess
    import sys

    skill_project.make_skill("demo", simple_entries("c1"))

    def low_limit() -> None:  # the hard limit too, so the start-up cannot raise the soft one past it
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, 512))

    def run(concurrency: int) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "pytest", "--skill-eval", "-p", "no:cacheprovider", "skills/demo", *LOCAL_REPLAY]
        argv += ["--results-dir", "results", "--n-concurrent", str(concurrency)]
        return subprocess.run(
            argv, cwd=skill_project.root, capture_output=True, text=True, preexec_fn=low_limit, timeout=300
        )

    done = run(100)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert "open files: --n-concurrent 100 needs about 664 open files and this process may open 512" in output
    assert "ulimit -n 664" in output and "--n-concurrent 74 or less" in output
    assert not (skill_project.root / "results").exists()
    fits = run(4)
    assert fits.returncode == 0, fits.stdout + fits.stderr


def test_a_low_soft_open_file_limit_is_raised_at_start_so_many_trials_in_flight_run(
    skill_project: SkillProject,
) -> None:
    """A soft limit of 256 open files (the hard one left as it is) would stop --n-concurrent 100 in the preflight
    and then with EMFILE mid-run; the start raises it to the hard limit, and the run goes through."""
    import resource
    import subprocess
    import sys

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip(f"the hard open-file limit here ({hard}) is below what 100 trials in flight need")
    skill_project.make_skill("demo", simple_entries("c1", "c2"))

    def low_soft_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    argv = [sys.executable, "-m", "pytest", "--skill-eval", "-p", "no:cacheprovider", "skills/demo", *LOCAL_REPLAY]
    argv += ["--results-dir", "results", "--n-concurrent", "100"]
    done = subprocess.run(
        argv, cwd=skill_project.root, capture_output=True, text=True, preexec_fn=low_soft_limit, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "open files" not in done.stdout + done.stderr


def test_an_agent_without_skills_is_refused_for_the_with_skill_arm(skill_project: SkillProject) -> None:
    """Harbor's `nop` declares no skills: its with-skill trial of a native task would only fail at run time (and
    Harbor's clean-up then logged a second error); the preflight names the agent, why and the arms it can run."""
    skill = skill_project.make_skill("native", simple_entries("t1"), grader=False)
    _native_task(skill, "t1")
    result = skill_project.run("--agents", "nop", "--env-mode", "local", "--ek", "sandbox=none", "-k", "task.toml")
    output = _stopped_before_any_trial(skill_project, result)
    assert (
        "agent nop: does not support skills (Harbor's capabilities.skills is false), so its with_skill arm cannot "
        "run; use --arms without_skill, or an agent that takes skills"
    ) in " ".join(output.split())
    baseline = skill_project.run(
        "--agents", "nop", "--env-mode", "local", "--ek", "sandbox=none", "-k", "task.toml", "--arms", "without_skill"
    )
    baseline.assert_outcomes(passed=1)


def test_terminus2_without_a_model_is_one_line_and_a_config_model_is_enough(
    skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """terminus-2 cannot start without a model: every trial was an ERROR with Harbor's traceback ("model_name is
    required for Terminus 2"). Now the run stops at once naming both ways to give one; the skill's config.yml
    model satisfies the check (the run then stops on its one other problem, no credential)."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    skill = skill_project.make_skill("demo", simple_entries("c1"))
    result = skill_project.run("--agents", "terminus-2", "--env-mode", "local")
    output = " ".join(_stopped_before_any_trial(skill_project, result).split())
    assert (
        "agent terminus-2: terminus-2 needs a model and none is set: pass --agent-model terminus-2=PROVIDER/NAME "
        "(any litellm model name, e.g. terminus-2=openai/gpt-5) or set harbor.agents.terminus-2.model in "
        f"{skill / 'evals' / 'config.yml'}"
    ) in output
    (skill / "evals" / "config.yml").write_text("schema_version: 1\nharbor:\n  agents:\n    terminus-2: {model: x/y}\n")
    monkeypatch.delenv("OPENAI_API_KEY")
    again = skill_project.run("--agents", "terminus-2", "--env-mode", "local")
    output = _stopped_before_any_trial(skill_project, again)  # every problem is listed: the model is not one
    assert "agent terminus-2: no credential: set OPENAI_API_KEY" in output and "needs a model" not in output
