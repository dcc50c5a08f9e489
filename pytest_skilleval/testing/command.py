"""`skilleval scripted-model SCRIPT.json`: run the scripted model server in the foreground until Ctrl+C."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from pytest_skilleval.testing.script import ScriptError
from pytest_skilleval.testing.scripted_model import LoggedRequest, ScriptedModelServer


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
        server = ScriptedModelServer(
            args.script,
            tls=args.tls,
            port=args.port,
            host=args.host,
            log_path=args.log,
            echo=None if args.quiet else _echo_line,
        )
        server.start()
    except ScriptError as error:
        print(f"skilleval scripted-model: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(
            f"skilleval scripted-model: cannot listen on {args.host}:{args.port}: {error.strerror or error}",
            file=sys.stderr,
        )
        return 2
    stop = threading.Event()
    # Own handlers, not KeyboardInterrupt: a shell starts background jobs with SIGINT ignored, which Python inherits.
    previous = {number: signal.signal(number, lambda *_: stop.set()) for number in (signal.SIGINT, signal.SIGTERM)}
    print(f"scripted model server on {server.base_url} (Ctrl+C stops it)", flush=True)
    print(f"  OPENAI_BASE_URL={server.openai_base_url}", flush=True)
    print(f"  ANTHROPIC_BASE_URL={server.base_url}", flush=True)
    if server.cert_path is not None:
        print(f"  CA certificate to trust: {server.cert_path} (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS)", flush=True)
    try:
        while not stop.wait(0.2):
            pass
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        left = server.pending()
        server.stop()
    print(
        f"stopped after {len(server.requests)} request(s)" + (f"; replies never used: {left}" if left else ""),
        flush=True,
    )
    return 0
