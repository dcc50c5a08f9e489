"""Bad input: each broken file is one collection error naming file, entry and field; everything else still runs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, grow_sparse, link_from_outside, simple_entries

GOOD = simple_entries("fine")


def _entry(**fields: object) -> dict:
    base = {"id": "case-1", "prompt": "p", "expected_output": "e"}
    base.update(fields)
    return {"skill_name": "broken", "evals": [base]}


BROKEN = {
    "invalid-json": ("evals.json", '{"skill_name": "x", "evals": [', ["invalid JSON at line 1"]),
    "invalid-yaml": ("evals.yaml", "skill_name: x\nevals: [\n  - id: a\n    prompt: [unclosed\n", ["invalid YAML"]),
    "missing-field": (
        "evals.json",
        {"skill_name": "b", "evals": [{"id": "c1", "prompt": "p"}]},
        ["entry 0 (id 'c1')", "field 'expected_output'"],
    ),
    "bad-id": ("evals.json", _entry(id="has space"), ["entry 0 (id 'has space')", "field 'id'", "must start with"]),
    "long-id": ("evals.json", _entry(id="a" * 129), ["field 'id'", "at most 128 characters"]),
    "duplicate-id": (
        "evals.json",
        {
            "skill_name": "b",
            "evals": [
                {"id": "Same", "prompt": "p", "expected_output": "e"},
                {"id": "same", "prompt": "p", "expected_output": "e"},
            ],
        },
        ["entry 1 (id 'same')", "field 'id'", "differs only in case from 'Same' (entry 0)"],
    ),
    "duplicate-id-exact": (
        "evals.json",
        {
            "skill_name": "b",
            "evals": [
                {"id": "same", "prompt": "p", "expected_output": "e"},
                {"id": "same", "prompt": "p", "expected_output": "e"},
            ],
        },
        ["entry 1 (id 'same')", "field 'id'", "duplicate id 'same' (entry 0 has the same id)"],
    ),
    "legacy-alias": (
        "evals.json",
        {"skill_name": "b", "evals": [{"id": "c1", "prompt": "p", "expected_behavior": "not a list but a string"}]},
        ["entry 0 (id 'c1')", "field 'expected_output'", "(this entry's 'expected_behavior' as 'assertions' was read)"],
    ),
    "wrong-type": ("evals.json", _entry(assertions=5), ["entry 0 (id 'case-1')", "field 'assertions'"]),
    "bool-id": (
        "evals.json",
        {"skill_name": "b", "evals": [{"id": True, "prompt": "p", "expected_output": "e"}]},
        ["entry 0", "field 'id'", "not a boolean"],
    ),
    "unknown-shape": ("evals.json", {"questions": []}, ["unknown dataset shape"]),
    "empty-dataset": ("evals.json", {"skill_name": "b", "evals": []}, ["no eval entries"]),
    "entry-not-object": ("evals.json", ["just a string"], ["entry 0", "must be an object"]),
    # Longer than Python converts (int max_str_digits): a one-line error naming the field, not an INTERNALERROR.
    "huge-int-json": (
        "evals.json",
        '{"skill_name": "b", "evals": [{"id": "c", "prompt": "p", "expected_output": "e", "max_turns": '
        + "9" * 5000
        + "}]}",
        ["field 'evals[0].max_turns' is an integer of 5,000 digits"],
    ),
    "huge-int-yaml": (
        "evals.yaml",
        "skill_name: b\nevals:\n  - id: c\n    prompt: p\n    expected_output: e\n    max_turns: " + "9" * 5000 + "\n",
        ["field 'evals[0].max_turns' is an integer of 5,000 digits", "(at line 6)"],
    ),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_broken_dataset_is_one_clear_collection_error(skill_project: SkillProject, kind: str) -> None:
    dataset_name, content, expected = BROKEN[kind]
    if isinstance(content, str):
        skill_project.make_skill("broken", raw=content, dataset_name=dataset_name)
    else:
        skill_project.make_skill("broken", content, dataset_name=dataset_name)
    skill_project.make_skill("good", GOOD)
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED  # pytest's rule: collection errors stop the run
    assert "INTERNALERROR" not in output
    assert "Traceback" not in output
    assert f"skills/broken/evals/{dataset_name}" in output
    for fragment in expected:
        assert fragment in output, fragment
    assert "1 error" in output
    assert "skills/good/evals/evals.json::fine[replay-with_skill-1]" in output


def test_unreadable_task_toml_is_a_collection_error(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("native", GOOD)
    task = skill / "evals" / "harbor" / "fine"
    task.mkdir(parents=True)
    (task / "task.toml").write_text("schema_version = 1.4\n[agent\n")
    (task / "instruction.md").write_text("x\n")
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    output = result.stdout.str()
    assert "evals/harbor/fine/task.toml: task.toml is not valid TOML" in output
    assert "Traceback" not in output
    # One rule for refused native tasks (issue 11): the entry the task replaces does not run in its place.
    assert "skills/native/evals/evals.json::fine[" not in output


def test_continue_on_collection_errors_runs_the_rest(skill_project: SkillProject) -> None:
    """pytest's own flag still works as it did (and changes nothing: a skill's error no longer stops the rest)."""
    skill_project.make_skill("broken", raw="{not json", dataset_name="evals.json")
    skill_project.make_skill("good", GOOD)
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)


def test_two_datasets_in_one_skill_are_refused(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("twice", GOOD)
    (skill / "evals" / "evals.yaml").write_text("skill_name: twice\nevals: []\n")
    result = skill_project.run("--collect-only", "-q", *LOCAL_REPLAY, subprocess=False)
    assert "evals.yaml: the skill already has a dataset, evals.json" in result.stdout.str()


@pytest.mark.parametrize("kind", ["huge-int-json", "huge-int-yaml"])
def test_validate_names_the_field_of_a_huge_integer(skill_project: SkillProject, kind: str) -> None:
    dataset_name, content, expected = BROKEN[kind]
    skill = skill_project.make_skill("broken", raw=str(content), dataset_name=dataset_name)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_skilleval.authoring.cli", "validate", str(skill)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("error:")]
    assert f"evals/{dataset_name}: [dataset-invalid]" in line and all(fragment in line for fragment in expected)


@pytest.mark.parametrize("bad", ["link", "huge"])
def test_a_linked_or_huge_replay_is_one_trial_error_never_read(
    skill_project: SkillProject, tmp_path_factory: pytest.TempPathFactory, bad: str
) -> None:
    """A replay is the skill's file: one linked outside (a valid one, so following it would have worked) was read
    through the link, and a 3 GiB one was read whole into the pytest process."""
    skill = skill_project.make_skill("broken", simple_entries("c"))
    replay = skill / "evals" / "replays" / "c.json"
    if bad == "link":
        outside = link_from_outside(replay, tmp_path_factory.mktemp("outside"))
        expected = f"replay {replay} is a symbolic link to {outside}; links in a skill are never followed"
    else:
        grow_sparse(replay)
        expected = f"replay {replay} is larger than 67,108,864 bytes"
    before = sorted((str(path), os.lstat(path).st_size, os.lstat(path).st_mtime_ns) for path in skill.rglob("*"))
    skill_project.make_skill("good", GOOD)
    result = skill_project.run(*LOCAL_REPLAY, "--skip-baseline")
    result.assert_outcomes(passed=1, errors=1)
    assert expected in result.stdout.str() and "MemoryError" not in result.stdout.str()
    assert (
        sorted((str(path), os.lstat(path).st_size, os.lstat(path).st_mtime_ns) for path in skill.rglob("*")) == before
    )
