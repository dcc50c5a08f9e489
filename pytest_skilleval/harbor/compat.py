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


def docker_compose_project_name(name: str) -> str:
    """The Compose project name Harbor's Docker environment derives from `name`."""
    from harbor.environments.docker.docker import _sanitize_docker_compose_project_name

    return _sanitize_docker_compose_project_name(name)
