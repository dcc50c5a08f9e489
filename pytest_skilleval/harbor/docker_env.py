"""Harbor's Docker environment with capped downloads and command output: what a container sends to the host is
checked on the host.

Harbor downloads `/logs/agent`, `/logs/verifier` and artifacts with `docker compose cp`, which writes every byte of
a sparse file (a 6 GiB `truncate -s 6G` file costs the container nothing and the host 6 GB) and copies links as
links. Here a download is a tar stream out of `docker exec` instead: GNU `find` in the container picks the folders
and the regular files within the per-file cap (links, special files and larger files are only named), and the host
writes the stream through `download_caps.receive_tar`, which enforces the same caps as the `local` environment
whatever the container sends (docs/security.md, "Downloads are capped").

A command's output is read by Harbor into memory whole. Here `docker compose exec` output is read in chunks against
the same caps as the `local` environment's (16 MiB a command, 64 MiB a trial); past one, the `docker compose exec`
client is ended, every process of the agent phase in the container with it (the grading seal's script: the
container's own side of `docker exec` does not end with its client), and the exec raises OutputCapExceeded.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import fnmatch
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, Any

from harbor.environments.base import ExecResult
from harbor.environments.docker.docker import DockerEnvironment

from pytest_skilleval.harbor.compat import docker_compose_project_name
from pytest_skilleval.harbor.download_caps import (
    LEFT_OUT_SUFFIX,
    MAX_DOWNLOAD_BYTES,
    MAX_DOWNLOAD_FILE_BYTES,
    StreamTooLong,
    note_left_out,
    receive_tar,
)
from pytest_skilleval.harbor.grading_seal import END_PROCESSES_SCRIPT
from pytest_skilleval.harbor.sandbox.commands import (
    MAX_COMMAND_OUTPUT_BYTES,
    OutputBudget,
    OutputCapExceeded,
    over_command_cap,
    over_trial_cap,
)
from verifier import safe_io
from verifier.safe_paths import MAX_COPY_DEPTH, too_large

MAX_LISTING_BYTES = 64 * 1024
MAIN_SERVICE = "main"

# $1: the folder, $2: the per-file cap. Names what is left out on stderr, then streams the rest as a tar archive.
# find never follows a link (-P) and tar does not dereference: a link swapped in meanwhile arrives as a link.
_DIR_SCRIPT = f"""cd -- "$1" || exit 3
find . -mindepth 1 \\( -type l -printf 'link %p -> %l\\n' \\) -o \\( -type f -size +"$2"c -printf 'large %s %p\\n' \\) \\
  -o \\( ! -type f ! -type d -printf 'special %p\\n' \\) >&2
find . -mindepth {MAX_COPY_DEPTH + 1} -maxdepth {MAX_COPY_DEPTH + 1} -printf 'deep %p\\n' >&2
find . -mindepth 1 -maxdepth {MAX_COPY_DEPTH} \\( -type d -o \\( -type f ! -size +"$2"c \\) \\) -print0 \\
  | tar --null --no-recursion -cf - -T -
"""
# $1: the file, $2: the per-file cap.
_FILE_SCRIPT = """if [ -L "$1" ]; then echo "link $1 -> $(readlink -- "$1")" >&2; exit 5; fi
if [ ! -f "$1" ]; then echo "missing $1: not a regular file" >&2; exit 6; fi
if [ -n "$(find "$1" -maxdepth 0 -size +"$2"c)" ]; then echo "large $(find "$1" -maxdepth 0 -printf %s) $1" >&2; exit 4; fi
cd -- "$(dirname -- "$1")" && tar -cf - -- "$(basename -- "$1")"
"""
_EXIT_LARGE, _EXIT_LINK, _EXIT_MISSING = 4, 5, 6
# Set while a `docker compose exec` runs: only a command's output is capped (not a build's or a pull's).
_command: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("skilleval_docker_exec", default=None)


class DownloadError(RuntimeError):
    """A download out of the container failed; the message says what and why."""


STOP_WAIT_SECONDS = 10  # each wait for a stopped `docker compose exec` client to go


async def _discard(stream: asyncio.StreamReader) -> None:
    """Read a stream to its end, keeping nothing."""
    while await stream.read(1024 * 1024):
        pass


def _docker() -> str:
    return shutil.which("docker") or "docker"


def _read_capped(stream: IO[bytes], into: bytearray) -> None:
    """Keep the first MAX_LISTING_BYTES of a stream and drain the rest (the writer never blocks on a full pipe)."""
    while chunk := stream.read(65536):
        room = MAX_LISTING_BYTES - len(into)
        if room > 0:
            into.extend(chunk[:room])


def stream_from(argv: list[str], receive: Callable[[IO[bytes]], None]) -> tuple[int, str]:
    """Run `argv`, hand its stdout to `receive`, and return its exit status and the start of its stderr. A stream
    `receive` stops reading (StreamTooLong) ends the process."""
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    errors = bytearray()
    reader = threading.Thread(target=_read_capped, args=(process.stderr, errors), daemon=True)
    reader.start()
    try:
        receive(process.stdout)
        leftover = bytearray()
        _read_capped_until(process.stdout, leftover, 1024 * 1024)  # tar's end-of-archive padding
    except BaseException:
        process.kill()
        raise
    finally:
        process.stdout.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=10)
    return process.returncode, errors.decode("utf-8", "replace")


def _read_capped_until(stream: IO[bytes], into: bytearray, limit: int) -> None:
    """Read what is left of a stream, at most `limit` bytes (past that, the process is ended by the caller)."""
    while len(into) < limit and (chunk := stream.read(65536)):
        into.extend(chunk)
    if len(into) >= limit:
        raise StreamTooLong(f"more than {limit} bytes followed the archive")


def _left_out_lines(listing: str, shown_root: str) -> list[str]:
    """The container's own account of what it did not send, as left-out lines."""
    lines = []
    for line in listing.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "link":
            name, _, points_to = rest.partition(" -> ")
            lines.append(f"{shown_root}/{name.removeprefix('./')} is a link to {points_to!r}; not copied, not followed")
        elif kind == "large":
            size, _, name = rest.partition(" ")
            lines.append(
                f"{shown_root}/{name.removeprefix('./')} is {size} bytes; the limit is "
                f"{MAX_DOWNLOAD_FILE_BYTES} bytes (nothing of it was read)"
            )
        elif kind == "deep":
            lines.append(
                f"{shown_root}/{rest.removeprefix('./')}: more than {MAX_COPY_DEPTH} folders deep; nothing in it was copied"
            )
        elif kind == "special":
            lines.append(f"{shown_root}/{rest.removeprefix('./')} is not a regular file or folder; not copied")
    if len(listing.encode()) >= MAX_LISTING_BYTES:
        lines.append(f"(the container's list of what it left out was cut at {MAX_LISTING_BYTES} bytes)")
    return lines


class CappedDockerEnvironment(DockerEnvironment):
    """Harbor's DockerEnvironment; downloads never exceed the caps and never bring a link or special file, and a
    command's output never passes the output caps."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._output_budget = OutputBudget()  # every command of this trial, together

    async def _run_docker_compose_command(self, command: list[str], *args: Any, **kwargs: Any) -> ExecResult:
        token = _command.set(list(command) if command[:1] == ["exec"] else None)
        try:
            return await super()._run_docker_compose_command(command, *args, **kwargs)
        finally:
            _command.reset(token)

    async def _collect_buffered_output(  # type: ignore[override]
        self, process: asyncio.subprocess.Process, *, timeout_sec: int | None, stdin_data: bytes | None = None
    ) -> ExecResult:
        """Harbor's reading of a compose command's output (stderr is merged into stdout), capped for `exec`."""
        command = _command.get()
        if command is None:
            return await DockerEnvironment._collect_buffered_output(
                process, timeout_sec=timeout_sec, stdin_data=stdin_data
            )
        shown = command[-1] if command else "exec"
        if stdin_data is not None and process.stdin is not None:
            process.stdin.write(stdin_data)
            await process.stdin.drain()
            process.stdin.close()
        assert process.stdout is not None
        chunks: list[bytes] = []
        written = 0

        async def read() -> None:
            nonlocal written
            while chunk := await process.stdout.read(65536):  # type: ignore[union-attr]
                written += len(chunk)
                if written > MAX_COMMAND_OUTPUT_BYTES:
                    return
                chunks.append(chunk)

        try:
            await asyncio.wait_for(read(), timeout=timeout_sec or None)
        except TimeoutError:
            await self._stop_client(process, end_agent=False)
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
        if written > MAX_COMMAND_OUTPUT_BYTES:
            await self._stop_client(process, end_agent=True)
            raise OutputCapExceeded(over_command_cap(written, ["bash", "-c", shown]))
        await process.wait()
        if self._output_budget.used + written > self._output_budget.limit:
            await self._end_agent_processes()
            raise OutputCapExceeded(over_trial_cap(self._output_budget, written, ["bash", "-c", shown]))
        self._output_budget.used += written
        output = b"".join(chunks)
        return ExecResult(
            stdout=output.decode(errors="replace") if output else None, stderr=None, return_code=process.returncode or 0
        )

    async def _stop_client(self, process: asyncio.subprocess.Process, *, end_agent: bool) -> None:
        """End a `docker compose exec` whose output is no longer wanted. `docker` runs the Compose plugin as its child,
        so killing the client orphans the plugin, which still holds the output pipe; asyncio's `wait()` waits for that
        pipe to close, and the plugin blocks writing to it: a trial stuck for good. So the rest of the output is read
        and dropped meanwhile, the command's side in the container is ended first when `end_agent` (a capped command:
        every process of the agent phase, as the trial fails anyway), and every wait is bounded."""
        assert process.stdout is not None
        drain = asyncio.ensure_future(_discard(process.stdout))
        try:
            if end_agent:
                await self._end_agent_processes()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), timeout=STOP_WAIT_SECONDS)
            if process.returncode is None:
                process.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), timeout=STOP_WAIT_SECONDS)
            if process.returncode is None:
                process.kill()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), timeout=STOP_WAIT_SECONDS)
        finally:
            drain.cancel()

    async def _end_agent_processes(self) -> None:
        """What a capped command left running in the container (all of the agent phase's processes): the trial
        fails anyway, and the container's side of `docker exec` outlives its client."""
        token = _command.set(None)
        try:
            await super().exec(END_PROCESSES_SCRIPT, user="root", timeout_sec=60)
        except Exception:  # noqa: BLE001 - the cap's error is the one the trial reports
            pass
        finally:
            _command.reset(token)

    def _container_id(self) -> str:
        project = docker_compose_project_name(self.session_id)
        found = subprocess.run(
            [
                _docker(),
                "ps",
                "-q",
                "--filter",
                f"label=com.docker.compose.project={project}",
                "--filter",
                f"label=com.docker.compose.service={MAIN_SERVICE}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        ids = found.stdout.split()
        if found.returncode != 0 or len(ids) != 1:
            raise DownloadError(f"no running container of compose project {project} ({found.stderr.strip()[-200:]})")
        return ids[0]

    def _exec_argv(self, script: str, *args: str) -> list[str]:
        return [_docker(), "exec", "-u", "root", self._container_id(), "sh", "-c", script, "sh", *args]

    def _download_dir(self, source_dir: str, target_dir: Path) -> None:
        limits = safe_io.CopyLimits(max_file_bytes=MAX_DOWNLOAD_FILE_BYTES, max_total_bytes=MAX_DOWNLOAD_BYTES)
        argv = self._exec_argv(_DIR_SCRIPT, source_dir, str(MAX_DOWNLOAD_FILE_BYTES))
        try:
            status, listing = stream_from(argv, lambda stream: receive_tar(stream, target_dir, source_dir, limits))
        except StreamTooLong as error:
            limits.left_out.append(f"the rest of {source_dir}: {error} (the caps allow {MAX_DOWNLOAD_BYTES} in all)")
            status, listing = 0, ""
        except tarfile.TarError as error:
            raise DownloadError(f"download of {source_dir} from the container failed: {error}") from None
        if status == 3:
            raise DownloadError(f"download of {source_dir}: no such folder in the container")
        left_out = _left_out_lines(listing, source_dir) + limits.left_out
        if left_out:
            note_left_out(source_dir, target_dir, left_out)

    def _download_file(self, source_path: str, target: Path) -> None:
        limits = safe_io.CopyLimits(max_file_bytes=MAX_DOWNLOAD_FILE_BYTES, max_total_bytes=MAX_DOWNLOAD_FILE_BYTES)
        staging = target.parent / f".{target.name}.skilleval-download"
        shutil.rmtree(staging, ignore_errors=True)
        argv = self._exec_argv(_FILE_SCRIPT, source_path, str(MAX_DOWNLOAD_FILE_BYTES))
        try:
            status, listing = stream_from(argv, lambda stream: receive_tar(stream, staging, source_path, limits))
            if status == _EXIT_LARGE:
                size = int(listing.split()[1]) if len(listing.split()) > 1 and listing.split()[1].isdigit() else -1
                error = too_large(source_path, size, MAX_DOWNLOAD_FILE_BYTES)
                note_left_out(source_path, target, [str(error)])
                raise error
            if status in (_EXIT_LINK, _EXIT_MISSING):
                raise DownloadError(f"download of {source_path}: {listing.strip()[:300]}")
            received = [path for path in staging.iterdir()] if staging.is_dir() else []
            name = Path(source_path).name
            if limits.left_out or [path.name for path in received] != [name]:
                raise DownloadError(
                    f"download of {source_path}: the container sent something else: " + "; ".join(limits.left_out[:3])
                )
            safe_io.copy_file(staging, name, target.parent, target.name, max_bytes=MAX_DOWNLOAD_FILE_BYTES)
        except (StreamTooLong, tarfile.TarError) as error:
            raise DownloadError(f"download of {source_path} from the container failed: {error}") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _download_dir_selected(self, source_dir: str, target_dir: Path, keep: Callable[[str], bool]) -> None:
        """A capped download into a private folder, then the files `keep` accepts (by their path below the
        folder) copied to `target_dir`, links never followed."""
        target_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target_dir.parent, prefix=f".{target_dir.name}.") as staging:
            received = Path(staging) / "tree"
            self._download_dir(source_dir, received)
            for folder, _dirs, files in os.walk(received):
                for name in files:
                    rel = (Path(folder) / name).relative_to(received).as_posix()
                    if keep(rel):
                        safe_io.copy_file(received, rel, target_dir, rel, max_bytes=MAX_DOWNLOAD_FILE_BYTES)
            marker = received.parent / f"{received.name}{LEFT_OUT_SUFFIX}"
            if marker.is_file():
                safe_io.copy_file(marker.parent, marker.name, target_dir.parent, f"{target_dir.name}{LEFT_OUT_SUFFIX}")

    async def download_dir_filtered(
        self,
        *,
        source_dir: str,
        target_dir: Path | str,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        protect: Sequence[str] | None = None,
    ) -> None:
        from harbor.utils.path_filter import filter_paths_by_patterns  # Harbor's own reading of the patterns

        def keep(rel: str) -> bool:
            return rel in (protect or ()) or bool(filter_paths_by_patterns([rel], include=include, exclude=exclude))

        await asyncio.to_thread(self._download_dir_selected, source_dir, Path(target_dir), keep)

    async def download_dir_with_exclusions(
        self, *, source_dir: str, target_dir: Path | str, exclude: list[str]
    ) -> None:
        def keep(rel: str) -> bool:
            parts = PurePosixPath(rel).parts
            tails = ["/".join(parts[index:]) for index in range(len(parts))]
            heads = ["/".join(parts[: index + 1]) for index in range(len(parts))]
            return not any(fnmatch.fnmatch(path, pattern) for pattern in exclude for path in (*tails, *heads))

        await asyncio.to_thread(self._download_dir_selected, source_dir, Path(target_dir), keep)

    async def service_download_dir_with_exclusions(
        self, *, source_dir: str, target_dir: Path | str, exclude: list[str], service: str | None = None
    ) -> None:
        if service not in (None, MAIN_SERVICE):
            raise DownloadError(f"download of {source_dir}: only the main service's files are downloaded")
        await self.download_dir_with_exclusions(source_dir=source_dir, target_dir=target_dir, exclude=exclude)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        await asyncio.to_thread(self._download_file, source_path, Path(target_path))

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        await asyncio.to_thread(self._download_dir, source_dir, Path(target_dir))

    async def service_download_file(self, source_path: str, target_path: Path | str, **kwargs: Any) -> None:
        if kwargs.get("service") not in (None, MAIN_SERVICE):
            raise DownloadError(f"download of {source_path}: only the main service's files are downloaded")
        await self.download_file(source_path, target_path)

    async def service_download_dir(self, source_dir: str, target_dir: Path | str, **kwargs: Any) -> None:
        if kwargs.get("service") not in (None, MAIN_SERVICE):
            raise DownloadError(f"download of {source_dir}: only the main service's files are downloaded")
        await self.download_dir(source_dir, target_dir)
