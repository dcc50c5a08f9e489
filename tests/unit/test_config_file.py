"""`evals/config.yml`: keys, types, aliases, the runtime_env blocklist and located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.skill.config_file import (
    ConfigError,
    EvalsConfig,
    env_control_category,
    load_config,
    normalize_grading_mode,
    referenced_env_names,
)


def load(tmp_path: Path, text: str, name: str = "config.yml") -> EvalsConfig | None:
    (tmp_path / name).write_text(text)
    return load_config(tmp_path)


def error(tmp_path: Path, text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    return info.value


def test_no_config_is_none(tmp_path: Path) -> None:
    assert load_config(tmp_path) is None


def test_full_config(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """
schema_version: 1
harbor:
  task_source: native_harbor
  custom_dockerfile_mode: preserve
  base_image_mode: reuse
  n_attempts: 3
  pass_threshold: 0.6
  stop_on_pass: true
  n_concurrent: 2
  max_agents: 1
  timeout_multiplier: 1.5
  agent_runtime_preflight: false
  agent_workdir: " /work/project "
  resources: {cpus: 2, memory_mb: 4096, storage_mb: 2048}
  runtime_env: {SERVICE_URL: "https://example.test/${SERVICE_REGION:-eu}"}
  pre_agent_setup: ["  pip install foo  ", "echo ready"]
  agents: {codex: {model: " gpt-5 "}}
skill_workspace: {mode: group, include: [other-skill]}
grading: {mode: custom_only}
""",
    )
    assert config is not None
    assert config.harbor.n_attempts == 3 and config.harbor.pass_threshold == 0.6
    assert config.harbor.agent_workdir == "/work/project"
    assert config.harbor.pre_agent_setup == ["pip install foo", "echo ready"]
    assert config.harbor.agents is not None and config.harbor.agents["codex"].model == "gpt-5"
    assert config.harbor.resources is not None and config.harbor.resources.memory_mb == 4096
    assert config.grading_mode == "custom_only"
    assert config.skill_workspace.include == ["other-skill"]


def test_minimal_config_leaves_everything_unset(tmp_path: Path) -> None:
    config = load(tmp_path, "schema_version: 1\n")
    assert config is not None and config.grading_mode is None and config.harbor.n_attempts is None


def test_config_yaml_name(tmp_path: Path) -> None:
    assert load(tmp_path, "schema_version: 1\ngrading: {mode: default}\n", name="config.yaml") is not None


def test_both_file_names_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "config.yml").write_text("schema_version: 1\n")
    (tmp_path / "config.yaml").write_text("schema_version: 1\n")
    with pytest.raises(ConfigError, match="keep only one"):
        load_config(tmp_path)


@pytest.mark.parametrize("value, mode", [("aces_default", "default"), ("aces_plus_custom", "default_plus_custom")])
def test_grading_mode_aliases(tmp_path: Path, value: str, mode: str) -> None:
    config = load(tmp_path, f"schema_version: 1\ngrading:\n  mode: {value}\n")
    assert config is not None and config.grading_mode == mode


def test_normalize_grading_mode() -> None:
    assert normalize_grading_mode("default_plus_custom") == "default_plus_custom"
    assert normalize_grading_mode(" ACES_PLUS_CUSTOM ") == "default_plus_custom"
    assert normalize_grading_mode("aces_default") == "default"
    with pytest.raises(ValueError, match="expected one of"):
        normalize_grading_mode("custom")


def test_error_names_file_field_and_problem(tmp_path: Path) -> None:
    err = error(tmp_path, "schema_version: 1\ngrading:\n  mode: bogus\n")
    assert err.field == "grading.mode" and err.path == tmp_path / "config.yml"
    assert str(err).startswith(f"{tmp_path / 'config.yml'}: grading.mode: ") and "bogus" in str(err)


@pytest.mark.parametrize(
    "text, field",
    [
        ("schema_version: 1\nextra: 1\n", "extra"),
        ("schema_version: 1\nharbor:\n  n_atempts: 2\n", "harbor.n_atempts"),
        ("schema_version: 1\nharbor:\n  resources: {gpus: 1}\n", "harbor.resources.gpus"),
        ("schema_version: 1\nharbor:\n  agents: {codex: {model: m, effort: high}}\n", "harbor.agents.codex.effort"),
        ("schema_version: 1\nskill_workspace: {modes: group}\n", "skill_workspace.modes"),
        ("schema_version: 1\ngrading: {mode: default, threshold: 1}\n", "grading.threshold"),
    ],
)
def test_unknown_keys_rejected_at_every_level(tmp_path: Path, text: str, field: str) -> None:
    err = error(tmp_path, text)
    assert err.field == field and "unknown key" in err.message


@pytest.mark.parametrize(
    "text, message",
    [
        ("schema_version: 1\nharbor:\n  n_atempts: 2\n", "unknown key (did you mean 'n_attempts'?)"),
        ("schema_version: 1\nharbor:\n  pre_agent_setpu: echo\n", "unknown key (did you mean 'pre_agent_setup'?)"),
        ("schema_version: 1\ngrading: {mdoe: default}\n", "unknown key (did you mean 'mode'?)"),
        ("schema_version: 1\nstrict: true\n", "unknown key; the keys here are schema_version, harbor, grading,"),
    ],
)
def test_an_unknown_key_names_the_nearest_key_or_the_keys_there(tmp_path: Path, text: str, message: str) -> None:
    """The fix, not only the fault: a typo gets the key it resembles; anything else, the keys that level takes."""
    assert message in error(tmp_path, text).message


@pytest.mark.parametrize("value", ["2", "'1'", "true", "1.5", "null"])
def test_schema_version_must_be_1(tmp_path: Path, value: str) -> None:
    assert error(tmp_path, f"schema_version: {value}\n").field == "schema_version"


def test_schema_version_required(tmp_path: Path) -> None:
    assert error(tmp_path, "grading: {mode: default}\n").field == "schema_version"


@pytest.mark.parametrize("text", ["", "# only a comment\n", "- a\n- b\n", "just text\n"])
def test_empty_or_non_mapping(tmp_path: Path, text: str) -> None:
    err = error(tmp_path, text)
    assert "empty" in err.message or "mapping" in err.message


def test_invalid_yaml_reports_line(tmp_path: Path) -> None:
    assert "line 2" in error(tmp_path, "schema_version: 1\ngrading: : :\n").message


def test_duplicate_keys_rejected(tmp_path: Path) -> None:
    assert "duplicate key 'grading'" in error(tmp_path, "schema_version: 1\ngrading: {}\ngrading: {}\n").message


@pytest.mark.parametrize(
    "harbor, field",
    [
        ("runtime_env: [A]\n  passthrough_env: [B]", "harbor.passthrough_env"),
        ("pre_agent_setup: a\n  setup_commands: b", "harbor.setup_commands"),
        ("agents: {claude: {model: a}, claude-code: {model: b}}", "harbor.agents.claude"),
    ],
)
def test_alias_pairs_both_given(tmp_path: Path, harbor: str, field: str) -> None:
    err = error(tmp_path, f"schema_version: 1\nharbor:\n  {harbor}\n")
    assert err.field == field and "use only one" in err.message


def test_aliases_alone(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        "schema_version: 1\nharbor:\n  passthrough_env: [MY_SERVICE_TOKEN]\n  setup_commands: make deps\n"
        "  agents: {claude: {model: sonnet}}\n",
    )
    assert config is not None
    assert config.harbor.runtime_env == {"MY_SERVICE_TOKEN": "${MY_SERVICE_TOKEN}"}
    assert config.harbor.pre_agent_setup == ["make deps"]
    assert config.harbor.agents is not None and list(config.harbor.agents) == ["claude-code"]


@pytest.mark.parametrize(
    "harbor",
    [
        "n_attempts: 0",
        "n_attempts: true",
        "n_attempts: 1.5",
        "pass_threshold: 1.01",
        "pass_threshold: -0.1",
        "pass_threshold: true",
        "pass_threshold: '0.5'",
        "stop_on_pass: 'yes please'",
        "n_concurrent: 0",
        "max_agents: 0",
        "timeout_multiplier: 0",
        "timeout_multiplier: .nan",
        "task_source: git",
        "custom_dockerfile_mode: replace",
        "base_image_mode: always",
        "agent_workdir: relative/path",
        "agent_workdir: /work/../etc",
        "agent_workdir: /logs/agent",
        "agent_workdir: /workspace/input",
        "agent_workdir: /root/.claude",
        "agent_workdir: '  '",
        "resources: {cpus: 0}",
        "resources: {memory_mb: true}",
        "pre_agent_setup: ['ok', '  ']",
        "pre_agent_setup: 5",
        "agents: {codex: {model: ''}}",
        "agents: {codex: {}}",
        "runtime_env: {'1BAD': x}",
        "runtime_env: {GOOD: ''}",
        "runtime_env: 5",
    ],
)
def test_invalid_harbor_values(tmp_path: Path, harbor: str) -> None:
    err = error(tmp_path, f"schema_version: 1\nharbor:\n  {harbor}\n")
    assert err.field.startswith("harbor."), err


def test_skill_workspace_include_needs_group(tmp_path: Path) -> None:
    err = error(tmp_path, "schema_version: 1\nskill_workspace: {include: [a]}\n")
    assert err.field == "skill_workspace.include" and "group" in err.message
    assert error(tmp_path, "schema_version: 1\nskill_workspace: {mode: shared}\n").field == "skill_workspace.mode"


@pytest.mark.parametrize(
    "name",
    ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "NVIDIA_API_KEY", "CLAUDE_CODE_USE_BEDROCK"],
)
def test_operator_credentials_blocked(tmp_path: Path, name: str) -> None:
    err = error(tmp_path, f"schema_version: 1\nharbor:\n  runtime_env: [{name}]\n")
    assert err.field == "harbor.runtime_env" and "operator-owned credential" in err.message and name in err.message


@pytest.mark.parametrize("name", ["AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "aws_anything"])
def test_every_aws_variable_blocked(tmp_path: Path, name: str) -> None:
    assert "operator-owned" in error(tmp_path, f"schema_version: 1\nharbor:\n  runtime_env: [{name}]\n").message


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "HOME",
        "LD_PRELOAD",
        "PYTHONPATH",
        "HTTPS_PROXY",
        "SSL_CERT_FILE",
        "CODEX_HOME",
        "HARBOR_LOGS_DIR",
        "DOCKER_HOST",
        "GIT_SSH_COMMAND",
        "LLM_JUDGE_MODEL",
        "SKILL_EVAL_JUDGE_MODEL",
        "E2B_API_KEY",
        "MODAL_TOKEN_SECRET",
        "BASH_FUNC_x",
        "NODE_OPTIONS",
        "TMPDIR",
        "KUBECONFIG",
    ],
)
def test_host_control_names_blocked(tmp_path: Path, name: str) -> None:
    err = error(tmp_path, f"schema_version: 1\nharbor:\n  runtime_env: ['{name}']\n")
    assert err.field == "harbor.runtime_env"


@pytest.mark.parametrize(
    "value", ["${OPENAI_API_KEY}", "$ANTHROPIC_API_KEY", "pre-${AWS_SECRET_ACCESS_KEY:-x}", "%NVIDIA_API_KEY%"]
)
def test_references_to_credentials_blocked(tmp_path: Path, value: str) -> None:
    err = error(tmp_path, f"schema_version: 1\nharbor:\n  runtime_env:\n    MY_VAR: '{value}'\n")
    assert "references operator-owned credential" in err.message and "MY_VAR" in err.message


def test_reference_to_host_control_blocked(tmp_path: Path) -> None:
    err = error(tmp_path, "schema_version: 1\nharbor:\n  runtime_env:\n    MY_VAR: '${HOME}/x'\n")
    assert "controls the host process" in err.message


def test_ordinary_service_credentials_allowed(tmp_path: Path) -> None:
    config = load(tmp_path, "schema_version: 1\nharbor:\n  runtime_env: [MY_SERVICE_TOKEN, GITHUB_TOKEN]\n")
    assert config is not None and config.harbor.runtime_env is not None and len(config.harbor.runtime_env) == 2


def test_env_helpers() -> None:
    assert referenced_env_names("a $B ${C:-$D} %E%") == ["C", "B", "D", "E"]
    assert env_control_category("http_proxy") == "proxy-tls"
    assert env_control_category("MY_VAR") is None


def test_throughput_keys_in_config_yml_reach_the_settings() -> None:
    """harbor.n_concurrent / max_agents / stop_on_pass / max_cases apply; the command line still wins."""
    from pytest_skilleval.options import SettingsSources, merge_settings

    raw = {"harbor": {"n_concurrent": 2, "max_agents": 1, "stop_on_pass": True, "max_cases": 3, "n_attempts": 2}}
    settings = merge_settings(SettingsSources(cli={}, ini={}), raw)
    assert (settings.n_concurrent, settings.max_agents, settings.stop_on_pass, settings.max_cases) == (2, 1, True, 3)
    cli = merge_settings(SettingsSources(cli={"n_concurrent": 6}, ini={"max_agents": 4}), raw)
    assert (cli.n_concurrent, cli.max_agents) == (6, 1)
