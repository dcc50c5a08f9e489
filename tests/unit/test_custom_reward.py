"""The custom-grader reward contract: one test per sanitizing rule, each at its boundary."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from verifier.custom import (
    MAX_METRIC_NAME_BYTES,
    REDACTED_NAME,
    RESERVED_NAMES,
    check_condition_metric_names,
    flat_numeric_reward,
    harbor_reward,
    read_grader_reward,
    sanitize_custom_reward,
)

SEED_REWARD = {
    "overall": 0.85,
    "custom_metrics": {"custom_check": 0.85},
    "details": {"custom_check": {"score": 0.85, "reason": "starter"}},
}


def metrics(n: int, prefix: str = "m") -> dict[str, float]:
    return {f"{prefix}{i:03d}": 0.5 for i in range(n)}


def test_seed_example_in_both_custom_modes() -> None:
    plus = sanitize_custom_reward(SEED_REWARD, "default_plus_custom")
    assert plus.ok and plus.custom_metrics == {"custom_check": 0.85}
    assert plus.overall == 0.85  # kept: with no judge it gates the item's pass (the trial's score stays standard)
    assert plus.details == {"custom_check": {"score": 0.85, "reason": "starter"}}
    only = sanitize_custom_reward(SEED_REWARD, "custom_only")
    assert only.ok and only.overall == 0.85 and only.custom_metrics == {"custom_check": 0.85}


def test_default_mode_ignores_the_grader() -> None:
    result = sanitize_custom_reward({"custom_metrics": {"a": 0.5}, "security": 1.0}, "default")
    assert result.ok and result.custom_metrics == {} and result.overall is None


@pytest.mark.parametrize("alias, mode", [("aces_plus_custom", "default_plus_custom"), ("aces_default", "default")])
def test_mode_aliases(alias: str, mode: str) -> None:
    raw = {"custom_metrics": {"a": 0.5}}
    assert sanitize_custom_reward(raw, alias) == sanitize_custom_reward(raw, mode)


def test_128_metrics_per_reward_pass_and_129_fail() -> None:
    ok = sanitize_custom_reward({"custom_metrics": metrics(128)}, "default_plus_custom")
    assert ok.ok and len(ok.custom_metrics) == 128
    bad = sanitize_custom_reward({"overall": 1.0, "custom_metrics": metrics(129)}, "custom_only")
    assert not bad.ok
    assert "129 custom metrics" in bad.errors[0] and "128 custom metrics per reward" in bad.errors[0]
    assert bad.custom_metrics == {} and bad.overall is None  # a failed reward contributes nothing


def test_omitted_metrics_do_not_consume_the_budget() -> None:
    raw = {"custom_metrics": {**metrics(128), "flag": True, "bad": 2.0, "api_key": 0.5}}
    result = sanitize_custom_reward(raw, "default_plus_custom")
    assert result.ok and len(result.custom_metrics) == 128 and len(result.omitted) == 3


def test_top_level_metrics_count_toward_the_limit() -> None:
    raw = {"custom_metrics": metrics(100), **metrics(29, prefix="t")}
    assert not sanitize_custom_reward(raw, "default_plus_custom").ok


def test_128_distinct_names_per_condition() -> None:
    first = sanitize_custom_reward({"custom_metrics": metrics(100)}, "default_plus_custom")
    overlapping = sanitize_custom_reward({"custom_metrics": metrics(128)}, "default_plus_custom")
    assert check_condition_metric_names([first.custom_metrics, overlapping.custom_metrics]) is None
    extra = sanitize_custom_reward({"custom_metrics": {"one_more": 0.1}}, "default_plus_custom")
    message = check_condition_metric_names(r.custom_metrics for r in (first, overlapping, extra))
    assert message is not None and "129 distinct" in message
    assert "128 distinct custom metric names per condition" in message


def test_name_of_256_bytes_kept_and_257_fails_the_reward() -> None:
    at_limit = "a" * MAX_METRIC_NAME_BYTES
    assert sanitize_custom_reward({"custom_metrics": {at_limit: 0.5}}, "default_plus_custom").custom_metrics == {
        at_limit: 0.5
    }
    over = sanitize_custom_reward({"custom_metrics": {"a" * 257: 0.5}}, "default_plus_custom")
    assert not over.ok and "257 UTF-8 bytes" in over.errors[0] and "256 bytes" in over.errors[0]


def test_multibyte_name_measured_in_utf8_bytes() -> None:
    at_limit = "é" * 128  # 2 bytes each: 256 bytes, 128 characters
    assert sanitize_custom_reward({"custom_metrics": {at_limit: 1.0}}, "default_plus_custom").custom_metrics == {
        at_limit: 1.0
    }
    over = "é" * 128 + "a"  # 257 bytes but only 129 characters
    assert not sanitize_custom_reward({"custom_metrics": {over: 1.0}}, "default_plus_custom").ok
    euro = "€" * 86  # 3 bytes each: 258 bytes
    assert not sanitize_custom_reward({"custom_metrics": {euro: 1.0}}, "default_plus_custom").ok


def test_names_are_trimmed_before_measuring() -> None:
    padded = "  " + "a" * MAX_METRIC_NAME_BYTES + "\t\n"
    result = sanitize_custom_reward({"custom_metrics": {padded: 0.25}}, "default_plus_custom")
    assert result.custom_metrics == {"a" * MAX_METRIC_NAME_BYTES: 0.25}


def test_names_colliding_after_trimming_fail() -> None:
    result = sanitize_custom_reward({"custom_metrics": {"speed": 0.5, " speed ": 0.6}}, "default_plus_custom")
    assert not result.ok and "more than once" in result.errors[0]


@pytest.mark.parametrize("name", ["bad\u0000name", "tab\tinside", "line\nbreak", "\u200b"])
def test_unprintable_names_fail(name: str) -> None:
    result = sanitize_custom_reward({"custom_metrics": {name: 0.5}}, "default_plus_custom")
    assert not result.ok and "non-printable" in result.errors[0]


def test_empty_name_fails() -> None:
    result = sanitize_custom_reward({"custom_metrics": {"   ": 0.5}}, "default_plus_custom")
    assert not result.ok and "empty" in result.errors[0]


@pytest.mark.parametrize("value", [True, False])
def test_booleans_are_omitted(value: bool) -> None:
    result = sanitize_custom_reward({"custom_metrics": {"flag": value, "ok": 1}}, "default_plus_custom")
    assert result.custom_metrics == {"ok": 1.0}
    assert [(o.name, "boolean" in o.reason) for o in result.omitted] == [("flag", True)]


@pytest.mark.parametrize("value", ["0.5", None, [0.5], {"score": 0.5}])
def test_non_numeric_values_are_omitted(value: object) -> None:
    result = sanitize_custom_reward({"custom_metrics": {"m": value}}, "default_plus_custom")
    assert result.ok and result.custom_metrics == {} and result.omitted[0].name == "m"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_omitted(value: float) -> None:
    result = sanitize_custom_reward({"custom_metrics": {"m": value}}, "default_plus_custom")
    assert result.custom_metrics == {} and "not finite" in result.omitted[0].reason


@pytest.mark.parametrize("value, kept", [(-0.01, False), (0.0, True), (1.0, True), (1.01, False), (0, True), (1, True)])
def test_range_is_zero_to_one_inclusive(value: float, kept: bool) -> None:
    result = sanitize_custom_reward({"custom_metrics": {"m": value}}, "default_plus_custom")
    assert ("m" in result.custom_metrics) is kept
    if not kept:
        assert "outside 0.0-1.0" in result.omitted[0].reason


def test_negative_zero_becomes_zero() -> None:
    value = sanitize_custom_reward({"custom_metrics": {"m": -0.0}}, "default_plus_custom").custom_metrics["m"]
    assert value == 0.0 and math.copysign(1, value) == 1


@pytest.mark.parametrize(
    "name",
    ["api_key", "apiKey", "github_token", "client_token", "private_token", "password", "ssh_key", "AWS_SECRET_KEY"],
)
def test_credential_field_names_are_omitted_without_alias(name: str) -> None:
    result = sanitize_custom_reward({"custom_metrics": {name: 0.5, "quality": 0.9}}, "default_plus_custom")
    assert result.custom_metrics == {"quality": 0.9}
    assert result.omitted[0].name == REDACTED_NAME and name not in result.model_dump_json()
    assert REDACTED_NAME not in result.custom_metrics


@pytest.mark.parametrize(
    "name",
    [
        "sk-proj-abcdefghijklmnopqrst",
        "AKIAABCDEFGHIJKLMNOP",
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
        "Bearer abcdefghijklmnop",
        "nvapi-abcdefghijklmnop",
        "a8f5f167f44f4964e6c998dee827110c",
        "password=hunter2",
    ],
)
def test_credential_value_names_are_omitted(name: str) -> None:
    result = sanitize_custom_reward({"custom_metrics": {name: 0.5}}, "default_plus_custom")
    assert result.custom_metrics == {} and name not in result.model_dump_json()


def test_two_credential_names_do_not_collide_on_an_alias() -> None:
    result = sanitize_custom_reward({"custom_metrics": {"api_key": 0.1, "github_token": 0.2}}, "default_plus_custom")
    assert result.ok and result.custom_metrics == {} and len(result.omitted) == 2


@pytest.mark.parametrize(
    "name", ["secret_handling", "token_efficiency", "secret_safety", "auth_score", "total_tokens", "keyword_coverage"]
)
def test_metric_shaped_names_stay(name: str) -> None:
    assert sanitize_custom_reward({"custom_metrics": {name: 0.7}}, "default_plus_custom").custom_metrics == {name: 0.7}


@pytest.mark.parametrize("name", sorted(RESERVED_NAMES))
def test_every_reserved_name_is_rejected_in_custom_metrics(name: str) -> None:
    result = sanitize_custom_reward({"overall": 0.5, "custom_metrics": {name: 0.5}}, "custom_only")
    assert not result.ok and f"'{name}'" in result.errors[0] and "reserved" in result.errors[0]
    assert result.overall is None


@pytest.mark.parametrize("name", sorted(RESERVED_NAMES))
def test_every_reserved_name_is_rejected_in_metrics_block(name: str) -> None:
    assert not sanitize_custom_reward({"metrics": {name: 0.5}}, "default_plus_custom").ok


@pytest.mark.parametrize("name", ["security", "skill_execution", "accuracy", "behavior_check"])
def test_top_level_standard_metric_is_rejected(name: str) -> None:
    result = sanitize_custom_reward({"overall": 0.5, name: 1.0}, "default_plus_custom")
    assert not result.ok and name in result.errors[0]


@pytest.mark.parametrize(
    ("raw", "reserved"),
    [
        ({" security": 1.0}, "security"),
        ({"OVERALL": 0.9}, "overall"),
        ({"Skill_Execution ": 1.0}, "skill_execution"),
        ({"custom_metrics": {"Accuracy ": 1.0}}, "accuracy"),
        ({"custom_metrics": {" overall": 1.0}}, "overall"),
        ({"metrics": {"DETAILS": 0.5}}, "details"),
        ({"custom_metrics": {"Entry_ID": 0.5}}, "entry_id"),
    ],
)
def test_reserved_names_padded_or_cased_are_refused(raw: dict, reserved: str) -> None:
    result = sanitize_custom_reward({"overall": 0.5, **raw}, "default_plus_custom")
    assert not result.ok and result.custom_metrics == {}
    assert reserved in result.errors[0] and "reserved" in result.errors[0]


def test_flat_native_reward_numbers_are_custom_metrics() -> None:
    raw = {"overall": 1.0, "native_quality": 0.75, "note": "text is ignored", "_private": 0.1, "entry_id": "x"}
    result = sanitize_custom_reward(raw, "custom_only")
    assert result.custom_metrics == {"native_quality": 0.75} and result.overall == 1.0


def test_custom_metrics_win_over_top_level_duplicates() -> None:
    result = sanitize_custom_reward({"custom_metrics": {"q": 0.2}, "q": 0.9}, "default_plus_custom")
    assert result.custom_metrics == {"q": 0.2} and "wins" in result.omitted[0].reason


def test_non_object_custom_metrics_fails() -> None:
    assert not sanitize_custom_reward({"custom_metrics": [0.5]}, "default_plus_custom").ok


def test_grader_entry_id_is_never_used() -> None:
    result = sanitize_custom_reward({"overall": 0.5, "entry_id": "someone-else"}, "custom_only")
    assert result.ok and "entry_id" not in result.model_dump_json()


def test_custom_only_without_overall_is_unscored_not_zero() -> None:
    result = sanitize_custom_reward({"custom_metrics": {"a": 0.5}}, "custom_only")
    assert result.ok and result.overall is None and "overall" in (result.unscored_reason or "")


@pytest.mark.parametrize("overall", [True, "0.5", math.nan, 1.5, -0.1, None])
def test_custom_only_invalid_overall_is_unscored(overall: object) -> None:
    result = sanitize_custom_reward({"overall": overall}, "custom_only")
    assert result.overall is None and result.unscored_reason


def test_custom_only_falls_back_to_reward_txt() -> None:
    assert sanitize_custom_reward({"a": 0.3}, "custom_only", reward_txt=0.4).overall == 0.4
    assert sanitize_custom_reward({"a": 0.3}, "custom_only", reward_txt=4.0).overall is None


def test_default_plus_custom_keeps_the_graders_overall_but_does_not_score_with_it() -> None:
    from verifier.scoring import correctness_gates, trial_overall

    kept = sanitize_custom_reward({"overall": 0.2, "cc": 0.9}, "default_plus_custom").overall
    assert kept == 0.2
    metrics = {"security": 1.0, "skill_execution": 1.0, "skill_efficiency": 1.0}
    assert trial_overall("default_plus_custom", metrics, kept) == 1.0
    assert correctness_gates("default_plus_custom", {**metrics, "accuracy": None}, kept) == {"custom overall": 0.2}
    assert correctness_gates("default_plus_custom", {**metrics, "accuracy": 0.9}, kept) == {}  # a judge: no gate


# --- files -------------------------------------------------------------------------------------------------------


def write(tmp_path: Path, reward: object | None = None, txt: str | None = None) -> tuple[Path, Path]:
    reward_json, reward_txt = tmp_path / "reward.json", tmp_path / "reward.txt"
    if reward is not None:
        reward_json.write_text(reward if isinstance(reward, str) else json.dumps(reward))
    if txt is not None:
        reward_txt.write_text(txt)
    return reward_json, reward_txt


def test_read_seed_reward(tmp_path: Path) -> None:
    result = read_grader_reward(*write(tmp_path, SEED_REWARD, "0.85\n"), "custom_only")
    assert result.ok and result.overall == 0.85 and result.custom_metrics == {"custom_check": 0.85}


def test_read_missing_files(tmp_path: Path) -> None:
    only = read_grader_reward(*write(tmp_path), "custom_only")
    assert only.ok and only.overall is None and "no reward.json" in (only.unscored_reason or "")
    plus = read_grader_reward(*write(tmp_path), "default_plus_custom")
    assert plus.ok and plus.custom_metrics == {}


def test_read_numeric_reward_txt_only(tmp_path: Path) -> None:
    assert read_grader_reward(*write(tmp_path, txt=" 0.7 \n"), "custom_only").overall == 0.7


@pytest.mark.parametrize("txt", ["PASS", "", "nan", "2"])
def test_read_bad_reward_txt_only_is_unscored(tmp_path: Path, txt: str) -> None:
    result = read_grader_reward(*write(tmp_path, txt=txt), "custom_only")
    assert result.overall is None and "reward.txt" in (result.unscored_reason or "")


@pytest.mark.parametrize("content", ["[1, 2]", "0.5", '"x"', "null"])
def test_read_non_object_json_fails(tmp_path: Path, content: str) -> None:
    result = read_grader_reward(*write(tmp_path, content), "custom_only")
    assert not result.ok and "JSON object" in result.errors[0]


def test_read_invalid_json_fails(tmp_path: Path) -> None:
    result = read_grader_reward(*write(tmp_path, "{not json"), "default_plus_custom")
    assert not result.ok and "not valid JSON" in result.errors[0]


def test_read_json_nan_is_omitted(tmp_path: Path) -> None:
    result = read_grader_reward(*write(tmp_path, '{"overall": 0.5, "custom_metrics": {"m": NaN}}'), "custom_only")
    assert result.ok and result.custom_metrics == {} and result.overall == 0.5


def test_flat_numeric_reward_keeps_only_finite_non_bool_numbers() -> None:
    raw = {"overall": 1, "q": 0.5, "flag": True, "nested": {"a": 1}, "s": "1", "n": math.nan, "big": 3}
    assert flat_numeric_reward(raw) == {"overall": 1.0, "q": 0.5, "big": 3.0}


def test_harbor_reward_from_sanitized() -> None:
    sanitized = sanitize_custom_reward(SEED_REWARD, "custom_only")
    flat = harbor_reward(sanitized, sanitized.overall)
    assert flat == {"overall": 0.85, "custom_check": 0.85}
    assert all(isinstance(v, float) for v in flat.values())
    assert harbor_reward(sanitized, None) == {"custom_check": 0.85}
