"""Preflight checks, one line per problem: agent credentials (names from Harbor's model-connection spec), Docker,
--ek keys, and what a skill's config asks for; plus how host values reach a trial."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_skilleval.harbor.credentials import agent_env, runtime_env_values
from pytest_skilleval.harbor.preflight import (
    agent_checks,
    docker_checks,
    environment_checks,
    session_problems,
    skill_checks,
)
from pytest_skilleval.skill.settings import RunSettings


def test_missing_agent_credentials_name_the_variable() -> None:
    settings = RunSettings(agents=["codex", "claude-code", "replay"])
    lines = [check.problem for check in agent_checks(settings, environ={}) if check.problem]
    assert lines == [
        "no credential: set OPENAI_API_KEY (or CODEX_API_KEY) in the environment",
        "no credential: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment",
    ]
    assert all(check.ok for check in agent_checks(settings, environ={"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}))


def test_agent_gets_only_its_own_credentials_as_templates() -> None:
    environ = {"OPENAI_API_KEY": "sk-secret", "ANTHROPIC_API_KEY": "a", "OPENAI_BASE_URL": "http://x", "HOME": "/r"}
    assert agent_env("codex", None, environ) == {
        "OPENAI_API_KEY": "${OPENAI_API_KEY}",
        "OPENAI_BASE_URL": "${OPENAI_BASE_URL}",
    }
    assert agent_env("claude-code", None, environ) == {"ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY}"}
    assert agent_env("replay", None, environ) == {}


def test_runtime_env_reads_only_passed_host_variables() -> None:
    env = {"URL": "http://${HOST}:${PORT:-80}/x", "PLAIN": "v", "SNEAKY": "$SECRET"}
    values = runtime_env_values(env, ["HOST"], {"HOST": "db", "SECRET": "s3cr3t"})
    assert values == {"URL": "http://db:80/x", "PLAIN": "v", "SNEAKY": ""}


def test_skill_checks(tmp_path: Path) -> None:
    skill = tmp_path / "demo"
    (skill / "evals").mkdir(parents=True)
    settings = RunSettings(runtime_env={"DB": "${DB_URL}"}, pre_agent_setup=["make"])
    lines = [check.problem for check in skill_checks(skill, settings, environ={}) if check.problem]
    assert any(
        "runtime_env DB references the host variable DB_URL; pass it with --pass-env DB_URL" in ln for ln in lines
    )
    assert any("pre_agent_setup" in ln and "paired run refuses it" in ln for ln in lines)
    passed = RunSettings(runtime_env={"DB": "${DB_URL}"}, pre_agent_setup=["make"], skip_baseline=True)
    assert [c for c in skill_checks(skill, passed, {"DB_URL": "x"}, pass_env=["DB_URL"]) if c.problem] == []


def test_bad_custom_dockerfile_is_a_preflight_line(tmp_path: Path) -> None:
    skill = tmp_path / "demo"
    (skill / "evals" / "environment").mkdir(parents=True)
    (skill / "evals" / "environment" / "Dockerfile").write_text("RUN echo\n")
    lines = session_problems(RunSettings(env_mode="local", agents=["replay"]), {skill: RunSettings()}, environ={})
    assert lines == [f"{skill}/evals/environment/Dockerfile: the first instruction must be FROM"]


def test_unknown_mode_and_kwargs_are_lines() -> None:
    assert "unknown" in environment_checks(RunSettings(env_mode="nope"))[0].problem
    checks = environment_checks(RunSettings(env_mode="local", env_kwargs={"bogus": "1"}))
    assert len(checks) == 1 and checks[0].problem.startswith("--ek bogus: unknown to the local environment")


def test_unreachable_docker_daemon_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("docker") is None:
        assert docker_checks()[0].problem.startswith("the docker CLI is not on PATH")
        return
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    (check,) = docker_checks()
    assert check.problem.startswith("unreachable at tcp://127.0.0.1:9") and "DOCKER_HOST" in check.problem


def test_no_dotenv_file_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dotenv import load_dotenv

    from pytest_skilleval.harbor.process_env import default_env

    monkeypatch.setenv("PYTHON_DOTENV_DISABLED", "0")  # restored after the test; default_env turns it on
    monkeypatch.delenv("SKILLEVAL_DOTENV_PROBE", raising=False)
    (tmp_path / ".env").write_text("SKILLEVAL_DOTENV_PROBE=from-dotenv\n")
    default_env()
    load_dotenv(tmp_path / ".env")  # what Harbor's modules do on import
    import os

    assert "SKILLEVAL_DOTENV_PROBE" not in os.environ


FAKE_DOCKER = """#!/bin/sh
# A docker CLI whose daemon answers, with an image store holding only $FAKE_DOCKER_IMAGES and no registry.
case "$1 $2" in
  "info --format") echo 28.2.2 ;;
  "compose version") echo 2.37.1 ;;
  "image inspect") for image in $FAKE_DOCKER_IMAGES; do [ "$image" = "$3" ] && exit 0; done
                   echo "Error: No such image: $3" >&2; exit 1 ;;
  "manifest inspect") echo "Get https://registry-1.docker.io/v2/: dial tcp: lookup registry-1.docker.io: no such host" >&2
                      exit 1 ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""


@pytest.fixture
def offline_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_DOCKER_IMAGES", "")
    return bin_dir


def test_an_absent_unpullable_default_base_image_stops_the_run_before_it_starts(
    tmp_path: Path, offline_docker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = tmp_path / "demo"
    (skill / "evals").mkdir(parents=True)
    settings = RunSettings(env_mode="docker", agents=["replay"])
    (line,) = session_problems(settings, {skill: settings}, environ={})
    assert line.startswith("default base image: python:3.12-slim is not in the local image store and the registry")
    assert "no such host" in line and "--base-image IMAGE" in line
    # Present locally, or an explicit --base-image (checked on its own), or a skill with its own Dockerfile: no line.
    monkeypatch.setenv("FAKE_DOCKER_IMAGES", "python:3.12-slim")
    assert session_problems(settings, {skill: settings}, environ={}) == []
    monkeypatch.setenv("FAKE_DOCKER_IMAGES", "mine:1")
    explicit = RunSettings(env_mode="docker", agents=["replay"], base_image="mine:1")
    assert session_problems(explicit, {skill: explicit}, environ={}) == []
    (skill / "evals" / "environment").mkdir()
    (skill / "evals" / "environment" / "Dockerfile").write_text("FROM mine:1\n")
    assert session_problems(settings, {skill: settings}, environ={}) == []


def test_doctor_checks_the_default_base_image(offline_docker: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_skilleval.authoring.doctor import run_doctor

    assert run_doctor(["--env-mode", "docker", "--agents", "replay"]) == 1
    assert "FAIL  default base image: python:3.12-slim is not in the local image store" in capsys.readouterr().out


def test_a_cli_agent_under_local_without_its_cli_says_how_to_provide_it(tmp_path: Path) -> None:
    from pytest_skilleval.harbor.preflight import local_cli_checks

    settings = RunSettings(env_mode="local", agents=["codex", "replay", "terminus-2"])
    (check,) = local_cli_checks(settings)
    if shutil.which("codex", path="/usr/local/bin:/usr/bin:/bin"):
        pytest.skip("this machine has a codex on its system PATH, which the sandbox shows")
    assert check.problem == (
        "no codex CLI is available: the local sandbox cannot install it; run `npm install --prefix DIR "
        "@openai/codex@0.171.0` once and pass --ek tools=DIR (see docs/agents.md)"
    )
    tools = tmp_path / "clis"
    given = RunSettings(env_mode="local", agents=["claude"], env_kwargs={"tools": str(tools)})
    assert local_cli_checks(given)[0].problem.startswith(f"--ek tools={tools} has no claude: ")
    (tools / "node_modules" / ".bin").mkdir(parents=True)
    (tools / "node_modules" / ".bin" / "claude").write_text("#!/bin/sh\n")
    assert local_cli_checks(given)[0].ok
    assert local_cli_checks(RunSettings(env_mode="docker", agents=["codex"])) == []


def test_open_file_limit_too_low_for_the_concurrency_says_which_limit_and_how() -> None:
    from pytest_skilleval.harbor.preflight import FILES_AT_REST, FILES_PER_TRIAL, open_file_checks

    settings = RunSettings(n_concurrent=200)
    needed = FILES_AT_REST + FILES_PER_TRIAL * 200
    [check] = open_file_checks(settings, limit=1024)
    assert check.problem is not None
    assert f"--n-concurrent 200 needs about {needed} open files" in check.problem
    assert "RLIMIT_NOFILE" in check.problem and f"ulimit -n {needed}" in check.problem
    assert f"--n-concurrent {(1024 - FILES_AT_REST) // FILES_PER_TRIAL} or less" in check.problem
    [enough] = open_file_checks(settings, limit=needed)
    assert enough.ok and f"about {needed} needed" in enough.line()


def test_process_limit_too_low_for_the_concurrency_says_which_limit_and_how() -> None:
    from pytest_skilleval.harbor.preflight import PROCESSES_AT_REST, PROCESSES_PER_TRIAL, process_checks

    settings = RunSettings(n_concurrent=200, env_mode="local")
    needed = PROCESSES_AT_REST + PROCESSES_PER_TRIAL * 200
    [check] = process_checks(settings, limit=512, exempt=False)
    assert check.problem is not None
    assert f"--n-concurrent 200 needs about {needed} processes and this user may run 512" in check.problem
    assert "RLIMIT_NPROC" in check.problem and f"ulimit -u {needed}" in check.problem
    assert f"--n-concurrent {(512 - PROCESSES_AT_REST) // PROCESSES_PER_TRIAL} or less" in check.problem
    [enough] = process_checks(settings, limit=needed, exempt=False)
    assert enough.ok and f"{needed} allowed, about {needed} needed" in enough.line()
    [root] = process_checks(settings, limit=512, exempt=True)  # the kernel does not hold root to it
    assert root.ok and "not limited" in root.line()
    assert process_checks(RunSettings(n_concurrent=200, env_mode="docker"), limit=512, exempt=False) == []


@pytest.mark.parametrize(
    ("rlimit", "raiser", "soft"),
    [("RLIMIT_NPROC", "raise_process_limit", 200), ("RLIMIT_NOFILE", "raise_open_file_limit", 256)],
)
def test_start_raises_the_soft_limit_to_the_hard_one(rlimit: str, raiser: str, soft: int) -> None:
    import resource
    import subprocess
    import sys

    script = (
        "import resource\n"
        f"soft, hard = resource.getrlimit(resource.{rlimit})\n"
        f"resource.setrlimit(resource.{rlimit}, ({soft}, hard))\n"
        f"from pytest_skilleval.harbor.process_env import {raiser}\n"
        f"print({raiser}() == (hard, hard), resource.getrlimit(resource.{rlimit})[0] == hard)\n"
    )
    hard = resource.getrlimit(getattr(resource, rlimit))[1]
    if hard != resource.RLIM_INFINITY and hard <= soft:
        pytest.skip(f"the hard {rlimit} here ({hard}) leaves nothing to raise")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]
