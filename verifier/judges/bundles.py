"""Bounded evidence bundles: what each judge sees of a trajectory, in priority order, within a character budget.

A judge can score only what its bundle holds, so every bundle records what it left out (`omitted`: count,
truncated, reason) and starts with a deterministic fact list (was each backtick snippet / output path of the
expected output and behaviors seen in the agent's tool calls?), which does not depend on the model at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from verifier.evidence import ToolCallRecord, TrajectoryEvidence

CLIP_MARK = "…[clipped]"
TRUNCATION_MARK = "...[truncated]..."
MAX_FACTS = 12
FACT_LINE_LIMIT = 200
FACT_EVIDENCE_LIMIT = 160
_PATH_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_.-])/(?:logs/agent|workspace/output|output)[A-Za-z0-9._/+=:@-]*[A-Za-z0-9_./+=:@-]"
)
_BACKTICK = re.compile(r"`([^`\n]{4,})`")
_WRITE_TOOLS = {"write", "write_file", "edit", "edit_file", "multiedit", "notebookedit", "apply_patch"}
_EXEC_HINTS = ("bash", "shell", "exec", "run", "terminal", "command", "keystrokes")
_REDIRECT = re.compile(r"(?<![0-9&])>>?\s*(?![&\d])[^\s;|&]+")
_PY_WRITE = re.compile(r"write_text\(|write_bytes\(|open\([^)]*,\s*['\"][wa]")


class Omitted(BaseModel):
    count: int = 0
    truncated: bool = False
    reason: str | None = None


class VerifiedFact(BaseModel):
    claim: str
    observed: bool
    step_id: int | None = None
    evidence: str | None = None


class Bundle(BaseModel):
    """The text a judge reads, plus what was left out and the deterministic facts at its head."""

    text: str
    omitted: Omitted = Field(default_factory=Omitted)
    verified: list[VerifiedFact] = Field(default_factory=list)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - len(CLIP_MARK))] + CLIP_MARK


def middle_truncate(text: str, limit: int) -> str:
    """Keep the head (2/3) and the tail (1/3) of an over-long text, with a marker between."""
    if len(text) <= limit:
        return text
    room = max(0, limit - len(TRUNCATION_MARK))
    head = room * 2 // 3
    return text[:head] + TRUNCATION_MARK + (text[len(text) - (room - head) :] if room - head else "")


def _tool_leaf(name: str) -> str:
    return re.split(r"\.|:|/|__", name.lower())[-1]


def _command(call: ToolCallRecord) -> str:
    for key in ("command", "cmd", "keystrokes", "script", "code"):
        value = call.arguments.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return " ".join(value)
    return ""


def _write_body(call: ToolCallRecord) -> str:
    parts = [
        call.arguments[k] for k in ("content", "new_string", "patch", "code") if isinstance(call.arguments.get(k), str)
    ]
    edits = call.arguments.get("edits")
    if isinstance(edits, list):
        for edit in edits[:5]:
            if isinstance(edit, Mapping):
                parts += [edit[k] for k in ("new_string", "replacement") if isinstance(edit.get(k), str)]
    return "\n".join(parts)


def is_write(call: ToolCallRecord) -> bool:
    if _tool_leaf(call.tool) in _WRITE_TOOLS:
        return True
    command = _command(call)
    if not command or not any(h in call.tool.lower() for h in _EXEC_HINTS) and "command" not in call.arguments:
        return False
    return "tee " in command or "apply_patch" in command or bool(_REDIRECT.search(command) or _PY_WRITE.search(command))


def _path(call: ToolCallRecord) -> str:
    for key in ("file_path", "path", "filename", "notebook_path"):
        value = call.arguments.get(key)
        if isinstance(value, str):
            return value
    return ""


def _file_change(call: ToolCallRecord, body_limit: int, result_limit: int) -> str:
    lines = [f"Agent called: {call.tool}"]
    if path := _path(call):
        lines.append(f"Path: {path}")
    body = _write_body(call) or _command(call)
    if body:
        lines.append(middle_truncate(body, body_limit))
    if call.observation:
        lines.append("Result: " + middle_truncate(call.observation, result_limit))
    return "\n".join(lines)


# ---- verified facts --------------------------------------------------------------------------------------------


def _fact_tokens(texts: Sequence[str]) -> list[tuple[str, bool]]:
    """(token, case_sensitive): output paths (case-sensitive) and backtick snippets of >= 4 chars (not)."""
    tokens: list[tuple[str, bool]] = []
    for text in texts:
        for match in _PATH_TOKEN.finditer(text):
            tokens.append((match.group(0).rstrip(".,;:)]}'\""), True))
        for match in _BACKTICK.finditer(text):
            tokens.append((match.group(1).strip(), False))
    return list(dict.fromkeys(t for t in tokens if t[0]))  # each once, in order


def verified_facts(evidence: TrajectoryEvidence, texts: Sequence[str]) -> list[VerifiedFact]:
    facts: list[VerifiedFact] = []
    for token, sensitive in _fact_tokens(texts)[:MAX_FACTS]:
        needle = token if sensitive else token.lower()
        fact = VerifiedFact(claim=token, observed=False)
        for call in evidence.tool_calls:
            for haystack in (_command(call), _path(call), _write_body(call)):
                if haystack and needle in (haystack if sensitive else haystack.lower()):
                    fact = VerifiedFact(
                        claim=token,
                        observed=True,
                        step_id=call.step_id,
                        evidence=clip(haystack.strip(), FACT_EVIDENCE_LIMIT),
                    )
                    break
            if fact.observed:
                break
        facts.append(fact)
    return facts


def facts_header(facts: Sequence[VerifiedFact]) -> str:
    if not facts:
        return ""
    lines = ["VERIFIED FACTS (deterministic):"]
    for fact in facts:
        if fact.observed:
            line = f"- [OBSERVED step {fact.step_id}] {fact.claim} :: {fact.evidence}"
        else:
            line = f"- [NOT OBSERVED] {fact.claim}"
        lines.append(clip(line, FACT_LINE_LIMIT))
    return "\n".join(lines) + "\n\n"


# ---- assembly --------------------------------------------------------------------------------------------------


def _assemble(header: str, sections: Sequence[tuple[str, str]], budget: int, fallback: str) -> Bundle:
    """Whole sections in priority order; one that does not fit what is left is dropped (and counted)."""
    remaining = budget - len(header)
    parts: list[str] = []
    dropped: list[str] = []
    for title, body in sections:
        if not body:
            continue
        block = f"{title}:\n{body}\n"
        if len(block) <= remaining:
            parts.append(block)
            remaining -= len(block)
        else:
            dropped.append(title)
    if not parts and not dropped and fallback:
        clipped = clip(fallback, max(0, remaining))
        omitted = Omitted(
            truncated=clipped != fallback,
            reason="no sections; agent text clipped to the budget" if clipped != fallback else None,
        )
        return Bundle(text=header + clipped, omitted=omitted)
    reason = f"over the {budget}-character budget: {', '.join(dropped)}" if dropped else None
    return Bundle(
        text=header + "\n".join(parts), omitted=Omitted(count=len(dropped), truncated=bool(dropped), reason=reason)
    )


def _observations(evidence: TrajectoryEvidence, newest: int, limit: int) -> str:
    excerpts = [clip(c.observation, limit) for c in reversed(evidence.tool_calls) if c.observation.strip()]
    return "\n---\n".join(excerpts[:newest])


def _changes(evidence: TrajectoryEvidence, body_limit: int = 1800, result_limit: int = 500) -> str:
    return "\n\n".join(_file_change(c, body_limit, result_limit) for c in evidence.tool_calls if is_write(c))


def expectation_texts(entry: Mapping[str, Any]) -> list[str]:
    """The expected output and behaviors, where the fact list draws its tokens from."""
    texts = [str(entry.get("ground_truth") or "")]
    return texts + [str(b) for b in behaviors_of(entry)]


def behaviors_of(entry: Mapping[str, Any]) -> list[str]:
    raw = entry.get("expected_behavior")
    if isinstance(raw, str):
        return [raw] if raw.strip() else []
    if isinstance(raw, list):
        return [
            str(item) if not isinstance(item, Mapping) else str(item.get("text") or json.dumps(item))
            for item in raw
            if item not in (None, "")
        ]
    return []


def _with_facts(
    evidence: TrajectoryEvidence, entry: Mapping[str, Any], budget: int, sections: Sequence[tuple[str, str]]
) -> Bundle:
    """The sections under the verified-facts header, the facts kept on the bundle."""
    facts = verified_facts(evidence, expectation_texts(entry))
    bundle = _assemble(facts_header(facts), sections, budget, evidence.agent_text)
    return bundle.model_copy(update={"verified": facts})


def accuracy_bundle(evidence: TrajectoryEvidence, entry: Mapping[str, Any], budget: int, obs_limit: int) -> Bundle:
    return _with_facts(
        evidence,
        entry,
        budget,
        [
            ("FINAL RESPONSE", evidence.final_response),
            ("PRODUCED FILES / WRITES", _changes(evidence)),
            ("KEY OBSERVATIONS", _observations(evidence, 6, obs_limit)),
        ],
    )


def goal_bundle(evidence: TrajectoryEvidence, entry: Mapping[str, Any], budget: int, obs_limit: int) -> Bundle:
    return _with_facts(
        evidence,
        entry,
        budget,
        [
            ("FINAL RESPONSE", evidence.final_response),
            ("END-STATE FILE CHANGES", _changes(evidence)),
            ("RECENT TOOL RESULTS (newest first)", _observations(evidence, 12, obs_limit)),
        ],
    )


def compact_history(evidence: TrajectoryEvidence, question: str) -> str:
    lines = [f"User: {question}"] if question else []
    for call in evidence.tool_calls:
        args = json.dumps(call.arguments, ensure_ascii=False, default=str)
        lines.append(f"Agent called: {call.tool}({clip(args, 200)})")
        if call.observation:
            lines.append(f"Result: {clip(call.observation, 400)}")
    if evidence.final_response:
        lines.append(f"Final answer: {clip(evidence.final_response, 1500)}")
    return "\n".join(lines)


def behavior_bundle(evidence: TrajectoryEvidence, entry: Mapping[str, Any], budget: int, final_limit: int) -> Bundle:
    """FILE CHANGES, FINAL RESPONSE, USER REQUEST, then the compact tool history in whatever room is left;
    each section is middle-truncated rather than dropped, and `truncated` says whether anything was cut."""
    facts = verified_facts(evidence, expectation_texts(entry))
    header = facts_header(facts)
    question = str(entry.get("question") or entry.get("prompt") or "")
    full = [
        ("FILE CHANGES", _changes(evidence)),
        ("FINAL RESPONSE", evidence.final_response),
        ("USER REQUEST", question),
        ("COMPACT TOOL HISTORY", compact_history(evidence, question)),
    ]
    limits = {"FINAL RESPONSE": final_limit, "USER REQUEST": 800}
    remaining = budget - len(header)
    parts: list[str] = []
    cut: list[str] = []
    for title, body in full:
        if not body:
            continue
        room = max(0, remaining - len(title) - 3)
        limit = min(limits.get(title, room), room)
        text = middle_truncate(body, limit)
        if text != body:
            cut.append(title)
        if not text:
            continue
        block = f"{title}:\n{text}\n"
        parts.append(block)
        remaining -= len(block) + 1
    omitted = Omitted(
        count=len(cut),
        truncated=bool(cut),
        reason=f"clipped to the {budget}-character budget: {', '.join(cut)}" if cut else None,
    )
    return Bundle(text=header + "\n".join(parts), omitted=omitted, verified=facts)
