"""The `local` environment answers Harbor's folder resets and checks (`empty_dirs`, `is_dir`, `is_file`) on the
host, without an exec through the trial's keeper, and without following a link the sandbox planted (issue 13)."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.nop import NopAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.trial.config import AgentConfig

from pytest_skilleval.harbor import case_checks
from pytest_skilleval.harbor import local_env as local_env_module
from pytest_skilleval.harbor.local_env import SANDBOX_DIRNAME, LocalEnvironment
from tests.e2e.conftest import make_env
from verifier import check_runner, safe_io
from verifier.check_host import Snapshot

pytestmark = pytest.mark.e2e
SECRET = "HOST CONTENT\n"


class SkilledNop(NopAgent):
    """Harbor's no-op agent, declaring skills so Harbor installs them."""

    capabilities = AgentCapabilities(skills=True)


def run(coro):  # a tiny sync bridge for async env methods
    return asyncio.run(coro)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A host folder outside every sandbox, with a file whose survival proves nothing followed a link to it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.txt").write_text(SECRET)
    return folder


def assert_untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == SECRET


@pytest.fixture
def env(tmp_path: Path, sandbox_mode: str, monkeypatch: pytest.MonkeyPatch):
    """A started environment whose exec records every command it is asked to run."""
    environment = make_env(tmp_path, sandbox_mode)
    run(environment.start(force_build=False))
    environment.commands, environment.may_exec = [], True
    exec_ = environment.exec

    async def recording(command: str, *args: object, **kwargs: object):
        environment.commands.append(command)
        if not environment.may_exec:  # a regression must not run the command (none mode: on the host itself)
            raise AssertionError(f"exec called for {command!r}")
        return await exec_(command, *args, **kwargs)

    monkeypatch.setattr(environment, "exec", recording)
    yield environment
    run(environment.stop(delete=True))


def tree(root: Path) -> dict[str, str]:
    """Every entry under root: folders with their mode, files with their text, links with their target."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[rel] = oct(path.stat().st_mode & 0o7777)
        else:
            found[rel] = path.read_text()
    return found


def plant(env: LocalEnvironment, base: str) -> None:
    """Nested content, a dotfile and a file where a folder is expected, as an agent leaves them."""
    folder = env.host_path(base)
    (folder / "sub" / "deeper").mkdir(parents=True, exist_ok=True)
    (folder / "sub" / "deeper" / "f.txt").write_text("old")
    (folder / ".hidden").write_text("old")
    env.host_path(f"{base}-file").write_text("a file where a folder is expected")


def test_empty_dirs_matches_harbor_shell_version_without_an_exec(env: LocalEnvironment) -> None:
    for base in ("/logs/shell", "/logs/host"):
        plant(env, base)
    # Only under existing top-level folders: in none mode the shell's rewrite knows no others, and Harbor's command
    # would create a new top-level path on the host itself.
    shell = run(BaseEnvironment.empty_dirs(env, ["/logs/shell", "/logs/shell-file", "/workspace/new/a/b"], chmod=True))
    assert shell is not None and shell.return_code == 0, shell
    assert len(env.commands) == 1  # the reference: Harbor's own command, through the keeper
    env.commands.clear()
    env.may_exec = False
    inode = env.host_path("/logs/host").stat().st_ino
    result = run(env.empty_dirs(["/logs/host", "/logs/host-file", "/workspace/made/a/b", "/skilleval-made/a"]))
    assert result is not None and result.return_code == 0, result
    assert env.commands == []
    assert env.host_path("/logs/host").stat().st_ino == inode  # the root kept, as Harbor documents
    assert tree(env.host_path("/logs/host")) == tree(env.host_path("/logs/shell")) == {}
    for ours, harbors in (
        ("/logs/host", "/logs/shell"),
        ("/logs/host-file", "/logs/shell-file"),
        ("/workspace/made/a/b", "/workspace/new/a/b"),
        ("/workspace/made/a", "/workspace/new/a"),
    ):
        assert env.host_path(ours).is_dir()
        assert oct(env.host_path(ours).stat().st_mode & 0o7777) == oct(env.host_path(harbors).stat().st_mode & 0o7777)
    assert env.host_path("/workspace/made/a/b").stat().st_mode & 0o777 == 0o777
    assert env.host_path("/skilleval-made/a").is_dir() and not Path("/skilleval-made").exists()
    run(env.empty_dirs(["/logs/plain"], chmod=False))
    assert env.host_path("/logs/plain").stat().st_mode & 0o777 != 0o777
    assert run(env.empty_dirs([])) is None


def test_empty_dirs_removes_planted_links_without_following_them(env: LocalEnvironment, outside: Path) -> None:
    verifier = env.host_path("/logs/verifier")
    env.may_exec = False
    (verifier / "reward.json").symlink_to(outside / "keep.txt")
    (verifier / "sub").mkdir()
    (verifier / "sub" / "escape").symlink_to(outside)
    env.host_path("/logs/agent").rmdir()
    env.host_path("/logs/agent").symlink_to(outside)  # the folder itself replaced by a link
    result = run(env.empty_dirs(["/logs/verifier", "/logs/agent"], chmod=True))
    assert result is not None and result.return_code == 0, result
    assert list(verifier.iterdir()) == []
    agent = env.host_path("/logs/agent")
    assert agent.is_dir() and not agent.is_symlink() and list(agent.iterdir()) == []
    assert_untouched(outside)
    assert env.commands == []


def test_empty_dirs_refuses_a_linked_parent_with_a_non_zero_result(env: LocalEnvironment, outside: Path) -> None:
    env.may_exec = False
    env.host_path("/runtime/skills").rmdir()
    env.host_path("/runtime/skills").symlink_to(outside)
    result = run(env.empty_dirs(["/logs/verifier", "/runtime/skills/keep.txt", "/logs/never"], chmod=True))
    assert result is not None and result.return_code != 0
    assert "/runtime/skills is a symbolic link" in result.stderr and str(outside) in result.stderr
    assert_untouched(outside)
    assert not env.host_path("/logs/never").exists()  # like the shell's `&&`: the first failure ends it
    system = run(env.empty_dirs(["/usr/share/doc"]))
    assert system is not None and system.return_code != 0 and "read-only host system path" in system.stderr
    assert Path("/usr/share/doc").is_dir()
    assert env.commands == []


def test_is_dir_and_is_file_answer_on_the_host_and_never_through_a_link(env: LocalEnvironment, outside: Path) -> None:
    env.may_exec = False
    env.host_path("/workspace/output/f.txt").write_text("x")
    env.host_path("/workspace/to_dir").symlink_to(outside)
    env.host_path("/workspace/to_file").symlink_to(outside / "keep.txt")
    env.host_path("/linked").symlink_to(env.host_path("/workspace"))
    checks = {
        ("/logs/artifacts", "dir"): True,
        ("/workspace/output/f.txt", "file"): True,
        ("output", "dir"): True,  # relative to the default cwd, /workspace, as exec would take it
        ("/workspace/output/f.txt", "dir"): False,
        ("/logs/artifacts", "file"): False,
        ("/workspace/missing", "dir"): False,
        ("/workspace/output/f.txt/x", "file"): False,
        ("/workspace/to_dir", "dir"): False,
        ("/workspace/to_file", "file"): False,
        ("/workspace/to_dir/keep.txt", "file"): False,
        ("/linked/output", "dir"): False,
    }
    answers = {key: run(env.is_dir(key[0]) if key[1] == "dir" else env.is_file(key[0])) for key in checks}
    assert answers == checks
    assert env.commands == []
    # System folders are not under rootfs/: asked inside the sandbox (or on the host, in none mode), as before.
    env.may_exec = True
    assert run(env.is_dir("/usr/bin")) is True and run(env.is_file("/usr/bin")) is False
    assert len(env.commands) == 2 and all(c.startswith("test -") for c in env.commands)


def test_a_trial_execs_only_what_the_host_cannot_answer(
    tmp_path: Path, kit, sandbox_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands: list[str] = []
    spawn = local_env_module.run_command

    async def recording(keeper: object, argv: list[str], **kwargs: object):
        commands.append(argv[-1])  # what the keeper is asked to run: `bash -c COMMAND`
        return await spawn(keeper, argv, **kwargs)

    monkeypatch.setattr(local_env_module, "run_command", recording)
    task = kit.make_task(tmp_path, 'echo 1 > "$HARBOR_REWARD_TXT"\n')
    # The skill is installed through empty_dirs + upload_dir.
    agent = AgentConfig(import_path=f"{__name__}:SkilledNop", skills=[str(kit.HELLO_SKILL)])
    trial, result = kit.run_trial(
        kit.trial_config(task, tmp_path / "trials", sandbox=sandbox_mode, agent=agent, delete=False)
    )
    assert result.exception_info is None, result.exception_info
    assert result.verifier_result is not None and result.verifier_result.rewards == {"reward": 1.0}
    installed = Path(trial.paths.trial_dir).resolve() / SANDBOX_DIRNAME / "rootfs" / "runtime" / "skills"
    assert (installed / kit.HELLO_SKILL.name / "SKILL.md").is_file()
    # Harbor's `test -d /logs/artifacts`, the skill folder's reset and its `chmod -R a+rX` are answered on the host.
    # What is left for the keeper: the verifier's commands (it removes old rewards, then runs tests/test.sh).
    left = [c for c in commands if "test.sh" not in c and "/logs/verifier/reward" not in c]
    assert left == [], commands
    skill = installed / kit.HELLO_SKILL.name
    for path in [skill, *skill.rglob("*")]:
        if not path.is_symlink():
            assert path.stat().st_mode & (0o555 if path.is_dir() else 0o444) == (0o555 if path.is_dir() else 0o444)


def _planted_workspace(env: LocalEnvironment, outside: Path) -> None:
    """What an agent leaves: nested files, an empty one, links to a host file and folder (never to be followed)."""
    workspace = env.host_path("/workspace")
    (workspace / "out" / "deep").mkdir(parents=True)
    (workspace / "out" / "deep" / "f.txt").write_text("result\n")
    (workspace / "empty.txt").write_text("")
    (workspace / "link.txt").symlink_to(outside / "keep.txt")
    (workspace / "linkdir").symlink_to(outside)


def test_the_workspace_snapshot_is_read_on_the_host_as_the_sandbox_sees_it(
    env: LocalEnvironment, outside: Path
) -> None:
    _planted_workspace(env, outside)
    env.may_exec = False
    on_host = run(case_checks.take_snapshot(env))
    assert env.commands == []
    env.may_exec = True
    in_sandbox = run(env.exec(case_checks.snapshot_command()))
    assert in_sandbox.return_code == 0, in_sandbox.stderr
    assert on_host == case_checks.parse_output(in_sandbox.stdout).snapshot
    assert on_host is not None and sorted(on_host.entries) == ["empty.txt", "link.txt", "linkdir", "out/deep/f.txt"]
    # A link is recorded by its target, never read through.
    assert on_host.entries["link.txt"][0] == "link" and on_host.entries["linkdir"][0] == "link"
    assert_untouched(outside)


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What the local environment hands to a worker thread (`asyncio.to_thread`), recorded."""
    calls: list[object] = []
    real_to_thread = asyncio.to_thread

    async def recording_to_thread(function: object, /, *args: object, **kwargs: object) -> object:
        calls.append(function)
        return await real_to_thread(function, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(local_env_module.asyncio, "to_thread", recording_to_thread)
    return calls


@pytest.mark.parametrize("files", [3, 300], ids=["small-on-the-loop", "large-in-a-thread"])
def test_a_workspace_snapshot_is_the_same_walk_on_the_loop_or_in_a_thread(
    env: LocalEnvironment, files: int, threaded: list[object]
) -> None:
    """Within `SNAPSHOT_ON_LOOP` the snapshot is read on the event loop, past it in a worker thread (a long walk holds
    no other trial up): the same walk, the same entries."""
    from pytest_skilleval.harbor.local_env import SNAPSHOT_ON_LOOP

    workspace = env.host_path("/workspace")
    for index in range(files):
        (workspace / f"f{index:04d}.txt").write_text(str(index))
    found = run(env.workspace_snapshot())
    assert found == check_runner.snapshot(str(workspace))
    assert found is not None and len(found["entries"]) >= files
    assert threaded == ([check_runner.snapshot] if files > SNAPSHOT_ON_LOOP[0] else [])


@pytest.mark.parametrize("files", [3, 100], ids=["small-on-the-loop", "large-in-a-thread"])
def test_a_download_is_the_same_copy_on_the_loop_or_in_a_thread(
    env: LocalEnvironment, files: int, threaded: list[object], tmp_path: Path
) -> None:
    """A folder within `COPY_ON_LOOP` is downloaded on the event loop, a larger one in a worker thread: the same
    copy either way, a link in it refused alike."""
    from pytest_skilleval.harbor.local_env import COPY_ON_LOOP

    logs = env.host_path("/logs/agent")
    (logs / "deep").mkdir(parents=True, exist_ok=True)
    for index in range(files):
        (logs / "deep" / f"f{index:03d}.txt").write_text(str(index))
    (logs / "planted").symlink_to("/etc")
    target = tmp_path / "downloaded"
    with pytest.raises(safe_io.UnsafePathError, match="planted"):
        run(env.download_dir("/logs/agent", target))
    assert sorted(path.name for path in (target / "deep").iterdir()) == [f"f{index:03d}.txt" for index in range(files)]
    assert not (target / "planted").exists()
    assert len(threaded) == (1 if files + 2 > COPY_ON_LOOP[0] else 0)


def test_a_workspace_swapped_for_a_link_gives_no_snapshot(env: LocalEnvironment, outside: Path) -> None:
    workspace = env.host_path("/workspace")
    shutil.rmtree(workspace)
    workspace.symlink_to(outside)
    env.may_exec = False
    assert run(case_checks.take_snapshot(env)) is None
    assert env.commands == []
    assert_untouched(outside)


def test_a_remote_like_sandbox_snapshots_the_workspace_in_the_sandbox(
    tmp_path: Path, sandbox_mode: str, outside: Path
) -> None:
    environment = make_env(tmp_path, sandbox_mode, {"remote_latency_ms": 0})
    run(environment.start(force_build=False))
    try:
        _planted_workspace(environment, outside)
        workspace = environment.host_path("/workspace")
        for name in ('qu"o\\te', "caf\u00e9 \U0001f600", "tab\tnew\nline"):  # what the runner's own JSON escapes
            (workspace / name).write_text(name)
        (workspace / os.fsdecode(b"not-utf8-\xff")).write_text("bytes")  # a name the host's JSON reader refused
        assert run(environment.workspace_snapshot()) is None  # not answered on the host
        found = run(case_checks.take_snapshot(environment))
        assert found is not None and "out/deep/f.txt" in found.entries and "not-utf8-\\xff" in found.entries
        # The same document as the host's own walk of that folder: the runner's snapshot-only start changes nothing.
        assert found == Snapshot.model_validate(check_runner.snapshot(str(workspace)))
        assert_untouched(outside)
    finally:
        run(environment.stop(delete=True))


def test_a_download_from_a_sandbox_never_started_is_nothing_to_download(tmp_path: Path) -> None:
    """Harbor's clean-up downloads the agent's logs even when the trial failed before its environment started (an
    agent it refused): no sandbox folder then, so nothing to download, not a FileNotFoundError Harbor logs."""
    environment = make_env(tmp_path, "none")
    assert not (tmp_path / "trial" / SANDBOX_DIRNAME).exists()
    run(environment.download_dir("/logs/agent", tmp_path / "agent-logs"))
    assert not (tmp_path / "agent-logs").exists() or not any((tmp_path / "agent-logs").iterdir())
