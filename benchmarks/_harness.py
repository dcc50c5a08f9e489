"""Shared benchmark harness: a throwaway skill, a sleeping agent, and a pytest run measured for wall time and the
peak resident memory of its whole process tree (xdist workers included), sampled from /proc."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = REPO / ".venv" / "bin" / "python"
SLEEP_AGENT = '''
import asyncio, os
from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities

class SleepAgent(BaseAgent):
    capabilities = AgentCapabilities(skills=True)

    @staticmethod
    def name():
        return "sleep"

    def version(self):
        return "1"

    async def setup(self, environment):
        return None

    async def run(self, instruction, environment, context):
        await asyncio.sleep(float(os.environ.get("BENCH_AGENT_SLEEP", "0")))
'''


def cpu_speed() -> float:
    """CPU seconds of a fixed pure-Python loop in this process: how fast the machine is right now.

    The machine these figures come from is a VM that slows down under sustained load (the same loop took 0.45 s
    idle and 0.67 s after ten minutes of benchmarks), so a figure is printed with this beside it."""
    started = time.process_time()
    sum(range(3 * 10**7))
    return time.process_time() - started


def work_filesystem(path: str | None = None) -> str:
    """The filesystem the benchmark's folders go on (tempfile's folder: TMPDIR), from /proc/self/mountinfo.

    On ext4 without a journal (this project's benchmark VMs) the kernel, making a file, passes over every inode of
    the group deleted in the last 1-6 minutes (`recently_deleted` in ext4's inode allocator); a run that makes and
    deletes tens of thousands of files pays for it, and more so after another such run. A `perf` profile of a trial
    process showed ~40% of its CPU there; `TMPDIR=/dev/shm` (tmpfs) takes it out of a comparison."""
    device = os.stat(path or tempfile.gettempdir()).st_dev
    wanted = f"{os.major(device)}:{os.minor(device)}"
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    for line in lines:
        fields = line.split()
        if fields[2] == wanted and "-" in fields:
            kind, source = fields[fields.index("-") + 1 : fields.index("-") + 3]
            if kind == "ext4" and not Path(f"/proc/fs/jbd2/{Path(source).name}-8").exists():
                return f"{kind} on {source}, no journal (new files pass over recently deleted inodes)"
            return f"{kind} on {source}"
    return "unknown"


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float
    returncode: int
    tail: str
    started_at: float = 0.0  # wall clock (time.time()) when the process was started
    first_trial_s: float | None = None  # process start to the first trial's start, where the caller measured it


def make_project(n_cases: int) -> Path:
    root = Path(tempfile.mkdtemp(prefix="skilleval-bench-"))
    skill = root / "skills" / "bench"
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: bench\ndescription: benchmark skill\n---\n# bench\n")
    entries = [{"id": f"c{i:04d}", "prompt": f"do {i}", "expected_output": "done"} for i in range(n_cases)]
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "bench", "evals": entries}))
    # A shell grader, as Harbor's own tasks have tests/test.sh: the work compared is the same, and a Python grader
    # would time how `python3` starts on the host PATH (under --ek sandbox=none a pyenv shim costs ~70 ms a call).
    shutil.copy2(REPO / "fixtures" / "graders" / "always_one.sh", skill / "evals" / "grader.sh")
    (root / "bench_agent.py").write_text(SLEEP_AGENT)
    return root


def _tree_rss_kb(root_pid: int) -> int:
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/status") as handle:
                value = next((line.split()[1] for line in handle if line.startswith("VmRSS:")), "0")
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
        rss[int(entry)] = int(value)
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def run_pytest(project: Path, *args: str, env: dict[str, str] | None = None) -> Measured:
    """`pytest --skill-eval` on the project's skill; wall time from process start to exit."""
    return measure(pytest_argv(project, *args), project, {"PYTHONPATH": str(project), **(env or {})})


def pytest_argv(project: Path, *args: str) -> list[str]:
    """The command line of `pytest --skill-eval` on a benchmark project's skill."""
    # Its own basetemp: pytest would otherwise spend seconds rotating the shared /tmp/pytest-of-<user> folders.
    return [
        str(PYTHON),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "--basetemp",
        str(project / "tmp"),
        "--skill-eval",
        "skills/bench",
        "--results-dir",
        str(project / "results"),
        *args,
    ]


def run_sampled(
    argv: list[str], cwd: Path, env: dict[str, str], sample: Callable[[int], None], interval: float
) -> tuple[float, int, str, float]:
    """Run a command (kept offline), calling `sample(pid)` every `interval` seconds until it exits.

    Returns the wall seconds, the exit status, the combined output and the wall clock at start."""
    full_env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True", **env}
    # Every run starts with nothing of an earlier run's still to be written back: the plugin makes its results
    # durable (fsync, syncfs), and on ext4 that also writes out whatever another process left dirty. Without this,
    # a plugin run right after `harbor run` (which syncs nothing) paid for Harbor's ~12 MB of job files: 96 trials
    # two at once took 1.2-1.5x as long in that position, and the same code measured 4.1 s or 6.8 s by run order.
    os.sync()
    started_at = time.time()
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = threading.Event()

    def loop() -> None:
        while not done.is_set():
            sample(proc.pid)
            time.sleep(interval)

    sampler = threading.Thread(target=loop, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    elapsed = time.perf_counter() - started
    done.set()
    sampler.join()
    return elapsed, proc.returncode, out, started_at


def measure(argv: list[str], cwd: Path, env: dict[str, str]) -> Measured:
    """Run a command (kept offline) and measure its wall time and the peak RSS of its whole process tree."""
    peak = 0

    def sample(pid: int) -> None:
        nonlocal peak
        peak = max(peak, _tree_rss_kb(pid))

    elapsed, returncode, out, started_at = run_sampled(argv, cwd, env, sample, 0.05)
    return Measured(elapsed, peak / 1024, returncode, "\n".join(out.splitlines()[-3:]), started_at)


def common_args(agent_sleep: bool = True) -> tuple[str, ...]:
    return (
        "--agents",
        "bench_agent:SleepAgent",
        "--env-mode",
        "local",
        "--ek",
        "sandbox=none",
        "--grading-mode",
        "custom_only",
        "--skip-baseline",
    )


def fail_unless_ok(label: str, measured: Measured) -> None:
    if measured.returncode != 0:
        print(f"{label} failed (exit {measured.returncode}):\n{measured.tail}", file=sys.stderr)
        raise SystemExit(1)
