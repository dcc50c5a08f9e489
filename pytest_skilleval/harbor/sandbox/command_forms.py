"""Command strings the `local` environment recognises exactly, so it can answer them on the host or start them
without a shell: Harbor's `chmod` of installed skills and of a test script (the sandbox's folders are read-only
there, so the host sets the modes), and `bash|sh|python3` with plain or single-quoted words (one process start less
than `bash -c`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil

from pytest_skilleval.harbor.sandbox.bwrap import SYSTEM_DIRS

# Exactly the command Harbor runs after installing skills (trial.py, _upload_injected_skills), and nothing more.
_READABLE_COMMAND = re.compile(r"chmod -R a\+rX((?: (?:'[^']*'|[A-Za-z0-9_@%+=:,./-]+))+)")


# Exactly the command Harbor's verifier runs before a test script (`chmod +x '/tests/test.sh'`): /tests is read-only
# inside the sandbox, so the host sets the mode.
_EXECUTABLE_COMMAND = re.compile(r"chmod \+x ('[^']*'|[A-Za-z0-9_@%+=:,./-]+)")


def executable_target(command: str) -> str | None:
    """The file of a `chmod +x FILE` command (plain or single-quoted absolute path), else None."""
    found = _EXECUTABLE_COMMAND.fullmatch(command)
    if found is None:
        return None
    target = shlex.split(found.group(1))[0]
    return target if target.startswith("/") else None


def readable_targets(command: str) -> list[str] | None:
    """The folders of a `chmod -R a+rX DIR...` command (plain or single-quoted absolute paths), else None."""
    found = _READABLE_COMMAND.fullmatch(command)
    if found is None:
        return None
    targets = shlex.split(found.group(1))
    return targets if targets and all(target.startswith("/") for target in targets) else None


# Programs a command may name to be started without `bash -c` (`bash /tests/grader.sh`, as the host verifier runs
# a grader; `python3 -I -S -c '<runner>' snapshot`, the workspace snapshot of a remote-like sandbox), when every other
# word is plain or single-quoted as `shlex.quote` writes it: nothing a shell would expand, split, redirect or treat as
# syntax, so the argv is exactly what the shell would have started.
_DIRECT_PROGRAMS = frozenset({"bash", "sh", "python3"})
_WORD = r"""[A-Za-z0-9_@%+=:,./-]+|'[^']*'(?:"'"'[^']*')*"""
_WORDS = re.compile(_WORD)
_COMMAND = re.compile(rf"(?:{_WORD})(?: (?:{_WORD}))*")
_MAX_LINKS = 40  # as the kernel follows at most


def _words(command: str) -> list[str] | None:
    """The words of a command made only of plain and `shlex.quote`d words, one space apart; else None."""
    if _COMMAND.fullmatch(command) is None:
        return None
    return [word[1:-1].replace("'\"'\"'", "'") if word[0] == "'" else word for word in _WORDS.findall(command)]


def direct_argv(command: str, path: str) -> list[str] | None:
    """The argv `bash -c command` would end up running, when the shell has nothing else to do: a program of
    _DIRECT_PROGRAMS (an unquoted first word) and plain or single-quoted words, found on a PATH of host system folders
    only (shown as they are in the sandbox, so the host finds what the shell inside would). None: the command goes
    through `bash -c`."""
    if command.split(" ", 1)[0] not in _DIRECT_PROGRAMS:
        return None
    words = _words(command)
    if words is None:
        return None
    if not all(_in_system_dir(folder) for folder in path.split(":")):
        return None
    program = shutil.which(words[0], path=path)
    return [program, *words[1:]] if program and _reached_alike(program) else None


def _in_system_dir(path: str) -> bool:
    return path.startswith("/") and "/" + path.strip("/").split("/")[0] in SYSTEM_DIRS


def _reached_alike(program: str) -> bool:
    """Whether the sandbox reaches `program` where the host does: each folder on the way and each link's target
    inside the system folders it shows. A link out of them (`/usr/local/bin/python3` to a user's home) dangles
    inside, where the shell passes it over for the next one on PATH; started directly it would not start."""
    path = program
    for _ in range(_MAX_LINKS):
        folder = os.path.realpath(os.path.dirname(path))
        if not _in_system_dir(folder):
            return False
        path = os.path.join(folder, os.path.basename(path))
        if not os.path.islink(path):
            return True
        path = os.path.join(folder, os.readlink(path))
    return False
