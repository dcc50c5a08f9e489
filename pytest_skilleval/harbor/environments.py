"""`--env-mode` and `--ek`: which Harbor environment a trial runs in and what its constructor receives.

Every Harbor environment type is accepted (read from Harbor's own `EnvironmentType`, so a new Harbor release adds
its types here without a list to keep), plus `local` (ours) and `module:Class`. `--ek KEY=VALUE` goes to the
environment's constructor; a key the constructor does not take, or one the plugin owns (resources, mounts, network
policy, lifecycle), is refused before anything starts.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harbor.environments.base import BaseEnvironment

LOCAL_ENV_IMPORT_PATH = "pytest_skilleval.harbor.local_env:LocalEnvironment"
# Harbor's Docker environment with downloads capped on the host (harbor/docker_env.py).
CAPPED_DOCKER_IMPORT_PATH = "pytest_skilleval.harbor.docker_env:CappedDockerEnvironment"
# Types that ignore the task's environment/ (a prebuilt desktop is started instead), so neither the workspace
# layout nor the baseline's empty skill folders could be guaranteed.
REFUSED_TYPES = {
    "use-computer": "runs a prebuilt computer-use desktop and never builds the task's environment/Dockerfile",
    "cua-cloud": "runs a prebuilt computer-use desktop pool and never builds the task's environment/Dockerfile",
}
# Constructor arguments the plugin (or Harbor itself) sets; an operator's --ek must not override them.
RESERVED_KWARGS = frozenset(
    {
        "environment_dir",
        "environment_name",
        "session_id",
        "trial_paths",
        "task_env_config",
        "logger",
        "override_cpus",
        "override_memory_mb",
        "override_storage_mb",
        "override_gpus",
        "override_tpu",
        "cpu_enforcement_policy",
        "memory_enforcement_policy",
        "persistent_env",
        "mounts",
        "auto_mounts",
        "auto_mounting",
        "network_policy",
        "phase_network_policies",
        "extra_docker_compose",
        "stream",
        "enable_environment_dir_upload",
        "keep_containers",
        "delete",
        "force_build",
    }
)


class EnvironmentModeError(ValueError):
    """A mode or kwarg that cannot be used; the message is one line saying why and what to do."""


@dataclass(frozen=True)
class EnvironmentMode:
    """A resolved `--env-mode`: a Harbor type name or an import path."""

    name: str
    type: str | None = None
    import_path: str | None = None

    @property
    def is_docker(self) -> bool:
        return self.type == "docker"

    @property
    def is_local(self) -> bool:
        return self.import_path == LOCAL_ENV_IMPORT_PATH

    @property
    def builds_dockerfile(self) -> bool:
        """Whether trials start from the task's environment/Dockerfile (every type but local)."""
        return not self.is_local


def harbor_types() -> list[str]:
    from harbor.models.environment_type import EnvironmentType

    return [member.value for member in EnvironmentType]


def resolve_mode(name: str) -> EnvironmentMode:
    """`local`, any Harbor environment type, or `module:Class`; anything else is an error listing the choices."""
    name = name.strip()
    if name == "local":
        return EnvironmentMode(name, import_path=LOCAL_ENV_IMPORT_PATH)
    if ":" in name:
        return EnvironmentMode(name, import_path=name)
    if name in REFUSED_TYPES:
        raise EnvironmentModeError(f"--env-mode {name}: not supported: it {REFUSED_TYPES[name]}")
    if name not in harbor_types():
        raise EnvironmentModeError(
            f"--env-mode {name}: unknown; choose local, one of Harbor's types ({', '.join(harbor_types())}) "
            "or module:Class"
        )
    return EnvironmentMode(name, type=name)


def environment_class(mode: EnvironmentMode) -> type[BaseEnvironment]:
    """The class Harbor would construct; raises ImportError (with Harbor's install hint) when an extra is missing."""
    if mode.import_path is not None:
        from harbor.utils.import_path import import_class

        return import_class(mode.import_path, label="environment")
    from pytest_skilleval.harbor.compat import environment_class_for

    assert mode.type is not None  # a mode without an import path is one of Harbor's types
    return environment_class_for(mode.type)


def missing_extra(mode: EnvironmentMode) -> str | None:
    """One line when the Python packages of the Harbor extra this mode needs (its cloud SDK) are not installed:
    Harbor would otherwise construct, and fail, every trial of the run with the same MissingExtraError."""
    if mode.type is None:
        return None
    from importlib import metadata

    from packaging.requirements import Requirement

    from pytest_skilleval.harbor.compat import environment_extra

    extra = environment_extra(mode.type)
    if extra is None:
        return None
    missing = []
    for text in metadata.requires("harbor") or []:
        requirement = Requirement(text)
        if requirement.marker is None or not requirement.marker.evaluate({"extra": extra}):
            continue
        if requirement.marker.evaluate({"extra": ""}):
            continue  # a requirement of harbor itself, not of this extra
        try:
            metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            missing.append(requirement.name)
    if not missing:
        return None
    return (
        f"--env-mode {mode.name}: Harbor's {extra!r} extra is not installed ({', '.join(missing)} missing): "
        f"pip install 'harbor[{extra}]' into this environment"
    )


def constructor_keys(cls: type) -> set[str]:
    """Keyword arguments the class's constructor chain accepts (following **kwargs up to the base class)."""
    keys: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        parameters = inspect.signature(init).parameters.values()
        keys |= {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"self"}
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return keys


def kwarg_problems(mode: EnvironmentMode, kwargs: dict[str, Any]) -> list[str]:
    """One line per --ek key this environment's constructor cannot take."""
    if not kwargs:
        return []
    try:
        accepted = constructor_keys(environment_class(mode)) - RESERVED_KWARGS
    except (ImportError, ValueError) as error:
        return [f"--env-mode {mode.name}: {str(error).splitlines()[0]}"]
    problems = []
    for key in kwargs:
        if key in RESERVED_KWARGS:
            problems.append(f"--ek {key}: set by pytest-skilleval itself, not through --ek")
        elif key not in accepted:
            choices = ", ".join(sorted(accepted)) or "none"
            problems.append(f"--ek {key}: unknown to the {mode.name} environment (it accepts: {choices})")
    return problems


def trial_environment_config(
    mode: EnvironmentMode, kwargs: dict[str, Any], env: dict[str, str] | None = None, delete: bool = True
) -> Any:
    """Harbor's run-time EnvironmentConfig for one trial."""
    from harbor.models.environment_type import EnvironmentType
    from harbor.models.trial.config import EnvironmentConfig

    common: dict[str, Any] = {"kwargs": dict(kwargs), "env": dict(env or {}), "delete": delete}
    if mode.import_path is not None:
        return EnvironmentConfig(import_path=mode.import_path, **common)
    if mode.is_docker:
        return EnvironmentConfig(import_path=CAPPED_DOCKER_IMPORT_PATH, **common)
    return EnvironmentConfig(type=EnvironmentType(mode.type) if mode.type is not None else None, **common)
