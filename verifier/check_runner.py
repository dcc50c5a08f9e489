"""The in-sandbox half of a case's checks: a standalone, standard-library script run with `python3` in the trial's
sandbox after the agent (and once before it, for the workspace snapshot).

Why in the sandbox: the files the agent left and the commands an author wants run live there, in every Harbor
environment alike. Nothing here trusts the workspace: every path is opened one component at a time with
`O_NOFOLLOW` below /workspace (a link the agent planted is reported, never followed), only regular files are read,
reads stop at fixed sizes, commands run in their own session and are killed at their timeout, and text is decoded
with replacement so non-UTF-8 bytes cannot break a check. Output is one ASCII JSON line after a marker; the host
reads it with its own size cap and validates it (`pytest_skilleval/harbor/case_checks.py`).

Modes: `python3 check_runner.py snapshot` and `python3 check_runner.py checks SPEC.json`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time
from typing import IO, Any

Result = dict[str, Any]

MARKER = "SKILLEVAL-CHECKS-OUTPUT:"
ROOT = "/workspace"  # the path evidence names
# Where /workspace is: itself in a container or under bwrap; the sandbox's host folder under the `local` environment's
# sandbox=none, whose commands see container paths only through the variables it rewrites.
WORKSPACE = os.environ.get("HARBOR_WORKSPACE_DIR") or ROOT
CHUNK = 1024 * 1024
MAX_LITERAL_SCAN = 256 * 1024 * 1024
MAX_REGEX_SCAN = 16 * 1024 * 1024
MAX_STRUCTURED = 16 * 1024 * 1024
MAX_STREAM = 64 * 1024
MAX_SNAPSHOT_ENTRIES = 20000
MAX_HASH_BYTES = 64 * 1024 * 1024
SNIPPET = 80


class Unsafe(Exception):
    """A path the check may not read: a link, a missing folder on the way, a non-regular file."""


def shown(data: bytes | str) -> str:
    """Bytes or text as a short, printable snippet (non-UTF-8 bytes replaced, control characters escaped)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
    text = "".join(ch if ch.isprintable() or ch == " " else repr(ch)[1:-1] for ch in text)
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"


def open_dir(rel_parts: list[str]) -> int:
    """A descriptor for /workspace/<parts>, each component opened without following links."""
    fd = os.open(WORKSPACE, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    walked = ROOT
    try:
        for part in rel_parts:
            walked += "/" + part
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                os.close(fd)
                raise Unsafe(walked + " does not exist") from None
            if stat.S_ISLNK(st.st_mode):
                os.close(fd)
                raise Unsafe(walked + " is a symbolic link (not followed)")
            if not stat.S_ISDIR(st.st_mode):
                os.close(fd)
                raise Unsafe(walked + " is not a folder")
            new = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = new
    except OSError as error:
        raise Unsafe(walked + ": " + (error.strerror or str(error))) from None
    return fd


def lookup(rel: str) -> tuple[int, str, os.stat_result | None]:
    """(dir fd, name, lstat or None) for a path relative to /workspace."""
    parts = rel.split("/")
    fd = open_dir(parts[:-1])
    try:
        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    return fd, parts[-1], st


def quoted(data: bytes | str) -> str:
    return "'" + shown(data) + "'"


def kind_of(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link (not followed)"
    if stat.S_ISDIR(st.st_mode):
        return "a folder"
    if stat.S_ISFIFO(st.st_mode):
        return "a FIFO"
    return "not a regular file"


def open_file(rel: str) -> tuple[IO[bytes], int]:
    """(file object, size) of a regular file; raises Unsafe saying what is there instead."""
    fd, name, st = lookup(rel)
    try:
        if st is None:
            raise Unsafe(ROOT + "/" + rel + " does not exist")
        if not stat.S_ISREG(st.st_mode):
            raise Unsafe(ROOT + "/" + rel + " is " + kind_of(st))
        file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
    handle = os.fdopen(file_fd, "rb")
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):
        handle.close()
        raise Unsafe(ROOT + "/" + rel + " is not a regular file")
    return handle, os.fstat(file_fd).st_size


def result(status: str, evidence: str) -> Result:
    return {"status": status, "evidence": evidence}


def check_exists(spec: dict[str, Any], want: bool) -> Result:
    fd, _name, st = lookup(spec["path"])
    os.close(fd)
    where = ROOT + "/" + spec["path"]
    if st is None:
        return result("failed" if want else "passed", where + " does not exist")
    if want and not stat.S_ISREG(st.st_mode):
        return result("failed", where + " is " + kind_of(st) + ", not a regular file")
    return result("passed" if want else "failed", where + " exists (" + str(st.st_size) + " bytes)")


def scan_literal(handle: IO[bytes], needle: bytes) -> tuple[bool, bool]:
    tail = b""
    read = 0
    while read < MAX_LITERAL_SCAN:
        chunk = handle.read(min(CHUNK, MAX_LITERAL_SCAN - read))
        if not chunk:
            return True, False
        read += len(chunk)
        window = tail + chunk
        if needle in window:
            return True, True
        tail = window[-(len(needle) - 1) :] if len(needle) > 1 else b""
    return bool(handle.read(1) == b""), False


def check_contains(spec: dict[str, Any], want: bool) -> Result:
    handle, size = open_file(spec["path"])
    with handle:
        if spec.get("text") is not None:
            complete, found = scan_literal(handle, spec["text"].encode("utf-8"))
            what, limit = "text " + quoted(spec["text"]), MAX_LITERAL_SCAN
        else:
            data = handle.read(MAX_REGEX_SCAN + 1)
            complete = len(data) <= MAX_REGEX_SCAN
            found = re.search(spec["regex"], data[:MAX_REGEX_SCAN].decode("utf-8", "replace")) is not None
            what, limit = "regex " + quoted(spec["regex"]), MAX_REGEX_SCAN
        handle.seek(0)
        head = handle.read(SNIPPET)
    where = ROOT + "/" + spec["path"]
    if found:
        return result("passed" if want else "failed", where + " contains " + what)
    if not complete:
        return result("error", where + " is " + str(size) + " bytes; only the first " + str(limit) + " were searched")
    return result(
        "failed" if want else "passed",
        where + " (" + str(size) + " bytes) lacks " + what + "; it starts " + quoted(head),
    )


def check_equals(spec: dict[str, Any]) -> Result:
    handle, size = open_file(spec["path"])
    where = ROOT + "/" + spec["path"]
    with handle:
        if size != spec["expected_size"]:
            found = "" if size > MAX_STREAM else ", starting " + quoted(handle.read(SNIPPET))
            return result(
                "failed", where + " is " + str(size) + " bytes, expected " + str(spec["expected_size"]) + found
            )
        digest = hashlib.sha256()
        data = b""
        while True:
            chunk = handle.read(CHUNK)
            if not chunk:
                break
            digest.update(chunk)
            if len(data) <= MAX_STREAM:
                data += chunk
    if digest.hexdigest() == spec["expected_sha256"]:
        return result("passed", where + " equals the expected content (" + str(size) + " bytes)")
    expected = spec.get("text")
    if expected is not None:
        want = expected.encode("utf-8")
        at = next((i for i, (a, b) in enumerate(zip(data, want, strict=False)) if a != b), min(len(data), len(want)))
        return result(
            "failed",
            where
            + " differs at byte "
            + str(at)
            + ": expected "
            + quoted(want[at : at + 40])
            + ", found "
            + quoted(data[at : at + 40]),
        )
    return result(
        "failed", where + " differs from the expected file (same size, sha256 " + digest.hexdigest()[:12] + ")"
    )


def load_structured(rel: str) -> dict[str, Any]:
    handle, size = open_file(rel)
    with handle:
        if size > MAX_STRUCTURED:
            raise Unsafe(
                ROOT + "/" + rel + " is " + str(size) + " bytes; json_path reads at most " + str(MAX_STRUCTURED)
            )
        text = handle.read(MAX_STRUCTURED).decode("utf-8", "replace")
    if rel.lower().endswith((".yaml", ".yml")):
        try:
            import yaml  # only YAML files need it, and the sandbox may lack it
        except ImportError:
            return {"yaml_text": text}
        try:
            return {"document": yaml.safe_load(text)}
        except yaml.YAMLError as error:
            return {"invalid": "is not valid YAML: " + shown(str(error).replace("\n", " "))}
    try:
        return {"document": json.loads(text)}
    except ValueError as error:
        return {"invalid": "is not valid JSON: " + shown(str(error))}


def check_json_path(spec: dict[str, Any]) -> Result:
    loaded = load_structured(spec["path"])
    where = ROOT + "/" + spec["path"]
    if "invalid" in loaded:
        return result("failed", where + " " + loaded["invalid"])
    if "yaml_text" in loaded:
        return {"status": "host", "yaml_text": loaded["yaml_text"]}  # PyYAML is missing here: the host parses it
    return json_path_verdict(spec, loaded["document"])


def resolve(document: Any, steps: list[Any]) -> tuple[bool, Any]:
    """(found, value) at the parsed `$.a[0]` steps."""
    value = document
    for step in steps:
        if isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value):
            value = value[step]
        elif isinstance(step, str) and isinstance(value, dict) and step in value:
            value = value[step]
        else:
            return False, None
    return True, value


def contains(value: Any, wanted: Any) -> bool:
    if isinstance(value, str):
        return isinstance(wanted, str) and wanted in value
    if isinstance(value, list):
        return wanted in value
    if isinstance(value, dict):
        if isinstance(wanted, dict):
            return all(key in value and value[key] == item for key, item in wanted.items())
        return wanted in value
    return False


def json_path_verdict(spec: dict[str, Any], document: Any) -> Result:
    """The json_path check on a parsed document (shared by the sandbox and the host's YAML fallback)."""
    where = ROOT + "/" + spec["path"] + " " + spec["json_path"]
    found, value = resolve(document, spec["steps"])
    mode = spec["mode"]
    if mode == "exists":
        passed = found == spec["exists"]
        return result("passed" if passed else "failed", where + (" exists" if found else " does not exist"))
    if not found:
        return result("failed", where + " does not exist")
    got = shown(json.dumps(value, ensure_ascii=False, default=str))
    expected = shown(json.dumps(spec["expected"], ensure_ascii=False, default=str))
    ok = value == spec["expected"] if mode == "equals" else contains(value, spec["expected"])
    verb = "equals" if mode == "equals" else "contains"
    return result(
        "passed" if ok else "failed",
        where + " is " + got + ("" if ok else "; expected it " + verb + " " + expected),
    )


def read_stream(handle: IO[bytes]) -> str:
    handle.seek(0)
    return handle.read(MAX_STREAM).decode("utf-8", "replace")


def stream_match(name: str, text: str, spec: dict[str, Any]) -> str | None:
    literal, pattern = spec.get(name + "_contains"), spec.get(name + "_regex")
    if literal is not None and literal not in text:
        return name + " lacks " + quoted(literal) + "; it was " + quoted(text.strip()[-SNIPPET:])
    if pattern is not None and re.search(pattern, text) is None:
        return name + " does not match " + quoted(pattern) + "; it was " + quoted(text.strip()[-SNIPPET:])
    return None


def check_command(spec: dict[str, Any]) -> Result:
    shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = subprocess.Popen(
                [shell, "-c", spec["run"]],
                cwd=WORKSPACE,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as error:
            return result("error", "could not start " + shell + ": " + (error.strerror or str(error)))
        try:
            code = process.wait(timeout=spec["timeout_sec"])
        except subprocess.TimeoutExpired:
            kill_group(process)
            return result("failed", "did not finish within " + format(spec["timeout_sec"], "g") + " s (killed)")
        kill_group(process)  # what it left in the background goes too
        stdout, stderr = read_stream(out), read_stream(err)
    if code != spec["exit_code"]:
        tail = (stderr or stdout).strip()[-SNIPPET:]
        return result(
            "failed",
            "exit code " + str(code) + ", expected " + str(spec["exit_code"]) + "; output " + quoted(tail),
        )
    for name, text in (("stdout", stdout), ("stderr", stderr)):
        problem = stream_match(name, text, spec)
        if problem:
            return result("failed", problem)
    return result("passed", "exit code " + str(code))


def kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


RUNNERS = {
    "file_exists": lambda spec: check_exists(spec, True),
    "file_absent": lambda spec: check_exists(spec, False),
    "file_contains": lambda spec: check_contains(spec, True),
    "file_not_contains": lambda spec: check_contains(spec, False),
    "file_equals": check_equals,
    "json_path": check_json_path,
    "command": check_command,
}


def run_one(spec: dict[str, Any]) -> Result:
    try:
        return RUNNERS[spec["type"]](spec)
    except Unsafe as problem:
        if spec["type"] == "file_absent" and str(problem).endswith("does not exist"):
            return result("passed", str(problem))
        return result("failed", str(problem))
    except re.error as error:
        return result("error", "bad regular expression: " + str(error))
    except (OSError, ValueError, RecursionError, MemoryError) as error:
        return result("error", type(error).__name__ + ": " + shown(str(error)))


def snapshot(root: str = ROOT) -> dict[str, Any]:
    """Every file and link under /workspace (links not followed): path -> [kind, size, sha256]; capped; a name that is
    not UTF-8 with its bytes as `\\xNN` (`text_name`). `root`: where /workspace is seen from (the `local` environment
    reads its sandbox's folder from the host: the same walk, never through a link, `root` itself included)."""
    return snapshot_within(root, None) or {}


def snapshot_within(root: str, within: tuple[int, int] | None) -> dict[str, Any] | None:
    """`snapshot`; with `within` (names, bytes), None as soon as the folder holds more names or larger files than
    that, before reading them (the host then walks it where a long walk holds nothing up)."""
    entries: dict[str, list[Any]] = {}
    truncated = False
    names_left, bytes_left = within if within is not None else (-1, -1)

    def walk(fd: int, prefix: str) -> None:
        nonlocal truncated, names_left, bytes_left
        try:
            names = sorted(os.listdir(fd))
        except OSError:
            return
        if within is not None:
            names_left -= len(names)
            if names_left < 0:
                raise OverBudget
        for name in names:
            if len(entries) >= MAX_SNAPSHOT_ENTRIES:
                truncated = True
                return
            rel = prefix + (name if name.isascii() else text_name(name))
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                try:
                    sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    continue
                try:
                    walk(sub, rel + "/")
                finally:
                    os.close(sub)
            elif stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(name, dir_fd=fd)
                except OSError:
                    target = ""
                digest = new_sha256(0)
                digest.update(os.fsencode(target))
                entries[rel] = ["link", st.st_size, digest.hexdigest()]
            elif stat.S_ISREG(st.st_mode):
                if within is not None:
                    bytes_left -= st.st_size
                    if bytes_left < 0:
                        raise OverBudget
                entries[rel] = ["file", st.st_size, file_hash(fd, name, st.st_size)]
            else:
                entries[rel] = ["other", st.st_size, ""]

    try:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        return {"error": root + ": " + (error.strerror or str(error))}
    try:
        walk(top, "")
    except OverBudget:
        return None
    finally:
        os.close(top)
    return {"entries": entries, "truncated": truncated}


class OverBudget(Exception):
    """The folder `snapshot` walks is larger than its `within` allows."""


def text_name(name: str) -> str:
    """A file name as text UTF-8 and JSON carry: a name that is not UTF-8 (os.listdir keeps its undecodable bytes as
    lone surrogates, which neither the host's JSON reader nor its record writer accepts) has those bytes as `\\xNN`,
    alike on the host and in the sandbox."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


def file_hash(dir_fd: int, name: str, size: int) -> str:
    """sha256 of the first MAX_HASH_BYTES (the size tells the rest apart); empty when unreadable."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return ""
    digest = new_sha256(size)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for a FIFO or device since the walk looked
            return ""
        left = MAX_HASH_BYTES
        while left > 0:
            chunk = handle.read(min(CHUNK, left))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


BIG_FILE = 1024 * 1024
_builtin_sha256: list[Any] = []


def new_sha256(size: int) -> Any:
    """A sha256 for `size` bytes: hashlib's (OpenSSL: the fastest per byte) for a big file, else the interpreter's
    built-in one, so a snapshot of small files never loads OpenSSL (a quarter of a bare snapshot's start)."""
    if size >= BIG_FILE:
        import hashlib

        return hashlib.sha256()
    if not _builtin_sha256:
        for name in ("_sha2", "_sha256", "hashlib"):  # Python 3.12 and later; before; neither built in
            try:
                _builtin_sha256.append(__import__(name).sha256)
                break
            except (ImportError, AttributeError):
                continue
    return _builtin_sha256[0]()


def emit(document: dict[str, Any]) -> None:
    sys.stdout.write("\n" + MARKER + json.dumps(document, ensure_ascii=True, default=str) + "\n")
    sys.stdout.flush()


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _json_string(text: str) -> str:
    """`json.dumps(text, ensure_ascii=True)`: ASCII as it is, the rest as UTF-16 code units (lone surrogates kept)."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return '"' + text + '"'
    out = ['"']
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif " " <= char <= "~":
            out.append(char)
        else:
            units = char.encode("utf-16-be", "surrogatepass")
            out.extend("\\u" + units[i : i + 2].hex() for i in range(0, len(units), 2))
    out.append('"')
    return "".join(out)


def to_json(value: Any) -> str:
    """What `json.dumps(value, ensure_ascii=True)` prints for a snapshot's document (dicts, lists, text, integers,
    booleans), without importing json."""
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, dict):
        return "{" + ", ".join(_json_string(key) + ": " + to_json(item) for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_json(item) for item in value) + "]"
    raise TypeError("not part of a snapshot: " + type(value).__name__)


# The snapshot alone, as the host sends it to a sandbox it cannot read (`case_checks.snapshot_command`): these
# definitions and nothing else of this file, importing only os, stat and sys (hashlib only for a big file; json and the
# checks' modules would cost more than the interpreter's own start), its document written by `to_json`.
SNAPSHOT_PARTS = frozenset(
    {"MARKER", "ROOT", "CHUNK", "MAX_SNAPSHOT_ENTRIES", "MAX_HASH_BYTES", "snapshot", "OverBudget", "text_name"}
    | {"file_hash", "snapshot_within"}
    | {"BIG_FILE", "_builtin_sha256", "new_sha256", "_ESCAPES", "_json_string", "to_json"}
)
SNAPSHOT_IMPORTS = "import os, stat, sys"


def main(argv: list[str]) -> int:
    if argv[:1] == ["snapshot"]:
        emit({"snapshot": snapshot(WORKSPACE)})
        return 0
    with open(argv[1], encoding="utf-8") as handle:
        specs = json.load(handle)
    started = time.monotonic()
    results = []
    for spec in specs:
        outcome = run_one(spec)
        outcome["index"] = spec["index"]
        results.append(outcome)
    emit({"results": results, "snapshot": snapshot(WORKSPACE), "seconds": round(time.monotonic() - started, 3)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
