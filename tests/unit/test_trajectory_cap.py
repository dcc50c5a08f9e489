"""A trajectory over the trial file's cap is kept cut to fit, saying what was cut and why."""

from __future__ import annotations

import json

from pytest_skilleval.results.trajectory_cap import CUT_KEY, capped_trajectory


def _trajectory(*outputs: str) -> dict:
    steps = [{"step_id": 1, "source": "user", "message": "do it"}]
    for n, output in enumerate(outputs, start=2):
        steps.append({"step_id": n, "source": "agent", "observation": {"results": [{"content": output}]}})
    return {"schema_version": "ATIF-v1.6", "steps": steps, "extra": {"replay": {"mode": "x"}}}


def test_a_small_trajectory_is_kept_as_it_is() -> None:
    document = _trajectory("short")
    assert capped_trajectory(json.dumps(document).encode(), 10_000) == document


def test_each_long_text_is_cut_and_the_reason_given() -> None:
    data = json.dumps(_trajectory("a" * 50_000, "b" * 50_000, "tiny")).encode()
    kept = capped_trajectory(data, 20_000)
    assert len(json.dumps(kept)) <= 20_000 and len(kept["steps"]) == 4
    first = kept["steps"][1]["observation"]["results"][0]["content"]
    assert first.startswith("aaa") and first.endswith("characters, the first 8192 kept]")
    assert kept["steps"][3]["observation"]["results"][0]["content"] == "tiny"
    assert kept["extra"]["replay"] == {"mode": "x"}  # what the agent recorded there stays
    assert f"was {len(data)} bytes, over the trial file's limit of 20000 bytes" in kept["extra"][CUT_KEY]


def test_steps_that_cannot_fit_even_cut_are_left_out_and_counted() -> None:
    kept = capped_trajectory(json.dumps(_trajectory(*(["x" * 300] * 200))).encode(), 20_000)
    assert len(json.dumps(kept)) <= 20_000 and 1 < len(kept["steps"]) < 201
    assert f"its last {201 - len(kept['steps'])} step(s) were left out" in kept["extra"][CUT_KEY]


def test_what_is_not_json_is_not_kept_and_says_so() -> None:
    assert capped_trajectory(b"[" * 100_000, 10) == {
        "steps": [],
        "extra": {CUT_KEY: "the trajectory file (100000 bytes) is not JSON this plugin can read"},
    }
