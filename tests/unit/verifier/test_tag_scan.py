"""Tagged spans in agent-written text are found as the harnesses' regexes find them (OpenHands' `<function=...>`
and `<parameter=...>`, terminus-2's `<keystrokes ...>` and sections), in linear time on a hostile reply."""

from __future__ import annotations

import random
import re
import time

from verifier.message_calls import text_calls
from verifier.tag_scan import first_between, tagged_spans

FUNCTION = re.compile(r"<function=([^>]+)>\n(.*?)</function>", re.DOTALL)  # openhands/llm/fn_call_converter.py
PARAMETER = re.compile(r"<parameter=([^>]+)>(.*?)</parameter>", re.DOTALL)
KEYSTROKES = re.compile(r"<keystrokes([^>]*)>(.*?)</keystrokes>", re.DOTALL)  # terminus_xml_plain_parser.py
ANALYSIS = re.compile(r"<analysis>(.*?)</analysis>", re.DOTALL)
PIECES = ["<function=", "</function>", "<parameter=", "</parameter>", "<keystrokes", "</keystrokes>", "<analysis>",
          "</analysis>", ">", "\n", "a", "<", ' duration="1"']  # fmt: skip


def test_the_same_spans_as_the_regexes() -> None:
    rng = random.Random(23)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        found = FUNCTION.search(text)
        assert tagged_spans(text, "<function=", "</function>", name_then_newline=True, first_only=True) == (
            [(found.group(1), found.group(2))] if found else []
        ), text
        assert tagged_spans(text, "<parameter=", "</parameter>") == PARAMETER.findall(text), text
        assert tagged_spans(text, "<keystrokes", "</keystrokes>", empty_name=True) == KEYSTROKES.findall(text), text
        section = ANALYSIS.search(text)
        assert first_between(text, "<analysis>", "</analysis>") == (section.group(1) if section else None), text


def test_a_hostile_reply_is_read_in_linear_time() -> None:
    """200,000 openings sharing one far '>' would cost a backtracking regex about 10^10 steps."""
    hostile = "<function=" * 200_000 + ">\n" + "<parameter=" * 200_000 + "></function>"
    step = {"source": "agent", "message": hostile}
    started = time.monotonic()
    carried = text_calls("openhands", "json", step, "c")
    assert time.monotonic() - started < 10
    assert carried is not None and carried[1][0]["function_name"].startswith("<function=")
