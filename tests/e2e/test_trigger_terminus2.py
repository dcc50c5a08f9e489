"""Trigger sets with terminus-2, Harbor's own agent, against the scripted model server.

The script makes terminus-2 read the skill's SKILL.md on some queries and not on others, read a sibling skill's
SKILL.md on one (a distractor load), and read a SKILL.md path that does not exist on another (a failed read). The
run's precision and recall must be exactly what the script implies; the distractor read is attributed to the
distractor; the failed read is no trigger.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_skilleval.testing.script import regex_all
from tests.e2e.agent_runs import TriggerQuery, terminus_args, terminus_episode, trigger_project
from tests.e2e.conftest import terminus_local
from tests.support import SkillProject

pytestmark = [pytest.mark.e2e, pytest.mark.agents, pytest.mark.slow]

MODEL = "scripted"
OWN = "cat /runtime/skills/demo/SKILL.md"
SIBLING = "cat /runtime/skills/other/SKILL.md"
NOTHING = "echo 144"
FAILED_READ = "cat /workspace/demo/SKILL.md"  # the skill's name, not its installed path: "No such file"

# (id, should_trigger, what the scripted model types). TP: read-a, read-b; FN: miss; FP: false-read;
# TN: clean, distractor. Precision 2/3, recall 2/3, accuracy 4/6.
QUERIES = [
    ("read-a", True, OWN),
    ("read-b", True, OWN),
    ("miss", True, NOTHING),
    ("false-read", False, OWN),
    ("clean", False, NOTHING),
    ("distractor", False, SIBLING),
]


def script(queries: list[TriggerQuery]) -> dict[str, Any]:
    replies = []
    for qid, _, command in queries:
        guard = regex_all(f"QUERY {qid} END")
        replies += [
            {"match_regex": guard, "text": terminus_episode(command)},
            {"match_regex": guard, "text": terminus_episode(done=True), "repeat": "forever"},
        ]
    return {"models": {MODEL: replies}}


def run_terminus(
    project: SkillProject, scripted_model: Any, monkeypatch: pytest.MonkeyPatch, environment: tuple[str, ...]
) -> pytest.RunResult:
    for name, value in scripted_model.client_env().items():
        monkeypatch.setenv(name, value)
    return project.run(*terminus_args(MODEL, *environment), "-v")


def test_terminus2_trigger_set_scores_what_the_script_implies(
    skill_project: SkillProject, scripted_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In `local` only: terminus-2 runs in this process in every environment and its reads are scored from its
    trajectory the same way. A trigger set in Docker (both skills installed in the container, the distractor and
    the failed read) is test_trigger_codex's docker run; terminus-2 reading the installed SKILL.md in a container
    is test_terminus2's docker run."""
    trigger_project(skill_project.root, QUERIES)
    server = scripted_model(script(QUERIES))
    result = run_terminus(skill_project, server, monkeypatch, terminus_local())
    result.assert_outcomes(passed=4, failed=2)
    triggering = skill_project.result_json("demo")["triggering"]["terminus-2"]
    assert (triggering["precision"], triggering["recall"]) == (pytest.approx(2 / 3, abs=1e-4),) * 2
    assert triggering["accuracy"] == pytest.approx(4 / 6, abs=1e-4)
    assert triggering["missed"] == ["miss"] and triggering["false_triggers"] == ["false-read"]
    rates = {query["id"]: query for query in triggering["queries"]}
    assert rates["distractor"]["distractors_loaded"] == {"other": 1}
    assert rates["distractor"]["trigger_rate"] == 0.0
    assert all(not rates[qid]["distractors_loaded"] for qid, _, command in QUERIES if command != SIBLING)
    # The agent saw both skills listed (the skills mechanism installed them), and only the choice mattered.
    listed = [entry for entry in server.requests if "QUERY read-a END" in entry.text]
    assert listed and all("other" in entry.text and "demo" in entry.text for entry in listed)
    assert all(entry.status == 200 for entry in server.requests), [(e.path, e.status) for e in server.requests]


def test_terminus2_failed_read_is_not_a_trigger(
    skill_project: SkillProject, scripted_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = [("failed", True, FAILED_READ)]
    trigger_project(skill_project.root, queries)
    run_terminus(skill_project, scripted_model(script(queries)), monkeypatch, terminus_local())
    triggering = skill_project.result_json("demo")["triggering"]["terminus-2"]
    assert triggering["missed"] == ["failed"]
    assert triggering["queries"][0]["trigger_rate"] == 0.0
