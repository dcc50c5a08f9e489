"""The scripted model server's HTTP layer: sockets, TLS per connection, request bodies, plain and SSE responses.

Knows nothing of scripts: it hands each request to an `answer` function and sends the `Answer` it gets back.
"""

from __future__ import annotations

import json
import socket
import ssl
import sys
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_skilleval.testing import dialects
from pytest_skilleval.testing.dialects import Dialect, Frame

IDLE_CONNECTION_TIMEOUT = 30.0
# A request body, as sent and once decoded: far above any agent's request (a long context is a few MB), far below
# what a small compressed body can expand to (1.5 MB of gzip is gigabytes of zeros).
MAX_REQUEST_BYTES = 64 * 1024 * 1024
DECODE_STEP = 1024 * 1024


class BodyTooLarge(ValueError):
    """A request body over MAX_REQUEST_BYTES, as sent or decoded: answered 413, never held in memory."""

    def __init__(self, what: str) -> None:
        super().__init__(f"the request body {what} is over {MAX_REQUEST_BYTES:,} bytes, the limit")


@dataclass
class Answer:
    """What the handler sends: a JSON/raw body, or SSE frames."""

    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    frames: list[Frame] | None = None
    delay: float = 0.0


# (method, path without query, query, headers, raw body) -> what to send
AnswerFunction = Callable[[str, str, str, list[tuple[str, str]], bytes], Answer]


def json_answer(status: int, data: Any, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, json.dumps(data).encode(), headers=dict(headers or {}))


def error_answer(dialect: Dialect | None, status: int, message: str, kind: str | None = None) -> Answer:
    return json_answer(status, dialects.error_body(dialect, status, message, kind))


class ScriptedHTTPServer(ThreadingHTTPServer):
    """One thread per connection (agents stream and retry concurrently); TLS wrapped per connection."""

    daemon_threads = True
    tls_context: ssl.SSLContext | None = None

    def __init__(self, address: tuple[str, int], answer: AnswerFunction, stopping: threading.Event) -> None:
        super().__init__(address, _Handler)
        self.answer = answer
        self.stopping = stopping  # set when the owner stops: cuts a reply's delay short
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.tls_context is not None:
            # Handshake in the handler thread, so one client failing verification never blocks accept().
            sock = self.tls_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        with self._open_lock:
            self._open.add(sock)
        return sock, address

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        """Hang up kept-alive connections, so a stopped server never answers on a client's pooled connection."""
        with self._open_lock:
            connections = list(self._open)
        for sock in connections:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (ssl.SSLError, ConnectionError, TimeoutError)):
            return  # clients that refuse our certificate or hang up are expected in tests
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_CONNECTION_TIMEOUT
    server: ScriptedHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        """Quiet: the request log replaces the stdlib's stderr lines."""

    def do_GET(self) -> None:
        self._serve(b"")

    def do_POST(self) -> None:
        try:
            raw = self._read_body()
        except BodyTooLarge as error:
            self.close_connection = True  # the rest of the body is never read
            self._send(error_answer(None, 413, f"scripted model server: {error}", "request_too_large"))
            return
        except (ValueError, OSError):
            self.close_connection = True
            return
        self._serve(raw)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                total += size
                if total > MAX_REQUEST_BYTES:
                    raise BodyTooLarge("as sent")
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BYTES:
            raise BodyTooLarge("as sent")
        return self.rfile.read(length) if length else b""

    def _serve(self, raw: bytes) -> None:
        path, _, query = self.path.partition("?")
        path = path.rstrip("/") or "/"
        answer = self.server.answer(self.command, path, query, list(self.headers.items()), raw)
        if answer.delay:
            self.server.stopping.wait(answer.delay)
        try:
            self._send(answer)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    def _send(self, answer: Answer) -> None:
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


def decode_body(raw: bytes, encoding: str) -> bytes:
    """The body as sent, decompressed: at most MAX_REQUEST_BYTES are ever produced (else BodyTooLarge)."""
    encoding = encoding.strip().lower()
    if encoding in {"", "identity"}:
        return raw
    if encoding in {"gzip", "x-gzip"}:
        return _bounded(zlib.decompressobj(16 + zlib.MAX_WBITS), raw)
    if encoding == "deflate":
        return _bounded(zlib.decompressobj(), raw)
    if encoding == "zstd":
        try:
            from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14
        except ImportError:
            raise ValueError("zstd request bodies need Python 3.14") from None
        return _bounded(zstd.ZstdDecompressor(), raw)
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


def _bounded(decompressor: Any, raw: bytes) -> bytes:
    """Decompress in 1 MiB steps with a ceiling: the output stops growing as soon as it passes the limit."""
    data = bytearray()
    pending = raw
    while not decompressor.eof:
        step = decompressor.decompress(pending, DECODE_STEP)
        data += step
        if len(data) > MAX_REQUEST_BYTES:
            raise BodyTooLarge("once decompressed")
        pending = getattr(decompressor, "unconsumed_tail", b"")
        if not step and not pending:
            raise ValueError("the compressed body is incomplete")
    return bytes(data)
