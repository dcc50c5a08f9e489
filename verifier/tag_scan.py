"""Tagged spans in text an agent wrote (`<function=NAME>...</function>`, `<keystrokes ...>...</keystrokes>`), found
with the same results as the regexes the agents' own harnesses use, but in linear time: the text is the agent's, and
a regex backtracking over a hostile reply would stall the grading."""

from __future__ import annotations


def first_between(text: str, opening: str, closing: str) -> str | None:
    """The body of the first `OPENING ... CLOSING`, as `re.search(OPENING(.*?)CLOSING, DOTALL)` finds it."""
    start = text.find(opening)
    if start < 0:
        return None
    end = text.find(closing, start + len(opening))
    return None if end < 0 else text[start + len(opening) : end]


def tagged_spans(
    text: str,
    opening: str,
    closing: str,
    *,
    name_then_newline: bool = False,
    first_only: bool = False,
    empty_name: bool = False,
) -> list[tuple[str, str]]:
    """(name, body) of each `OPENING NAME>` ... `CLOSING` in `text`, as `re.findall` finds
    `OPENING([^>]+)>(.*?)CLOSING` with DOTALL (`[^>]*` with `empty_name`; a newline after the `>` with
    `name_then_newline`; `re.search` with `first_only`), in linear time."""
    found: list[tuple[str, str]] = []
    after = "\n" if name_then_newline else ""
    limit = text.rfind(closing)  # a match ends at or before the last closing tag
    position, gt = 0, -1
    while limit >= 0:
        start = text.find(opening, position, limit)
        if start < 0:
            break
        name_at = start + len(opening)
        if gt < name_at:
            gt = text.find(">", name_at, limit)  # the name runs to the next '>' ([^>]+); cached across starts
            if gt < 0:
                break
        if (gt > name_at or empty_name) and text.startswith(after, gt + 1):
            body_at = gt + 1 + len(after)
            end = text.find(closing, body_at)
            if end < 0:
                break  # no closing after this header: none after any later one either
            found.append((text[name_at:gt], text[body_at:end]))
            if first_only:
                break
            position = end + len(closing)
        else:
            position = start + 1
    return found
