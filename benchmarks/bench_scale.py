"""Benchmark: many trials at once from one pytest process, against `harbor run -n` on the same work.

Each trial's agent sleeps 2 s; the sandbox is the `local` environment with its default isolation (bwrap, one keeper
per trial) and the grader a shell script, on both sides (the plugin: with-skill arm only, custom_only grading;
Harbor: equivalent native tasks with the same environment class and the skill given with `--skill`).
Printed per concurrency: wall / ideal (trials / concurrency x 2 s, plus the start-up of a one-trial run), CPU ms per
trial over the whole process tree (user + system, every descendant reaped by this script as a subreaper), the
pytest (or harbor) process's own CPU ms per trial, processes at the peak, peak PSS of the tree, whether every trial
scored, processes left behind after the run, and the session's end: from the last trial's end (the plugin: its item's
last report, recorded by a probe plugin; Harbor: its newest trial result.json) to the process's exit.
Beside each line, the CPU seconds of a fixed pure-Python loop measured just after (`_harness.cpu_speed`): the
machine's speed drifts under load, so figures compare only at a similar speed. Under it, the machine's CPU outside
the tree (from /proc/stat: kernel threads' work such as network namespaces torn down after their sandbox, file
writeback, and anything else running) and the steal time (a VM's CPU the hypervisor gave to others): an idle
machine has both near zero, so they say what the tree's figures leave out and whether the run had the CPUs to itself.
Targets (issue 28): at concurrency 100 wall within 1.3x of ideal, the pytest process's own CPU <= 15 ms a trial, tree
CPU <= 0.5x the figure before and <= 0.4x Harbor's, peak PSS < 500 MB, nothing left behind.

Run: .venv/bin/python benchmarks/bench_scale.py [TRIALS] [CONCURRENCY ...]   (default 1000 at 25 50 100 200;
BENCH_HARBOR=0 skips Harbor's side; BENCH_ENV_KWARG=remote_latency_ms=20 runs both through a remote-like sandbox;
BENCH_ATTEMPTS=N runs the plugin's trials as TRIALS/N cases x N attempts, as real evals run, instead of one a case;
BENCH_TRIAL_PROCESSES=N runs the plugin's trials in N trial processes (`--trial-processes N`) and prints their CPU;
BENCH_XDIST=W runs the plugin's side with `-n W`, each worker keeping CONCURRENCY/W in flight, and prints the busiest
pytest process's own CPU; BENCH_CODE=DIR runs the plugin's side on the package in checkout DIR, e.g. a
`git worktree` of the commit to compare with). The folders go where tempfile puts them (TMPDIR); the first line
says on which filesystem: see `_harness.work_filesystem` for why `TMPDIR=/dev/shm` compares runs more steadily here)
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from _harness import cpu_speed, make_project, pytest_argv, run_sampled, work_filesystem
from bench_vs_harbor import harbor_argv, make_tasks

SLEEP = 2.0
PR_SET_CHILD_SUBREAPER = 36
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Scaled:
    seconds: float
    tree_cpu_s: float
    own_cpu_s: float
    peak_processes: int
    peak_pss_mb: float
    returncode: int
    tail: str
    left_behind: int
    exited_at: float = 0.0  # wall clock (time.time()) when the process was seen to exit
    busiest_cpu_s: float = 0.0  # under BENCH_XDIST: the busiest pytest process's own CPU (controller or worker)
    driver_cpu_s: float = 0.0  # under BENCH_TRIAL_PROCESSES: the trial processes' CPU, all of them
    session_end_s: float | None = None  # the last trial's end to the process's exit
    end_parts: str = ""  # that time in steps (the plugin's runs)
    outside_cpu_s: float = 0.0  # the machine's busy CPU over the run less the tree's and this script's
    steal_s: float = 0.0  # CPU time the hypervisor gave to others while the run wanted it (a noisy neighbour)
    sampling_cpu_s: float = 0.0  # this script's own CPU while it sampled the run (it shares the cores with the run)


def _descendants() -> dict[int, int]:
    """pid -> parent pid of every process on the machine."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return parents


# The tree is sampled every SAMPLE_SECONDS, its PSS every PSS_EVERY-th sample (every 2 s): at 400 processes,
# walking /proc and reading each process's smaps_rollup five times a second took this script ~20% of a core, taken
# from the run it measures (the peaks it looks for last many seconds at a fixed number in flight).
SAMPLE_SECONDS = 0.5
PSS_EVERY = 4


def _machine_cpu() -> tuple[float, float]:
    """The machine's busy CPU seconds so far (user, nice, system, irq, softirq: kernel threads' work included,
    e.g. tearing down a sandbox's network namespace) and its steal seconds, from /proc/stat."""
    with open("/proc/stat") as handle:
        fields = [int(value) for value in handle.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq) / CLOCK_TICKS, steal / CLOCK_TICKS


def _tree(root: int) -> list[int]:
    parents = _descendants()
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _is_zombie(pid: int) -> bool:
    """An exited process only waiting for this script to reap it (orphans are reparented here) is not left running."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            return next((int(line.split()[1]) for line in handle if line.startswith("Pss:")), 0)
    except OSError:
        return 0


def _own_cpu_s(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return None


def measure_tree(argv: list[str], cwd: Path, env: dict[str, str]) -> Scaled:
    """Run a command as this process's child, with this process as the subreaper of everything it starts, so the
    CPU of every descendant (daemons included) is counted once it is reaped."""
    _DRIVERS.clear()  # pids are not reused within a run, but may be between runs
    before, machine_before = os.times(), _machine_cpu()
    peak_processes, peak_pss, own = 0, 0, 0.0

    pytest_cpu: dict[int, float] = {}
    driver_cpu: dict[int, float] = {}

    samples = 0

    def sample(root: int) -> None:
        nonlocal peak_processes, peak_pss, own, samples
        pids = _tree(root)
        peak_processes = max(peak_processes, len(pids))
        samples += 1
        if samples % PSS_EVERY == 1:  # reading hundreds of smaps_rollup is this script's biggest cost
            peak_pss = max(peak_pss, sum(_pss_kb(pid) for pid in pids))
        own = _own_cpu_s(root) or own
        for pid in (root, *(_xdist_workers(pids[1:]) if os.environ.get("BENCH_XDIST") else [])):
            pytest_cpu[pid] = _own_cpu_s(pid) or pytest_cpu.get(pid, 0.0)
        if os.environ.get("BENCH_TRIAL_PROCESSES"):
            for pid in _trial_processes(pids[1:]):
                driver_cpu[pid] = _own_cpu_s(pid) or driver_cpu.get(pid, 0.0)

    elapsed, returncode, out, started_at = run_sampled(argv, cwd, env, sample, SAMPLE_SECONDS)
    left = [pid for pid in _tree(os.getpid()) if pid != os.getpid() and not _is_zombie(pid)]
    left_behind = len(left)
    if left and os.environ.get("BENCH_SHOW_LEFT"):
        for pid in left:
            try:
                print("left behind:", pid, open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:200])
            except OSError:
                pass
    for pid in left:  # reap what was orphaned to us, so its CPU is counted and nothing stays
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    while True:
        try:
            if os.waitpid(-1, 0)[0] == 0:
                break
        except ChildProcessError:
            break
    after, machine_after = os.times(), _machine_cpu()
    tree_cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    sampling = (after.user - before.user) + (after.system - before.system)
    outside = machine_after[0] - machine_before[0] - tree_cpu - sampling
    exited_at = started_at + elapsed
    return Scaled(
        elapsed,
        tree_cpu,
        own,
        peak_processes,
        peak_pss / 1024,
        returncode,
        out[-1500:],
        left_behind,
        exited_at,
        busiest_cpu_s=max(pytest_cpu.values(), default=own),
        driver_cpu_s=sum(driver_cpu.values()),
        outside_cpu_s=outside,
        steal_s=machine_after[1] - machine_before[1],
        sampling_cpu_s=sampling,
    )


_DRIVERS: dict[int, bool] = {}  # pid -> whether it is a trial process, read once per pid


def _trial_processes(pids: list[int]) -> list[int]:
    """The trial processes (`--trial-processes`) among `pids`."""
    found = []
    for pid in pids:
        if pid not in _DRIVERS:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    _DRIVERS[pid] = b"pytest_skilleval.harbor.trial_driver" in handle.read()
            except OSError:
                continue
        if _DRIVERS[pid]:
            found.append(pid)
    return found


def _xdist_workers(pids: list[int]) -> list[int]:
    """The pytest-xdist workers among `pids` (execnet starts each as `python -u -c <bootstrap>`)."""
    workers = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if b"-c" in argv and argv[argv.index(b"-c") + 1 :][:1] == [b"import sys;exec(eval(sys.stdin.readline()))"]:
            workers.append(pid)
    return workers


def env_args() -> list[str]:
    """`--ek` for both sides from BENCH_ENV_KWARG (e.g. remote_latency_ms=20), else none."""
    return ["--ek", os.environ["BENCH_ENV_KWARG"]] if os.environ.get("BENCH_ENV_KWARG") else []


# Records when the last item's last report came in (the end of the last trial, as pytest reports it).
# With it, where the session's end goes: pytest's session finish (every plugin's), then unconfigure, the exit
# handlers (this one registered first, so run last) and the interpreter's own teardown.
PROBE = """
import atexit
import json
import os
import time

import pytest

MARKS = {"last_report": 0.0}

def pytest_runtest_logreport(report):
    MARKS["last_report"] = time.time()

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    MARKS["finish_start"] = time.time()
    profile = None
    if os.environ.get("BENCH_PROFILE_END"):  # a file: cProfile's stats of every plugin's session finish
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    try:
        return (yield)
    finally:
        MARKS["finish_end"] = time.time()
        if profile is not None:
            profile.disable()
            profile.dump_stats(os.environ["BENCH_PROFILE_END"])

def pytest_unconfigure(config):
    MARKS["unconfigure"] = time.time()

def _write():
    MARKS["last_exit_handler"] = time.time()
    with open("end_marks.json", "w") as handle:
        json.dump(MARKS, handle)

atexit.register(_write)
"""


def _end_parts(marks: dict[str, float], exited_at: float) -> str:
    """The session's end in steps: to the session finish, the finish, to unconfigure, the exit handlers, the exit."""
    steps = ["last_report", "finish_start", "finish_end", "unconfigure", "last_exit_handler"]
    known = [(step, marks[step]) for step in steps if step in marks] + [("exit", exited_at)]
    return " ".join(f"{b}+{t2 - t1:.2f}" for (_, t1), (b, t2) in zip(known, known[1:], strict=False))


def plugin_run(trials: int, concurrency: int, sleep: float) -> tuple[Scaled, bool]:
    attempts = int(os.environ.get("BENCH_ATTEMPTS", "1"))
    project = make_project(max(1, trials // attempts))
    (project / "bench_probe.py").write_text(PROBE)
    extra = [*env_args(), *(["--n-attempts", str(attempts)] if attempts > 1 and trials > 1 else [])]
    workers = int(os.environ.get("BENCH_XDIST", "0")) if trials > 1 else 0
    if os.environ.get("BENCH_TRIAL_PROCESSES"):
        extra += ["--trial-processes", os.environ["BENCH_TRIAL_PROCESSES"]]
    if workers > 1:  # the concurrency is the whole run's: each worker keeps its share in flight
        extra += ["-n", str(workers)]
        concurrency = max(1, concurrency // workers)
    argv = pytest_argv(
        project,
        "-p",
        "bench_probe",
        "--agents",
        "bench_agent:SleepAgent",
        "--env-mode",
        "local",
        *extra,
        "--grading-mode",
        "custom_only",
        "--skip-baseline",
        "--n-concurrent",
        str(concurrency),
    )
    try:
        # BENCH_CODE: another checkout's package (a commit to compare with), ahead of the installed one
        path = os.pathsep.join(filter(None, [os.environ.get("BENCH_CODE"), str(project)]))
        measured = measure_tree(argv, project, {"PYTHONPATH": path, "BENCH_AGENT_SLEEP": str(sleep)})
        results = list((project / "results").glob("bench/2*/result.json"))
        scored = False
        if results:
            data = json.loads(results[0].read_text())
            scored = len(data["trials"]) == trials and all(t.get("overall") == 1.0 for t in data["trials"])
        marks_file = project / "end_marks.json"
        if marks_file.is_file():
            marks = json.loads(marks_file.read_text())
            measured.session_end_s = measured.exited_at - marks["last_report"]
            measured.end_parts = _end_parts(marks, measured.exited_at)
        return measured, scored
    finally:
        shutil.rmtree(project, ignore_errors=True)


def harbor_run(trials: int, concurrency: int, sleep: float) -> tuple[Scaled, bool]:
    root = make_tasks(trials)
    extra = env_args()
    argv = harbor_argv(root, concurrency, "bench_agent:SleepAgent", *extra)
    try:
        measured = measure_tree(argv, root, {"PYTHONPATH": str(root), "BENCH_AGENT_SLEEP": str(sleep)})
        results = list((root / "jobs").glob("*/result.json"))
        scored = False
        if results:
            stats = json.loads(results[0].read_text())["stats"]
            scored = stats["n_completed_trials"] == trials and not stats["n_errored_trials"]
        ended = [path.stat().st_mtime for path in (root / "jobs").glob("*/*/result.json")]
        if ended:
            measured.session_end_s = measured.exited_at - max(ended)
        return measured, scored
    finally:
        shutil.rmtree(root, ignore_errors=True)


def report(label: str, trials: int, concurrency: int, startup: float, measured: Scaled, scored: bool) -> None:
    ideal = trials / concurrency * SLEEP + startup
    print(
        f"{label:7} c={concurrency:<4} wall {measured.seconds:7.1f} s  /ideal {measured.seconds / ideal:5.2f}  "
        f"tree CPU {measured.tree_cpu_s / trials * 1000:6.1f} ms/trial  own CPU {measured.own_cpu_s / trials * 1000:5.1f}"
        f" ms/trial  peak procs {measured.peak_processes:4}  peak PSS {measured.peak_pss_mb:6.0f} MB  "
        f"scored {'all' if scored else 'NOT ALL'}  left {measured.left_behind}  "
        f"end {measured.session_end_s if measured.session_end_s is not None else float('nan'):.2f} s  "
        + (
            f"busiest pytest process {measured.busiest_cpu_s / trials * 1000:5.1f} ms/trial  "
            if os.environ.get("BENCH_XDIST")
            else ""
        )
        + (
            f"trial processes {measured.driver_cpu_s / trials * 1000:5.1f} ms/trial  "
            if os.environ.get("BENCH_TRIAL_PROCESSES")
            else ""
        )
        + f"(CPU speed loop {cpu_speed():.2f} s)"
    )
    print(
        f"  outside the tree: {measured.outside_cpu_s / trials * 1000:.1f} ms/trial of the machine's CPU (kernel "
        f"threads, other processes); steal {measured.steal_s / trials * 1000:.1f} ms/trial; this script's sampling "
        f"{measured.sampling_cpu_s / trials * 1000:.1f} ms/trial"
    )
    if measured.end_parts:
        print(f"  session end in steps: {measured.end_parts}")
    if measured.returncode != 0 or not scored:
        print(f"  exit {measured.returncode}: {measured.tail[-600:]}", file=sys.stderr)


def main() -> None:
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Bytecode caches as a user has them (the start-up run writes them): without, every run compiles each module of
    # the plugin again, at its start and, for the modules the results need, in its session end.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    widths = [int(arg) for arg in sys.argv[2:]] or [25, 50, 100, 200]
    with_harbor = os.environ.get("BENCH_HARBOR", "1") != "0"
    print(
        f"machine: {platform.machine()}, Python {platform.python_version()}, cpus={os.cpu_count()}, "
        f"load {os.getloadavg()[0]:.1f}, CPU speed loop {cpu_speed():.2f} s; {trials} trials x {SLEEP:.0f} s; "
        f"folders on {work_filesystem()}"
    )
    startup_plugin = plugin_run(1, 1, 0.0)[0].seconds
    startup_harbor = harbor_run(1, 1, 0.0)[0].seconds if with_harbor else 0.0
    print(f"start-up (one trial, no sleep): plugin {startup_plugin:.2f} s, harbor {startup_harbor:.2f} s")
    for width in widths:
        measured, scored = plugin_run(trials, width, SLEEP)
        report("plugin", trials, width, startup_plugin, measured, scored)
        if with_harbor:
            measured, scored = harbor_run(trials, width, SLEEP)
            report("harbor", trials, width, startup_harbor, measured, scored)


if __name__ == "__main__":
    main()
