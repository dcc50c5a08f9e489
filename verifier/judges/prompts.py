"""The three judge prompts. Each is one user message: instructions, the case, the evidence bundle, the reply shape.

Character facts, when enabled, are appended after everything else so the prompt and evidence stay intact.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from verifier.judges.replies import ACCURACY_CRITERIA, EXCLUDED_FOR_NEGATIVE

STRICT_REMINDER = (
    "\n\nIMPORTANT: your previous reply could not be used. Reply with ONLY one minified single-line JSON object of "
    "the exact shape requested, no prose and no code fences; keep every reason under 15 words."
)


def accuracy_prompt(question: str, expected: str, evidence: str, negative: bool) -> str:
    criteria = "\n".join(f"- {key}: {text}" for key, text in ACCURACY_CRITERIA.items())
    note = (
        f"\nThis is a negative case (the skill should not be used): {EXCLUDED_FOR_NEGATIVE} does not count; "
        "answer it anyway.\n"
        if negative
        else ""
    )
    shape = json.dumps({"criteria": dict.fromkeys(ACCURACY_CRITERIA, True), "score": 0.0, "reason": "<summary>"})
    return (
        "You grade whether an AI agent's response answers a user's question correctly.\n"
        "Answer each criterion YES (true) or NO (false):\n"
        f"{criteria}\n{note}"
        "Set score to the number of true criteria divided by the number of criteria. Be lenient on wording and "
        "strict on facts; judge only from the evidence shown.\n\n"
        f"USER QUESTION:\n{question}\n\nEXPECTED ANSWER:\n{expected}\n\nSELECTED EVIDENCE:\n{evidence}\n\n"
        f"Reply with JSON only: {shape}"
    )


def goal_prompt(question: str, expected: str, evidence: str) -> str:
    shape = json.dumps({"user_goal": "...", "end_state": "...", "achieved": True, "score": 1.0, "reason": "..."})
    return (
        "You judge whether an AI agent achieved the user's goal.\n"
        "1. Infer the user's goal from the request.\n"
        "2. Describe the end state the agent reached, from the evidence only.\n"
        "3. Compare the end state with the expected outcome: achieved is true only if the goal is met; score is "
        "your confidence from 0.0 to 1.0 that it was met.\n\n"
        f"USER REQUEST:\n{question}\n\nEXPECTED OUTCOME:\n{expected}\n\nEND-STATE EVIDENCE:\n{evidence}\n\n"
        f"Reply with JSON only: {shape}"
    )


def behavior_prompt(evidence: str, behaviors: Sequence[str]) -> str:
    numbered = "\n".join(f"{i}. {text}" for i, text in enumerate(behaviors, 1))
    shape = json.dumps({"results": [{"step": 1, "passed": True, "reason": "..."}], "score": 1.0, "summary": "..."})
    return (
        "You check whether an AI agent showed each expected behavior in this conversation.\n\n"
        f"CONVERSATION:\n{evidence}\n\nEXPECTED BEHAVIORS:\n{numbered}\n\n"
        "For every expected behavior, in order, answer passed true (observed) or false (not observed), with a short "
        f"reason. Give exactly {len(behaviors)} results. Reply with JSON only: {shape}"
    )
