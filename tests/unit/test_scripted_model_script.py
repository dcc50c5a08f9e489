"""The scripted model server's script format: what it accepts and how it names a bad field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilleval.testing.script import ScriptError, load_script, parse_script


def test_string_reply_is_text_and_replies_fill_the_default_queue() -> None:
    script = parse_script({"replies": ["hi", {"tool_calls": [{"name": "bash"}]}]})
    queue = script.queues()["*"]
    assert queue[0].text == "hi" and queue[1].tool_calls[0].arguments == {}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"models": {"m": [{"txt": "x"}]}}, "models.m[0].txt: Extra inputs are not permitted"),
        ({"models": {"m": [{}]}}, "models.m[0]: a reply needs text, tool_calls or refusal"),
        (
            {"replies": [{"text": "x", "status": 500}]},
            "replies[0]: a reply with status is an HTTP response sent as is; it cannot also have text",
        ),
        ({"replies": [{"message": "x"}]}, "replies[0]: an HTTP reply needs a status"),
        ({"replies": [{"text": "x", "repeat": 0}]}, "replies[0].repeat"),
        ({"replies": [{"text": "x", "match_regex": "("}]}, "replies[0].match_regex: not a valid regular expression"),
        ({"replies": [{"tool_calls": [{"arguments": {}}]}]}, "replies[0].tool_calls[0].name: Field required"),
        ({"replies": [{"refusal": "no", "text": "yes"}]}, "a refusal reply cannot also have text"),
        ({"replies": ["a"], "models": {"*": ["b"]}}, 'either as "replies" or as models["*"]'),
        ({"on_empty": {"text": "x", "match": "y"}}, "on_empty answers every request"),
        ({"model": {}}, "model: Extra inputs are not permitted"),
        (["a"], "a script is a JSON object"),
    ],
)
def test_bad_scripts_name_the_field(data: object, message: str) -> None:
    with pytest.raises(ScriptError, match="^test-script: ") as caught:
        parse_script(data, "test-script")
    assert message in str(caught.value)


def test_load_script_reports_file_and_json_position(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text('{"replies": [\n  "a",\n]}')
    with pytest.raises(ScriptError, match=r"script.json: not valid JSON: .* at line 2 column \d+"):
        load_script(path)
    with pytest.raises(ScriptError, match="cannot read the script"):
        load_script(tmp_path / "missing.json")
    path.write_text(json.dumps({"models": {"m": [{"status": 429, "headers": {"Retry-After": "1"}}]}}))
    assert load_script(path).models["m"][0].headers == {"Retry-After": "1"}


def test_every_script_in_the_agents_docs_is_valid() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "agents.md").read_text()
    blocks = [block.split("```", 1)[0] for block in text.split("```json\n")[1:]]
    assert len(blocks) >= 4
    for block in blocks:
        parse_script(json.loads(block), "docs/agents.md")
