"""The one place we reach into Harbor's private names (a leading underscore); everything else uses Harbor's public
classes and models. Harbor exposes no public equivalent of these two, and both must match what Harbor itself
does, so we call its own rather than copy it; a Harbor release that renames one breaks only this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harbor.environments.base import BaseEnvironment


def environment_class_for(type_name: str) -> type[BaseEnvironment]:
    """The class Harbor constructs for a built-in environment type; ImportError (Harbor's install hint) when the
    environment's extra is missing."""
    from harbor.environments.factory import _load_environment_class
    from harbor.models.environment_type import EnvironmentType

    return _load_environment_class(EnvironmentType(type_name))


def environment_extra(type_name: str) -> str | None:
    """The `harbor[<extra>]` a built-in environment type needs (its SDK), or None when it needs none."""
    from harbor.environments.factory import _ENVIRONMENT_REGISTRY
    from harbor.models.environment_type import EnvironmentType

    entry = _ENVIRONMENT_REGISTRY.get(EnvironmentType(type_name))
    return entry.pip_extra if entry is not None else None


def docker_compose_project_name(name: str) -> str:
    """The Compose project name Harbor's Docker environment derives from `name`."""
    from harbor.environments.docker.docker import _sanitize_docker_compose_project_name

    return _sanitize_docker_compose_project_name(name)
