"""Near-miss keys in eval entries (`expected_skil`) warn; other extra keys stay legal and reach entry.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilleval.skill.config_file import ConfigError, parse_config
from pytest_skilleval.skill.dataset import load_dataset, unknown_field
from pytest_skilleval.skill.entry_keys import did_you_mean, edit_distance, near_miss_keys, resembled_field


@pytest.mark.parametrize(
    "key, field",
    [
        ("expected_skil", "expected_skill"),
        ("expected_scirpt", "expected_script"),
        ("Expected_Skill", "expected_skill"),
        ("expected-skill", "expected_skill"),
        ("shouldtrigger", "should_trigger"),
        ("acceptable_skill", "acceptable_skills"),
        ("assertion", "assertions"),
        ("prompts", "prompt"),
        ("file", "files"),
        ("grund_truth", "ground_truth"),
    ],
)
def test_near_misses_name_the_field_they_resemble(key: str, field: str) -> None:
    assert resembled_field(key) == field


@pytest.mark.parametrize(
    "key", ["greeting_name", "notes", "tags", "kind", "idx", "ids", "name", "inputs", "question_id", "difficulty"]
)
def test_ordinary_extra_keys_are_not_typos(key: str) -> None:
    assert resembled_field(key) is None


def test_known_fields_are_never_typos() -> None:
    assert resembled_field("expected_skill") is None
    assert resembled_field("acceptable_alternates") is None


def test_edit_distance_counts_an_adjacent_swap_once() -> None:
    assert edit_distance("script", "scirpt") == 1
    assert edit_distance("abc", "abc") == 0
    assert edit_distance("kitten", "sitting", limit=5) == 3
    assert edit_distance("a", "abcdef") == 3  # capped at limit + 1


def test_typos_are_grouped_per_key_with_their_entries() -> None:
    entries = [
        ("entry 0 (id 'a')", {"expected_skil": None}),
        ("entry 1 (id 'b')", {"expected_skil": None}),
        ("entry 2 (id 'c')", {"greeting_name": "x"}),
    ]
    typos = near_miss_keys(entries)
    assert [(t.key, t.resembles, t.entries) for t in typos] == [
        ("expected_skil", "expected_skill", ["entry 0 (id 'a')", "entry 1 (id 'b')"])
    ]
    assert "key 'expected_skil' (entry 0 (id 'a'), entry 1 (id 'b')) is not a known field" in typos[0].message()
    assert "resembles 'expected_skill'" in typos[0].message()


def test_dataset_keeps_the_key_and_reports_it(tmp_path: Path) -> None:
    path = tmp_path / "evals.json"
    path.write_text(
        json.dumps(
            {
                "skill_name": "demo",
                "evals": [
                    {"id": "neg", "prompt": "p", "expected_output": "e", "expected_skil": None, "greeting_name": "Ada"}
                ],
            }
        )
    )
    dataset = load_dataset(path)
    case = dataset.cases[0]
    # The typo does not make the case negative (that is the silent change the warning is for) ...
    assert case.is_negative is False
    # ... and both extra keys still pass through to entry.json.
    entry = case.entry_json()
    assert entry["expected_skil"] is None and entry["greeting_name"] == "Ada"
    assert [(t.key, t.resembles) for t in dataset.key_typos] == [("expected_skil", "expected_skill")]


def test_config_keys_and_entry_fields_get_one_did_you_mean_hint(tmp_path: Path) -> None:
    """config.yml's unknown keys and a check's or trigger entry's unknown fields name the nearest name alike."""
    assert did_you_mean("n_atempts", ["n_attempts", "timeout"]) == " (did you mean 'n_attempts'?)"
    assert did_you_mean("zzz", ["n_attempts", "timeout"]) == ""
    with pytest.raises(ConfigError) as raised:
        parse_config(tmp_path / "config.yml", {"schema_version": 1, "harbor": {"n_atempts": 2}})
    assert raised.value.message == "unknown key" + did_you_mean("n_atempts", ["n_attempts"])
    assert (
        unknown_field("txet", ["type", "text"], "a check")
        == "unknown field (did you mean 'text'?); a check has type, text"
    )
