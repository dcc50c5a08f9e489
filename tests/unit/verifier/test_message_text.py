"""One reading of message content as text for every trajectory reader: ATIF's typed parts and an agent log's
untyped blocks differ only in what an unknown shape becomes."""

from __future__ import annotations

from harbor.models.trajectories import ContentPart, ImageSource

from verifier.agent_logs import convert_claude_code
from verifier.message_text import content_text

IMAGE = ImageSource(media_type="image/png", path="a.png")

BLOCKS = [
    {"type": "text", "text": "look"},
    {"type": "image", "source": {"data": "..."}},
    {"type": "tool_result", "content": [{"type": "text", "text": "inner"}]},
    {"type": "thinking", "thinking": "hmm"},
]


def test_atif_parts_keep_text_and_media_and_drop_other_shapes() -> None:
    assert content_text(BLOCKS) == "look\n[image]"
    assert (
        content_text([ContentPart(type="text", text="typed"), ContentPart(type="image", source=IMAGE)])
        == "typed\n[image]"
    )
    assert content_text({"type": "text", "text": "one part"}) == "one part"
    assert content_text(None) == "" and content_text("plain") == "plain" and content_text(3) == "3"


def test_an_agent_logs_blocks_keep_nested_content_and_unknown_shapes_as_json() -> None:
    assert content_text(BLOCKS, raw_log=True) == 'look\n[image]\ninner\n{"type": "thinking", "thinking": "hmm"}'
    assert content_text(True, raw_log=True) == "true"


def test_the_claude_code_converter_reads_a_tool_result_through_it() -> None:
    log = (
        '{"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash", '
        '"input": {"command": "ls"}}]}}\n'
        '{"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", '
        '"content": [{"type": "text", "text": "a.txt"}, {"type": "image"}]}]}}\n'
    )
    steps = convert_claude_code(log)
    results = [r["content"] for s in steps for r in (s.get("observation") or {}).get("results", [])]
    assert results == ["a.txt\n[image]"]
