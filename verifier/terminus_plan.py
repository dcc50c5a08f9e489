"""terminus-2's reply format read the way Harbor's terminus-2 reads it: the commands a reply made it type.

terminus-2 has no tool calls of its own: the model answers with a plan (JSON by default, XML with
`parser_name="xml"`) whose commands are keystrokes for a tmux session. Harbor records them as `bash_command` tool
calls, except with `trajectory_config={"raw_content": true}`, where the step's message is the model's raw reply and
nothing else says what ran. This module repeats Harbor 0.25's parsers (`terminus_json_plain_parser`,
`terminus_xml_plain_parser`: the same extraction, validation and auto-fixes), so a reply that Harbor refused
(its step then says "Previous response had parsing errors") yields no command here either, and one Harbor ran
yields exactly the keystrokes it typed. Warnings never matter: Harbor runs a reply with warnings. The tag searches
run in linear time (`verifier.tag_scan`) with the results of Harbor's regexes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from verifier.tag_scan import first_between, tagged_spans

# Harbor caps each command's wait at 60 s before it types it (Terminus2._handle_llm_interaction).
MAX_DURATION_SEC = 60.0
DEFAULT_DURATION_SEC = 1.0
_REQUIRED_JSON_FIELDS = ("analysis", "plan", "commands")
_JSON_FIX_ERRORS = ("Invalid JSON", "Expecting", "Unterminated", "No valid JSON found")
_MIXED_JSON = re.compile(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}", re.DOTALL)
_DURATION_XML = re.compile(r'duration\s*=\s*["\']([^"\']*)["\']')
_COMPLETE_XML = re.compile(r"<task_complete>\s*true\s*</task_complete>", re.IGNORECASE)


@dataclass(frozen=True)
class Keystrokes:
    """One command of a plan: the text typed into the terminal and how long terminus-2 waited after it."""

    keystrokes: str
    duration: float


@dataclass
class Plan:
    """What one reply made terminus-2 do; `error` set means Harbor refused the reply and typed nothing."""

    commands: list[Keystrokes] = field(default_factory=list)
    task_complete: bool = False
    analysis: str = ""
    plan: str = ""
    error: str = ""


def parse_plan(text: str, parser: str = "json") -> Plan:
    """The reply read by terminus-2's `json` (default) or `xml` parser."""
    return _parse_xml(text) if parser == "xml" else _parse_json(text)


def _capped(duration: float) -> float:
    return min(duration, MAX_DURATION_SEC)


# --- JSON (TerminusJSONPlainParser) ---------------------------------------------------------------------------


def _parse_json(response: str) -> Plan:
    result = _try_json(response)
    if not result.error:
        return result
    for fix in (_fix_incomplete_json, _fix_mixed_content):
        fixed = fix(response, result.error)
        if fixed is not None:
            corrected = _try_json(fixed)
            if not corrected.error:
                return corrected
    return result


def _json_object_span(response: str) -> str:
    """The first balanced `{...}`, with Harbor's own string and escape tracking (a backslash skips a character
    inside or outside strings)."""
    start = -1
    depth = 0
    in_string = False
    escape_next = False
    for index, char in enumerate(response):
        if escape_next:
            escape_next = False
            continue
        if char == "\\":
            escape_next = True
            continue
        if char == '"':
            in_string = not in_string
            continue
        if in_string:
            continue
        if char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0 and start != -1:
                return response[start : index + 1]
    return ""


def _try_json(response: str) -> Plan:
    content = _json_object_span(response)
    if not content:
        return Plan(error="No valid JSON found in response")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as error:
        return Plan(error=f"Invalid JSON: {error}")
    if not isinstance(data, dict):
        return Plan(error="Response must be a JSON object")
    missing = [name for name in _REQUIRED_JSON_FIELDS if name not in data]
    if missing:
        return Plan(error=f"Missing required fields: {', '.join(missing)}")
    raw_commands = data.get("commands", [])
    if not isinstance(raw_commands, list):
        return Plan(error="Field 'commands' must be an array")
    complete = data.get("task_complete", False)
    if isinstance(complete, str):
        complete = complete.lower() in ("true", "1", "yes")
    analysis, plan = data.get("analysis", ""), data.get("plan", "")
    commands, problem = _json_commands(raw_commands)
    if problem:
        # Harbor treats a broken command list of a completing reply as a warning: nothing typed, task complete.
        return Plan(task_complete=True, analysis=analysis, plan=plan) if complete else Plan(error=problem)
    return Plan(commands=commands, task_complete=bool(complete), analysis=analysis, plan=plan)


def _json_commands(raw_commands: list) -> tuple[list[Keystrokes], str]:
    commands = []
    for number, item in enumerate(raw_commands, start=1):
        if not isinstance(item, dict):
            return [], f"Command {number} must be an object"
        if "keystrokes" not in item:
            return [], f"Command {number} missing required 'keystrokes' field"
        keystrokes = item["keystrokes"]
        if not isinstance(keystrokes, str):
            return [], f"Command {number} 'keystrokes' must be a string"
        duration = item.get("duration", DEFAULT_DURATION_SEC)
        # bool is an int to Python and to Harbor's isinstance check alike.
        if not isinstance(duration, (int, float)):
            duration = DEFAULT_DURATION_SEC
        commands.append(Keystrokes(keystrokes, _capped(float(duration))))
    return commands, ""


def _fix_incomplete_json(response: str, error: str) -> str | None:
    if any(marker in error for marker in _JSON_FIX_ERRORS):
        missing = response.count("{") - response.count("}")
        if missing > 0:
            return response + "}" * missing
    return None


def _fix_mixed_content(response: str, error: str) -> str | None:
    for match in _MIXED_JSON.findall(response):
        try:
            json.loads(match)
        except json.JSONDecodeError:
            continue
        return match
    return None


# --- XML (TerminusXMLPlainParser) -----------------------------------------------------------------------------


def _section(content: str, name: str) -> str | None:
    """A section's stripped text, "" when present but empty (self-closing too), None when absent."""
    body = first_between(content, f"<{name}>", f"</{name}>")
    if body is not None:
        return body.strip()
    if re.search(rf"<{name}\s*/>", content) or f"<{name}></{name}>" in content:
        return ""
    return None


def _parse_xml(response: str) -> Plan:
    start = response.find("<response>")
    if start == -1:
        return Plan(error="No <response> tag found")
    end = response.find("</response>", start)
    body = response[start + len("<response>") : end if end != -1 else len(response)].strip()
    if not body:
        return Plan(error="No <response> tag found")
    complete = bool(_COMPLETE_XML.search(body))
    analysis = _section(body, "analysis") or ""
    plan = _section(body, "plan") or ""
    commands_text = _section(body, "commands")
    if not commands_text:
        if commands_text is None and not complete:
            return Plan(error="Missing <commands> section")
        return Plan(task_complete=complete, analysis=analysis, plan=plan)
    commands = []
    for attributes, keystrokes in tagged_spans(commands_text, "<keystrokes", "</keystrokes>", empty_name=True):
        duration = DEFAULT_DURATION_SEC
        found = _DURATION_XML.search(attributes)
        if found:
            try:
                duration = float(found.group(1))
            except ValueError:
                duration = DEFAULT_DURATION_SEC
        commands.append(Keystrokes(keystrokes, _capped(duration)))
    return Plan(commands=commands, task_complete=complete, analysis=analysis, plan=plan)
