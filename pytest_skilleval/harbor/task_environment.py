"""A generated task's `environment/` folder and `[environment]` table, from the skill's image recipe and config.

Under Docker the skill's image is built once per run (`images.ensure_image`) and every task names it as its
prebuilt `docker_image`, so Harbor builds nothing per trial; the task's Dockerfile (`FROM` that image, plus the
case inputs) keeps the task runnable on its own when `--harbor-keep-jobs` keeps it. Other Harbor environments build
the task's Dockerfile themselves, so there it holds the whole recipe.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilleval.harbor.images import ImagePlan, default_base, our_layers, task_dockerfile, write_context

DEFAULT_WORKDIR = "/workspace"
# harbor.pre_agent_setup runs as a healthcheck once the sandbox is up: one try, two minutes.
SETUP_INTERVAL_SEC = 5.0
SETUP_TIMEOUT_SEC = 120.0


@dataclass(frozen=True)
class TaskEnvironment:
    """What every generated task of one skill gets for its sandbox."""

    plan: ImagePlan | None = None
    image: str | None = None
    workdir: str | None = None
    resources: dict[str, int] = field(default_factory=dict)
    pre_agent_setup: tuple[str, ...] = ()

    def table(self) -> dict[str, Any]:
        """task.toml's [environment]."""
        table: dict[str, Any] = {"workdir": self.workdir or DEFAULT_WORKDIR, **self.resources}
        if self.image is not None:
            table["docker_image"] = self.image
        if self.pre_agent_setup:
            script = "set -euo pipefail\n" + "\n".join(self.pre_agent_setup)
            table["healthcheck"] = {
                "command": f"bash -lc {shlex.quote(script)}",
                "interval_sec": SETUP_INTERVAL_SEC,
                "timeout_sec": SETUP_TIMEOUT_SEC,
                "retries": 1,
            }
        return table

    def write(self, env_dir: Path, inputs: Path | None) -> None:
        """environment/: the Dockerfile (and what it copies), and the case inputs under input/."""
        if self.image is not None:
            env_dir.mkdir(parents=True, exist_ok=True)
            (env_dir / "Dockerfile").write_text(task_dockerfile(self.image, inputs is not None), encoding="utf-8")
        else:
            write_context(self.plan or ImagePlan("skill", default_base() + our_layers(), None), env_dir)
            if inputs is not None:
                with (env_dir / "Dockerfile").open("a", encoding="utf-8") as dockerfile:
                    dockerfile.write("COPY input/ /workspace/input/\n")
        if inputs is not None:
            shutil.copytree(inputs, env_dir / "input", symlinks=True, dirs_exist_ok=True)
