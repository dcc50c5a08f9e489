"""Command-name tables: pass-through wrappers (and how to skip their options), runners, clients, consumers."""

from __future__ import annotations

from verifier.checks.shell.ast import Word

CLIENTS = frozenset({"curl", "wget", "http", "https"})
MENTION_CLIENTS = frozenset({"curl", "wget", "http"})
# Start a command in another host, container, root, user or network namespace.
RUNNERS = frozenset(
    {
        "ssh",
        "docker",
        "docker-compose",
        "podman",
        "podman-compose",
        "kubectl",
        "apptainer",
        "singularity",
        "chroot",
        "systemd-nspawn",
        "bwrap",
        "nsenter",
        "unshare",
        "firejail",
        "lxc-attach",
        "machinectl",
    }
)
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "busybox"})
TEXT_CONSUMERS = frozenset(
    {
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "awk",
        "gawk",
        "mawk",
        "nawk",
        "sed",
        "jq",
        "yq",
        "cut",
        "sort",
        "uniq",
        "head",
        "tail",
        "wc",
        "tr",
        "tee",
        "less",
        "more",
        "cat",
        "column",
        "nl",
        "fold",
        "fmt",
        "paste",
        "diff",
        "comm",
        "join",
        "base64",
        "xxd",
        "od",
        "hexdump",
        "strings",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "rev",
        "tac",
        "read",
        "mapfile",
        "readarray",
        "iconv",
        "dos2unix",
        "perl",
        "python",
        "python3",
        "ruby",
    }
)

# name -> (options that take a value, number of positional words before the command)
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (
        frozenset(
            {
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-U",
                "-T",
                "-R",
                "--user",
                "--group",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--close-from",
                "--chroot",
                "--command-timeout",
            }
        ),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "env": (frozenset({"-u", "-C", "-S", "--unset", "--chdir", "--split-string"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset({"-T", "-P", "-D"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "strace": (frozenset({"-o", "-e", "-p", "-s", "-u", "-a", "-b", "-E", "-I", "-O", "-P", "-S", "-X", "-U"}), 0),
    "ltrace": (frozenset({"-o", "-e", "-p", "-s", "-u", "-a", "-n", "-l", "-x", "-w", "-A", "-D", "-F"}), 0),
    "flock": (frozenset({"-w", "-E", "--timeout", "--wait", "--conflict-exit-code"}), 1),
    "watch": (frozenset({"-n", "--interval", "-q", "--equexit"}), 0),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "unbuffer": (frozenset(), 0),
    "eatmydata": (frozenset(), 0),
    "fakeroot": (frozenset(), 0),
    "torsocks": (frozenset(), 0),
    "proxychains": (frozenset({"-f"}), 0),
    "proxychains4": (frozenset({"-f"}), 0),
    "caffeinate": (frozenset({"-t", "-w"}), 0),
    "catchsegv": (frozenset(), 0),
    "valgrind": (frozenset(), 0),
}


def basename(text: str) -> str:
    return text.rsplit("/", 1)[-1]


def command_name(word: Word) -> str | None:
    """The lowercased basename of a literal command word (`\\rm`, `/bin/rm`, `RM` all give `rm`)."""
    lit = word.lit
    if lit is None:
        return None
    name = basename(lit).lower()
    # `{ssh` / `!ssh` glued to a keyword: read as the command conservatively.
    return name.lstrip("{!") or name


def unwrap(words: list[Word]) -> tuple[list[Word], list[str], str | None]:
    """Strip pass-through wrappers; returns (remaining words, wrapper names, shell text for watch/flock -c)."""
    wrappers: list[str] = []
    i = 0
    n = len(words)
    while i < n:
        name = command_name(words[i])
        if name not in WRAPPERS:
            break
        args_with_value, positional = WRAPPERS[name]
        j = i + 1
        if name == "command":
            flags = [w.lit for w in words[j : j + 2] if w.lit and w.lit.startswith("-")]
            if any(f and ("v" in f or "V" in f) for f in flags):
                break  # `command -v x` names x, it does not run it
        wrappers.append(name)
        while j < n:
            lit = words[j].lit
            if lit is None:
                break
            if lit == "--":
                j += 1
                break
            if name == "env" and words[j].assign is not None:
                j += 1
                continue
            if lit.startswith("-") and len(lit) > 1:
                key = lit.split("=", 1)[0]
                j += 1
                if key in args_with_value and "=" not in lit:
                    j += 1
                elif not lit.startswith("--") and len(lit) > 2 and lit[:2] in args_with_value:
                    pass  # glued value, e.g. -oL
                continue
            break
        j += positional
        if name in ("watch",) and j < n and not any(w.lit in ("-x", "--exec") for w in words[i + 1 : j]):
            return [], wrappers, " ".join(w.text() for w in words[j:])
        if name == "flock" and j < n and words[j].lit in ("-c", "--command"):
            return [], wrappers, " ".join(w.text() for w in words[j + 1 :])
        i = j
    return words[i:], wrappers, None


def shell_script_arg(words: list[Word]) -> tuple[Word, list[Word]] | None:
    """For `sh -c SCRIPT [arg0 args...]` (any option cluster holding c), the script word and its arguments."""
    for k in range(1, len(words)):
        lit = words[k].lit
        if lit is None or not lit.startswith("-") or lit.startswith("--"):
            if lit in ("--login", "--norc", "--noprofile", "--posix"):
                continue
            return None
        if "c" in lit[1:]:
            if k + 1 < len(words):
                return words[k + 1], words[k + 2 :]
            return None
    return None
