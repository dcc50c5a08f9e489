"""Session results: the same result.json plain and under -n 2, a killed worker losing only its own trial,
JUnit properties, the aggregate hook and the block-on-agent-eval gate."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from typing import Any

import jsonschema
import pytest

from pytest_skilleval.results.tree import result_schema
from tests.support import LOCAL_REPLAY, SkillProject, simple_entries

# Fields that legitimately differ between two runs of the same evaluation.
VOLATILE = {
    "run_id",
    "evaluated_at",
    "run_dir",
    "trial_dir",
    "agent_seconds",
    "seconds",
    "duration_seconds",
    "started_at",
    "finished_at",
    "evaluator_version_details",
}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE and "seconds" not in k}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _sorted_trials(result: dict) -> dict:
    result = dict(result)
    result["trials"] = sorted(result["trials"], key=lambda t: (t["case"], t["agent"], t["arm"], t["attempt"]))
    return result


def test_result_json_is_the_same_plain_and_under_xdist(skill_project: SkillProject) -> None:
    skill_project.copy_hello_skill(cases=["explicit-greeting", "negative-arithmetic"])
    args = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--n-attempts", "2")
    skill_project.run(*args).assert_outcomes(passed=8)
    plain = skill_project.result_json("hello-skill")
    shutil.rmtree(skill_project.root / "results")
    skill_project.run(*args, "-n", "2").assert_outcomes(passed=8)
    parallel = skill_project.result_json("hello-skill")
    assert _stable(_sorted_trials(plain)) == _stable(_sorted_trials(parallel))
    jsonschema.validate(parallel, result_schema())
    assert parallel["schema_version"] == "2.0"
    agent = parallel["agents"]["replay"]
    assert agent["with_skill"]["overall"] > agent["without_skill"]["overall"]
    assert agent["lift"]["overall"]["delta"] > 0


KILLER_AGENT = '''
import os, signal
from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities

class KillerAgent(BaseAgent):
    """Kills its own pytest worker when the instruction says so; otherwise does nothing."""

    capabilities = AgentCapabilities(skills=True)

    @staticmethod
    def name():
        return "killer"

    def version(self):
        return "1"

    async def setup(self, environment):
        return None

    async def run(self, instruction, environment, context):
        if "die" in instruction:
            os.kill(os.getpid(), signal.SIGKILL)
'''


def test_a_killed_worker_loses_only_its_own_trial(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> None:
    skill_project.make_skill("demo", simple_entries("die", "live1", "live2", "live3"))
    skill_project.pytester.makepyfile(killer_agent=KILLER_AGENT)
    monkeypatch.setenv("PYTHONPATH", str(skill_project.root))
    result = skill_project.run(
        "--agents",
        "killer_agent:KillerAgent",
        "--env-mode",
        "local",
        "--ek",
        "sandbox=none",
        "--grading-mode",
        "custom_only",
        "--skip-baseline",
        "-n",
        "2",
    )
    output = result.stdout.str()
    assert "crashed" in output
    result.assert_outcomes(passed=3, failed=1)
    trials = skill_project.result_json("demo")["trials"]
    assert sorted(t["case"] for t in trials) == ["live1", "live2", "live3"]


def test_junit_xml_carries_item_and_run_properties(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    junit = skill_project.root / "junit.xml"
    skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", f"--junitxml={junit}").assert_outcomes(passed=2)
    tree = ET.parse(junit)
    case = next(c for c in tree.iter("testcase") if "with_skill" in c.get("name", ""))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["skilleval.arm"] == "with_skill"
    assert props["skilleval.agent"] == "replay"
    assert props["skilleval.attempt"] == "1"
    assert props["skilleval.overall"] == "1.0"
    assert props["skilleval.metric.custom.saw_entry"] == "1.0"
    suite_props = {
        p.get("name"): p.get("value")
        for p in tree.getroot().iter("property")
        if p.get("name", "").startswith("skilleval.demo")
    }
    assert suite_props["skilleval.demo.verdict"] in {"pass", "neutral", "fail", "inconclusive"}
    assert "skilleval.demo.replay.lift" in suite_props


def test_aggregate_hook_fires_once_per_skill(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    skill_project.pytester.makeconftest(
        "import json\n"
        "def pytest_skilleval_aggregate(config, skill, result, run_dir):\n"
        "    (run_dir.parent.parent / 'hook.json').write_text(json.dumps({'skill': skill, 'verdict': result.verdict}))\n"
    )
    skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only").assert_outcomes(passed=2)
    seen = json.loads((skill_project.root / "results" / "hook.json").read_text())
    assert seen["skill"] == "demo"


def test_block_on_agent_eval_sets_the_exit_status(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1"))
    advisory = skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only")
    assert advisory.ret == 0
    blocking = skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "--block-on-agent-eval")
    # custom_only has no dimensions, so the verdict cannot be a PASS: the gate must fail the session.
    assert blocking.ret != 0
    assert "--block-on-agent-eval: exit status" in blocking.stdout.str()


def test_partial_selection_is_marked_incomplete(skill_project: SkillProject) -> None:
    skill_project.make_skill("demo", simple_entries("c1", "c2"))
    skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "-k", "c1").assert_outcomes(passed=2)
    result = skill_project.result_json("demo")
    text = json.dumps(result)
    assert "c2" in text  # the skipped case is named
    assert result["coverage"]["publication_complete"] is False


EDIT_DATASET_CONFTEST = '''
import json
import os
from pathlib import Path

def pytest_runtest_logreport(report):
    """After the first trial, rewrite the dataset: drop c2, add c9 (a user editing it mid-run). Only the controller
    (or the only process) edits it, atomically, so no worker ever reads it half-written."""
    if report.when != "call" or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    path = Path(__file__).parent / "skills" / "demo" / "evals" / "evals.json"
    data = json.loads(path.read_text())
    if [e["id"] for e in data["evals"]] == ["c1", "c2"]:
        data["evals"] = [data["evals"][0], {"id": "c9", "prompt": "new", "expected_output": "x"}]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
'''


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_the_plan_is_fixed_at_session_start(skill_project: SkillProject, xdist: tuple[str, ...]) -> None:
    """A dataset edited during the run changes neither the cases the aggregate expects nor the snapshot."""
    skill_project.make_skill("demo", simple_entries("c1", "c2"))
    skill_project.pytester.makeconftest(EDIT_DATASET_CONFTEST)
    skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", *xdist).assert_outcomes(passed=4)
    result = skill_project.result_json("demo")
    assert '"c9"' not in json.dumps(result)
    assert sorted({t["case"] for t in result["trials"]}) == ["c1", "c2"]
    assert result["coverage"]["publication_complete"] is True
    run_dir = sorted((skill_project.root / "results" / "demo").glob("2*"))[-1]
    snapshot = json.loads((run_dir / "dataset_snapshot.json").read_text())
    assert [e["id"] for e in snapshot["entries"]] == ["c1", "c2"]


def test_without_junit_xml_items_carry_only_the_record(skill_project: SkillProject) -> None:
    """The flat JUnit properties are for the JUnit report only; without one a trial keeps just its record."""
    skill_project.make_skill("demo", simple_entries("c1"))
    skill_project.pytester.makeconftest(
        "def pytest_runtest_logreport(report):\n"
        "    if report.when == 'teardown':\n"
        "        print('KEYS=' + ','.join(sorted({k for k, _ in report.user_properties})))\n"
    )
    result = skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "-s")
    result.assert_outcomes(passed=2)
    keys = [line for line in result.outlines if "KEYS=" in line]
    assert len(keys) == 2 and all(line.endswith("KEYS=skilleval_trial") for line in keys)


def test_a_finished_trial_leaves_neither_its_spec_nor_harbors_loggers(skill_project: SkillProject) -> None:
    """Memory per trial (issue 13): once an item has run, it no longer holds its trial spec (asked again, the same
    spec is built), and the loggers Harbor made for its trial (one per trial, with its agent's, environment's and
    verifier's under it) are gone from logging's registry and from the shared placeholders above them."""
    skill_project.make_skill("demo", simple_entries("c1", "c2"))
    skill_project.pytester.makeconftest(
        "import logging\n"
        "import harbor.trial.trial as harbor_trial\n\n"
        "made = []\n"
        "plain_init_logger = harbor_trial.Trial._init_logger\n\n"
        "def init_logger(self):\n"
        "    plain_init_logger(self)\n"
        "    made.append(self.logger.name)\n\n"
        "harbor_trial.Trial._init_logger = init_logger\n\n"
        "def pytest_sessionfinish(session):\n"
        "    items = session.items\n"
        "    print('CACHED=%d' % sum('spec' in vars(item) for item in items))\n"
        "    print('REBUILT=%s' % all(item.spec.nodeid == item.nodeid for item in items))\n"
        "    registry = logging.Logger.manager.loggerDict\n"
        "    ours = lambda key: any(key == m or key.startswith(m + '.') for m in made)\n"
        "    listed = [l for p in registry.values() if isinstance(p, logging.PlaceHolder)\n"
        "              for l in p.loggerMap if ours(l.name)]\n"
        "    print('MADE=%d LEFT=%d LISTED=%d' % (len(made), sum(map(ours, registry)), len(listed)))\n"
    )
    result = skill_project.run(*LOCAL_REPLAY, "--grading-mode", "custom_only", "-s")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*CACHED=0", "REBUILT=True", "MADE=4 LEFT=0 LISTED=0"])
