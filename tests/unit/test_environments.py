"""--env-mode and --ek: every Harbor environment type is accepted and wired the way Harbor's own config and factory
expect (checked against Harbor's EnvironmentType, EnvironmentConfig and factory registry, not a copy of them)."""

from __future__ import annotations

import pytest
from harbor.environments.docker.docker import DockerEnvironment
from harbor.environments.factory import _ENVIRONMENT_REGISTRY
from harbor.models.environment_type import EnvironmentType
from harbor.utils.import_path import import_class

from pytest_skilleval.harbor.environments import (
    CAPPED_DOCKER_IMPORT_PATH,
    LOCAL_ENV_IMPORT_PATH,
    REFUSED_TYPES,
    EnvironmentModeError,
    kwarg_problems,
    resolve_mode,
    trial_environment_config,
)
from pytest_skilleval.harbor.runner import TrialError, environment_config
from pytest_skilleval.skill.settings import RunSettings

ACCEPTED = [member.value for member in EnvironmentType if member.value not in REFUSED_TYPES]


@pytest.mark.parametrize("name", ACCEPTED)
def test_every_harbor_type_reaches_harbors_factory_with_its_kwargs(name: str) -> None:
    config = environment_config(RunSettings(env_mode=name, env_kwargs={"some_key": "v"}), env={"A": "1"})
    if name == "docker":  # Harbor's Docker environment, downloads capped (harbor/docker_env.py)
        assert config.import_path == CAPPED_DOCKER_IMPORT_PATH and config.type is None
        assert issubclass(import_class(config.import_path, label="environment"), DockerEnvironment)
        return
    assert config.type == EnvironmentType(name)
    assert config.import_path is None
    assert config.kwargs == {"some_key": "v"} and config.env == {"A": "1"} and config.delete is True
    entry = _ENVIRONMENT_REGISTRY[config.type]  # the factory can construct it (given the type's extra)
    assert entry.module.startswith("harbor.environments.")


@pytest.mark.parametrize("name", sorted(REFUSED_TYPES))
def test_types_that_ignore_the_task_environment_are_refused_with_the_reason(name: str) -> None:
    assert name in {member.value for member in EnvironmentType}
    with pytest.raises(EnvironmentModeError, match="never builds the task's environment/Dockerfile"):
        resolve_mode(name)
    with pytest.raises(TrialError, match=f"--env-mode {name}: not supported"):
        environment_config(RunSettings(env_mode=name))


def test_local_and_import_paths() -> None:
    local = resolve_mode("local")
    assert local.import_path == LOCAL_ENV_IMPORT_PATH and local.is_local and not local.builds_dockerfile
    custom = trial_environment_config(resolve_mode("pkg.envs:Mine"), {"x": "1"})
    assert custom.import_path == "pkg.envs:Mine" and custom.kwargs == {"x": "1"}


def test_unknown_mode_lists_the_choices() -> None:
    with pytest.raises(EnvironmentModeError) as error:
        resolve_mode("dokcer")
    assert "unknown" in str(error.value) and "docker" in str(error.value) and "module:Class" in str(error.value)


def test_docker_takes_no_kwargs_and_lifecycle_keys_are_ours() -> None:
    docker = resolve_mode("docker")
    assert kwarg_problems(docker, {}) == []
    assert kwarg_problems(docker, {"bogus": "1"}) == [
        "--ek bogus: unknown to the docker environment (it accepts: none)"
    ]
    assert kwarg_problems(docker, {"keep_containers": "1"}) == [
        "--ek keep_containers: set by pytest-skilleval itself, not through --ek"
    ]
    assert kwarg_problems(docker, {"override_cpus": "4"})[0].endswith("not through --ek")


def test_constructor_keys_come_from_the_environment_class() -> None:
    assert kwarg_problems(resolve_mode("kata"), {"kata_runtime": "kata-clh", "kata_dns": "1.1.1.1"}) == []
    assert "it accepts: kata_dns, kata_runtime" in kwarg_problems(resolve_mode("kata"), {"x": "1"})[0]
    assert kwarg_problems(resolve_mode("local"), {"sandbox": "none"}) == []
    assert "unknown to the local environment" in kwarg_problems(resolve_mode("local"), {"nope": "1"})[0]


# Harbor's cloud sandboxes: the variable its own preflight names when the credentials are absent.
CLOUD_CREDENTIALS = {
    "daytona": "DAYTONA_API_KEY",
    "modal": "MODAL_TOKEN_ID",
    "e2b": "E2B_API_KEY",
    "runloop": "RUNLOOP_API_KEY",
    "gke": "KUBECONFIG",
}


@pytest.mark.parametrize("name", sorted(CLOUD_CREDENTIALS))
def test_cloud_modes_are_built_by_harbor_and_preflight_names_extra_and_credential(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    import importlib.util

    from harbor.environments.factory import EnvironmentFactory
    from harbor.models.trial.config import EnvironmentConfig

    from pytest_skilleval.harbor.compat import environment_class_for, environment_extra
    from pytest_skilleval.harbor.preflight import environment_checks

    for variable in (*CLOUD_CREDENTIALS.values(), "MODAL_TOKEN_SECRET", "DAYTONA_JWT_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.modal.toml, no ~/.kube/config
    config = environment_config(RunSettings(env_mode=name, env_kwargs={"region": "x"}), env={})
    again = EnvironmentConfig.model_validate(config.model_dump(mode="json"))  # Harbor's own model takes it as is
    assert again.type == EnvironmentType(name) and again.kwargs == {"region": "x"}
    cls = environment_class_for(name)  # the class Harbor's factory constructs for this type
    assert cls.type() == EnvironmentType(name) and hasattr(EnvironmentFactory, "create_environment_from_config")
    lines = [check.line() for check in environment_checks(RunSettings(env_mode=name))]
    assert any(CLOUD_CREDENTIALS[name] in line and line.startswith("FAIL") for line in lines), lines
    sdk = {"daytona": "daytona", "modal": "modal", "e2b": "e2b", "runloop": "runloop_api_client", "gke": "kubernetes"}
    if importlib.util.find_spec(sdk[name]) is None:  # every trial would fail constructing it: said at start instead
        assert f"pip install 'harbor[{environment_extra(name)}]'" in " ".join(lines), lines
