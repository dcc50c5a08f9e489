"""The `local` Harbor environment: real trials and direct exec checks, in both sandbox modes."""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest
from harbor.models.task.config import NetworkMode, NetworkPolicy
from harbor.models.trial.paths import EnvironmentPaths

from pytest_skilleval.harbor import local_env
from pytest_skilleval.harbor.local_env import SANDBOX_DIRNAME, TIMEOUT_EXIT_CODE, LocalEnvironment
from pytest_skilleval.harbor.sandbox import command_forms
from tests.e2e.conftest import make_env

pytestmark = pytest.mark.e2e


def run(coro):  # a tiny sync bridge for async env methods
    return asyncio.run(coro)


async def started(env: LocalEnvironment) -> LocalEnvironment:
    await env.start(force_build=False)
    return env


# ---- full Harbor trials ---------------------------------------------------------------


LAYOUT_CHECK = """
    out="${HARBOR_REWARD_TXT:-/logs/verifier/reward.txt}"
    ws="${HARBOR_WORKSPACE_DIR:-/workspace}"
    test -d "$ws/input" && test -d "$ws/output" || { echo 0 > "$out"; exit 0; }
    test -d "$HARBOR_AGENT_LOGS_DIR" && test -d "$HARBOR_VERIFIER_DIR" && test -d "$HARBOR_TESTS_DIR" || { echo 0 > "$out"; exit 0; }
    test -f "$ws/input/data.txt" || { echo 0 > "$out"; exit 0; }
    echo "cwd=$(pwd)"
    echo 1 > "$out"
"""


def test_trial_runs_and_leaves_nothing_behind(tmp_path: Path, kit, sandbox_mode: str) -> None:
    task = kit.make_task(tmp_path, LAYOUT_CHECK, workspace_files={"input/data.txt": "seed\n"})
    trial, result = kit.run_trial(kit.trial_config(task, tmp_path / "trials", sandbox=sandbox_mode))
    assert result.exception_info is None, result.exception_info
    assert result.verifier_result is not None and result.verifier_result.rewards == {"reward": 1.0}
    stdout = (trial.paths.verifier_dir / "test-stdout.txt").read_text()
    assert stdout.strip().endswith("/workspace")  # default cwd is the workspace
    trial_dir = Path(trial.paths.trial_dir).resolve()
    assert not (trial_dir / SANDBOX_DIRNAME).exists()
    assert (trial_dir / "result.json").is_file()


def test_trial_keeps_sandbox_when_delete_is_false(tmp_path: Path, kit, sandbox_mode: str) -> None:
    task = kit.make_task(tmp_path, 'echo 1 > "$HARBOR_REWARD_TXT"\necho kept > "$HARBOR_WORKSPACE_DIR/output/o.txt"\n')
    trial, result = kit.run_trial(kit.trial_config(task, tmp_path / "trials", sandbox=sandbox_mode, delete=False))
    assert result.verifier_result is not None and result.verifier_result.rewards == {"reward": 1.0}
    kept = Path(trial.paths.trial_dir).resolve() / SANDBOX_DIRNAME / "rootfs" / "workspace" / "output" / "o.txt"
    assert kept.read_text() == "kept\n"


def test_bwrap_container_paths_are_real_and_host_is_hidden(tmp_path: Path, kit) -> None:
    kit.skip_without_bwrap("bwrap")
    script = (
        """
        fail() { echo "FAIL $1"; echo 0 > /logs/verifier/reward.txt; exit 0; }
        [ "$(pwd)" = /workspace ] || fail cwd
        for d in /workspace/input /workspace/output /logs/agent /logs/verifier /tests /solution /tmp; do
            [ -d "$d" ] || fail "$d"
        done
        [ "$HARBOR_REWARD_JSON" = /logs/verifier/reward.json ] || fail vars
        [ "$HARBOR_ENTRY_JSON" = /tests/entry.json ] || fail vars
        [ "$HOME" = /root ] && [ -d "$HOME" ] || fail home
        [ -e "%s" ] && fail "host tree visible"
        touch /usr/should-fail 2>/dev/null && fail "usr writable"
        echo 1 > /logs/verifier/reward.txt
    """
        % tmp_path
    )
    task = kit.make_task(tmp_path, script)
    trial, result = kit.run_trial(kit.trial_config(task, tmp_path / "trials", sandbox="bwrap"))
    stdout = (trial.paths.verifier_dir / "test-stdout.txt").read_text()
    assert result.verifier_result is not None and result.verifier_result.rewards == {"reward": 1.0}, stdout


def test_none_mode_rejects_no_network_task(tmp_path: Path, kit) -> None:
    task = kit.make_task(
        tmp_path, "echo 1 > $HARBOR_REWARD_TXT\n", toml_extra='[environment]\nnetwork_mode = "no-network"\n'
    )
    with pytest.raises(ValueError, match="no-network"):
        kit.run_trial(kit.trial_config(task, tmp_path / "trials", sandbox="none"))


def test_bwrap_unshares_network_unless_task_is_public(tmp_path: Path, kit) -> None:
    kit.skip_without_bwrap("bwrap")
    count_ifaces = "awk 'NR>2' /proc/net/dev | wc -l > \"$HARBOR_WORKSPACE_DIR/output/n\"; cp \"$HARBOR_WORKSPACE_DIR/output/n\" $HARBOR_REWARD_TXT\n"
    offline = kit.make_task(
        tmp_path, count_ifaces, name="offline", toml_extra='[environment]\nnetwork_mode = "no-network"\n'
    )
    _, result = kit.run_trial(kit.trial_config(offline, tmp_path / "trials", sandbox="bwrap"))
    assert result.exception_info is None, result.exception_info
    assert result.verifier_result.rewards == {"reward": 1.0}  # only loopback
    env = make_env(tmp_path, "bwrap")
    assert env.network_policy.network_mode == NetworkMode.PUBLIC
    assert env.capabilities.disable_internet is True
    run(started(env))
    # The host's network: more than loopback. (Not an exact count: Docker tests running beside this one add and
    # remove veth interfaces at any moment.)
    shared = run(env.exec("awk 'NR>2' /proc/net/dev | wc -l"))
    assert int(shared.stdout.strip()) >= 2
    run(env.set_network_policy(NetworkPolicy(network_mode=NetworkMode.NO_NETWORK)))
    assert run(env.exec("awk 'NR>2' /proc/net/dev | wc -l")).stdout.strip() == "1"


# ---- exec semantics, directly on the environment ----------------------------------------


def test_exec_cwd_env_and_exit_code(tmp_path: Path, sandbox_mode: str) -> None:
    env = run(started(make_env(tmp_path, sandbox_mode)))
    res = run(env.exec("pwd"))
    assert res.return_code == 0
    workspace = "/workspace" if sandbox_mode == "bwrap" else str(env.host_path("/workspace"))
    assert res.stdout.strip() == workspace
    res = run(env.exec("pwd", cwd="/workspace/output"))
    assert res.stdout.strip() == f"{workspace}/output"
    res = run(env.exec('echo "$GREETING/$HARBOR_ATIF_PATH"; echo oops >&2; exit 7', env={"GREETING": "hi"}))
    atif = (
        "/logs/agent/trajectory.json" if sandbox_mode == "bwrap" else str(env.host_path("/logs/agent/trajectory.json"))
    )
    assert res.stdout.strip() == f"hi/{atif}"
    assert res.stderr.strip() == "oops"
    assert res.return_code == 7
    res = run(env.exec("true", cwd="/does/not/exist"))
    assert res.return_code != 0 and "/does/not/exist" in (res.stderr or "")


def test_an_interpreter_with_plain_words_starts_without_a_shell(tmp_path: Path, kit) -> None:
    """`bash /tests/grader.sh` (how a grader runs) starts bash once, not `bash -c` and then bash, and so does a
    command of plain and single-quoted words; anything a shell would act on still goes through one, and a PATH holding a sandbox folder finds what the shell inside would."""
    kit.skip_without_bwrap("bwrap")
    env = run(started(make_env(tmp_path, "bwrap")))
    try:
        # A shell puts `_` (the program's path) in the environment of what it starts; nothing else here does.
        script = env.host_path("/workspace/show.sh")
        script.write_text(
            "echo \"args=$* shell=$(tr '\\0' '\\n' < /proc/$$/environ | grep -c '^_=')\"\nsleep \"${NAP:-0}\"\n"
        )
        assert run(env.exec("bash /workspace/show.sh a b=c")).stdout == "args=a b=c shell=0\n"
        assert run(env.exec("bash /workspace/show.sh $HOME")).stdout == "args=/root shell=1\n"
        # Single-quoted words (as shlex.quote writes them) are taken as the shell would take them, without one.
        quoted = "bash /workspace/show.sh 'a  b' '$HOME' 'it'\"'\"'s' ''"
        assert run(env.exec(quoted)).stdout == "args=a  b $HOME it's  shell=0\n"
        assert run(env.exec("bash /workspace/show.sh 'a'b")).stdout == "args=ab shell=1\n"
        assert run(env.exec("bash /workspace/show.sh > /workspace/out.txt")).stdout == ""
        assert env.host_path("/workspace/out.txt").read_text() == "args= shell=1\n"
        planted = env.host_path("/workspace/bin/bash")
        planted.parent.mkdir()
        planted.write_text("#!/bin/sh\necho planted\n")
        planted.chmod(0o755)
        path = {"PATH": "/workspace/bin:/usr/bin:/bin"}
        assert run(env.exec("bash /workspace/show.sh", env=path)).stdout == "planted\n"
        slow = run(env.exec("bash /workspace/show.sh", env={"NAP": "30"}, timeout_sec=1))
        assert slow.return_code == TIMEOUT_EXIT_CODE and slow.stdout == "args= shell=0\n"
    finally:
        run(env.stop(delete=True))


def test_a_program_linked_out_of_the_system_folders_runs_as_the_shell_would_find_it(
    tmp_path: Path, kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PATH folder the sandbox shows from the host whose `python3` is a link to a host folder it does not show
    (a user's home, /dev/shm) dangles inside: the shell there passes it over and runs the next one on PATH, and so
    does a command started without a shell, instead of failing to start a program the host found."""
    kit.skip_without_bwrap("bwrap")
    shown = tmp_path / "shown"  # stands for a system folder (/opt/x/bin): shown in the sandbox as on the host
    monkeypatch.setattr(command_forms, "SYSTEM_DIRS", (*command_forms.SYSTEM_DIRS, "/" + shown.parts[1]))
    elsewhere = Path(tempfile.mkdtemp(dir="/dev/shm"))  # a host folder the sandbox never shows (it has its own /dev)
    env = run(started(make_env(tmp_path, "bwrap")))
    try:
        target = elsewhere / "python3"
        target.write_text("#!/bin/sh\necho host-only\n")
        target.chmod(0o755)
        (shown / "bin").mkdir(parents=True)
        (shown / "bin" / "python3").symlink_to(target)
        env.host_path("/workspace/show.py").write_text("print('system python')\n")
        # What a shell inside does with the same PATH; the folder is there only as a stand-in, so the shell inside
        # does not see it at all, which leads it to the same program as a dangling link would.
        path = {"PATH": f"{shown / 'bin'}:/usr/bin:/bin"}
        assert command_forms.direct_argv("python3 /workspace/show.py", path["PATH"]) is None
        result = run(env.exec("python3 /workspace/show.py", env=path))
        assert (result.return_code, result.stdout) == (0, "system python\n")
    finally:
        run(env.stop(delete=True))
        shutil.rmtree(elsewhere, ignore_errors=True)


def test_a_python_started_without_a_shell_is_told_its_working_folder(tmp_path: Path, kit) -> None:
    """`bash -c` puts PWD (the working folder) in the environment of what it starts; a program started without the
    shell is given the same."""
    kit.skip_without_bwrap("bwrap")
    env = run(started(make_env(tmp_path, "bwrap")))
    try:
        env.host_path("/workspace/pwd.py").write_text("import os\nprint(os.environ.get('PWD'))\n")
        assert command_forms.direct_argv("python3 /workspace/pwd.py", "/usr/bin:/bin") is not None
        assert run(env.exec("python3 /workspace/pwd.py", cwd="/workspace/output")).stdout == "/workspace/output\n"
    finally:
        run(env.stop(delete=True))


def test_exec_writes_land_in_the_sandbox(tmp_path: Path, sandbox_mode: str) -> None:
    env = run(started(make_env(tmp_path, sandbox_mode)))
    res = run(env.exec("echo hello > /workspace/output/a.txt && cat /workspace/output/a.txt"))
    assert res.stdout == "hello\n"
    assert env.host_path("/workspace/output/a.txt").read_text() == "hello\n"
    assert not Path("/workspace/output/a.txt").exists() or sandbox_mode == "bwrap"


def test_exec_timeout_kills_the_process_tree(tmp_path: Path, sandbox_mode: str) -> None:
    env = run(started(make_env(tmp_path, sandbox_mode)))
    marker = env.host_path("/workspace/output/late")
    begun = time.monotonic()
    res = run(env.exec("echo started; (sleep 2; touch /workspace/output/late) & sleep 30", timeout_sec=1))
    assert time.monotonic() - begun < 10
    assert res.return_code == TIMEOUT_EXIT_CODE
    assert "started" in res.stdout and "timed out" in res.stderr
    time.sleep(3)
    assert not marker.exists(), "a child of the timed-out command survived"


def test_exec_cancellation_kills_the_process_tree(tmp_path: Path, sandbox_mode: str) -> None:
    env = run(started(make_env(tmp_path, sandbox_mode)))
    marker = env.host_path("/workspace/output/late")

    async def cancel_soon() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(env.exec("(sleep 2; touch /workspace/output/late) & sleep 30"), timeout=1)

    run(cancel_soon())
    time.sleep(3)
    assert not marker.exists(), "a child of the cancelled command survived"


def test_background_children_do_not_outlive_exec(tmp_path: Path, sandbox_mode: str) -> None:
    env = run(started(make_env(tmp_path, sandbox_mode)))
    begun = time.monotonic()
    res = run(env.exec("(sleep 2; touch /workspace/output/late) & echo done"))
    assert res.stdout == "done\n" and time.monotonic() - begun < 2
    time.sleep(3)
    assert not env.host_path("/workspace/output/late").exists()


def test_upload_download_and_stop(tmp_path: Path, sandbox_mode: str) -> None:
    env = run(started(make_env(tmp_path, sandbox_mode)))
    src = tmp_path / "src"
    (src / "nested").mkdir(parents=True)
    (src / "nested" / "f.txt").write_text("data")
    (tmp_path / "one.txt").write_text("one")
    run(env.upload_dir(src, "/tests"))
    run(env.upload_file(tmp_path / "one.txt", "/app/config/one.txt"))  # a new top-level path
    res = run(env.exec("cat /tests/nested/f.txt /app/config/one.txt"))
    assert res.stdout == "dataone"
    run(env.download_dir("/tests", tmp_path / "back"))
    assert (tmp_path / "back" / "nested" / "f.txt").read_text() == "data"
    run(env.download_file("/app/config/one.txt", tmp_path / "back1" / "one.txt"))
    assert (tmp_path / "back1" / "one.txt").read_text() == "one"
    with pytest.raises(PermissionError):
        run(env.upload_file(tmp_path / "one.txt", "/etc/evil"))
    with pytest.raises(FileNotFoundError):
        run(env.download_file("/workspace/missing", tmp_path / "x"))
    run(
        env.exec("mkdir -p /workspace/ro/sub && touch /workspace/ro/sub/f && chmod 555 /workspace/ro/sub /workspace/ro")
    )
    run(env.stop(delete=True))
    assert not env.sandbox_dir.exists()
    assert env.sandbox_dir.parent == Path(env.trial_paths.trial_dir).resolve()


def test_skills_dir_comes_from_harbor(tmp_path: Path) -> None:
    env = make_env(tmp_path, "none")
    assert env.skills_dir == EnvironmentPaths().default_skills_dir.as_posix()
    run(env.start(force_build=False))
    assert env.host_path(env.skills_dir).is_dir()
    custom = make_env(tmp_path / "other", "none", skills_dir="/opt-skills")
    assert custom.skills_dir == "/opt-skills"


def test_none_mode_warns_once_and_rewrites_paths(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    local_env._warned_unisolated = False
    with caplog.at_level(logging.WARNING, logger=local_env.__name__):
        make_env(tmp_path / "a", "none")
        env = make_env(tmp_path / "b", "none")
    warnings = [r for r in caplog.records if "no isolation" in r.getMessage()]
    assert len(warnings) == 1
    assert env.capabilities.disable_internet is False and env.capabilities.mounted is False
    run(env.start(force_build=False))
    root = str(env.rootfs)
    assert env.rewrite_paths("cat /logs/agent/x > /workspace/o") == f"cat {root}/logs/agent/x > {root}/workspace/o"
    untouched = "cat ./logs/x ~/workspace http://h/logs /workspaces /usr/bin/env"
    assert env.rewrite_paths(untouched) == untouched


def test_sandbox_kwarg_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sandbox must be one of"):
        make_env(tmp_path, "docker")
    assert make_env(tmp_path / "auto", "auto").sandbox_mode == ("bwrap" if local_env.bwrap_available() else "none")
    assert LocalEnvironment.type() == "local"


def test_none_mode_rewrites_each_path_once(tmp_path: Path) -> None:
    """The sandbox itself may sit under /tmp, a container path too: a host path in it must not be rewritten again."""
    env = run(started(make_env(tmp_path, "none")))
    try:
        target = env.host_path("/workspace/output/a.txt")
        assert str(target).startswith("/tmp/") and env.host_path("/tmp").is_dir()
        command = f"echo hi > {target} && cat /workspace/output/a.txt"
        once = env.rewrite_paths(command)
        assert env.rewrite_paths(once) == once
        assert once == f"echo hi > {target} && cat {target}"
        res = run(
            env.exec(
                f"echo hi > {target} && cat /workspace/output/a.txt && echo \"$WHERE\"", env={"WHERE": str(target)}
            )
        )
        assert res.return_code == 0, res
        assert res.stdout == f"hi\n{target}\n"
    finally:
        run(env.stop(delete=True))


def test_commands_get_default_signal_dispositions(tmp_path: Path, sandbox_mode: str) -> None:
    """`yes | head` ends quietly only when SIGPIPE is at its default (Python and the keeper ignore it)."""
    env = run(started(make_env(tmp_path, sandbox_mode)))
    try:
        res = run(env.exec("yes | head -n 2; grep -E '^Sig(Ign|Blk)' /proc/self/status"))
        assert res.return_code == 0 and res.stderr == "", res
        assert res.stdout.splitlines()[:2] == ["y", "y"]
        masks = dict(line.split(":\t") for line in res.stdout.splitlines()[2:])
        assert int(masks["SigBlk"], 16) == 0, res.stdout
        for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGXFSZ, signal.SIGHUP):
            assert not int(masks["SigIgn"], 16) & (1 << (sig - 1)), f"{sig.name} is ignored: {res.stdout}"
    finally:
        run(env.stop(delete=True))


def test_none_mode_lists_rootfs_and_compiles_once_per_exec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One rootfs listing per exec for the command and every env value; the pattern is reused until the top-level
    folders change (a new one is then rewritten too)."""
    env = run(started(make_env(tmp_path, "none")))
    listings = []
    top_level_dirs = env._top_level_dirs
    monkeypatch.setattr(env, "_top_level_dirs", lambda: listings.append(1) or top_level_dirs())
    compiled, compile_ = [], re.compile
    monkeypatch.setattr(local_env.re, "compile", lambda *a: compiled.append(a) or compile_(*a))
    try:
        values = {f"V{i}": f"/workspace/{i}" for i in range(5)}
        res = run(env.exec('echo "$V0 $V4" /logs/agent', env=values))
        root = str(env.rootfs)
        assert res.stdout == f"{root}/workspace/0 {root}/workspace/4 {root}/logs/agent\n"
        assert len(listings) == 1 and len(compiled) == 1
        run(env.exec("true", env=values))
        assert len(listings) == 2 and len(compiled) == 1
        env.host_path("/data").mkdir()
        assert run(env.exec("echo /data/x")).stdout == f"{root}/data/x\n"
        assert len(compiled) == 2
    finally:
        run(env.stop(delete=True))
