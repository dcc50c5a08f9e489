"""The network-upload rules for curl, wget and HTTPie, and the prose/mention rule.

Each client's own option grammar decides what is an upload; nothing here looks at the network.
"""

from __future__ import annotations

import re

UPLOAD_METHODS = frozenset({"POST", "PUT", "PATCH"})
ALL_METHODS = UPLOAD_METHODS | {"GET", "DELETE", "HEAD", "OPTIONS", "TRACE", "CONNECT"}
SECRET_VAR_RE = re.compile(r"\$\{?[#!]?\w*(?:token|key|secret|password)", re.I)
KEY_VALUE_RE = re.compile(r"^[^\s=:@/-][^\s=]*?(?::=@|=@|:=|=)")
HTTPIE_ITEM_RE = re.compile(r":=@|=@|:=|==|=|@|:")
GENERIC_UPLOAD_FLAGS = frozenset(
    {
        "-d",
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "--data-ascii",
        "--json",
        "-F",
        "--form",
        "--form-string",
        "-T",
        "--upload-file",
        "--post-data",
        "--post-file",
        "--body-data",
        "--body-file",
    }
)
_MENTION_STRIP = "\"'`;,()[]{}<>|&$"

CURL_SHORT_WITH_VALUE = frozenset("AbcCdDeEFHKmoPQrtTuUwxXyYz")
CURL_UPLOAD_LONG = frozenset(
    {
        "--data",
        "--data-ascii",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "--json",
        "--form",
        "--form-string",
        "--upload-file",
    }
)
CURL_LONG_WITH_VALUE = frozenset(
    {
        "--header",
        "--output",
        "--user-agent",
        "--cookie",
        "--cookie-jar",
        "--referer",
        "--user",
        "--proxy",
        "--url",
        "--max-time",
        "--connect-timeout",
        "--retry",
        "--write-out",
        "--config",
        "--cacert",
        "--cert",
        "--key",
        "--resolve",
        "--range",
        "--continue-at",
        "--dump-header",
        "--output-dir",
        "--limit-rate",
        "--interface",
        "--proxy-user",
        "--oauth2-bearer",
        "--aws-sigv4",
        "--unix-socket",
        "--request",
        "--trace",
        "--trace-ascii",
    }
)
WGET_UPLOAD = frozenset({"--post-data", "--post-file", "--body-data", "--body-file"})
HTTPIE_WITH_VALUE = frozenset(
    {
        "--auth",
        "-a",
        "--auth-type",
        "-A",
        "--output",
        "-o",
        "--session",
        "--session-read-only",
        "--verify",
        "--cert",
        "--cert-key",
        "--timeout",
        "--print",
        "-p",
        "--style",
        "-s",
        "--pretty",
        "--proxy",
        "--format-options",
        "--max-redirects",
        "--boundary",
        "--ssl",
        "--ciphers",
        "--response-charset",
        "--response-mime",
        "--raw",
        "--max-headers",
        "--history-print",
        "-P",
        "--unsorted",
        "--sorted",
    }
)


def client_upload(client: str, args: list[str], stdin: bool) -> str | None:
    """Why `client args...` uploads data, or None. `args` are the words after the client, as text."""
    for a in args:
        if SECRET_VAR_RE.search(a):
            return f"{client} sends a secret-named variable ({_clip(a)})"
    if client == "curl":
        return _curl(args)
    if client == "wget":
        return _wget(args)
    if client in ("http", "https"):
        return _httpie(client, args, stdin)
    return None


def _curl(args: list[str]) -> str | None:
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a.startswith("--"):
            key, eq, val = a.partition("=")
            if key in CURL_UPLOAD_LONG:
                return f"curl uploads data ({key})"
            if key == "--request":
                method = val if eq else (args[i] if i < n else "")
                if method.upper() in UPLOAD_METHODS:
                    return f"curl sends a {method.upper()} request"
            if key in CURL_LONG_WITH_VALUE and not eq:
                i += 1
        elif a.startswith("-") and len(a) > 1:
            for k, ch in enumerate(a[1:], start=1):
                if ch in CURL_SHORT_WITH_VALUE:
                    value = a[k + 1 :] if k + 1 < len(a) else (args[i] if i < n else "")
                    if k + 1 >= len(a):
                        i += 1
                    if ch in "dFT":
                        return f"curl uploads data (-{ch})"
                    if ch == "X" and value.upper() in UPLOAD_METHODS:
                        return f"curl sends a {value.upper()} request"
                    break
    return None


def _wget(args: list[str]) -> str | None:
    for i, a in enumerate(args):
        key, eq, val = a.partition("=")
        if key in WGET_UPLOAD:
            return f"wget uploads data ({key})"
        if key == "--method":
            method = val if eq else (args[i + 1] if i + 1 < len(args) else "")
            if method.upper() in UPLOAD_METHODS:
                return f"wget sends a {method.upper()} request"
    return None


def _httpie(client: str, args: list[str], stdin: bool) -> str | None:
    positional: list[str] = []
    ignore_stdin = False
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        i += 1
        if a.startswith("-") and len(a) > 1 and not positional[1:]:
            key = a.split("=", 1)[0]
            if key in ("--form", "-f", "--multipart", "--raw"):
                return f"{client} uploads data ({key})"
            if key in ("--ignore-stdin", "-I"):
                ignore_stdin = True
            if key in HTTPIE_WITH_VALUE and "=" not in a:
                i += 1
            continue
        positional.append(a)
    if len(positional) > 1 and positional[0].upper() in ALL_METHODS:
        if positional[0].upper() in UPLOAD_METHODS:
            return f"{client} sends a {positional[0].upper()} request"
        positional = positional[1:]
    for item in positional[1:]:
        if "://" in item:
            continue
        m = HTTPIE_ITEM_RE.search(item)
        if m and m.start() > 0 and m.group() not in ("==", ":"):
            return f"{client} sends request data ({_clip(item)})"
    if stdin and positional and not ignore_stdin:
        return f"{client} uploads its piped or redirected input"
    return None


def mention_tokens(texts: list[str]) -> list[str]:
    """Split words and prose into tokens the mention rule reads."""
    out: list[str] = []
    for t in texts:
        for piece in t.split():
            piece = piece.strip(_MENTION_STRIP)
            if piece:
                out.append(piece)
    return out


def mention_upload(tokens: list[str], stdin: bool = False) -> str | None:
    """A client named in data (another command's arguments, prose): its own rules, or a following HTTP method,
    upload flag or key=value word."""
    for i, tok in enumerate(tokens):
        name = tok.rsplit("/", 1)[-1].lower()
        if name not in ("curl", "wget", "http"):
            continue
        rest = tokens[i + 1 :]
        reason = client_upload(name, rest, stdin)
        if reason:
            return f"{reason} (named in another command's arguments or text)"
        for r in rest:
            key = r.split("=", 1)[0]
            if r in UPLOAD_METHODS or key in GENERIC_UPLOAD_FLAGS:
                return f"{name} mention followed by {_clip(r)}"
            if "://" not in r and KEY_VALUE_RE.match(r):
                return f"{name} mention followed by key=value word {_clip(r)}"
    return None


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."
