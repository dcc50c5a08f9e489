"""A case's `checks`: read from the dataset as typed models, refused with one located line when wrong."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pytest_skilleval.skill.dataset import DatasetError, load_dataset
from pytest_skilleval.skill.dataset_schema import SCHEMA_PATH
from verifier.check_spec import CheckResult, checks_score, parse_json_path


def _dataset(tmp_path: Path, checks: object, suffix: str = "json") -> Path:
    evals = tmp_path / "skill" / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    entry = {"id": "c1", "prompt": "p", "expected_output": "e", "checks": checks}
    path = evals / f"evals.{suffix}"
    if suffix == "jsonl":
        path.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps({"skill_name": "skill", "evals": [entry]}), encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", ["json", "jsonl", "yaml"])
def test_every_check_type_loads_from_each_dataset_format(tmp_path: Path, suffix: str) -> None:
    checks = [
        {"type": "file_exists", "path": "output/a.txt", "name": "made", "weight": 2},
        {"type": "file_absent", "path": "/workspace/tmp.txt"},
        {"type": "file_contains", "path": "output/a.txt", "text": "hello"},
        {"type": "file_not_contains", "path": "output/a.txt", "regex": "TODO|FIXME"},
        {"type": "file_equals", "path": "output/a.txt", "text": "hello\n"},
        {"type": "json_path", "path": "out.yaml", "json_path": "$.items[0]['name']", "equals": "x"},
        {"type": "command", "run": "test -s output/a.txt", "exit_code": 0, "timeout_sec": 5, "stdout_regex": "."},
        {"type": "final_message_contains", "text": "done"},
        {"type": "final_message_matches", "regex": "^Done"},
        {"type": "workspace_changed", "paths": ["output/*"]},
        {"type": "workspace_unchanged", "paths": "input"},
        {"type": "no_command_matching", "regex": "rm -rf"},
    ]
    # JSON is YAML, so one text serves the .yaml file too.
    case = load_dataset(_dataset(tmp_path, checks, suffix)).cases[0]
    assert [check.type for check in case.checks or []] == [c["type"] for c in checks]
    entry = case.entry_json()["checks"]
    assert entry[1]["path"] == "tmp.txt" and entry[0]["weight"] == 2
    assert entry[4]["expected_size"] == 6
    jsonschema.validate(json.loads(_dataset(tmp_path, checks).read_text()), json.loads(SCHEMA_PATH.read_text()))


@pytest.mark.parametrize(
    ("checks", "field", "words"),
    [
        ([{"type": "file_exists", "path": "../etc/passwd"}], "checks[0].path", "climbs out of /workspace"),
        ([{"type": "file_exists", "path": "/etc/passwd"}], "checks[0].path", "outside /workspace"),
        (
            [{"type": "file_exists", "path": "a"}, {"type": "workspace_changed", "paths": ["x/../../y"]}],
            "checks[1].paths",
            "climbs out",
        ),
        ([{"type": "file_exist", "path": "a"}], "checks[0]", "does not match any of the expected tags"),
        ([{"type": "file_contains", "path": "a"}], "checks[0]", "exactly one of 'text' or 'regex'"),
        ([{"type": "file_contains", "path": "a", "regex": "("}], "checks[0].regex", "not a valid regular expression"),
        ([{"type": "command", "run": "x", "timeout_sec": 0}], "checks[0].timeout_sec", "more than 0"),
        (
            [{"type": "command", "run": "x", "timeout": 3}],
            "checks[0].timeout",
            "unknown field (did you mean 'timeout_sec'?); a command check has type, name, weight, run, exit_code",
        ),
        ([{"type": "file_contains", "path": "a", "txet": "b"}], "checks[0].txet", "(did you mean 'text'?)"),
        ([{"type": "json_path", "path": "a.json", "json_path": "a.b", "exists": True}], "checks[0].json_path", "'$'"),
        ([{"type": "file_equals", "path": "a", "file": "../SKILL.md"}], "checks[0].file", "under evals/files/"),
        ([{"type": "file_equals", "path": "a", "file": "missing.txt"}], "checks[0].file", "does not exist"),
        ({"type": "file_exists"}, "checks", "must be a list"),
    ],
)
def test_a_bad_check_is_one_line_naming_file_field_and_fix(
    tmp_path: Path, checks: object, field: str, words: str
) -> None:
    path = _dataset(tmp_path, checks)
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    text = str(caught.value)
    assert "\n" not in text and str(path) in text and f"field '{field}'" in text and words in text, text


def test_file_equals_hashes_the_expected_file_and_refuses_a_link(tmp_path: Path) -> None:
    path = _dataset(tmp_path, [{"type": "file_equals", "path": "out.txt", "file": "files/expected.txt"}])
    (path.parent / "files").mkdir()
    (path.parent / "files" / "expected.txt").write_bytes(b"\xff\xfe not utf-8\n")
    check = load_dataset(path).cases[0].entry_json()["checks"][0]
    assert check["expected_size"] == 13 and len(check["expected_sha256"]) == 64
    (path.parent / "files" / "expected.txt").unlink()
    (path.parent / "files" / "expected.txt").symlink_to("/etc/passwd")
    with pytest.raises(DatasetError, match="cannot be used"):
        load_dataset(path)


def test_the_checks_score_is_a_weighted_fraction_where_errors_drop_out() -> None:
    results = [
        CheckResult(name="a", type="file_exists", status="passed", weight=3),
        CheckResult(name="b", type="command", status="failed", weight=1),
        CheckResult(name="c", type="command", status="error", weight=5),
    ]
    assert checks_score(results) == 0.75
    assert checks_score([results[2]]) is None and checks_score(None) is None


def test_json_path_steps() -> None:
    assert parse_json_path("$.a.b[0][\"c d\"]['e'][-1]") == ["a", "b", 0, "c d", "e", -1]
    assert parse_json_path("$") == []
