"""Reward-contract sanitizing for custom graders (BYOG) and native Harbor tasks (BYOT).

A grader is user code: it may write anything into reward.json. Every consumer (the persisted trial reward, the
aggregate, every report) must agree on what it said, so they all read it through `sanitize_custom_reward` and never
the raw file. The rules come from the custom-graders contract: at most 128 metrics per reward and 128 distinct names
per condition, printable trimmed names of at most 256 UTF-8 bytes, credential-looking names dropped without an alias,
values kept only when they are finite non-boolean numbers in [0, 1], reserved names rejected, and in `custom_only`
a numeric `overall` or the trial stays unscored (never 0.0).

Pure Python: no pytest, no Harbor.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from verifier import safe_io
from verifier.secret_patterns import has_token_shape, is_credential_name

MAX_METRICS_PER_REWARD = 128
MAX_METRIC_NAMES_PER_CONDITION = 128
MAX_METRIC_NAME_BYTES = 256
# A reward file larger than this is not a reward; refuse to parse it rather than load it into every report.
MAX_REWARD_FILE_BYTES = 4 * 1024 * 1024

STANDARD_METRIC_NAMES: frozenset[str] = frozenset(
    {"security", "skill_execution", "skill_efficiency", "accuracy", "goal_accuracy", "behavior_check"}
)
RESERVED_NAMES: frozenset[str] = STANDARD_METRIC_NAMES | {
    "overall",
    "details",
    "metrics",
    "metric_set",
    "entry_id",
}
# Top-level reward fields that are part of the contract rather than metrics.
_CONTRACT_FIELDS: frozenset[str] = frozenset(
    {"overall", "details", "custom_metrics", "metrics", "metric_set", "entry_id"}
)

GRADER_MODES: frozenset[str] = frozenset({"default", "default_plus_custom", "custom_only"})
_MODE_ALIASES = {"aces_default": "default", "aces_plus_custom": "default_plus_custom"}

# What an omitted credential-looking name is shown as. It is never used as a metric key, so it cannot collide.
REDACTED_NAME = "<redacted>"


class OmittedMetric(BaseModel):
    """A metric the grader wrote that no score, aggregate or report will use, and why."""

    name: str
    reason: str


class SanitizedReward(BaseModel):
    """What a grader's reward means after the contract's rules.

    `errors` non-empty means the reward failed: it contributes nothing (no metrics, no overall) and the trial is an
    error, not a score. `overall` is the trial's score in `custom_only` (`unscored_reason` says why it is None
    there); in `default_plus_custom` it is kept beside the standard score.
    """

    custom_metrics: dict[str, float] = Field(default_factory=dict)
    overall: float | None = None
    omitted: list[OmittedMetric] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict, description="The grader's details for kept metrics only.")
    unscored_reason: str | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def normalize_mode(mode: str) -> str:
    """Accept the documented aliases; anything else unknown is a programming error here (config validates input)."""
    value = _MODE_ALIASES.get(mode, mode)
    if value not in GRADER_MODES:
        raise ValueError(f"unknown grading mode {mode!r}")
    return value


# ---------------------------------------------------------------------------------------------------------------
# Names


# A long unbroken run of key-alphabet characters mixing letters and digits: hex or base64 key material. A metric
# name is a short label, so such a run in one is refused (a path is not a metric name; this rule is for names only).
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+=_-]{32,}")


def is_credential_value_name(name: str) -> bool:
    """True when the name itself holds a token shape or a run of key material."""
    if has_token_shape(name):
        return True
    return any(any(c.isdigit() for c in run) and any(c.isalpha() for c in run) for run in _KEY_MATERIAL.findall(name))


def looks_like_credential(name: str) -> bool:
    """A metric name the contract drops: a credential name (`api_key`, `db_pass`) or one holding key material."""
    return is_credential_name(name) or is_credential_value_name(name)


def _reserved(name: str) -> str:
    """A name as it is compared with the reserved names: trimmed and case-folded."""
    return name.strip().casefold()


def _display(name: str, limit: int = 80) -> str:
    """A name safe to put in a message: repr() for anything unprintable, shortened."""
    shown = name if name.isprintable() else repr(name)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _name_problem(name: str) -> str | None:
    """Why a trimmed name cannot be published, or None."""
    if not name:
        return "metric name is empty after trimming whitespace"
    if not name.isprintable():
        return f"metric name {_display(name)} contains non-printable characters"
    size = len(name.encode("utf-8"))
    if size > MAX_METRIC_NAME_BYTES:
        return (
            f"metric name {_display(name)} is {size} UTF-8 bytes; the limit is {MAX_METRIC_NAME_BYTES} bytes "
            "per metric name"
        )
    return None


# ---------------------------------------------------------------------------------------------------------------
# Values


def _value_problem(value: Any) -> str | None:
    """Why a metric value cannot be a score, or None. No coercion: "0.5" is not a number."""
    if isinstance(value, bool):
        return "value is a boolean, not a score"
    if not isinstance(value, (int, float)):
        return f"value is {type(value).__name__}, not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"value {value!r} is not finite"
    if not 0.0 <= value <= 1.0:
        return f"value {value!r} is outside 0.0-1.0"
    return None


def score_value(value: Any) -> float | None:
    """The value as a score in [0, 1], or None when the contract does not allow it."""
    return None if _value_problem(value) is not None else float(value) + 0.0  # + 0.0 turns -0.0 into 0.0


# ---------------------------------------------------------------------------------------------------------------
# Sanitizing


def _candidates(raw: Mapping[str, Any], errors: list[str]) -> list[tuple[str, Any, str]]:
    """(name, value, source) in precedence order: `custom_metrics`, then `metrics`, then top-level numbers."""
    found: list[tuple[str, Any, str]] = []
    for source in ("custom_metrics", "metrics"):
        if source not in raw:
            continue
        block = raw[source]
        if not isinstance(block, Mapping):
            errors.append(f"`{source}` must be a JSON object of metric name to score, got {type(block).__name__}")
            continue
        found.extend((str(name), value, source) for name, value in block.items())
    for name, value in raw.items():
        name = str(name)
        if name in _CONTRACT_FIELDS or name.startswith("_"):
            continue
        # Top-level strings, lists and objects are notes, not metrics; numbers (and bools) are metric candidates.
        if isinstance(value, (int, float)):
            found.append((name, value, "top level"))
    return found


def sanitize_custom_reward(raw: Mapping[str, Any], mode: str, *, reward_txt: float | None = None) -> SanitizedReward:
    """Apply the reward contract to a grader's reward.json object.

    `reward_txt` is the numeric reward.txt, used in `custom_only` when reward.json has no valid `overall`.
    In `default` mode a grader is ignored, so nothing is returned. In `default_plus_custom` the grader's `overall`
    is not the trial's score (the standard scoring stays authoritative) but it is kept: with no judge it stands for
    correctness in the item's pass (`verifier.scoring.correctness_gates`).
    """
    mode = normalize_mode(mode)
    result = SanitizedReward()
    if mode == "default":
        return result
    errors: list[str] = []

    # Reserved names are compared trimmed and case-folded: `" security"` or `"OVERALL"` is no custom metric.
    for key in sorted(str(k) for k in raw if _reserved(str(k)) in STANDARD_METRIC_NAMES):
        shown = "" if key == _reserved(key) else f" (written as '{_display(key)}')"
        errors.append(f"custom grader cannot write reserved standard metric '{_reserved(key)}'{shown}")

    kept: dict[str, float] = {}
    kept_source: dict[str, str] = {}
    for raw_name, value, source in _candidates(raw, errors):
        name = raw_name.strip()
        if looks_like_credential(name):
            result.omitted.append(OmittedMetric(name=REDACTED_NAME, reason="metric name looks like a credential"))
            continue
        reserved = _reserved(name)
        if reserved in RESERVED_NAMES:
            if not (source == "top level" and reserved in STANDARD_METRIC_NAMES):  # those are reported above
                errors.append(
                    f"custom metric '{_display(raw_name)}' in `{source}` collides with the reserved field name "
                    f"'{reserved}' (reserved, compared trimmed and case-insensitively: "
                    f"{', '.join(sorted(RESERVED_NAMES))})"
                )
            continue
        value_problem = _value_problem(value)
        if value_problem is not None:
            result.omitted.append(OmittedMetric(name=_display(name, MAX_METRIC_NAME_BYTES), reason=value_problem))
            continue
        name_problem = _name_problem(name)
        if name_problem is not None:
            errors.append(name_problem)
            continue
        if name in kept:
            if kept_source[name] == source:
                errors.append(f"metric name '{name}' appears more than once after trimming whitespace in `{source}`")
            else:
                result.omitted.append(
                    OmittedMetric(name=name, reason=f"duplicate of the `{kept_source[name]}` entry, which wins")
                )
            continue
        kept[name] = float(value) + 0.0
        kept_source[name] = source

    if len(kept) > MAX_METRICS_PER_REWARD:
        errors.append(
            f"reward has {len(kept)} custom metrics; the limit is {MAX_METRICS_PER_REWARD} custom metrics per reward"
        )

    if errors:
        result.errors = errors
        result.unscored_reason = "the reward failed the custom-grader contract"
        return result

    result.custom_metrics = kept
    details = raw.get("details")
    if isinstance(details, Mapping):
        result.details = {name: details[name] for name in kept if name in details}

    if mode == "custom_only":
        result.overall, result.unscored_reason = _custom_only_overall(raw, reward_txt)
    else:
        result.overall, _ = _custom_only_overall(raw, reward_txt)
    return result


def _custom_only_overall(raw: Mapping[str, Any], reward_txt: float | None) -> tuple[float | None, str | None]:
    """The grader's overall, else the numeric reward.txt, else unscored with the reason."""
    if "overall" in raw:
        overall = score_value(raw["overall"])
        if overall is not None:
            return overall, None
        problem = f"reward.json `overall` is invalid: {_value_problem(raw['overall'])}"
    else:
        problem = "reward.json has no `overall`"
    if reward_txt is not None:
        txt = score_value(reward_txt)
        if txt is not None:
            return txt, None
        problem += f"; reward.txt is invalid: {_value_problem(reward_txt)}"
    return None, f"custom_only needs a numeric overall in reward.json or reward.txt ({problem})"


def check_condition_metric_names(metric_names: Iterable[Iterable[str]]) -> str | None:
    """The per-condition limit: the union of custom-metric names across one condition's rewards (each reward's
    `custom_metrics` names) is at most 128.

    Returns the failure message for the condition, or None when within the limit.
    """
    names: set[str] = set()
    for each in metric_names:
        names.update(each)
    if len(names) > MAX_METRIC_NAMES_PER_CONDITION:
        return (
            f"condition has {len(names)} distinct custom metric names across its rewards; the limit is "
            f"{MAX_METRIC_NAMES_PER_CONDITION} distinct custom metric names per condition"
        )
    return None


# ---------------------------------------------------------------------------------------------------------------
# Files


def _read_limited(path: Path) -> str | None:
    """The file's text, None when it is missing; a link (never followed) or an oversize file raises."""
    try:
        return safe_io.read_text(path.parent, path.name, max_bytes=MAX_REWARD_FILE_BYTES, label=str(path.parent))
    except FileNotFoundError:
        return None


def parse_reward_txt(text: str) -> float | None:
    """reward.txt holds one number; anything else (empty, words, several numbers) is not a reward."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value


def read_grader_reward(reward_json: Path, reward_txt: Path, mode: str) -> SanitizedReward:
    """Read what a grader wrote and sanitize it.

    Missing files are not errors by themselves: in `custom_only` they leave the trial unscored; in
    `default_plus_custom` they mean no custom metrics. Unparseable or non-object reward.json is an error, and so is
    a reward file that is a symbolic link (it is never followed: it could point at any host file) or over the limit.
    """
    mode = normalize_mode(mode)
    txt_value: float | None = None
    txt_note: str | None = None
    try:
        txt_text = _read_limited(reward_txt)
    except (safe_io.UnsafePathError, safe_io.FileTooLargeError) as exc:
        return SanitizedReward(errors=[f"reward.txt refused: {exc}"], unscored_reason="invalid reward.txt")
    except (OSError, UnicodeDecodeError) as exc:
        txt_text, txt_note = None, f"reward.txt unreadable: {exc}"
    if txt_text is not None:
        txt_value = parse_reward_txt(txt_text)
        if txt_value is None:
            txt_note = "reward.txt is not a number"

    try:
        json_text = _read_limited(reward_json)
    except (safe_io.UnsafePathError, safe_io.FileTooLargeError) as exc:
        return SanitizedReward(errors=[f"reward.json refused: {exc}"], unscored_reason="invalid reward.json")
    except (OSError, UnicodeDecodeError) as exc:
        return SanitizedReward(errors=[f"reward.json is not valid JSON: {exc}"], unscored_reason="invalid reward.json")
    if json_text is None:
        result = sanitize_custom_reward({}, mode, reward_txt=txt_value)
        if result.overall is None and mode == "custom_only":
            if txt_text is None and txt_note is None:
                txt_note = "no reward.txt"
            elif txt_note is None:
                txt_note = f"reward.txt is invalid: {_value_problem(txt_value)}"
            result.unscored_reason = f"custom_only needs a numeric overall: no reward.json and {txt_note}"
        return result

    try:
        data = json.loads(json_text)
    except ValueError as exc:
        return SanitizedReward(errors=[f"reward.json is not valid JSON: {exc}"], unscored_reason="invalid reward.json")
    if not isinstance(data, dict):
        return SanitizedReward(
            errors=[f"reward.json must be a JSON object, got {type(data).__name__}"],
            unscored_reason="invalid reward.json",
        )
    return sanitize_custom_reward(data, mode, reward_txt=txt_value)


# ---------------------------------------------------------------------------------------------------------------
# Harbor's flat reward


def flat_numeric_reward(raw: Mapping[str, Any]) -> dict[str, float]:
    """Only the top-level finite non-boolean numbers: what Harbor accepts as reward.json (nested values break it)."""
    flat: dict[str, float] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value):
            flat[str(key)] = float(value)
    return flat


def harbor_reward(reward: SanitizedReward, overall: float | None) -> dict[str, float]:
    """The flat reward to hand Harbor for a sanitized reward: `overall` (when known) plus every kept metric."""
    flat: dict[str, float] = {}
    if overall is not None and math.isfinite(overall) and not isinstance(overall, bool):
        flat["overall"] = float(overall)
    flat.update(reward.custom_metrics)
    return flat
