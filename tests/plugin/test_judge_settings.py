"""Judge model settings as the seed reads them, in real plugin runs against the scripted model server:
SKILL_EVAL_LLM_MODEL is an explicit judge model, SKILL_EVAL_LLM_PROVIDER alone selects that provider's default
judge model, and run_config records where the model came from (`judge.model_source`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.plugin.test_judge_runs import _script, model_requests
from tests.support import LOCAL_REPLAY, SkillProject

JUDGE_VARS = (
    "LLM_JUDGE_MODEL",
    "SKILL_EVAL_JUDGE_MODEL",
    "SKILL_EVAL_LLM_MODEL",
    "SKILL_EVAL_LLM_PROVIDER",
    "SKILL_EVAL_LLM_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "NVIDIA_API_KEY",
)


@pytest.fixture
def clean_judge_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in JUDGE_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _judged_run(project: SkillProject) -> dict[str, Any]:
    project.copy_hello_skill()
    run = project.run(*LOCAL_REPLAY, "--skip-baseline", "--max-cases", "1")
    run.assert_outcomes(passed=1)
    assert "LLM judge not configured" not in run.stdout.str()
    return project.result_json("hello-skill")


def _served(scripted_model: Any, env: pytest.MonkeyPatch, model: str, **variables: str) -> Any:
    """A scripted judge `model` behind SKILL_EVAL_LLM_BASE_URL, plus the given judge variables."""
    server = scripted_model(_script(model))
    env.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
    env.setenv("SKILL_EVAL_LLM_API_KEY", "scripted-key-0001")
    for name, value in variables.items():
        env.setenv(name, value)
    return server


def test_skill_eval_llm_model_is_an_explicit_judge_model(
    skill_project: SkillProject, scripted_model: Any, clean_judge_env: pytest.MonkeyPatch
):
    server = _served(scripted_model, clean_judge_env, "llm-model-judge", SKILL_EVAL_LLM_MODEL="openai/llm-model-judge")
    result = _judged_run(skill_project)
    judge = result["run_config"]["judge"]
    assert judge["model"] == "openai/llm-model-judge" and judge["model_source"] == "SKILL_EVAL_LLM_MODEL"
    assert model_requests(server) and {r.model for r in model_requests(server)} == {"llm-model-judge"}
    assert result["trials"][0]["metrics"]["accuracy"] == 1.0


def test_a_judge_model_variable_wins_over_skill_eval_llm_model(
    skill_project: SkillProject, scripted_model: Any, clean_judge_env: pytest.MonkeyPatch
):
    variables = {"SKILL_EVAL_JUDGE_MODEL": "openai/judge-first", "SKILL_EVAL_LLM_MODEL": "openai/not-this-one"}
    _served(scripted_model, clean_judge_env, "judge-first", **variables)
    judge = _judged_run(skill_project)["run_config"]["judge"]
    assert judge["model"] == "openai/judge-first" and judge["model_source"] == "SKILL_EVAL_JUDGE_MODEL"


def test_nv_build_provider_alone_selects_nemotron_super_with_the_nvidia_key(
    skill_project: SkillProject, scripted_model: Any, clean_judge_env: pytest.MonkeyPatch
):
    """The scripted server stands in for NVIDIA Build: the default model's catalog id arrives as the request's
    model, authorized by NVIDIA_API_KEY alone."""
    nemotron = "nvidia/nemotron-3-super-120b-a12b"
    server = scripted_model(_script(nemotron))
    clean_judge_env.setenv("SKILL_EVAL_LLM_PROVIDER", "nv_build")
    clean_judge_env.setenv("SKILL_EVAL_LLM_BASE_URL", server.openai_base_url)
    clean_judge_env.setenv("NVIDIA_API_KEY", "nvapi-scripted-key-0002")
    result = _judged_run(skill_project)
    judge = result["run_config"]["judge"]
    assert judge["provider"] == "nv_build" and judge["model"] == nemotron
    assert judge["model_source"] == "provider default"
    assert model_requests(server) and {r.model for r in model_requests(server)} == {nemotron}
    assert "nvapi-scripted" not in json.dumps(result)


def test_a_provider_without_a_documented_default_is_one_line_naming_the_fix(
    skill_project: SkillProject, clean_judge_env: pytest.MonkeyPatch
):
    skill_project.copy_hello_skill()
    clean_judge_env.setenv("SKILL_EVAL_LLM_PROVIDER", "anthropic")
    run = skill_project.run(*LOCAL_REPLAY, "--skip-baseline")
    assert run.ret != 0
    text = run.stdout.str() + run.stderr.str()
    assert "SKILL_EVAL_LLM_PROVIDER='anthropic' has no default judge model" in text
    assert "set SKILL_EVAL_LLM_MODEL or --judge-model" in text
