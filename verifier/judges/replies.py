"""What each judge must answer (its JSON schema) and how an answer becomes a score.

A reply that breaks its shape raises `InvalidReply`; the caller retries once with a stricter reminder and then
gives up (unscored), so a malformed answer is never read as a low score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

ACCURACY_CRITERIA: dict[str, str] = {
    "SKILL_IDENTIFIED": "The response references or uses the correct skill.",
    "ACTION_CORRECT": "The correct actions or scripts were described or run.",
    "FACTUALLY_ACCURATE": "Claims are consistent with the expected answer.",
    "TASK_ADDRESSED": "The user's request is directly addressed.",
    "ACTIONABLE": "It gives actionable information, not just an acknowledgement.",
}
EXCLUDED_FOR_NEGATIVE = "SKILL_IDENTIFIED"
ACCURACY_POLICY = "applicable-accuracy-criteria/v1"


class InvalidReply(ValueError):
    """The reply does not have the shape the judge asked for."""


def _strict_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


SCHEMAS: dict[str, dict[str, Any]] = {
    "accuracy": _strict_object(
        {
            "criteria": _strict_object({key: {"type": "boolean"} for key in ACCURACY_CRITERIA}),
            "score": {"type": "number"},
            "reason": {"type": "string"},
        }
    ),
    "goal_accuracy": _strict_object(
        {
            "user_goal": {"type": "string"},
            "end_state": {"type": "string"},
            "achieved": {"type": "boolean"},
            "score": {"type": "number"},
            "reason": {"type": "string"},
        }
    ),
    "behavior_check": _strict_object(
        {
            "results": {
                "type": "array",
                "items": _strict_object(
                    {
                        "step": {"type": "integer"},
                        "passed": {"type": "boolean"},
                        "reason": {"type": "string"},
                    }
                ),
            },
            "score": {"type": "number"},
            "summary": {"type": "string"},
        }
    ),
}


def finite_score(value: Any) -> float | None:
    """A judge's number as a score: bools and non-finite values are invalid (None); ints are 0 or 1; floats clamp."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return 0.0 if value <= 0 else 1.0
    if isinstance(value, float) and math.isfinite(value):
        return max(0.0, min(1.0, value))
    return None


def _require_dict(reply: Any) -> Mapping[str, Any]:
    if not isinstance(reply, Mapping):
        raise InvalidReply("the reply is not a JSON object")
    return reply


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def parse_accuracy(reply: Any, negative: bool) -> dict[str, Any]:
    """Score = passing applicable criteria / applicable criteria; SKILL_IDENTIFIED is not applicable for negative
    cases. A positive-case reply with no criteria falls back to its numeric score; a negative case needs criteria."""
    data = _require_dict(reply)
    applicable = [k for k in ACCURACY_CRITERIA if not (negative and k == EXCLUDED_FOR_NEGATIVE)]
    criteria = data.get("criteria")
    details: dict[str, Any] = {"reason": _text(data.get("reason")), "scoring_policy": ACCURACY_POLICY}
    if negative:
        details["excluded_criteria"] = [EXCLUDED_FOR_NEGATIVE]
    if criteria is None:
        if negative:
            raise InvalidReply("criterion verdicts are missing (required for a negative case)")
        score = finite_score(data.get("score"))
        if score is None:
            raise InvalidReply("neither criteria nor a finite score")
        return {**details, "score": round(score, 4), "criteria": {}, "score_source": "judge_score"}
    if not isinstance(criteria, Mapping):
        raise InvalidReply("criteria is not an object")
    keys = set(criteria)
    allowed = set(ACCURACY_CRITERIA)
    if not keys <= allowed or not set(applicable) <= keys:
        missing = sorted(set(applicable) - keys)
        extra = sorted(keys - allowed)
        raise InvalidReply(f"criteria keys wrong (missing {missing}, unexpected {extra})")
    if any(not isinstance(criteria[k], bool) for k in keys):
        raise InvalidReply("every criterion must be true or false")
    passing = sum(1 for k in applicable if criteria[k])
    score = passing / len(applicable)
    return {
        **details,
        "score": round(score, 4),
        "criteria": dict(criteria),
        "score_source": "criteria",
        "applicable": len(applicable),
        "passing": passing,
    }


def parse_goal(reply: Any) -> dict[str, Any]:
    """`achieved` must be a boolean (1.0/0.0); a finite `score`, when given, overrides it."""
    data = _require_dict(reply)
    achieved = data.get("achieved")
    if not isinstance(achieved, bool):
        raise InvalidReply("achieved must be true or false")
    score = 1.0 if achieved else 0.0
    if "score" in data:
        given = finite_score(data["score"])
        if given is None:
            raise InvalidReply("score is not a finite number")
        score = given
    return {
        "score": round(score, 4),
        "reason": _text(data.get("reason")),
        "achieved": achieved,
        "user_goal": _text(data.get("user_goal")),
        "end_state": _text(data.get("end_state")),
        "method": "prompt",
    }


def _valid_results(results: Any, behaviors: Sequence[str]) -> list[dict[str, Any]]:
    """Each verdict in order, with the behavior it judges (`assertion`), so a per-assertion table needs no guess."""
    if not isinstance(results, list):
        raise InvalidReply("results is not a list")
    for item in results:
        if not isinstance(item, Mapping) or not isinstance(item.get("passed"), bool):
            raise InvalidReply("every result needs a boolean passed")
    return [
        {**item, "assertion": behaviors[index]} if index < len(behaviors) else dict(item)
        for index, item in enumerate(results)
    ]


def parse_behavior(reply: Any, behaviors: Sequence[str]) -> dict[str, Any]:
    """One verdict per expected behavior; score = passed / behaviors (a `score` field must be finite, is ignored)."""
    data = _require_dict(reply)
    results = _valid_results(data.get("results"), behaviors)
    if len(results) != len(behaviors):
        raise InvalidReply(f"{len(results)} results for {len(behaviors)} expected behaviors")
    if "score" in data and finite_score(data["score"]) is None:
        raise InvalidReply("score is not a finite number")
    passed = sum(1 for item in results if item["passed"])
    return {"score": round(passed / len(behaviors), 4), "reason": _text(data.get("summary")), "results": results}


def salvaged_behavior(results: list[dict[str, Any]], behaviors: Sequence[str]) -> dict[str, Any]:
    """A truncated reply's complete entries; the behaviors it never reached count as not passed."""
    valid = _valid_results(results, behaviors)
    passed = sum(1 for item in valid if item["passed"])
    return {
        "score": round(passed / len(behaviors), 4),
        "reason": f"Salvaged {len(valid)}/{len(behaviors)} behavior results from truncated judge response",
        "results": valid,
        "salvaged": True,
    }
