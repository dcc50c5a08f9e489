"""The controller keeps each finished trial as the JSON its report carries, parsed once at session end (issue 13:
memory per trial), and the three reports of one trial share that one string."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_skilleval.item_record import record_property_value, redact_record
from pytest_skilleval.results.records import USER_PROPERTY_KEY, TrialRecord
from pytest_skilleval.session import SkillEvalSession
from verifier.redact import Redactor
from verifier.reward import WrittenFile


def _report(nodeid: str, when: str, text: str) -> Any:
    return SimpleNamespace(nodeid=nodeid, when=when, user_properties=[("other", "x"), (USER_PROPERTY_KEY, text)])


def _state() -> SkillEvalSession:
    """A session that keeps records as the controller does, without its early results writer: that thread would
    write these made-up skills' trial files under /skills/ on this machine, and go on after the test has ended."""
    return SkillEvalSession(SimpleNamespace(workerinput={}), SimpleNamespace(cli={}, ini={}), "run")  # type: ignore[arg-type]


def _record(case: str, skill_dir: str, overall: float) -> TrialRecord:
    return TrialRecord(
        skill="s",
        skill_dir=skill_dir,
        case=case,
        agent="replay",
        arm="with_skill",
        attempt=1,
        status="scored",
        overall=overall,
        nodeid=f"evals.json::{case}[replay-with_skill-1]",
        details={"security": {"reason": "fine"}},
    )


def test_records_are_kept_as_shared_json_and_parsed_on_demand() -> None:
    state = _state()
    first, other = _record("a", "/skills/one", 0.9), _record("b", "/skills/two", 0.4)
    reports = []
    for record in (first, other):
        for when in ("setup", "call", "teardown"):
            # xdist delivers each report with its own copy of the string
            report = _report(record.nodeid, when, "".join(list(record_property_value(record))))
            state.pytest_runtest_logreport(report)  # type: ignore[arg-type]
            reports.append(report)
    assert state.has_records() and state.record_skill_dirs() == ["/skills/one", "/skills/two"]
    assert state.records_for("/skills/one") == [first]
    assert state.records_for("/skills/two") == [other]
    shared = {id(r.user_properties[1][1]) for r in reports[:3]}
    assert len(shared) == 1  # setup, call and teardown now hold one string
    assert reports[0].user_properties[0] == ("other", "x")


def test_a_changed_record_for_the_same_trial_replaces_the_old_one() -> None:
    state = _state()
    before, after = _record("a", "/skills/one", 0.2), _record("a", "/skills/one", 0.8)
    state.pytest_runtest_logreport(_report(before.nodeid, "setup", record_property_value(before)))  # type: ignore[arg-type]
    state.pytest_runtest_logreport(_report(after.nodeid, "teardown", record_property_value(after)))  # type: ignore[arg-type]
    assert state.records_for("/skills/one") == [after]
    assert list(state.records) == [after.nodeid]


def test_kept_records_share_the_node_id_and_skill_folder_strings() -> None:
    """Per trial the controller keeps the record's JSON and nothing copied: the key is the report's own node id
    string and every record of a skill names one skill-folder string."""
    state = _state()
    reports = []
    skill_dir = "/home/someone/projects/a-long-enough-path/to-skip-the-parsers-string-cache/skills/one"
    for case in ("a", "b", "c"):
        record = _record(case, skill_dir, 0.5)
        nodeid = "".join(list(record.nodeid or ""))  # the report's string, not the one parsed from the record
        reports.append(_report(nodeid, "setup", record_property_value(record)))
        state.pytest_runtest_logreport(reports[-1])  # type: ignore[arg-type]
    kept = state._records
    assert [key for key in kept] == [r.nodeid for r in reports]
    assert all(key is report.nodeid for key, report in zip(kept, reports, strict=True))
    assert len({id(folder) for folder, _ in kept.values()}) == 1


def test_a_record_naming_another_node_is_kept_under_that_name() -> None:
    state = _state()
    record = _record("a", "/skills/one", 0.5)
    state.pytest_runtest_logreport(_report("worker::other", "setup", record_property_value(record)))  # type: ignore[arg-type]
    assert list(state.records) == [record.nodeid]


def test_a_record_made_in_this_process_reaches_the_writer_as_it_is() -> None:
    """The process that ran the item hands its record object (with what the verifier wrote, kept in memory) to
    the trial file writer; a report from elsewhere (xdist) carries a copy of the text and is parsed."""
    state = SkillEvalSession(SimpleNamespace(), SimpleNamespace(cli={}, ini={}), "run")  # type: ignore[arg-type]
    seen: list[TrialRecord] = []
    state.early.seen = lambda nodeid, record: seen.append(record)  # type: ignore[method-assign]
    state.early.item_done = lambda nodeid: None  # type: ignore[method-assign]
    here, there = _record("a", "/skills/one", 0.9), _record("b", "/skills/one", 0.4)
    here.keep_written({"verifier/reward.json": WrittenFile({"overall": 0.9}, 20)})
    text = record_property_value(here)
    state.made_here(here.nodeid, text, here)
    for when in ("setup", "call", "teardown"):
        state.pytest_runtest_logreport(_report(here.nodeid, when, text))  # type: ignore[arg-type]
    state.pytest_runtest_logreport(_report(there.nodeid, "setup", record_property_value(there)))  # type: ignore[arg-type]
    assert seen[0] is here and seen[0].written is not None
    assert seen[1] == there and seen[1] is not there and seen[1].written is None
    assert state.records_for("/skills/one") == [here, there]
    assert state.reported_overall(there.nodeid, record_property_value(there)) == 0.4
    assert not state._made_here  # let go at the item's teardown


def test_redaction_copies_a_record_only_when_something_in_it_is_a_secret() -> None:
    redactor = Redactor(["hunter2-very-secret-value"])
    clean = _record("a", "/skills/one", 0.9)
    clean.keep_written({"verifier/reward.json": WrittenFile({"overall": 0.9}, 20)})
    assert redact_record(clean, redactor) is clean
    leaky = _record("b", "/skills/one", 0.9)
    leaky.details = {"custom": {"said": "the key is hunter2-very-secret-value"}}
    leaky.keep_written(clean.written)
    redacted = redact_record(leaky, redactor)
    assert redacted is not leaky and redacted.details == {"custom": {"said": "the key is [REDACTED]"}}
    assert redacted.nodeid == leaky.nodeid and redacted.written is clean.written
