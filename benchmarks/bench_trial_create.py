"""Benchmark: the pytest process's CPU for creating Harbor trials through `compat.create_trial`, one trial per staged
case folder (bench_scale's shape: nothing of a folder is shared between trials, only what plain folders share).

Each folder is shaped like the runner's (instruction.md, task.toml, tests/ with entry.json, test.sh and a grader,
environment/Dockerfile); each trial is created (its lock, folders, logger and `local` environment object), not run.
Printed: user and system CPU per trial after the first (its imports left out), with the CPU speed loop beside it.
Run: .venv/bin/python benchmarks/bench_trial_create.py [TRIALS]   (default 300)
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import cpu_speed

DOCKERFILE = "FROM python:3.12-slim\nWORKDIR /workspace\n"
TEST_SH = "#!/usr/bin/env bash\nexec bash /tests/grader.sh\n"
GRADER = "#!/usr/bin/env bash\necho 1 > /logs/verifier/reward.txt\n"


def make_folder(root: Path, case: str) -> Path:
    from harbor.models.task.config import TaskConfig

    task = root / "_tasks" / "bench" / case / "0" / "task"
    (task / "tests").mkdir(parents=True)
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "instruction.md").write_text(f"do {case}\n")
    config = {"task": {"name": f"skilleval/bench-{case}-with-skill"}, "metadata": {"entry_id": case}}
    (task / "task.toml").write_text(TaskConfig.model_validate(config).model_dump_toml())
    (task / "tests" / "entry.json").write_text(f'{{"id": "{case}"}}\n')
    for name, text in (("test.sh", TEST_SH), ("grader.sh", GRADER)):
        (task / "tests" / name).write_text(text)
        (task / "tests" / name).chmod(0o755)
    return task


async def create_all(root: Path, folders: list[Path]) -> tuple[float, float]:
    from harbor.models.trial.config import AgentConfig, EnvironmentConfig, TaskConfig, TrialConfig

    from pytest_skilleval.harbor.compat import create_trial
    from pytest_skilleval.harbor.environments import LOCAL_ENV_IMPORT_PATH
    from pytest_skilleval.harbor.process_env import forget_logger
    from pytest_skilleval.harbor.staged_tasks import StagedTasks

    staged = StagedTasks()
    skill = root / "_skills" / "bench"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: bench\ndescription: benchmark skill\n---\n")
    staged.add_skill(skill)
    started = os.times()
    for n, task in enumerate(folders):
        if n == 1:
            started = os.times()
        staged.add_folder(task)
        config = TrialConfig(
            task=TaskConfig(path=task),
            trial_name=f"t{n}",
            trials_dir=root / "trials" / str(n),
            agent=AgentConfig(name="nop", skills=[str(skill)]),
            environment=EnvironmentConfig(import_path=LOCAL_ENV_IMPORT_PATH),
        )
        trial = await create_trial(config, staged)
        forget_logger(trial.logger.name)
    ended = os.times()
    return (ended.user - started.user) / (len(folders) - 1), (ended.system - started.system) / (len(folders) - 1)


def main() -> None:
    warnings.simplefilter("ignore", DeprecationWarning)
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    root = Path(tempfile.mkdtemp(prefix="skilleval-bench-create-"))
    try:
        folders = [make_folder(root, f"c{n:04d}") for n in range(trials)]
        user, system = asyncio.run(create_all(root, folders))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"create_trial, {trials} trials, one folder each: user {user * 1000:.2f} ms/trial, system "
        f"{system * 1000:.2f} ms/trial, total {(user + system) * 1000:.2f} ms/trial "
        f"(CPU speed loop {cpu_speed():.2f} s, load {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
