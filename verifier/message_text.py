"""A message's or a tool output's content as text: the one reading every trajectory reader uses (ATIF evidence,
the agent-log converters, the trajectory view in results/)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

MEDIA = ("image", "audio")


def content_text(content: Any, *, raw_log: bool = False) -> str:
    """Strings as they are; content parts joined by newlines, media as [image]/[audio].

    `raw_log`: the content comes from an agent's own log, whose blocks are untyped: a block's nested `content`
    (a tool result) is read the same way and a block of no known shape is kept as JSON, since it may be all the
    log says. Otherwise the content is ATIF's, whose parts are typed: a part without text is not content.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        return _json(content) if raw_log else str(content)
    return "\n".join(piece for piece in (_part_text(part, raw_log) for part in content) if piece)


def _part_text(part: Any, raw_log: bool) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        kind = part.get("type")
        text = part.get("text")
        if kind in MEDIA:
            return f"[{kind}]"
        if isinstance(text, str) or (text is not None and not raw_log):
            return str(text)
        if not raw_log:
            return ""
        return content_text(part["content"], raw_log=True) if "content" in part else _json(part)
    kind = getattr(part, "type", None)  # Harbor's ContentPart models
    if kind is None or raw_log:
        return ""
    return f"[{kind}]" if kind in MEDIA else str(getattr(part, "text", None) or "")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
