"""What crosses between the pytest process and a trial process (--trial-processes) arrives as it left."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from pathlib import Path

from pytest_skilleval.harbor.process_env import TrialLogs
from pytest_skilleval.harbor.trial_driver import _Server, answer_for, hello, record_from, runner_from
from pytest_skilleval.results.records import TrialRecord
from pytest_skilleval.results.triggering import TriggerRecord
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.settings import RunSettings
from verifier.reward import WrittenFile


def _over_the_wire(message: dict) -> dict:
    loaded: dict = json.loads(json.dumps(message, separators=(",", ":")))
    return loaded


def test_the_runner_a_hello_describes_has_the_merged_settings_and_reads_no_config(tmp_path: Path) -> None:
    skill = tmp_path / "demo"
    (skill / "evals").mkdir(parents=True)
    # a config.yml that would fail to load: the trial process never reads it, the settings come merged
    (skill / "evals" / "config.yml").write_text("harbor: [not, a, table\n")
    settings = RunSettings(n_concurrent=7, agent_kwargs={"codex": {"x": "1"}}, trial_processes=2, env_mode="local")
    runner = runner_from(_over_the_wire(hello(tmp_path / "skilleval3", "run-1", {skill: settings})))
    assert runner.run_dir == tmp_path / "skilleval3"
    assert runner.run_id == "run-1"
    spec = TrialSpec(
        skill_dir=skill.resolve(),
        skill_name="demo",
        case_id="c1",
        source="dataset",
        agent="a",
        arm="with_skill",
        attempt=1,
    )
    assert runner.skill_of(spec).settings == settings


def test_a_record_comes_back_with_what_the_verifier_handed_over(tmp_path: Path) -> None:
    record = TrialRecord(
        skill="demo",
        case="c1",
        agent="replay",
        arm="with_skill",
        attempt=2,
        status="scored",
        overall=0.75,
        metrics={"skill_execution": 1.0, "correctness": None},
        trial_dir=str(tmp_path / "skilleval1" / "trials" / "t1"),
    )
    record.keep_written({"verifier/reward.json": WrittenFile(value={"reward": 0.75}, size=16)})
    answer = _over_the_wire(answer_for(5, record))
    back = record_from(answer)
    assert isinstance(back, TrialRecord)
    assert back == record
    assert back.written == {"verifier/reward.json": WrittenFile(value={"reward": 0.75}, size=16)}
    assert answer["done"] == 5 and answer["kind"] == "trial"


def test_a_trigger_record_comes_back_as_one(tmp_path: Path) -> None:
    record = TriggerRecord(
        skill="demo",
        query="q1",
        agent="replay",
        attempt=1,
        status="scored",
        should_trigger=True,
        triggered=True,
        distractors=["other"],
        trial_dir=str(tmp_path / "t"),
    )
    back = record_from(_over_the_wire(answer_for(1, record)))
    assert isinstance(back, TriggerRecord)
    assert back == record


def test_lines_held_for_a_trial_from_another_process_keep_the_per_trial_cap() -> None:
    logs = TrialLogs()
    logs.hold("t1", [f"line {n}" for n in range(TrialLogs.MAX_LINES + 10)])
    logs.emit(logging.LogRecord("harbor.utils.logger.harbor.trial.trial.t1", logging.ERROR, "f", 1, "late", (), None))
    taken = logs.take("t1")
    assert len(taken) == TrialLogs.MAX_LINES
    assert taken[0] == "line 0"
    assert logs.take("t1") == []


class _CleaningRunner:
    """Runs until cancelled, then cleans up for a while as Harbor's trial does (stops its environment)."""

    def __init__(self) -> None:
        self.cleaned = False

    async def run_async(self, spec: TrialSpec) -> TrialRecord:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)  # a second cancel here would cut the clean-up short
            self.cleaned = True
            raise
        raise AssertionError("not cancelled")


def test_a_trial_cancelled_twice_is_cancelled_once_and_its_clean_up_runs_to_the_end(tmp_path: Path) -> None:
    """The pytest process may ask twice (the trial's own cancellation, then the session end's): the clean-up that
    follows the first cancel must not be cancelled by the second."""
    spec = TrialSpec(
        skill_dir=tmp_path, skill_name="demo", case_id="c1", source="dataset", agent="a", arm="with_skill", attempt=1
    )
    runner = _CleaningRunner()

    async def scenario() -> dict:
        ours, theirs = socket.socketpair()
        reader, our_writer = await asyncio.open_connection(sock=ours)  # kept: a writer collected closes its socket
        _, writer = await asyncio.open_connection(sock=theirs)
        server = _Server(runner, writer)
        server.start(1, spec)
        await asyncio.sleep(0.05)
        server.cancel(1)
        await asyncio.sleep(0.05)
        server.cancel(1)
        await server.stop()  # the socket closed too: the same trial is not cancelled a third time
        answer: dict = json.loads(await asyncio.wait_for(reader.readline(), 5))
        writer.close()
        our_writer.close()
        return answer

    answer = asyncio.run(scenario())
    assert answer == {"done": 1, "cancelled": True}
    assert runner.cleaned
