"""Shared by the real-agent e2e tests: run `pytest --skill-eval` on the demo skill against a scripted model, then
read back what each trial left (the ATIF trajectory through Harbor's own model, the scores, the model requests).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harbor.models.trajectories import Trajectory

from pytest_skilleval.results.records import TrialKey
from pytest_skilleval.results.tree import trial_file
from pytest_skilleval.testing.scripted_model import LoggedRequest

SKILL = "hello-skill"
ARMS = ("with_skill", "without_skill")
# Text only an agent that was given the skill can have seen: its description (what a skill listing shows), its
# SKILL.md body and its path. (Not bare "SKILL.md" or an `<available_skills>` tag: codex and opencode list skills of
# their own in every arm.)
SKILL_ONLY_TEXT = (
    "Writes a welcome greeting file",
    "Writes the team's standard welcome greeting",
    "hello-skill/SKILL.md",
)
POSITIVE_CASE = "explicit-greeting"
NEGATIVE_CASE = "negative-arithmetic"
CASES = (POSITIVE_CASE, NEGATIVE_CASE)


TERMINUS_PLAN = "Follow the script."

# A trigger set's query: (id, should_trigger, the command the scripted model has the agent run for it).
TriggerQuery = tuple[str, bool, str]


def trigger_project(root: Path, queries: list[TriggerQuery]) -> Path:
    """skills/demo with a trigger set of `queries` (each one's text `QUERY <id> END`, what a script matches on)
    and a sibling skill, skills/other, that trigger items install beside it as a distractor; returns skills/demo."""
    skill = root / "skills" / "demo"
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: greets people by name\n---\n# demo\n")
    other = root / "skills" / "other"
    other.mkdir()
    (other / "SKILL.md").write_text("---\nname: other\ndescription: writes farewell notes\n---\n# other\n")
    rows = [{"id": qid, "query": f"QUERY {qid} END", "should_trigger": should} for qid, should, _ in queries]
    (skill / "evals" / "triggers.json").write_text(json.dumps(rows))
    return skill


def terminus_args(model: str, *environment: str) -> tuple[str, ...]:
    """A terminus-2 run's agent arguments against the scripted model server (litellm's OpenAI route to `model`),
    around the environment's arguments; no terminal recording (asciinema is not in the sandboxes)."""
    return (
        "--agents",
        "terminus-2",
        "--agent-model",
        f"terminus-2=openai/{model}",
        *environment,
        "--agent-kwarg",
        "terminus-2:record_terminal_session=false",
    )


def terminus_episode(*keystrokes: str, done: bool = False, duration: float = 0.5) -> str:
    """One terminus-2 reply: its JSON response format, with the commands it should type."""
    return json.dumps(
        {
            "analysis": "Scripted.",
            "plan": TERMINUS_PLAN,
            "commands": [{"keystrokes": keys + "\n", "duration": duration} for keys in keystrokes],
            "task_complete": done,
        }
    )


@dataclass(frozen=True)
class TrialView:
    """One trial of the run as the results tree holds it."""

    case: str
    arm: str
    record: dict[str, Any]
    path: Path  # the trial's file in the results tree

    @property
    def document(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    @property
    def metrics(self) -> dict[str, Any]:
        return self.record.get("metrics") or {}

    @property
    def reward(self) -> dict[str, Any]:
        return self.document["rich_reward"]

    def trajectory(self) -> Trajectory:
        """The agent's ATIF trajectory, validated by Harbor's own model (it must be a real, well-formed one)."""
        return Trajectory.model_validate(self.document["trajectory"])

    def tool_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [
            (call.function_name, dict(call.arguments))
            for step in self.trajectory().steps
            for call in step.tool_calls or []
        ]

    def text(self) -> str:
        """Everything the trajectory holds, as JSON text."""
        return json.dumps(self.document["trajectory"], indent=2)


def trials(results_root: Path, skill: str = SKILL) -> dict[tuple[str, str], TrialView]:
    """(case, arm) -> the trial, from the latest run's result.json and trial folders."""
    (result_path,) = sorted((results_root / skill).glob("2*/result.json"))[-1:]
    result = json.loads(result_path.read_text())
    views: dict[tuple[str, str], TrialView] = {}
    for record in result["trials"]:
        path = trial_file(
            result_path.parent, TrialKey(record["case"], record["agent"], record["arm"], record["attempt"])
        )
        views[(record["case"], record["arm"])] = TrialView(record["case"], record["arm"], record, path)
    return views


def requests_of(requests: list[LoggedRequest], needle: str) -> list[LoggedRequest]:
    """The model requests whose conversation holds `needle` (a case's prompt words)."""
    return [entry for entry in requests if needle in entry.text]


def assert_never_saw_the_skill(text: str, where: str) -> None:
    for marker in SKILL_ONLY_TEXT:
        assert marker not in text, f"{where} holds {marker!r}: the baseline arm saw the skill"


def assert_arms_scored_as_scripted(views: dict[tuple[str, str], TrialView]) -> TrialView:
    """What the scripts make every agent do, as scores: the positive case's with-skill trial (returned) used the
    skill and wrote the right greeting; its baseline wrote a wrong one by hand and never used the skill; the
    negative control left the skill unused and answered right in both arms."""
    assert set(views) == {(case, arm) for case in CASES for arm in ARMS}, sorted(views)
    used = views[(POSITIVE_CASE, "with_skill")]
    execution = used.reward["details"]["skill_execution"]
    assert execution["activation"]["passed"] is True, execution["activation"]
    assert execution["script_execution"]["passed"] is True and execution["workflow_order"]["passed"] is True
    assert execution["invocation"]["used"] is True and execution["invocation"]["passed"] is True
    assert used.metrics["skill_execution"] >= 0.9
    assert used.metrics["security"] == 1.0
    assert used.record["custom_metrics"]["greeting_correct"] == 1.0, used.record["custom_metrics"]

    baseline = views[(POSITIVE_CASE, "without_skill")]
    assert baseline.metrics["skill_execution"] == 0.0
    assert baseline.reward["details"]["skill_execution"]["invocation"]["used"] is False
    assert baseline.record["custom_metrics"]["greeting_correct"] == 0.0
    assert baseline.record["overall"] < used.record["overall"]

    for arm in ARMS:
        control = views[(NEGATIVE_CASE, arm)]
        assert control.metrics["skill_execution"] == 1.0, control.reward["details"]["skill_execution"]
        assert control.reward["details"]["skill_execution"]["negative_check"]["passed"] is True
        assert control.record["custom_metrics"]["answer_correct"] == 1.0, control.record["custom_metrics"]
    return used


def assert_baseline_never_saw_the_skill(
    views: dict[tuple[str, str], TrialView],
    requests: list[LoggedRequest],
    marker: str,
    needles: tuple[str, ...],
    model: str | None = None,
) -> None:
    """Both arms asked the model about each case (told apart by `marker`, which only the with-skill arm's requests
    hold), and nothing the baseline sent or wrote holds the skill."""
    for needle in needles:
        sent = [entry for entry in requests_of(requests, needle) if model is None or entry.model == model]
        with_skill = [entry for entry in sent if marker in entry.text]
        without = [entry for entry in sent if marker not in entry.text]
        assert with_skill and without, f"both arms must have asked the model about {needle!r}"
        for entry in without:
            assert_never_saw_the_skill(entry.text, "a baseline model request")
    for case in CASES:
        assert_never_saw_the_skill(views[(case, "without_skill")].text(), "a baseline trajectory")
