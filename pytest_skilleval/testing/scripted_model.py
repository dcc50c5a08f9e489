"""A scripted model server on 127.0.0.1: real HTTP in the dialects agents and litellm speak, answers from a script.

It is a test tool, not a mock of our code: agents, Harbor and litellm make real requests to it. It speaks

- OpenAI chat completions: ``POST /v1/chat/completions`` (also ``/chat/completions``), litellm and terminus-2;
- the OpenAI Responses API: ``POST /v1/responses`` (also ``/responses``), codex;
- Anthropic messages: ``POST /v1/messages`` (also ``/messages``; ``?beta=true`` is ignored), claude-code, plus
  ``POST /v1/messages/count_tokens`` (an estimate, never takes a reply from the script);
- ``GET /v1/models`` and ``GET /v1/models/<id>`` (the script's model names, or ``catalog``; a missing id is a 404; Anthropic's shape when the request has ``anthropic-version``),

each plain or streamed (SSE) as the request's ``"stream": true`` asks, in the event shapes the official SDKs parse.

Script (JSON; validated, a bad one is refused naming the field)::

    {
      "models": {                        # queues by the "model" the request sends
        "gpt-test": [REPLY, ...],        # exact name first,
        "claude-*": [REPLY, ...],        # then glob patterns (in script order),
        "*": [REPLY, ...]                # then the default queue
      },
      "replies": [REPLY, ...],           # shorthand for models["*"] (give one or the other)
      "on_empty": REPLY,                 # optional: the answer once nothing is left (default: a 500, below)
      "catalog": {"models": [...], "status": 401, "message": "...", "delay": 0.0}
                                         # optional: what GET /v1/models and /v1/models/<id> answer (the ids
                                         # listed; or an error status instead; after a delay)
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

``server.client_env()`` gives the variables that point clients here (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``,
placeholder keys, and with TLS ``SSL_CERT_FILE``/``NODE_EXTRA_CA_CERTS``).
``tls=True`` serves HTTPS with a certificate made at start, signed by a throwaway CA at ``server.cert_path``:
clients that do not trust it fail verification; trust it to connect. Command line:
``skilleval scripted-model SCRIPT.json [--port N] [--tls] [--log FILE]`` (see docs/agents.md).
"""

from __future__ import annotations

import datetime
import fnmatch
import json
import shutil
import ssl
import tempfile
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from pytest_skilleval.testing import dialects
from pytest_skilleval.testing.dialects import Dialect, RenderError, Turn
from pytest_skilleval.testing.http import (
    Answer,
    BodyTooLarge,
    ScriptedHTTPServer,
    decode_body,
    error_answer,
    json_answer,
)
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
        names += [
            name for name in self._queues if name not in {model, DEFAULT_QUEUE} and fnmatch.fnmatchcase(model, name)
        ]
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
            counts = {
                name: sum(item.left for item in queue if item.left is not None) for name, queue in self._queues.items()
            }
        return {name: count for name, count in counts.items() if count}

    def names(self) -> list[str]:
        with self._lock:
            return [name for name in self._queues if not any(char in name for char in "*?[")]


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
        dialects: Iterable[str] | None = None,
        require_key: str | None = None,
    ) -> None:
        """`dialects` limits the POST endpoints served (e.g. ``("chat",)`` for an OpenAI-compatible provider that
        speaks chat completions only: /responses and /messages answer 404); `require_key` answers 401 to a request
        whose bearer token or x-api-key is not that key (the log keeps headers redacted)."""
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
        self._dialects = None if dialects is None else frozenset(dialects)
        self._require_key = require_key
        self._log: list[LoggedRequest] = []
        self._log_lock = threading.Lock()
        self._seq = 0
        self._stopping = threading.Event()
        self._httpd: ScriptedHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._tmp: Path | None = None
        self.cert_path: Path | None = None

    # ------------------------------------------------------------ lifecycle

    def start(self) -> ScriptedModelServer:
        if self._httpd is not None:
            return self
        httpd = ScriptedHTTPServer((self._host, self._port), self._answer, self._stopping)
        if self._tls:
            self._tmp = Path(tempfile.mkdtemp(prefix="skilleval-scripted-tls-"))
            hosts = (self._host, "localhost") if self._host != "localhost" else ("localhost",)
            files = make_certificates(self._tmp, hosts)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(files.server_cert, files.server_key)
            httpd.tls_context = context
            self.cert_path = files.ca_cert
        if self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_path.write_text("")
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=f"scripted-model:{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and delete the certificate; safe to call twice."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.drop_connections()
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

    def client_env(self) -> dict[str, str]:
        """Environment variables that point OpenAI/Anthropic clients (SDKs, litellm, codex, claude-code) here.

        The keys are placeholders: clients refuse to start without one, and the server ignores them.
        """
        env = {
            "OPENAI_BASE_URL": self.openai_base_url,
            "OPENAI_API_KEY": "scripted-model-placeholder",
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": "scripted-model-placeholder",
        }
        if self.cert_path is not None:
            env.update(SSL_CERT_FILE=str(self.cert_path), NODE_EXTRA_CA_CERTS=str(self.cert_path))
        return env

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

    def _answer(self, method: str, path: str, query: str, headers: Iterable[tuple[str, str]], raw: bytes) -> Answer:
        headers = list(headers)
        entry: dict[str, Any] = {
            "time": time.time(),
            "method": method,
            "path": path,
            "query": query,
            "headers": redact_headers(headers),
        }
        header_map = {name.lower(): value for name, value in headers}
        route = ROUTES.get(path)
        body: Any = None
        if raw:
            try:
                raw = decode_body(raw, header_map.get("content-encoding", ""))
                body = json.loads(raw)
            except BodyTooLarge as error:
                entry["raw_body"] = f"[{len(raw):,} bytes as sent, not kept]"
                return self._logged(entry, error_answer(_dialect(route) if route else None, 413, str(error)))
            except (ValueError, zlib.error) as error:
                entry["raw_body"] = raw.decode("utf-8", errors="replace")[:100_000]
                if route is not None:
                    answer = error_answer(_dialect(route), 400, f"scripted model server: unreadable body: {error}")
                    return self._logged(entry, answer)
        entry["body"] = body
        if method in {"GET", "HEAD"}:
            return self._logged(entry, self._get(path, header_map))
        if route is None:
            message = f"scripted model server: no such endpoint {method} {path}; it serves {', '.join(ROUTES)}"
            return self._logged(entry, error_answer(None, 404, message, "not_found_error"))
        served = "messages" if route == "count_tokens" else route
        if self._dialects is not None and served not in self._dialects:
            message = f"scripted model server: {method} {path} is not served here (only {', '.join(self._dialects)})"
            return self._logged(entry, error_answer(None, 404, message, "not_found_error"))
        if self._require_key is not None and not _carries_key(header_map, self._require_key):
            message = "scripted model server: wrong or missing API key"
            return self._logged(entry, error_answer(_dialect(route), 401, message, "authentication_error"))
        if not isinstance(body, dict):
            message = "scripted model server: the body must be a JSON object"
            return self._logged(entry, error_answer(_dialect(route), 400, message))
        model = str(body.get("model") or "")
        entry.update(dialect=route, model=model or None, stream=bool(body.get("stream")))
        text = conversation_text(body)
        if route == "count_tokens":
            return self._logged(entry, json_answer(200, {"input_tokens": _estimate_tokens(text)}))
        dialect = _dialect(route)
        taken = self._queues.take(model, text)
        if taken is None and self._on_empty is not None:
            taken = (self._on_empty, "on_empty")
        if taken is None:
            message = (
                f"scripted model server: the script ran out of replies for model {model!r} "
                f"({method} {path}); add replies for {model!r} or {DEFAULT_QUEUE!r}, or set on_empty"
            )
            return self._logged(entry, error_answer(dialect, 500, message, "script_exhausted"))
        reply, queue = taken
        entry["answered_by"] = queue
        try:
            answer = self._render(reply, dialect, model, body, text)
        except RenderError as error:
            answer = error_answer(dialect, 500, f"scripted model server: {error}")
        return self._logged(entry, answer)

    def _logged(self, entry: dict[str, Any], answer: Answer) -> Answer:
        self._record(LoggedRequest(status=answer.status, **entry))
        return answer

    def _get(self, path: str, headers: dict[str, str]) -> Answer:
        if path == "/":
            return json_answer(200, {"status": "ok", "service": "skilleval scripted model server"})
        one = next((path[len(base) + 1 :] for base in MODEL_PATHS if path.startswith(base + "/")), None)
        if path not in MODEL_PATHS and not one:
            return error_answer(None, 404, f"scripted model server: no such endpoint GET {path}", "not_found_error")
        answer = self._catalog(headers, urllib.parse.unquote(one) if one else None)
        answer.delay = self.script.catalog.delay
        return answer

    def _catalog(self, headers: dict[str, str], model_id: str | None) -> Answer:
        """The model listing, one model, or the script's catalog error."""
        catalog = self.script.catalog
        dialect: Dialect = "messages" if "anthropic-version" in headers else "chat"
        if catalog.status is not None:
            message = catalog.message or f"scripted catalog error (HTTP {catalog.status})"
            return error_answer(dialect, catalog.status, message)
        names = catalog.models if catalog.models is not None else (self._queues.names() or ["scripted-model"])
        if model_id is not None:
            if model_id not in names:
                return error_answer(dialect, 404, f"model: {model_id} not found", "not_found_error")
            names = [model_id]
        if "anthropic-version" in headers:
            stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            data = [{"type": "model", "id": name, "display_name": name, "created_at": stamp} for name in names]
            if model_id is not None:
                return json_answer(200, data[0])
            return json_answer(200, {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]})
        models = [{"id": name, "object": "model", "created": 0, "owned_by": "skilleval-scripted"} for name in names]
        if model_id is not None:
            return json_answer(200, models[0])
        return json_answer(200, {"object": "list", "data": models})

    def _render(self, reply: Reply, dialect: Dialect, model: str, body: dict[str, Any], text: str) -> Answer:
        if reply.is_raw:
            return _raw_answer(reply, dialect)
        said = (
            (reply.text or "")
            + (reply.refusal or "")
            + "".join(call.name + dialects.arguments_text(call) for call in reply.tool_calls)
        )
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
            return Answer(200, frames=frames, headers=dict(reply.headers), delay=reply.delay)
        answer = json_answer(200, dialects.body_for(dialect, turn), reply.headers)
        answer.delay = reply.delay
        return answer


def _carries_key(headers: dict[str, str], key: str) -> bool:
    bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
    return key in (bearer, headers.get("x-api-key", "").strip())


def _dialect(route: str) -> Dialect:
    return "messages" if route in {"messages", "count_tokens"} else route  # type: ignore[return-value]


def _raw_answer(reply: Reply, dialect: Dialect) -> Answer:
    status = reply.status if reply.status is not None else 200
    body = reply.body
    if body is None and status >= 400:
        body = dialects.error_body(dialect, status, reply.message or f"scripted error reply (HTTP {status})")
    if isinstance(body, (dict, list)):
        data, content_type = json.dumps(body).encode(), "application/json"
    else:
        data, content_type = (body or "").encode(), "text/plain; charset=utf-8"
    return Answer(status, data, reply.content_type or content_type, dict(reply.headers), delay=reply.delay)
