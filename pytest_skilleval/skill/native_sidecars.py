"""Services a native task's Compose file starts beside the agent's container, which `--env-mode local` never starts.

Harbor's Docker environment runs the task's `environment/docker-compose.yaml` on top of its own `main` service, so
a task can bring a database or a mock server along. The `local` environment has no Compose: the agent runs without
them, and the run says so rather than letting the task fail in ways that look like the agent's.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from pytest_skilleval.skill.bounded_parse import ParseLimitError
from pytest_skilleval.skill.bounded_yaml import load_yaml

COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
MAIN_SERVICE = "main"  # Harbor's own service: the agent's container
MAX_COMPOSE_BYTES = 1024 * 1024


def compose_sidecars(task_dir: Path) -> tuple[Path, list[str]] | None:
    """(the Compose file, its services other than `main`), or None when the task has no such services.

    A file that cannot be read or parsed names no services here: Harbor reports it when it runs the task.
    """
    environment = task_dir / "environment"
    for name in COMPOSE_FILES:
        path = environment / name
        if path.is_symlink() or not path.is_file():
            continue
        try:
            if path.stat().st_size > MAX_COMPOSE_BYTES:
                return None
            data = load_yaml(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ParseLimitError):
            return None
        services = data.get("services") if isinstance(data, dict) else None
        names = sorted(str(key) for key in services if key != MAIN_SERVICE) if isinstance(services, dict) else []
        return (path, names) if names else None
    return None
