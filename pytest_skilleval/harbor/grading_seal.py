"""Before anything grades in the sandbox, the agent phase is over for good: the agent cannot set its own grade.

Why: a grader (the skill's `evals/grader.py` or `grader.sh`, a native task's `tests/test.sh`) runs in the sandbox the
agent used. Left alone, an agent could plant a reward file in /logs/verifier, or leave a process running (a tmux
session, a `setsid` daemon) that swaps the grader after it is uploaded or rewrites the reward after it is written.
So before a grader starts, `seal_for_grading`:

1. ends every process of the agent phase: in the `local` environment the trial's process keeper kills everything its
   commands started and keeps only the sandbox itself; elsewhere (Docker) one command run as root kills every
   process in the container outside the container's own session (PID 1 and its keep-alive command) but itself;
2. empties /logs/verifier and /tests (links are removed, never followed), so every reward file read afterwards was
   written by the grader, the only thing left running;
3. uploads the grader's files fresh when given them. /tests is read-only inside the `local` sandbox (a read-only
   bind mount: the host writes it, nothing inside can); in Docker it is made root's and not writable.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from harbor.models.trial.paths import EnvironmentPaths

# POSIX shell, run as the exec's own shell. Kept: itself ($$) and the container's own session (session 1: PID 1 and
# the keep-alive command it started, or an init and its child). Every `docker exec` starts a session of its own, so
# whatever the agent ran (and whatever that detached) is in another session and is killed. Builtins only while the
# processes are walked (no command substitution), so no process of the script's own is there; `sleep` runs between
# two walks only.
END_PROCESSES_SCRIPT = r"""rounds=0
while [ "$rounds" -lt 100 ]; do
  found=
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [ "$pid" = "$$" ] && continue
    read -r line < "$dir/stat" 2>/dev/null || continue
    set -- ${line##*) }
    case "$1" in Z|X) continue ;; esac
    [ "$4" = 1 ] && continue
    kill -9 "$pid" 2>/dev/null && found=1
  done
  [ -n "$found" ] || exit 0
  rounds=$((rounds + 1))
  sleep 0.02
done
echo "processes still running after 100 rounds of SIGKILL" >&2
exit 1
"""


class SealError(RuntimeError):
    """The sandbox could not be made safe to grade in: grading it would trust the agent."""


async def end_agent_processes(environment: Any) -> None:
    """Kill every process the agent phase left in the sandbox, tmux servers and detached daemons included."""
    end = getattr(environment, "end_agent_processes", None)
    if callable(end):
        await end()
        return
    result = await environment.exec(END_PROCESSES_SCRIPT, user="root", timeout_sec=60)
    if result.return_code != 0:
        raise SealError(
            "the agent's processes could not be ended before grading "
            f"(exit code {result.return_code}): {(result.stderr or result.stdout or '').strip()[-300:]}"
        )


async def seal_for_grading(environment: Any, paths: EnvironmentPaths, tests_source: Path | None = None) -> None:
    """End the agent phase's processes, empty /logs/verifier and /tests, and upload `tests_source` there fresh."""
    await end_agent_processes(environment)
    verifier_dir, tests_dir = str(paths.verifier_dir), str(paths.tests_dir)
    result = await environment.empty_dirs([verifier_dir, tests_dir])
    if result is not None and result.return_code != 0:
        raise SealError(f"{verifier_dir} and {tests_dir} could not be emptied before grading: {result.stderr}")
    if tests_source is None:
        return
    await environment.upload_dir(tests_source, tests_dir)
    if not callable(getattr(environment, "end_agent_processes", None)):
        # Docker and other environments: root's and not writable (the local sandbox mounts /tests read-only).
        quoted = shlex.quote(tests_dir)
        await environment.exec(f"chown -R 0:0 {quoted} && chmod -R a-w {quoted}", user="root")
