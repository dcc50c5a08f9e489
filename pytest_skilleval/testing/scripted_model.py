"""A scripted model server on 127.0.0.1: real HTTP in the dialects agents and litellm speak, answers from a script.

It is a test tool, not a mock of our code: agents, Harbor and litellm make real requests to it. It speaks

- OpenAI chat completions: ``POST /v1/chat/completions`` (also ``/chat/completions``), litellm and terminus-2;
- the OpenAI Responses API: ``POST /v1/responses`` (also ``/responses``), codex;
- Anthropic messages: ``POST /v1/messages`` (also ``/messages``; ``?beta=true`` is ignored), claude-code, plus
  ``POST /v1/messages/count_tokens`` (an estimate, never takes a reply from the script);
- ``GET /v1/models`` (the script's model names; Anthropic's shape when the request has ``anthropic-version``),

each plain or streamed (SSE) as the request's ``"stream": true`` asks, in the event shapes the official SDKs parse.

Script (JSON; validated, a bad one is refused naming the field)::

    {
      "models": {                        # queues by the "model" the request sends
        "gpt-test": [REPLY, ...],        # exact name first,
        "claude-*": [REPLY, ...],        # then glob patterns (in script order),
        "*": [REPLY, ...]                # then the default queue
      },
      "replies": [REPLY, ...],           # shorthand for models["*"] (give one or the other)
      "on_empty": REPLY                  # optional: the answer once nothing is left (default: a 500, below)
    }

A REPLY is a string (shorthand for ``{"text": ...}``) or an object with

- content, rendered in the request's dialect: ``text``; ``tool_calls``: ``[{"name": "bash", "arguments": {...}}]``
  (``arguments`` an object, or a string sent as is; optional ``id``; ``"custom": true`` makes a Responses API
  custom tool call whose input is the string); ``refusal`` (alone); ``stop_reason`` (overrides the finish/stop
  reason; ``"length"``/``"max_tokens"`` map across dialects); ``usage``: ``{"input_tokens", "output_tokens",
  "cached_tokens"}`` (counts left out are estimated at ~4 characters a token);
- or an HTTP response sent as is (errors, garbage): ``status``; ``body`` (object/list sent as JSON, string sent as
  is; without a body an error status gets the dialect's error JSON carrying ``message``); ``content_type``;
- with either: ``headers`` (e.g. ``{"Retry-After": "2"}``), ``delay`` (seconds before answering), ``repeat``
  (how many requests it answers, default 1, or ``"forever"``);
- guards: ``match`` (a substring) and/or ``match_regex`` (``re.search``) on the request's conversation text (every
  string under ``messages``, ``input``, ``instructions``, ``system`` and ``prompt``, joined by newlines). A guarded
  reply that matches is used before any unguarded one in its queue; one that does not match stays queued, so side
  requests (title generation, topic checks) can be answered without disturbing the main conversation.

Each request takes the first usable reply from the first queue (exact, globs, ``*``) that has one. When none is left
the server answers 500 with a JSON error whose message says the script ran out for that model (``on_empty``
replaces that). Every request is logged (``server.requests``; optionally a JSONL file) with its time, path, model,
headers with secrets redacted, parsed body, status and the queue that answered.

Python::

    with ScriptedModelServer({"replies": ["hello"]}) as server:
        openai.OpenAI(base_url=server.openai_base_url, api_key="x").chat.completions.create(...)
        server.add("gpt-test", {"status": 429, "headers": {"Retry-After": "1"}}, "ok")
        assert server.requests[-1].model == "gpt-test"

``tls=True`` serves HTTPS with a certificate made at start, signed by a throwaway CA at ``server.cert_path``:
clients that do not trust it fail verification; trust it to connect. Command line:
``skilleval scripted-model SCRIPT.json [--port N] [--tls] [--log FILE]`` (see docs/agents.md).
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import shutil
import signal
import socket
import ssl
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from pytest_skilleval.testing import dialects
from pytest_skilleval.testing.dialects import Dialect, Frame, RenderError, Turn
from pytest_skilleval.testing.script import (
    DEFAULT_QUEUE,
    Reply,
    Script,
    ScriptError,
    load_script,
    parse_reply,
    parse_script,
)
from pytest_skilleval.testing.tls import make_certificates

__all__ = ["LoggedRequest", "Reply", "Script", "ScriptError", "ScriptedModelServer", "conversation_text"]

ROUTES: dict[str, str] = {
    "/v1/chat/completions": "chat",
    "/chat/completions": "chat",
    "/v1/responses": "responses",
    "/responses": "responses",
    "/v1/messages": "messages",
    "/messages": "messages",
    "/v1/messages/count_tokens": "count_tokens",
    "/messages/count_tokens": "count_tokens",
}
MODEL_PATHS = {"/v1/models", "/models"}
CONVERSATION_FIELDS = ("system", "instructions", "prompt", "messages", "input")
SECRET_HEADERS = {"authorization", "proxy-authorization", "cookie", "set-cookie"}
SECRET_WORDS = ("key", "token", "secret", "auth", "password")
REDACTED = "<redacted>"
IDLE_CONNECTION_TIMEOUT = 30.0


class LoggedRequest(BaseModel):
    """One request the server received and what it answered."""

    model_config = ConfigDict(frozen=True)

    time: float
    method: str
    path: str
    query: str = ""
    dialect: str | None = None
    model: str | None = None
    stream: bool = False
    headers: dict[str, str]
    body: Any = None
    raw_body: str | None = None  # the body as text when it is not JSON
    status: int
    answered_by: str | None = None  # the queue name, "on_empty", or None when no scripted reply was used

    @property
    def text(self) -> str:
        """The conversation text guards match against."""
        return conversation_text(self.body)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def conversation_text(body: Any) -> str:
    """Every string under the request's conversation fields, joined by newlines (what guards search)."""
    if not isinstance(body, dict):
        return ""
    return "\n".join(text for name in CONVERSATION_FIELDS for text in _strings(body.get(name)))


def redact_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    redacted: dict[str, str] = {}
    for name, value in headers:
        lower = name.lower()
        secret = lower in SECRET_HEADERS or any(word in lower for word in SECRET_WORDS)
        redacted[lower] = REDACTED if secret else value
    return redacted


def _estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


@dataclass
class _Queued:
    reply: Reply
    left: int | None  # None: forever


class _Queues:
    """Per-model reply queues; thread-safe, since the HTTP server answers on many threads."""

    def __init__(self, script: Script) -> None:
        self._lock = threading.Lock()
        self._queues: dict[str, list[_Queued]] = {}
        for name, replies in script.queues().items():
            self.add(name, replies)

    def add(self, model: str, replies: Iterable[Reply]) -> None:
        with self._lock:
            queue = self._queues.setdefault(model, [])
            for reply in replies:
                queue.append(_Queued(reply, None if reply.repeat == "forever" else int(reply.repeat)))

    def _order(self, model: str) -> list[str]:
        names = [model] if model in self._queues else []
        names += [name for name in self._queues
                  if name not in {model, DEFAULT_QUEUE} and fnmatch.fnmatchcase(model, name)]
        return names + ([DEFAULT_QUEUE] if DEFAULT_QUEUE in self._queues and model != DEFAULT_QUEUE else [])

    def take(self, model: str, text: str) -> tuple[Reply, str] | None:
        with self._lock:
            for name in self._order(model):
                queue = self._queues[name]
                chosen = next((item for item in queue if item.reply.guarded and item.reply.matches(text)), None)
                chosen = chosen or next((item for item in queue if not item.reply.guarded), None)
                if chosen is None:
                    continue
                if chosen.left is not None:
                    chosen.left -= 1
                    if chosen.left == 0:
                        queue.remove(chosen)
                return chosen.reply, name
        return None

    def pending(self) -> dict[str, int]:
        """Replies still queued that were meant to be used up (``forever`` ones are not counted)."""
        with self._lock:
            counts = {name: sum(item.left for item in queue if item.left is not None)
                      for name, queue in self._queues.items()}
        return {name: count for name, count in counts.items() if count}

    def names(self) -> list[str]:
        with self._lock:
            return [name for name in self._queues if not any(char in name for char in "*?[")]


@dataclass
class _Answer:
    """What the handler sends: a JSON/raw body, or SSE frames."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    frames: list[Frame] | None = None
    delay: float = 0.0


def _json_answer(status: int, data: Any, headers: dict[str, str] | None = None) -> _Answer:
    return _Answer(status, json.dumps(data).encode(), headers=dict(headers or {}))


def _error_answer(dialect: Dialect | None, status: int, message: str, kind: str | None = None) -> _Answer:
    return _json_answer(status, dialects.error_body(dialect, status, message, kind))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedModelServer
    tls_context: ssl.SSLContext | None = None

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.tls_context is not None:
            # Handshake in the handler thread, so one client failing verification never blocks accept().
            sock = self.tls_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (ssl.SSLError, ConnectionError, TimeoutError)):
            return  # clients that refuse our certificate or hang up are expected in tests
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_CONNECTION_TIMEOUT
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        """Quiet: the request log replaces the stdlib's stderr lines."""

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's naming
        self._serve(b"")

    def do_POST(self) -> None:  # noqa: N802
        try:
            raw = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        self._serve(raw)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self, raw: bytes) -> None:
        path, _, query = self.path.partition("?")
        path = path.rstrip("/") or "/"
        answer = self.server.owner._answer(self.command, path, query, self.headers.items(), raw)
        if answer.delay:
            self.server.owner._stopping.wait(answer.delay)
        try:
            self._send(answer)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    def _send(self, answer: _Answer) -> None:
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if answer.frames is None:
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer.body)
            return
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for frame in answer.frames:
            data = dialects.sse(frame)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_HEAD = do_GET  # noqa: N815


def _decode(raw: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in {"", "identity"}:
        return raw
    if encoding in {"gzip", "x-gzip"}:
        return zlib.decompress(raw, 16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompress(raw)
    if encoding == "zstd":
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14
        except ImportError:
            raise ValueError("zstd request bodies need Python 3.14") from None
        return zstd.decompress(raw)
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


class ScriptedModelServer:
    """The server: start it (or use it as a context manager), point clients at `base_url`, read `requests`."""

    def __init__(
        self,
        script: Script | dict[str, Any] | str | Path | None = None,
        *,
        tls: bool = False,
        port: int = 0,
        host: str = "127.0.0.1",
        log_path: str | Path | None = None,
        echo: Callable[[LoggedRequest], None] | None = None,
    ) -> None:
        if script is None:
            script = Script()
        elif isinstance(script, (str, Path)):
            script = load_script(script)
        else:
            script = parse_script(script)
        self.script = script
        self._queues = _Queues(script)
        self._on_empty = script.on_empty
        self._tls = tls
        self._host = host
        self._port = port
        self._log_path = Path(log_path) if log_path is not None else None
        self._echo = echo
        self._log: list[LoggedRequest] = []
        self._log_lock = threading.Lock()
        self._seq = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._tmp: Path | None = None
        self.cert_path: Path | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self._host, self._port), _Handler)
        httpd.owner = self
        if self._tls:
            self._tmp = Path(tempfile.mkdtemp(prefix="skilleval-scripted-tls-"))
            files = make_certificates(self._tmp, (self._host, "localhost") if self._host != "localhost" else ("localhost",))
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(files.server_cert, files.server_key)
            httpd.tls_context = context
            self.cert_path = files.ca_cert
        if self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_path.write_text("")
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"scripted-model:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and delete the certificate; safe to call twice."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ addresses

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the scripted model server is not running: call start() or use it in a with block")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http(s)://127.0.0.1:PORT``: what ANTHROPIC_BASE_URL takes."""
        return f"{'https' if self._tls else 'http'}://{self._host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``base_url + /v1``: what OPENAI_BASE_URL and litellm's api_base take."""
        return f"{self.base_url}/v1"

    anthropic_base_url = base_url

    # ------------------------------------------------------------ script and log

    def add(self, model: str, *replies: Reply | dict[str, Any] | str) -> None:
        """Append replies to a model's queue (``"*"``: the default queue) while the server runs."""
        parsed = [parse_reply(reply, f"reply {index} for {model!r}") for index, reply in enumerate(replies)]
        self._queues.add(model, parsed)

    def pending(self) -> dict[str, int]:
        """Queued replies not used yet, by queue (``forever`` replies are not counted)."""
        return self._queues.pending()

    @property
    def requests(self) -> list[LoggedRequest]:
        with self._log_lock:
            return list(self._log)

    def _record(self, entry: LoggedRequest) -> None:
        with self._log_lock:
            self._log.append(entry)
            if self._log_path is not None:
                with self._log_path.open("a", encoding="utf-8") as handle:
                    handle.write(entry.model_dump_json() + "\n")
        if self._echo is not None:
            self._echo(entry)

    def _next_seq(self) -> int:
        with self._log_lock:
            self._seq += 1
            return self._seq

    # ------------------------------------------------------------ answering

    def _answer(self, method: str, path: str, query: str, headers: Iterable[tuple[str, str]], raw: bytes) -> _Answer:
        headers = list(headers)
        entry: dict[str, Any] = {"time": time.time(), "method": method, "path": path, "query": query,
                                 "headers": redact_headers(headers)}
        header_map = {name.lower(): value for name, value in headers}
        route = ROUTES.get(path)
        body: Any = None
        if raw:
            try:
                raw = _decode(raw, header_map.get("content-encoding", ""))
                body = json.loads(raw)
            except (ValueError, zlib.error) as error:
                entry["raw_body"] = raw.decode("utf-8", errors="replace")[:100_000]
                if route is not None:
                    answer = _error_answer(_dialect(route), 400, f"scripted model server: unreadable body: {error}")
                    return self._logged(entry, answer)
        entry["body"] = body
        if method in {"GET", "HEAD"}:
            return self._logged(entry, self._get(path, header_map))
        if route is None:
            message = f"scripted model server: no such endpoint {method} {path}; it serves {', '.join(ROUTES)}"
            return self._logged(entry, _error_answer(None, 404, message, "not_found_error"))
        if not isinstance(body, dict):
            return self._logged(entry, _error_answer(_dialect(route), 400, "scripted model server: the body must be a JSON object"))
        model = str(body.get("model") or "")
        entry.update(dialect=route, model=model or None, stream=bool(body.get("stream")))
        text = conversation_text(body)
        if route == "count_tokens":
            return self._logged(entry, _json_answer(200, {"input_tokens": _estimate_tokens(text)}))
        dialect = _dialect(route)
        taken = self._queues.take(model, text)
        if taken is None and self._on_empty is not None:
            taken = (self._on_empty, "on_empty")
        if taken is None:
            message = (f"scripted model server: the script ran out of replies for model {model!r} "
                       f"({method} {path}); add replies for {model!r} or {DEFAULT_QUEUE!r}, or set on_empty")
            return self._logged(entry, _error_answer(dialect, 500, message, "script_exhausted"))
        reply, queue = taken
        entry["answered_by"] = queue
        try:
            answer = self._render(reply, dialect, model, body, text)
        except RenderError as error:
            answer = _error_answer(dialect, 500, f"scripted model server: {error}")
        return self._logged(entry, answer)

    def _logged(self, entry: dict[str, Any], answer: _Answer) -> _Answer:
        self._record(LoggedRequest(status=answer.status, **entry))
        return answer

    def _get(self, path: str, headers: dict[str, str]) -> _Answer:
        if path == "/":
            return _json_answer(200, {"status": "ok", "service": "skilleval scripted model server"})
        if path not in MODEL_PATHS:
            return _error_answer(None, 404, f"scripted model server: no such endpoint GET {path}", "not_found_error")
        names = self._queues.names() or ["scripted-model"]
        if "anthropic-version" in headers:
            stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            data = [{"type": "model", "id": name, "display_name": name, "created_at": stamp} for name in names]
            return _json_answer(200, {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]})
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "skilleval-scripted"} for name in names]
        return _json_answer(200, {"object": "list", "data": data})

    def _render(self, reply: Reply, dialect: Dialect, model: str, body: dict[str, Any], text: str) -> _Answer:
        if reply.is_raw:
            return _raw_answer(reply, dialect)
        said = (reply.text or "") + (reply.refusal or "") + "".join(
            call.name + dialects.arguments_text(call) for call in reply.tool_calls)
        usage = reply.usage
        turn = Turn(
            model=model or "scripted-model",
            seq=self._next_seq(),
            text=reply.text,
            tool_calls=list(reply.tool_calls),
            refusal=reply.refusal,
            stop_reason=reply.stop_reason,
            input_tokens=usage.input_tokens if usage and usage.input_tokens is not None else _estimate_tokens(text),
            output_tokens=usage.output_tokens if usage and usage.output_tokens is not None else _estimate_tokens(said),
            cached_tokens=usage.cached_tokens if usage else 0,
        )
        if body.get("stream"):
            frames = dialects.frames_for(dialect, turn, body)
            return _Answer(200, frames=frames, headers=dict(reply.headers), delay=reply.delay)
        answer = _json_answer(200, dialects.body_for(dialect, turn), reply.headers)
        answer.delay = reply.delay
        return answer


def _dialect(route: str) -> Dialect:
    return "messages" if route in {"messages", "count_tokens"} else route  # type: ignore[return-value]


def _raw_answer(reply: Reply, dialect: Dialect) -> _Answer:
    status = reply.status if reply.status is not None else 200
    body = reply.body
    if body is None and status >= 400:
        body = dialects.error_body(dialect, status, reply.message or f"scripted error reply (HTTP {status})")
    if isinstance(body, (dict, list)):
        data, content_type = json.dumps(body).encode(), "application/json"
    else:
        data, content_type = (body or "").encode(), "text/plain; charset=utf-8"
    return _Answer(status, data, reply.content_type or content_type, dict(reply.headers), delay=reply.delay)


# ---------------------------------------------------------------- command line


def _echo_line(entry: LoggedRequest) -> None:
    detail = f" model={entry.model}" if entry.model else ""
    detail += " stream" if entry.stream else ""
    source = f" ({entry.answered_by})" if entry.answered_by else ""
    print(f"{entry.method} {entry.path}{detail} -> {entry.status}{source}", file=sys.stderr, flush=True)


def run_scripted_model_command(argv: list[str]) -> int:
    """`skilleval scripted-model SCRIPT.json`: serve in the foreground until Ctrl+C."""
    parser = argparse.ArgumentParser(
        prog="skilleval scripted-model",
        description="Serve a scripted model on 127.0.0.1 (OpenAI chat, Responses, Anthropic messages) so a real "
        "agent can run without an API key. Stops on Ctrl+C.",
    )
    parser.add_argument("script", type=Path, help="the script (JSON): replies by model, see docs/agents.md")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--tls", action="store_true", help="serve HTTPS with a certificate made at start")
    parser.add_argument("--log", type=Path, help="also write every request as a JSON line to this file")
    parser.add_argument("--quiet", action="store_true", help="do not print one line per request on stderr")
    args = parser.parse_args(argv)
    try:
        server = ScriptedModelServer(args.script, tls=args.tls, port=args.port, host=args.host, log_path=args.log,
                                     echo=None if args.quiet else _echo_line)
        server.start()
    except ScriptError as error:
        print(f"skilleval scripted-model: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"skilleval scripted-model: cannot listen on {args.host}:{args.port}: {error.strerror or error}",
              file=sys.stderr)
        return 2
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"scripted model server on {server.base_url} (Ctrl+C stops it)", flush=True)
    print(f"  OPENAI_BASE_URL={server.openai_base_url}", flush=True)
    print(f"  ANTHROPIC_BASE_URL={server.base_url}", flush=True)
    if server.cert_path is not None:
        print(f"  CA certificate to trust: {server.cert_path} (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS)", flush=True)
    try:
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        left = server.pending()
        server.stop()
    print(f"stopped after {len(server.requests)} request(s)"
          + (f"; replies never used: {left}" if left else ""), flush=True)
    return 0
