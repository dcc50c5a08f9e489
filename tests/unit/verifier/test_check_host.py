"""The host half of the checks: the workspace diff, glob matching, trajectory checks, and the runner's output read
as hostile input (size cap, marker, malformed results)."""

from __future__ import annotations

import pytest

from pytest_skilleval.harbor.case_checks import MAX_OUTPUT_CHARS, parse_output
from verifier.check_host import Snapshot, assemble, diff_snapshots
from verifier.check_runner import MARKER
from verifier.check_spec import CHECK_LIST
from verifier.evidence import ToolCallRecord, TrajectoryEvidence


def _snapshot(**entries: tuple[str, int, str]) -> Snapshot:
    return Snapshot(entries={path.replace("__", "/"): value for path, value in entries.items()})


def test_the_diff_sorts_paths_into_created_modified_and_deleted() -> None:
    before = _snapshot(input__a=("file", 1, "h1"), keep=("file", 2, "h2"), gone=("file", 3, "h3"))
    after = _snapshot(input__a=("file", 1, "hX"), keep=("file", 2, "h2"), output__new=("link", 4, "h4"))
    diff = diff_snapshots(before, after)
    assert (diff.created, diff.modified, diff.deleted) == (["output/new"], ["input/a"], ["gone"])
    assert diff.counts == {"created": 1, "modified": 1, "deleted": 1} and not diff.truncated


def test_the_diff_is_capped_with_counts() -> None:
    after = Snapshot(entries={f"f{n:04}": ("file", 1, "h") for n in range(250)})
    diff = diff_snapshots(Snapshot(), after)
    assert len(diff.created) == 200 and diff.counts["created"] == 250 and diff.truncated


def test_host_checks_read_the_trajectory_and_the_diff() -> None:
    checks = CHECK_LIST.validate_python(
        [
            {"type": "workspace_changed", "paths": ["output"]},
            {"type": "workspace_unchanged", "paths": ["input/*"]},
            {"type": "no_command_matching", "regex": r"rm\s+-rf"},
            {"type": "final_message_matches", "regex": "^All done"},
            {"type": "file_exists", "path": "x"},
        ]
    )
    evidence = TrajectoryEvidence(
        source="trajectory.json",
        tool_calls=[ToolCallRecord(index=0, tool="Bash", arguments={"command": "rm  -rf build"})],
        agent_messages=["All done."],
    )
    diff = diff_snapshots(_snapshot(input__a=("file", 1, "a")), _snapshot(input__a=("file", 1, "b")))
    results = assemble(checks, {}, evidence, diff, "the check runner could not run in the sandbox (exit code 127)")
    assert [r.status for r in results] == ["failed", "failed", "failed", "passed", "error"]
    assert (
        "input/a" in results[1].evidence
        and "'rm -rf build'" in results[2].evidence
        and "rm\\s+-rf" in results[2].evidence
    )
    assert "exit code 127" in results[4].evidence
    no_trajectory = assemble(checks[2:4], {}, TrajectoryEvidence(source="none"), None, None)
    assert [r.status for r in no_trajectory] == ["error", "error"]
    assert [r.status for r in assemble(checks[:1], {}, evidence, None, None)] == ["error"]  # no diff: unscored


@pytest.mark.parametrize(
    ("stdout", "words"),
    [
        ("x" * (MAX_OUTPUT_CHARS + 1), "the limit is"),
        ("python3: not found", "printed no result"),
        (MARKER + '{"results": [{"index": "one", "status": "passed"}]}', "malformed"),
        (MARKER + '{"results": [{"index": 0, "status": "great"}]}', "malformed"),
        (MARKER + "not json", "malformed"),
    ],
)
def test_the_runners_output_is_hostile_input(stdout: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_output(stdout)


def test_the_last_marker_line_wins_and_noise_around_it_is_ignored() -> None:
    stdout = f"banner\n{MARKER}{{}}\n{MARKER}" + '{"results": [{"index": 2, "status": "failed", "evidence": "e"}]}\nbye'
    assert parse_output(stdout).results[0].index == 2
