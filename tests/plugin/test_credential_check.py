"""Credentials proven before spending: each agent route and the judge route get one bounded model-catalog request
before anything is built or staged, against the scripted model server's models endpoint and its error modes (401,
a model not in the catalog, 500, a timeout). A definitive failure stops the run with one line; the rest is reported
and kept, redacted, in run_config.credential_validation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_skilleval.harbor.credential_check import agent_route, check_route, judge_route
from pytest_skilleval.skill.settings import RunSettings
from tests.plugin.test_cli import skilleval
from tests.plugin.test_judge_runs import _script, model_requests
from tests.plugin.test_judge_settings import JUDGE_VARS
from tests.support import LOCAL_REPLAY, SkillProject

ANTHROPIC_KEY = "sk-ant-scripted-credential-0001"
NVIDIA_KEY = "nvapi-scripted-credential-0002"
NEMOTRON = "nvidia/nemotron-3-super-120b-a12b"


def _anthropic_env(server: Any) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}


@pytest.mark.parametrize(
    ("catalog", "status", "detail"),
    [
        ({"models": ["claude-test"]}, "verified", "the key is accepted and names claude-test"),
        (
            {"status": 401, "message": "invalid x-api-key"},
            "failed",
            "authentication failed (HTTP 401: invalid x-api-key)",
        ),
        ({"models": ["claude-other"]}, "failed", "model rejected: claude-test (HTTP 404"),
        ({"status": 500}, "degraded", "transient: HTTP 500"),
        ({"models": ["claude-test"], "delay": 3}, "degraded", "transient: no answer within 0.5 s"),
    ],
    ids=["ok", "401", "404-model", "500", "timeout"],
)
def test_anthropic_agent_route(scripted_model: Any, catalog: dict, status: str, detail: str):
    server = scripted_model({"catalog": catalog})
    env = _anthropic_env(server)
    route = agent_route("claude-code", "anthropic/claude-test", env)
    assert route is not None and route.provider == "anthropic" and route.model == "claude-test"
    outcome = check_route(route, env, timeout=0.5)
    assert outcome.status == status and detail in outcome.detail, outcome
    (request,) = server.requests
    assert request.method == "GET" and request.path == "/v1/models/claude-test"
    assert ANTHROPIC_KEY not in outcome.model_dump_json()


def test_a_gateway_catalog_refusal_is_degraded_not_fatal(scripted_model: Any):
    server = scripted_model({"catalog": {"status": 401}})
    env = {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "sk-scripted-gateway-0003"}
    route = agent_route("codex", "gpt-test", env)
    assert route is not None and route.provider == "openai-compatible"
    outcome = check_route(route, env)
    assert outcome.status == "degraded" and "gateway's catalog refused the key (HTTP 401" in outcome.detail


@pytest.mark.parametrize(
    ("listed", "status", "detail"),
    [
        ([NEMOTRON], "inconclusive", "does not authenticate inference; the run will prove it"),
        (["meta/llama-3.1-8b-instruct"], "failed", f"model rejected: {NEMOTRON} is not in NVIDIA Build's catalog"),
    ],
)
def test_nv_build_judge_route(scripted_model: Any, listed: list[str], status: str, detail: str):
    server = scripted_model({"catalog": {"models": listed}})
    env = {"SKILL_EVAL_LLM_PROVIDER": "nv_build", "SKILL_EVAL_LLM_BASE_URL": server.openai_base_url}
    env["NVIDIA_API_KEY"] = NVIDIA_KEY
    route = judge_route(RunSettings(), env)
    assert route is not None and (route.provider, route.model, route.key_var) == (
        "nv_build",
        NEMOTRON,
        "NVIDIA_API_KEY",
    )
    outcome = check_route(route, env)
    assert outcome.status == status and detail in outcome.detail
    assert server.requests[0].path == "/v1/models"


def test_bedrock_without_a_region_is_a_definitive_configuration_failure():
    env = {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_PROFILE": "dev"}
    route = agent_route("claude-code", None, env)
    assert route is not None and route.provider == "bedrock"
    outcome = check_route(route, env)
    assert outcome.status == "failed" and "no AWS region: set AWS_REGION" in outcome.detail


@pytest.fixture
def nv_judge(monkeypatch: pytest.MonkeyPatch, scripted_model: Any):
    def start(catalog: dict[str, Any]) -> Any:
        server = scripted_model({**_script(NEMOTRON), "catalog": catalog})
        for name in JUDGE_VARS:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("SKILL_EVAL_LLM_PROVIDER", "nv_build")
        monkeypatch.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("NVIDIA_API_KEY", NVIDIA_KEY)
        return server

    return start


def test_a_definitive_failure_stops_the_run_before_anything_starts(skill_project: SkillProject, nv_judge: Any):
    server = nv_judge({"status": 401, "message": "Authentication failed"})
    skill_project.copy_hello_skill()
    run = skill_project.run(*LOCAL_REPLAY, "--skip-baseline")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    err = run.stderr.str()
    assert "skilleval credential check failed (nothing was started):" in err
    assert (
        f"judge: nv_build at {server.openai_base_url} model {NEMOTRON}: failed: authentication failed (HTTP 401" in err
    )
    assert NVIDIA_KEY not in err + run.stdout.str()
    assert model_requests(server) == []  # no trial, no judge call
    assert not (skill_project.root / "results").exists()


def test_degraded_is_reported_and_recorded_and_the_run_goes_on(skill_project: SkillProject, nv_judge: Any):
    server = nv_judge({"status": 500})
    skill_project.copy_hello_skill()
    run = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--max-cases", "1")
    run.assert_outcomes(passed=1)
    assert "skilleval credentials: judge: nv_build at" in run.stdout.str()
    result = skill_project.result_json("hello-skill")
    validation = result["run_config"]["credential_validation"]
    assert validation["status"] == "degraded"
    (target,) = validation["targets"]
    assert target["target"] == "judge" and target["status"] == "degraded" and target["variable"] == "NVIDIA_API_KEY"
    assert "transient: HTTP 500" in target["detail"]
    assert NVIDIA_KEY not in json.dumps(result)
    assert model_requests(server)  # the judges ran


def test_no_credential_check_skips_the_requests(skill_project: SkillProject, nv_judge: Any):
    server = nv_judge({"status": 401})
    skill_project.copy_hello_skill()
    run = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--max-cases", "1", "--no-credential-check")
    run.assert_outcomes(passed=1)
    assert [r for r in server.requests if r.method == "GET"] == []
    validation = skill_project.result_json("hello-skill")["run_config"]["credential_validation"]
    assert validation["status"] == "skipped"


def test_doctor_shows_the_credential_check(scripted_model: Any, monkeypatch: pytest.MonkeyPatch):
    server = scripted_model({"catalog": {"status": 401}})
    for name in JUDGE_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in _anthropic_env(server).items():
        monkeypatch.setenv(name, value)
    done = skilleval(
        "doctor", "--agents", "claude-code", "--env-mode", "local", "--agent-model", "claude-code=claude-x"
    )
    assert done.returncode == 1
    assert (
        f"FAIL  credentials agent claude-code: anthropic at {server.base_url} model claude-x: authentication failed "
        "(HTTP 401" in done.stdout
    )
    assert ANTHROPIC_KEY not in done.stdout + done.stderr
    skipped = skilleval("doctor", "--agents", "claude-code", "--env-mode", "local", "--no-credential-check")
    assert "credentials agent" not in skipped.stdout
