"""The scripted model server, driven over real HTTP by the clients agents and judges use: openai SDK, litellm, httpx."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from pytest_skilleval.testing.script import regex_all
from pytest_skilleval.testing.scripted_model import ScriptedModelServer

ANTHROPIC_HEADERS = {"x-api-key": "sk-ant-secret", "anthropic-version": "2023-06-01"}
USER = [{"role": "user", "content": "list the files"}]
REPO = Path(__file__).resolve().parents[2]


def client(server: ScriptedModelServer, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test-secret", max_retries=0, **options)


def sse_events(text: str) -> list[tuple[str | None, Any]]:
    """Parse an SSE body into (event, data) pairs the way SDKs do."""
    events = []
    for block in text.strip().split("\n\n"):
        name, data = None, None
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                payload = line.removeprefix("data: ")
                data = payload if payload == "[DONE]" else json.loads(payload)
        events.append((name, data))
    return events


@pytest.fixture(scope="module")
def litellm() -> Any:
    import litellm

    litellm.suppress_debug_info = True
    return litellm


# ---------------------------------------------------------------- OpenAI chat completions


def test_chat_text_and_tool_calls_plain_and_streamed_through_openai_sdk(scripted_model) -> None:
    server = scripted_model(
        {
            "models": {
                "gpt-test": [
                    {"text": "Here are the files.", "usage": {"input_tokens": 11, "output_tokens": 4}},
                    {"tool_calls": [{"name": "bash", "arguments": {"command": "ls -la"}, "id": "call_1"}]},
                    {"text": "Streaming works fine."},
                    {"text": "Let me look.", "tool_calls": [{"name": "bash", "arguments": {"command": "cat a.txt"}}]},
                ]
            }
        }
    )
    api = client(server)

    first = api.chat.completions.create(model="gpt-test", messages=USER)
    assert first.choices[0].message.content == "Here are the files."
    assert first.choices[0].finish_reason == "stop"
    assert (first.usage.prompt_tokens, first.usage.completion_tokens, first.usage.total_tokens) == (11, 4, 15)

    second = api.chat.completions.create(model="gpt-test", messages=USER)
    call = second.choices[0].message.tool_calls[0]
    assert second.choices[0].finish_reason == "tool_calls"
    assert (call.id, call.function.name) == ("call_1", "bash")
    assert json.loads(call.function.arguments) == {"command": "ls -la"}

    chunks = list(
        api.chat.completions.create(
            model="gpt-test", messages=USER, stream=True, stream_options={"include_usage": True}
        )
    )
    text_deltas = [
        chunk.choices[0].delta.content for chunk in chunks if chunk.choices and chunk.choices[0].delta.content
    ]
    assert len(text_deltas) > 1 and "".join(text_deltas) == "Streaming works fine."
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0

    chunks = list(api.chat.completions.create(model="gpt-test", messages=USER, stream=True))
    assert all(chunk.usage is None for chunk in chunks)  # no usage chunk unless include_usage asks
    tools = [tool for chunk in chunks for tool in chunk.choices[0].delta.tool_calls or []]
    arguments = "".join(tool.function.arguments or "" for tool in tools)
    names = [tool.function.name for tool in tools if tool.function.name]
    assert names == ["bash"] and json.loads(arguments) == {"command": "cat a.txt"}
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == "Let me look."
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert server.pending() == {}


def test_chat_stream_ends_with_done_over_raw_http(scripted_model) -> None:
    server = scripted_model({"replies": ["one two"]})
    response = httpx.post(
        f"{server.openai_base_url}/chat/completions", json={"model": "m", "messages": USER, "stream": True}
    )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    assert events[-1] == (None, "[DONE]")
    assert {data["object"] for _, data in events[:-1]} == {"chat.completion.chunk"}


def test_chat_path_without_v1_prefix_and_refusal(scripted_model) -> None:
    server = scripted_model({"replies": [{"refusal": "I can't help with that."}]})
    body = httpx.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": USER}).json()
    message = body["choices"][0]["message"]
    assert message["refusal"] == "I can't help with that." and message["content"] is None


def test_client_env_points_the_openai_sdk_here(scripted_model, monkeypatch: pytest.MonkeyPatch) -> None:
    server = scripted_model({"replies": ["found through the environment"]})
    for name, value in server.client_env().items():
        monkeypatch.setenv(name, value)
    reply = openai.OpenAI(max_retries=0).chat.completions.create(model="m", messages=USER)
    assert reply.choices[0].message.content == "found through the environment"
    assert "SSL_CERT_FILE" not in server.client_env()


def test_litellm_openai_provider_plain_and_streamed(scripted_model, litellm) -> None:
    server = scripted_model(
        {
            "models": {
                "judge": [
                    '{"score": 1}',
                    {"tool_calls": [{"name": "grade", "arguments": {"score": 0.5}}]},
                    "streamed through litellm",
                ]
            }
        }
    )
    options = {
        "model": "openai/judge",
        "api_base": server.openai_base_url,
        "api_key": "x",
        "max_retries": 0,
        "messages": USER,
    }
    plain = litellm.completion(**options, response_format={"type": "json_object"})
    assert json.loads(plain.choices[0].message.content) == {"score": 1}
    assert server.requests[-1].body["response_format"] == {"type": "json_object"}
    tool = litellm.completion(**options).choices[0].message.tool_calls[0]
    assert (tool.function.name, json.loads(tool.function.arguments)) == ("grade", {"score": 0.5})
    chunks = list(litellm.completion(**options, stream=True))
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chunks) == "streamed through litellm"
    assert [entry.model for entry in server.requests] == ["judge"] * 3


# ---------------------------------------------------------------- OpenAI Responses API (codex)


def test_responses_plain_and_streamed_through_openai_sdk(scripted_model) -> None:
    server = scripted_model(
        {
            "models": {
                "codex-test": [
                    {"text": "Done.", "usage": {"input_tokens": 20, "output_tokens": 2, "cached_tokens": 5}},
                    {"tool_calls": [{"name": "shell", "arguments": {"command": ["ls"]}}]},
                    {
                        "text": "I will patch it.",
                        "tool_calls": [
                            {"name": "apply_patch", "arguments": "*** Begin Patch\n*** End Patch", "custom": True}
                        ],
                    },
                ]
            }
        }
    )
    api = client(server)

    plain = api.responses.create(model="codex-test", input="hi", instructions="be brief")
    assert plain.output_text == "Done." and plain.status == "completed"
    usage = plain.usage
    assert (usage.input_tokens, usage.output_tokens, usage.input_tokens_details.cached_tokens) == (20, 2, 5)
    assert server.requests[-1].text == "be brief\nhi"

    with api.responses.stream(model="codex-test", input="hi") as stream:
        types = [event.type for event in stream]
        final = stream.get_final_response()
    assert types == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    call = final.output[0]
    assert (call.type, call.name, json.loads(call.arguments)) == ("function_call", "shell", {"command": ["ls"]})

    events = list(api.responses.create(model="codex-test", input="hi", stream=True))
    assert [event.sequence_number for event in events] == list(range(len(events)))
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert text == "I will patch it."
    done = [event.item for event in events if event.type == "response.output_item.done"]
    assert [item.type for item in done] == ["message", "custom_tool_call"]
    assert done[1].input == "*** Begin Patch\n*** End Patch"
    assert events[-1].type == "response.completed" and events[-1].response.usage.total_tokens > 0


# ---------------------------------------------------------------- Anthropic messages (claude-code)


def test_anthropic_messages_plain_and_streamed_over_http(scripted_model) -> None:
    server = scripted_model(
        {
            "models": {
                "claude-*": [
                    {"text": "Hello.", "usage": {"input_tokens": 9, "output_tokens": 2}},
                    {
                        "text": "Running it.",
                        "tool_calls": [{"name": "Bash", "arguments": {"command": "ls"}, "id": "toolu_1"}],
                    },
                ]
            }
        }
    )
    request = {"model": "claude-sonnet-test", "max_tokens": 100, "system": "sys prompt", "messages": USER}

    plain = httpx.post(f"{server.base_url}/v1/messages?beta=true", headers=ANTHROPIC_HEADERS, json=request).json()
    assert plain["type"] == "message" and plain["content"] == [{"type": "text", "text": "Hello."}]
    assert plain["stop_reason"] == "end_turn" and plain["usage"]["input_tokens"] == 9

    streamed = httpx.post(f"{server.base_url}/v1/messages", headers=ANTHROPIC_HEADERS, json={**request, "stream": True})
    events = sse_events(streamed.text)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(data["type"] == name for name, data in events)
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert [block["type"] for block in starts] == ["text", "tool_use"]
    assert starts[1]["id"] == "toolu_1" and starts[1]["input"] == {}
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert "".join(delta["text"] for delta in deltas if delta["type"] == "text_delta") == "Running it."
    partial = "".join(delta["partial_json"] for delta in deltas if delta["type"] == "input_json_delta")
    assert json.loads(partial) == {"command": "ls"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert server.requests[0].path == "/v1/messages" and server.requests[0].query == "beta=true"


def test_anthropic_messages_through_litellm_plain_and_streamed(scripted_model, litellm) -> None:
    server = scripted_model(
        {
            "replies": [
                "plain anthropic",
                {
                    "text": "streamed anthropic",
                    "tool_calls": [{"name": "Read", "arguments": {"file_path": "SKILL.md"}}],
                },
            ]
        }
    )
    options = {
        "model": "anthropic/claude-test",
        "api_base": server.base_url,
        "api_key": "x",
        "max_retries": 0,
        "messages": USER,
    }
    assert litellm.completion(**options).choices[0].message.content == "plain anthropic"
    message = litellm.stream_chunk_builder(list(litellm.completion(**options, stream=True))).choices[0].message
    assert message.content == "streamed anthropic"
    assert json.loads(message.tool_calls[0].function.arguments) == {"file_path": "SKILL.md"}
    assert {entry.path for entry in server.requests} == {"/v1/messages"}


def test_count_tokens_and_models_do_not_use_the_script(scripted_model) -> None:
    server = scripted_model({"models": {"claude-test": ["kept"], "gpt-*": ["also kept"]}})
    counted = httpx.post(
        f"{server.base_url}/v1/messages/count_tokens",
        headers=ANTHROPIC_HEADERS,
        json={"model": "claude-test", "messages": USER},
    ).json()
    assert counted["input_tokens"] > 0
    openai_models = client(server).models.list()
    assert [model.id for model in openai_models] == ["claude-test"]
    anthropic_models = httpx.get(f"{server.base_url}/v1/models", headers=ANTHROPIC_HEADERS).json()
    assert anthropic_models["data"][0]["type"] == "model" and anthropic_models["has_more"] is False
    assert server.pending() == {"claude-test": 1, "gpt-*": 1}
    missing = httpx.post(f"{server.base_url}/v1/embeddings", json={"model": "x"})
    assert missing.status_code == 404 and "no such endpoint" in missing.json()["error"]["message"]


# ---------------------------------------------------------------- errors, guards, queues


def test_error_replies_with_retry_after_reach_openai_sdk_and_litellm(scripted_model, litellm) -> None:
    http_date = "Wed, 21 Oct 2026 07:28:00 GMT"
    server = scripted_model(
        {
            "replies": [
                {"status": 429, "headers": {"Retry-After": "2"}, "message": "slow down"},
                {"status": 429, "headers": {"Retry-After": http_date}},
                {"status": 503, "repeat": 2},
                "recovered",
            ]
        }
    )
    with pytest.raises(openai.RateLimitError) as caught:
        client(server).chat.completions.create(model="m", messages=USER)
    assert caught.value.response.headers["retry-after"] == "2"
    assert caught.value.body["message"] == "slow down"

    options = {
        "model": "openai/m",
        "api_base": server.openai_base_url,
        "api_key": "x",
        "max_retries": 0,
        "messages": USER,
    }
    with pytest.raises(litellm.RateLimitError) as limited:
        litellm.completion(**options)
    assert limited.value.status_code == 429
    assert limited.value.litellm_response_headers["retry-after"] == http_date
    for _ in range(2):
        with pytest.raises(litellm.ServiceUnavailableError):
            litellm.completion(**options)
    assert litellm.completion(**options).choices[0].message.content == "recovered"
    assert [entry.status for entry in server.requests] == [429, 429, 503, 503, 200]


def test_error_bodies_follow_the_dialect_and_raw_bodies_go_as_is(scripted_model) -> None:
    server = scripted_model(
        {
            "replies": [
                {"status": 529, "message": "overloaded"},
                {"status": 200, "body": "this is not json", "content_type": "application/json"},
                {"status": 400, "body": {"error": {"message": "response_format is not supported"}}},
                "valid at last",
            ]
        }
    )
    anthropic = httpx.post(
        f"{server.base_url}/v1/messages",
        headers=ANTHROPIC_HEADERS,
        json={"model": "c", "max_tokens": 5, "messages": USER},
    )
    assert anthropic.status_code == 529
    assert anthropic.json() == {"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}}
    api = client(server)
    with pytest.raises((ValueError, openai.APIError)):  # garbage with a 200: the SDK cannot parse it
        api.chat.completions.create(model="m", messages=USER)
    with pytest.raises(openai.BadRequestError, match="response_format is not supported"):
        api.chat.completions.create(model="m", messages=USER)
    assert api.chat.completions.create(model="m", messages=USER).choices[0].message.content == "valid at last"


def test_guards_answer_side_requests_and_unmatched_ones_stay_queued(scripted_model) -> None:
    server = scripted_model(
        {
            "replies": [
                {"match": "Generate a title", "text": "Listing files"},
                {"match_regex": r"exit code \d+", "text": "The command failed."},
                {"match": "never sent", "text": "unused"},
                "first main answer",
                "second main answer",
            ]
        }
    )
    api = client(server)

    def ask(text: str) -> str:
        reply = api.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
        return reply.choices[0].message.content

    assert ask("list the files") == "first main answer"
    assert ask("Generate a title for this conversation") == "Listing files"
    assert ask("it printed exit code 2") == "The command failed."
    assert ask("go on") == "second main answer"
    assert server.pending() == {"*": 1}  # the guarded reply that never matched
    with pytest.raises(openai.InternalServerError, match="ran out of replies"):
        ask("anything else")


def test_queues_by_model_repeat_forever_and_on_empty(scripted_model) -> None:
    server = scripted_model(
        {
            "models": {
                "main-model": [{"text": "main", "repeat": 2}],
                "small-*": [{"text": "small", "repeat": "forever"}],
            },
            "replies": ["default"],
            "on_empty": {"status": 418, "message": "script over"},
        }
    )
    api = client(server)

    def ask(model: str) -> str:
        return api.chat.completions.create(model=model, messages=USER).choices[0].message.content

    assert [ask("main-model"), ask("main-model"), ask("main-model")] == ["main", "main", "default"]
    assert [ask("small-fast"), ask("small-other"), ask("small-fast")] == ["small"] * 3
    with pytest.raises(openai.APIStatusError, match="script over") as caught:
        ask("main-model")
    assert caught.value.status_code == 418
    answered_by = [entry.answered_by for entry in server.requests]
    assert answered_by == ["main-model"] * 2 + ["*"] + ["small-*"] * 3 + ["on_empty"]
    assert server.pending() == {}


def test_empty_queue_default_error_and_add_at_runtime(scripted_model) -> None:
    server = scripted_model()
    response = httpx.post(f"{server.openai_base_url}/chat/completions", json={"model": "late", "messages": USER})
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "script_exhausted"
    assert "ran out of replies for model 'late'" in response.json()["error"]["message"]
    server.add("late", "now there is one", {"tool_calls": [{"name": "bash", "arguments": {"command": "pwd"}}]})
    api = client(server)
    assert api.chat.completions.create(model="late", messages=USER).choices[0].message.content == "now there is one"
    call = api.chat.completions.create(model="late", messages=USER).choices[0].message.tool_calls[0]
    assert call.function.name == "bash"


def test_a_stopped_server_does_not_answer_on_a_pooled_connection(scripted_model) -> None:
    server = scripted_model({"replies": [{"text": "once", "repeat": "forever"}]})
    url = f"{server.openai_base_url}/chat/completions"
    with httpx.Client() as pooled:
        assert pooled.post(url, json={"model": "m", "messages": USER}).status_code == 200
        server.stop()
        with pytest.raises(httpx.TransportError):
            pooled.post(url, json={"model": "m", "messages": USER})
    assert len(server.requests) == 1


def test_delay_holds_the_answer(scripted_model) -> None:
    server = scripted_model({"replies": [{"text": "slow", "delay": 0.3}]})
    started = time.monotonic()
    assert client(server).chat.completions.create(model="m", messages=USER).choices[0].message.content == "slow"
    assert time.monotonic() - started >= 0.3


# ---------------------------------------------------------------- request log


def test_request_log_in_memory_and_jsonl_redacts_secrets(scripted_model, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    server = scripted_model({"replies": ["a", "b"]}, log_path=log)
    client(server).chat.completions.create(model="m", messages=USER, temperature=0)
    httpx.post(
        f"{server.base_url}/v1/messages",
        headers={**ANTHROPIC_HEADERS, "X-Custom-Token": "tok-secret"},
        json={"model": "c", "max_tokens": 5, "messages": USER, "stream": True},
    )

    first, second = server.requests
    assert (first.method, first.path, first.dialect, first.model) == ("POST", "/v1/chat/completions", "chat", "m")
    assert first.status == 200
    assert first.body["temperature"] == 0 and first.headers["authorization"] == "<redacted>"
    assert (second.dialect, second.stream) == ("messages", True)
    assert second.headers["x-api-key"] == "<redacted>" and second.headers["x-custom-token"] == "<redacted>"
    assert second.headers["anthropic-version"] == "2023-06-01"
    assert first.time <= second.time
    written = log.read_text()
    assert [json.loads(line)["path"] for line in written.splitlines()] == ["/v1/chat/completions", "/v1/messages"]
    for secret in ("sk-test-secret", "sk-ant-secret", "tok-secret"):
        assert secret not in written


def test_unreadable_body_is_logged_and_refused(scripted_model) -> None:
    server = scripted_model({"replies": ["kept"]})
    response = httpx.post(f"{server.openai_base_url}/chat/completions", content=b"{not json")
    assert response.status_code == 400 and "unreadable body" in response.json()["error"]["message"]
    assert server.requests[0].raw_body == "{not json" and server.pending() == {"*": 1}


def test_compressed_and_oversized_bodies_are_bounded(scripted_model) -> None:
    """A small gzip body that expands past the limit is answered 413 without expanding it (a 1.5 MB request grew
    the server from 42 MB to 4.3 GB); an ordinary gzip body still works; a declared length over the limit is
    refused before it is read."""
    import gzip
    import socket
    import tracemalloc

    from pytest_skilleval.testing import http

    server = scripted_model({"replies": ["kept"]})
    url = f"{server.openai_base_url}/chat/completions"
    small = gzip.compress(json.dumps({"model": "m", "messages": USER}).encode())
    response = httpx.post(url, content=small, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "kept"

    bomb = gzip.compress(b'{"model": "m", "pad": "' + b"0" * (3 * http.MAX_REQUEST_BYTES) + b'"}', compresslevel=9)
    assert len(bomb) < 1024 * 1024
    tracemalloc.start()
    try:
        response = httpx.post(url, content=bomb, headers={"Content-Encoding": "gzip"}, timeout=60)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert response.status_code == 413 and "once decompressed" in response.json()["error"]["message"]
    assert peak < 1.5 * http.MAX_REQUEST_BYTES  # never the whole expansion (3x the limit)

    host, port = server.openai_base_url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {http.MAX_REQUEST_BYTES + 1}\r\n\r\n"
        sock.sendall(head.encode())
        assert sock.recv(4096).startswith(b"HTTP/1.1 413")


# ---------------------------------------------------------------- TLS


def test_tls_fails_verification_unless_the_client_trusts_the_certificate(scripted_model) -> None:
    server = scripted_model({"replies": ["over https"]}, tls=True)
    assert server.base_url.startswith("https://127.0.0.1:") and server.cert_path.is_file()
    with pytest.raises(openai.APIConnectionError) as caught:
        client(server).chat.completions.create(model="m", messages=USER)
    assert "CERTIFICATE_VERIFY_FAILED" in repr(caught.value.__cause__)
    trusted = httpx.Client(verify=ssl.create_default_context(cafile=str(server.cert_path)))
    reply = client(server, http_client=trusted).chat.completions.create(model="m", messages=USER)
    assert reply.choices[0].message.content == "over https"
    env = server.client_env()
    assert env["SSL_CERT_FILE"] == env["NODE_EXTRA_CA_CERTS"] == str(server.cert_path)
    assert env["OPENAI_BASE_URL"] == server.openai_base_url and env["ANTHROPIC_BASE_URL"] == server.base_url
    cert_dir = server.cert_path.parent
    server.stop()
    assert not cert_dir.exists()


# ---------------------------------------------------------------- command line


def test_cli_serves_one_request_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"models": {"cli-model": ["from the command line"]}}))
    log = tmp_path / "log.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_skilleval.authoring.cli", "scripted-model", str(script), "--log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        banner = [process.stdout.readline() for _ in range(3)]  # URL, OPENAI_BASE_URL, ANTHROPIC_BASE_URL
        assert banner[0].startswith("scripted model server on http://127.0.0.1:"), banner
        base_url = banner[0].split()[4]
        assert banner[1].strip() == f"OPENAI_BASE_URL={base_url}/v1"
        assert banner[2].strip() == f"ANTHROPIC_BASE_URL={base_url}"
        reply = httpx.post(f"{base_url}/v1/chat/completions", json={"model": "cli-model", "messages": USER}).json()
        assert reply["choices"][0]["message"]["content"] == "from the command line"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "stopped after 1 request(s)" in out
    assert "POST /v1/chat/completions model=cli-model -> 200 (cli-model)" in err
    assert json.loads(log.read_text())["model"] == "cli-model"


def test_cli_refuses_a_bad_script_naming_the_field(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text(json.dumps({"models": {"m": ["ok", {"txt": "typo"}]}}))
    result = subprocess.run(
        [sys.executable, "-m", "pytest_skilleval.authoring.cli", "scripted-model", str(script)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,
    )
    assert result.returncode == 2
    assert f"{script}: models.m[1].txt: Extra inputs are not permitted" in result.stderr


def test_regex_all_guards_on_every_needle_and_no_absent_one():
    import re

    guard = re.compile(regex_all("Ada (Lovelace)", "<skills>", absent=("available.*",)))
    assert guard.search("greet Ada (Lovelace)\n<skills> listed")
    assert not guard.search("greet Ada (Lovelace)")  # a needle missing
    assert not guard.search("<skills> Ada (Lovelace) available.*")  # an absent one present, taken literally
    assert guard.search("<skills> Ada (Lovelace) available skills")


def test_a_chat_only_server_refuses_the_other_apis_and_any_other_key() -> None:
    """As NVIDIA Build: chat completions only (so a bridge test proves the translation), one accepted key."""
    with ScriptedModelServer(
        {"replies": [{"text": "hi", "repeat": "forever"}]}, dialects=("chat",), require_key="nvapi-k1"
    ) as server:
        good = {"Authorization": "Bearer nvapi-k1"}
        chat = httpx.post(f"{server.base_url}/v1/chat/completions", headers=good, json={"model": "m", "messages": USER})
        assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"] == "hi"
        for path, body in [
            ("/v1/responses", {"model": "m", "input": "hi"}),
            ("/v1/messages", {"model": "m", "max_tokens": 5, "messages": USER}),
            ("/v1/messages/count_tokens", {"model": "m", "messages": USER}),
        ]:
            refused = httpx.post(f"{server.base_url}{path}", headers=good, json=body)
            assert refused.status_code == 404 and "not served here" in refused.text, path
        wrong = httpx.post(
            f"{server.base_url}/v1/chat/completions",
            headers={"Authorization": "Bearer sk-other"},
            json={"model": "m", "messages": USER},
        )
        assert wrong.status_code == 401
        assert [entry.status for entry in server.requests] == [200, 404, 404, 404, 401]
