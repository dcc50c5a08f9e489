"""The per-trial process keeper: the one parent of everything a trial runs, so nothing outlives the trial.

Why: a command may leave processes behind on purpose (terminus-2 keeps a tmux server for the whole trial) or
to escape (`setsid -f`, a double fork). The keeper starts every command of one trial and, when the trial
stops, kills everything the trial started, waits until it is gone and (when the host asks) deletes the trial's
sandbox folder, so that work is not a thread of the host process's.

* `none` mode: the keeper is a child subreaper (PR_SET_CHILD_SUBREAPER), so every orphan of the trial is
  re-parented to it rather than to init; at stop it kills its descendants until none are left.
* `bwrap` mode: the keeper starts one bubblewrap sandbox for the trial (new user, PID, mount, IPC, UTS and
  network namespaces, capabilities dropped) and each command joins its namespaces (setns). The network
  namespace is joined only when the command asks for no network, so the per-phase network switch stays per
  command. Every command lives in the sandbox's PID namespace: when the sandbox ends, the kernel kills them all.

Started by `keeper_client` through a *launcher*: one `python -I -S keeper.py --launcher FD` per host process, with
standard library only (the sandbox sees nothing of our package), that forks a keeper per trial. A fork costs a small
fraction of a new interpreter's start, and every trial pays it. Each keeper talks to the host over its
own SOCK_SEQPACKET socket, handed over at launch: small JSON messages, with file descriptors attached for a spawn
request (the request body, stdout, stderr). The socket closing (the host process died) is a stop. No socket or
pipe of the keeper or the launcher is inheritable: a command never holds a channel to the host.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import gc
import json
import os
import select
import selectors
import signal
import socket
import stat
import sys
import time
from collections.abc import Callable, Iterator

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
NS_GET_USERNS = 0xB701
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# The namespaces a command joins, in order; "net" only while the network is off, "mnt" last (it changes /proc).
JOINED = ("ipc", "uts", "net", "mnt")
# What holds the sandbox open: `cat` on a pipe the keeper keeps open, one process and no shell. It echoes READY back
# once bwrap has built the sandbox and started it, and ends if the keeper is gone (end of its input).
HOLDER = ["/bin/cat"]
READY = b"ready\n"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
SPAWN_FAILED = 127

_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, arg: int = 0) -> None:
    if _libc.prctl(option, arg, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}, {arg}): {os.strerror(err)}")


def _setns(fd: int, nstype: int) -> None:
    """os.setns, or libc's where Python is older than 3.12 (the keeper runs under whatever Python runs pytest)."""
    if hasattr(os, "setns"):
        os.setns(fd, nstype)
    elif _libc.setns(fd, nstype) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def _last_capability() -> int:
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        return int(handle.read())


def _drop_capabilities(last: int) -> None:
    """Empty the bounding and ambient sets: whatever runs next (as the sandbox's root) gets no capability."""
    for cap in range(last + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def _default_signals() -> None:
    """A command starts with default signal handling: Python ignores SIGPIPE and SIGXFSZ, the keeper SIGTERM and
    SIGINT, and pytest's workers may ignore more; none of that is inherited."""
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            if sig == signal.SIGCHLD or signal.getsignal(sig) is not signal.SIG_DFL:
                signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _parses(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _read_until(fd: int, deadline: float, done: Callable[[bytes], bool]) -> bytes:
    data = b""
    while not done(data):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("the sandbox did not start in time")
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    return data


class Sandbox:
    """One bubblewrap sandbox for the whole trial, and the way a command enters it."""

    def __init__(self, options: list[str]) -> None:
        import subprocess  # only here: a keeper without bwrap (sandbox=none) starts faster without it

        info_r, info_w = os.pipe()
        argv = [*options, "--info-fd", str(info_w), "--", *HOLDER]
        # bwrap's stderr goes to a file, not a pipe: a late warning must never meet a closed pipe (SIGPIPE). A file in
        # memory: no inode made and freed on a disk for every trial.
        errors = os.fdopen(os.memfd_create("skilleval-bwrap-errors", os.MFD_CLOEXEC), "w+b")
        self.proc = subprocess.Popen(
            argv, pass_fds=(info_w,), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, cwd="/"
        )
        os.close(info_w)
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None  # PIPE above
        try:
            os.write(stdin.fileno(), READY)  # the holder's input stays open (never inherited) while the trial runs
        except BrokenPipeError:
            pass  # bwrap ended already: its stdout ends too, and its stderr says why below
        deadline = time.monotonic() + START_TIMEOUT
        try:
            ready = _read_until(stdout.fileno(), deadline, lambda data: READY in data)
            info = _read_until(info_r, deadline, _parses) if READY in ready else b""
        finally:
            os.close(info_r)
        if READY not in ready:
            self.proc.kill()
            self.proc.wait()
            errors.seek(0)
            lines = errors.read().decode("utf-8", "replace").strip().splitlines()
            raise RuntimeError(f"bwrap could not start the sandbox: {lines[-1] if lines else 'no output'}")
        stdout.close()
        errors.close()
        self.ended = False
        self.last_cap = _last_capability()
        self.init_pid = int(json.loads(info)["child-pid"])
        self.init_fd = os.pidfd_open(self.init_pid)  # readable once the sandbox's init has exited
        self.ns = {name: os.open(f"/proc/{self.init_pid}/ns/{name}", os.O_RDONLY) for name in ("user", "pid", *JOINED)}
        self.root = os.open(f"/proc/{self.init_pid}/root", os.O_RDONLY | os.O_DIRECTORY)
        # The user namespace that owns the sandbox's other namespaces. Unprivileged, bwrap nests the sandbox's own
        # user namespace one level below it: commands join the owner (to be allowed into the others), then the
        # sandbox's own one, where they drop every capability.
        self.owner = fcntl.ioctl(self.ns["pid"], NS_GET_USERNS)
        self.nested = os.fstat(self.owner).st_ino != os.fstat(self.ns["user"]).st_ino
        # The keeper joins the owner (to hold rights over the others) and forks into the PID namespace.
        _setns(self.owner, CLONE_NEWUSER)
        _setns(self.ns["pid"], CLONE_NEWPID)
        # What holds the sandbox open: bwrap, its init (PID 1 inside) and the holder command (init's one child now).
        self.own = {self.proc.pid, self.init_pid, *descendants(self.init_pid)}

    def alive(self) -> bool:
        """False once the holder (PID 2 of the sandbox, under bwrap's init) has died, even before the sandbox's
        init exits and is reaped: a command sent right after one that killed the holder (`kill -9 -1`) must not be
        started into a namespace about to be torn down. Asked of the sandbox's own /proc (through its root), which
        its unprivileged processes cannot remount."""
        if not self.ended and (select.select([self.init_fd], [], [], 0)[0] or not self._holder_running()):
            self.ended = True
        return not self.ended

    def _holder_running(self) -> bool:
        """The holder exists, is not a zombie, and has no SIGKILL pending (one sent a moment ago, not yet acted on)."""
        try:
            fd = os.open("proc/2/status", os.O_RDONLY | os.O_CLOEXEC, dir_fd=self.root)
        except OSError:
            return False
        try:
            status = os.read(fd, 4096).decode("ascii", "replace")
        except OSError:
            return False
        finally:
            os.close(fd)
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        state = fields.get("State", "").split()
        pending = 0
        for key in ("SigPnd", "ShdPnd"):
            try:
                pending |= int(fields.get(key, "0").strip(), 16)
            except ValueError:
                return False
        return bool(state) and state[0] not in ("Z", "X") and not pending & (1 << (signal.SIGKILL - 1))

    def enter(self, join_net: bool) -> None:
        """In the forked child: join the sandbox, take its root, drop every capability."""
        for name in JOINED:
            if name != "net" or join_net:
                _setns(self.ns[name], 0)
        os.fchdir(self.root)
        os.chroot(".")
        if self.nested:
            _setns(self.ns["user"], CLONE_NEWUSER)
        _drop_capabilities(self.last_cap)

    def kill(self) -> None:
        for pid in (self.init_pid, self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _has_children_files() -> bool:
    """Whether this kernel lists a thread's children in /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)."""
    return os.path.exists(f"/proc/self/task/{os.getpid()}/children")


# Read once, in the launcher: every keeper it forks walks its own tree through these files.
CHILDREN_FILES = _has_children_files()


def _children(pid: int) -> list[int]:
    """The children of `pid`, from the `children` file of each of its threads (a child belongs to the thread that
    forked it, or that an orphan was re-parented to); [] once it has exited."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tids:
        try:
            fd = os.open(f"/proc/{pid}/task/{tid}/children", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            found.extend(int(child) for child in os.read(fd, 1 << 20).split())
        except OSError:
            pass
        finally:
            os.close(fd)
    return found


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _exited_children() -> Iterator[tuple[int, int]]:
    """(pid, wait status) of each child that has ended, reaped."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def _has_children() -> bool:
    """Whether any process is still our child. A subreaper with no child has no descendant at all (every orphan of
    the trial is re-parented to it), so the /proc walk of `descendants` is needed only when this is true."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def descendants(root: int) -> list[int]:
    """Every process below `root`. Through the tree's own `children` files where the kernel has them: a trial's
    handful of processes, not every process of the machine (a /proc walk costs milliseconds with hundreds of
    trials running, and a keeper walks at least three times per trial). A process forked meanwhile may be missed;
    the callers walk again until a walk finds nothing to kill."""
    if CHILDREN_FILES:
        children = _children
    else:
        mapping = _children_map()
        children = lambda pid: mapping.get(pid, [])  # noqa: E731
    found: list[int] = []
    todo = children(root)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children(pid))
    return found


def _take_signals(wake_w: int) -> None:
    """SIGCHLD wakes the loop (through the pipe); SIGTERM and SIGINT are for the host to act on, not for us."""
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _serve(
    sock: socket.socket,
    wake_r: int,
    selector: selectors.BaseSelector,
    on_message: Callable[[dict, list[int]], bool],
    on_child_exit: Callable[[], None],
) -> None:
    """The loop of a keeper and of the launcher: a message from the host (with descriptors attached), or SIGCHLD
    through the wake-up pipe. Returns when the host hangs up or `on_message` says to stop."""
    selector.register(sock, selectors.EVENT_READ, "sock")
    selector.register(wake_r, selectors.EVENT_READ, "wake")
    while True:
        for key, _ in selector.select():
            if key.data == "wake":
                os.read(wake_r, 4096)
                on_child_exit()
                continue
            try:
                data, fds, _flags, _addr = socket.recv_fds(sock, 65536, 8, socket.MSG_CMSG_CLOEXEC)
            except OSError:
                data, fds = b"", []
            if not data or not on_message(json.loads(data), fds):
                return  # the host is gone (or asked us to stop)
        on_child_exit()


def _add_owner_rights(target: str) -> None:
    """chmod u+rwx on what is at `target` itself: opened with O_PATH|O_NOFOLLOW (a link is then the link, and is
    left alone) and changed through /proc/self/fd, so an entry swapped for a link meanwhile is not followed."""
    fd = os.open(target, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        found = os.fstat(fd)
        if stat.S_ISLNK(found.st_mode):
            return
        os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(found.st_mode) | stat.S_IRWXU)
    finally:
        os.close(fd)


def make_writable_and_retry(func: Callable[[str], object], path: str, _exc: object) -> None:
    """shutil.rmtree's `onexc`: agents may leave read-only folders behind. Only a real folder or file is made
    writable; a link is never followed (its target may be any host file) and never changed."""
    for target in (os.path.dirname(path), path):
        try:
            _add_owner_rights(target)
        except OSError:
            pass
    func(path)


def remove_tree(path: str) -> None:
    """Delete a trial's sandbox folder (shutil.rmtree follows no link); what is left, the host removes."""
    import shutil

    # `onerror` before Python 3.12 (the keeper runs under the Python that runs pytest); the handler takes either.
    handler = {"onexc" if sys.version_info >= (3, 12) else "onerror": make_writable_and_retry}
    try:
        shutil.rmtree(path, **handler)  # type: ignore[call-overload]
    except Exception as error:  # noqa: BLE001 - the keeper still reports its stop; the host removes what is left
        os.write(2, f"skilleval keeper: the sandbox folder was not removed: {error}\n".encode())


class SandboxEnded(RuntimeError):
    """A command of the trial killed the sandbox's holder (`kill -9 -1` does): the sandbox is gone."""


class Keeper:
    def __init__(self, sock: socket.socket, options: list[str] | None) -> None:
        self.sock = sock
        self.options = options
        self.sandbox: Sandbox | None = None
        self.running: dict[int, int] = {}  # pid -> request id
        self.remove: str | None = None  # the sandbox folder to delete once everything is stopped (the host's ask)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)

    def send(self, message: dict) -> None:
        try:
            self.sock.send(json.dumps(message).encode())
        except OSError:
            pass

    def start(self) -> None:
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _take_signals(self.wake_w)
        if self.options is not None:
            self.sandbox = Sandbox(self.options)

    def spawn(self, request_id: int, fds: list[int]) -> None:
        body_fd, out_fd, err_fd = fds
        try:
            with os.fdopen(body_fd, "rb") as body:
                request = json.loads(body.read())
            if self.sandbox is not None and not self.sandbox.alive():
                raise SandboxEnded("the trial's sandbox has ended (its holder process was killed)")
            grouped_r, grouped_w = os.pipe2(os.O_CLOEXEC)
            try:
                pid = os.fork()
            except OSError:
                os.close(grouped_r)
                os.close(grouped_w)
                raise
        except Exception as error:  # noqa: BLE001 - reported to the host, which raises it in exec
            for fd in (out_fd, err_fd):
                os.close(fd)
            ended = isinstance(error, SandboxEnded)
            self.send({"id": request_id, "error": f"{type(error).__name__}: {error}", "sandbox_ended": ended})
            return
        if pid == 0:
            os.close(grouped_r)
            self._child(request, out_fd, err_fd, grouped_w)
        os.close(out_fd)
        os.close(err_fd)
        os.close(grouped_w)
        # The host kills a command by its process group: the pid is sent once the child has made that group (it
        # closes its end of the pipe then, or dies trying), so a kill right after the start never misses.
        try:
            os.read(grouped_r, 1)
        finally:
            os.close(grouped_r)
        self.running[pid] = request_id
        self.send({"id": request_id, "pid": pid})

    def _child(self, request: dict, out_fd: int, err_fd: int, grouped_w: int) -> None:
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_fd, 1)
            os.dup2(err_fd, 2)
            for fd in (null, out_fd, err_fd):
                os.close(fd)
            signal.set_wakeup_fd(-1)
            _default_signals()
            if self.sandbox is not None:
                self.sandbox.enter(bool(request.get("join_net")))
            os.setsid()
            os.close(grouped_w)  # its own process group now: the keeper may report the pid
            os.chdir(request["cwd"])
            os.execve(request["argv"][0], request["argv"], request["env"])
        except BaseException as error:  # noqa: BLE001 - the child must never return into the keeper's loop
            try:
                os.write(2, f"skilleval sandbox: cannot start the command: {error}\n".encode())
            finally:
                os._exit(SPAWN_FAILED)

    def reap(self) -> None:
        for pid, status in _exited_children():
            if self.sandbox is not None and pid == self.sandbox.proc.pid:
                self.sandbox.ended = True
            request_id = self.running.pop(pid, None)
            if request_id is not None:
                self.send({"id": request_id, "status": os.waitstatus_to_exitcode(status)})

    def stop(self) -> None:
        """Kill everything the trial started and wait until it is gone (or report what is left)."""
        if self.sandbox is not None:
            self.sandbox.kill()
        left = self._kill_descendants(set())
        if self.remove:
            remove_tree(self.remove)  # here, not in the host process: no thread there waits on its interpreter lock
        self.send({"stopped": True, "left": left})

    def end_commands(self) -> None:
        """Kill every process the trial's commands started (detached ones, tmux servers, orphans re-parented to the
        sandbox's init) and leave the sandbox itself running: what runs next (the grader) runs alone."""
        keep = self.sandbox.own if self.sandbox is not None and self.sandbox.alive() else set()
        self.send({"ended": True, "left": self._kill_descendants(keep)})

    def _kill_descendants(self, keep: set[int]) -> list[int]:
        """SIGKILL every descendant not in `keep` until none is left (a process forking meanwhile is caught on the
        next round); returns the pids still there at the deadline (normally none)."""
        deadline = time.monotonic() + STOP_TIMEOUT
        left: list[int] = []
        pause = 0.001
        self.reap()
        while time.monotonic() < deadline:
            left = [pid for pid in descendants(os.getpid()) if pid not in keep] if _has_children() else []
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(pause)  # SIGKILLed processes are gone within a millisecond or two, rarely more
            pause = min(pause * 2, 0.02)
            self.reap()
        self.reap()
        return left

    def serve(self) -> None:
        _serve(self.sock, self.wake_r, selectors.DefaultSelector(), self.on_message, self.reap)

    def on_message(self, message: dict, fds: list[int]) -> bool:
        if message.get("op") == "stop":
            remove = message.get("remove")
            self.remove = remove if isinstance(remove, str) and os.path.isabs(remove) else None
            return False
        if message.get("op") == "end":
            self.end_commands()
        if message.get("op") == "spawn" and len(fds) == 3:
            self.spawn(int(message["id"]), fds)
        else:
            for fd in fds:
                os.close(fd)
        return True


def run_keeper(sock: socket.socket, config: dict) -> int:
    """One trial's keeper, in a process forked by the launcher: ready (or why not), serve, then stop everything."""
    keeper = Keeper(sock, config.get("bwrap"))
    try:
        keeper.start()
    except Exception as error:  # noqa: BLE001 - the host shows this as the reason the trial cannot start
        keeper.send({"ready": False, "error": f"{error}", "pid": os.getpid()})
        keeper.stop()
        return 1
    keeper.send({"ready": True, "pid": os.getpid()})
    try:
        keeper.serve()
    finally:
        keeper.stop()
    return 0


class Launcher:
    """The fork server: one per host process, it forks a keeper for each launch request and reaps it when it ends.

    A request is {"op": "launch", "config": {...}} with two descriptors attached: the keeper's end of its own socket
    to the host, and its log file; the answer is {"launched": PID}.
    """

    def __init__(self, sock: socket.socket) -> None:
        import shutil  # noqa: F401 - imported once here (~10 ms), not by every keeper that deletes its sandbox
        import subprocess  # noqa: F401 - imported once here, so a forked bwrap keeper does not import it per trial

        _libc.prctl  # noqa: B018 - looked up once here (a dlsym), not in every keeper

        self.sock = sock
        self.children: set[int] = set()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.selector = selectors.DefaultSelector()

    def serve(self) -> None:
        _take_signals(self.wake_w)
        # Everything the launcher holds is kept out of the garbage collector's walks: a keeper forked from it then
        # shares those pages instead of copying each one the collector would touch (copy-on-write).
        gc.freeze()
        _serve(self.sock, self.wake_r, self.selector, self.on_message, self.reap)

    def on_message(self, message: dict, fds: list[int]) -> bool:
        if message.get("op") == "launch" and len(fds) == 2:
            self.launch(message.get("config") or {}, fds[0], fds[1])
            return True
        for fd in fds:
            os.close(fd)
        if message.get("op") == "kill":
            self.kill(int(message["pid"]))
        return True

    def launch(self, config: dict, sock_fd: int, log_fd: int) -> None:
        """Fork a keeper and tell the host its pid (or why there is none): the host waits for this answer, so a
        launcher that dies mid-request is noticed and replaced rather than leaving the trial waiting."""
        try:
            pid = os.fork()
        except OSError as error:
            pid, reason = -1, f"cannot fork the trial's process keeper: {error}"
        if pid == 0:
            os._exit(self._become_keeper(config, sock_fd, log_fd))
        os.close(sock_fd)
        os.close(log_fd)
        if pid > 0:
            self.children.add(pid)
        message = {"launched": pid} if pid > 0 else {"launched": None, "error": reason}
        try:
            self.sock.send(json.dumps(message).encode())
        except OSError:
            pass

    def _become_keeper(self, config: dict, sock_fd: int, log_fd: int) -> int:
        """In the forked child: drop the launcher's channels, log to the trial's keeper.log, and keep the trial."""
        try:
            signal.set_wakeup_fd(-1)
            self.selector.close()
            self.sock.close()
            os.close(self.wake_r)
            os.close(self.wake_w)
            os.dup2(log_fd, 1, inheritable=False)
            os.dup2(log_fd, 2, inheritable=False)
            os.close(log_fd)
            if config.get("cwd"):
                os.chdir(config["cwd"])
            sock = socket.socket(fileno=sock_fd)
            sock.set_inheritable(False)  # never a command's: it would be a channel to the host
            return run_keeper(sock, config)
        except BaseException as error:  # noqa: BLE001 - a forked child must never return into the launcher's loop
            try:
                os.write(2, f"skilleval keeper: {type(error).__name__}: {error}\n".encode())
            except OSError:
                pass
            return 1

    def kill(self, pid: int) -> None:
        """Only a keeper of ours not yet reaped: its pid cannot have been reused."""
        if pid in self.children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def reap(self) -> None:
        for pid, _status in _exited_children():
            self.children.discard(pid)


def main(argv: list[str]) -> int:
    if argv[1:2] != ["--launcher"] or len(argv) != 3:
        print("usage: keeper.py --launcher FD", file=sys.stderr)
        return 2
    sock = socket.socket(fileno=int(argv[2]))
    sock.set_inheritable(False)  # passed to us inheritable; no keeper or command may hold it
    Launcher(sock).serve()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
