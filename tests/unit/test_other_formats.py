"""Eval files other skill-eval tools write (fixtures/formats/): what collects and means the same here, what is
refused with the one line that names the format and the docs section mapping it, and what validate warns about."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skilleval.authoring.validate import validate_skill
from pytest_skilleval.harbor.staging import stage_dataset_task
from pytest_skilleval.skill.config_file import ConfigError, load_config
from pytest_skilleval.skill.dataset import DatasetError, arm_prompt, load_dataset, parse_dataset
from pytest_skilleval.skill.folder import no_skill_reason
from pytest_skilleval.skill.plan import TrialSpec
from pytest_skilleval.skill.triggers import load_trigger_set
from tests.support import FIXTURES, SkillProject

FORMATS = FIXTURES / "formats"


def _skill(tmp_path: Path, source: Path, name: str = "demo") -> Path:
    """A skill folder whose evals/ is a copy of one fixture layout."""
    skill = tmp_path / name
    shutil.copytree(source, skill / "evals")
    (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n")
    return skill


def test_skill_creator_expectations_collect_as_assertions() -> None:
    dataset = load_dataset(FORMATS / "skill-creator" / "evals.json")
    first = dataset.cases[0]
    assert [case.id for case in dataset.cases] == ["1", "2"]
    assert first.assertions[0] == "The output file summary.md exists" and len(first.assertions) == 3
    assert first.expected_skill == "csv-summary" and first.entry_json()["expected_behavior"] == first.assertions


def test_validate_names_an_alias_the_runtime_name_beside_it_shadows(tmp_path: Path) -> None:
    """skill-creator's SKILL.md calls the field `assertions` and its schemas.md `expectations`: an entry with
    `"assertions": []` and `"expectations": [...]` ran with no assertions and nothing said so. The runtime name still
    wins (documented); validate now names the spelling that is not read, per case, with the fix."""
    skill = tmp_path / "demo"
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\n")
    case = {"prompt": "p", "expected_output": "o", "files": []}
    evals = [
        {**case, "id": 1, "assertions": [], "expectations": ["The flyer says Nov 14"]},
        {**case, "id": 2, "assertions": ["same"], "expectations": ["same"]},  # the same value: nothing is lost
        {**case, "id": 3, "prompt": "p", "question": "another prompt"},
    ]
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "demo", "evals": evals}))
    assert load_dataset(skill / "evals" / "evals.json").cases[0].assertions == []  # the runtime name wins
    shadowed = [f for f in validate_skill(skill).findings if f.rule == "alias-not-read"]
    assert [f.severity for f in shadowed] == ["warning", "warning"]
    assert shadowed[0].message == (
        "case '1': 'expectations' is not read: 'assertions' is given too and wins; move what it holds into 'assertions' and drop 'expectations'"
    )
    assert "case '3': 'question' is not read: 'prompt' is given too" in shadowed[1].message


def test_query_is_the_prompt_and_object_assertions_give_their_text() -> None:
    cases = {case.id: case for case in load_dataset(FORMATS / "agent-skill-eval" / "evals.json").cases}
    assert cases["implicit"].prompt == "Ship this change for review."
    assert cases["explicit"].assertions == ["A new git branch was created", "pushed: The branch was pushed"]


def test_an_assertion_object_without_text_names_the_field_and_what_it_needs(tmp_path: Path) -> None:
    data = {"skill_name": "s", "evals": [{"id": "a", "prompt": "p", "expected_output": "e", "assertions": [{"x": 1}]}]}
    with pytest.raises(DatasetError) as caught:
        parse_dataset(tmp_path / "evals.json", json.dumps(data))
    assert "field 'assertions'" in str(caught.value) and "'text'" in str(caught.value)


def test_forced_invocation_names_the_skill_in_the_with_skill_arm_only(tmp_path: Path) -> None:
    entry = load_dataset(FORMATS / "agent-skill-eval" / "evals.json").cases[0].entry_json()
    assert arm_prompt(entry, "with_skill", "commit-push") == (
        "Use the $commit-push skill. Commit the staged change and push it."
    )
    assert arm_prompt(entry, "without_skill", "commit-push") == "Commit the staged change and push it."
    skill = _skill(tmp_path, FORMATS / "agent-skill-eval", "commit-push")
    for arm in ("with_skill", "without_skill"):
        spec = TrialSpec(
            skill_dir=skill, skill_name="commit-push", case_id="explicit", source="dataset", entry=entry,
            agent="replay", arm=arm, attempt=1,
        )  # fmt: skip
        task = stage_dataset_task(spec, tmp_path / f"task-{arm}", "default", None)
        assert (task / "instruction.md").read_text() == arm_prompt(entry, arm, "commit-push") + "\n"


def test_forced_invocation_on_a_negative_control_is_refused(tmp_path: Path) -> None:
    row = {"id": "n", "prompt": "p", "expected_output": "e", "should_trigger": False, "force_skill_invocation": True}
    with pytest.raises(DatasetError) as caught:
        parse_dataset(tmp_path / "evals.json", json.dumps({"skill_name": "s", "evals": [row]}))
    assert "force_skill_invocation" in str(caught.value) and "negative control" in str(caught.value)


def test_validate_warns_on_keys_not_applied_and_positive_negatives(tmp_path: Path) -> None:
    report = validate_skill(_skill(tmp_path, FORMATS / "agent-skill-eval", "commit-push"))
    foreign = sorted(f.message.split(": ")[1] for f in report.findings if f.rule == "foreign-key-not-applied")
    assert foreign == ["'side_effect_level'", "'stage_files'", "'tool_assertions'"]
    negatives = [f.message for f in report.findings if f.rule == "negative-positive-assertions"]
    assert len(negatives) == 1 and "case 'negative'" in negatives[0]
    assert "'A new git branch was created'" in negatives[0] and "No commit was pushed" not in negatives[0]
    assert all(f.severity == "warning" for f in report.findings if f.rule in {"foreign-key-not-applied"})


def test_agent_crucible_suite_is_named_with_its_docs_section(tmp_path: Path) -> None:
    skill = _skill(tmp_path, FORMATS / "agent-crucible")
    with pytest.raises(DatasetError) as caught:
        load_dataset(skill / "evals" / "evals.yaml")
    assert "agent-crucible suite" in str(caught.value) and "docs/datasets.md#from-agent-crucible" in str(caught.value)
    (skill / "evals" / "evals.yaml").unlink()  # evals.yaml is optional there: the task files alone say it
    assert "docs/datasets.md#from-agent-crucible" in no_skill_reason(skill)
    assert any("#from-agent-crucible" in f.message for f in validate_skill(skill).findings)


def test_agent_exam_layout_is_named_with_its_docs_section(tmp_path: Path) -> None:
    skill = _skill(tmp_path, FORMATS / "agent-exam")
    with pytest.raises(ConfigError) as caught:
        load_config(skill / "evals")
    assert "agent-exam layout" in str(caught.value) and "docs/datasets.md#from-agent-exam" in str(caught.value)
    (skill / "evals" / "config.yaml").unlink()
    assert "docs/datasets.md#from-agent-exam" in no_skill_reason(skill)


def test_a_skill_creator_skill_collects_in_a_run(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("csv-summary")
    shutil.copy2(FORMATS / "skill-creator" / "evals.json", skill / "evals" / "evals.json")
    result = skill_project.run("--collect-only", "-q", "--agents", "replay", "--env-mode", "local", subprocess=False)
    ids = [line for line in result.outlines if "evals.json::" in line]
    assert len(ids) == 4 and any("::1[replay-with_skill-1]" in line for line in ids), result.outlines


def test_entry_json_keeps_force_skill_invocation_only_as_authored() -> None:
    cases = {case.id: case for case in load_dataset(FORMATS / "agent-skill-eval" / "evals.json").cases}
    assert cases["explicit"].entry_json()["force_skill_invocation"] is True
    assert "force_skill_invocation" not in cases["implicit"].entry_json()


def test_agent_skill_eval_trigger_set_is_named_with_the_copy_that_makes_it_ours(
    tmp_path: Path, skill_project: SkillProject
) -> None:
    """evals/eval_queries.json (agent-skill-eval's trigger set) is not read under that name: validate warns beside the
    cases that do run, and a skill with nothing else says so where it says nothing would run; the copy the line
    gives is a trigger set a run reads."""
    skill = _skill(tmp_path, FORMATS / "agent-skill-eval", "commit-push")
    queries, ours = skill / "evals" / "eval_queries.json", skill / "evals" / "triggers.json"
    [warning] = [f for f in validate_skill(skill).findings if f.rule == "trigger-set-not-read"]
    assert warning.severity == "warning" and f"cp {queries} {ours}" in warning.message

    (skill / "evals" / "evals.json").unlink()  # nothing else to run: the run's one line and validate's error name it
    target = skill_project.root / "commit-push"
    shutil.copytree(skill, target)
    result = skill_project.run("--collect-only", "-q", "commit-push", subprocess=False)
    said = " ".join(result.stdout.str().split())
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"nothing to run; {target / 'evals' / 'eval_queries.json'} is agent-skill-eval's trigger set" in said
    [error] = [f for f in validate_skill(skill).findings if f.rule == "no-evals"]
    assert f"cp {queries} {ours}" in error.message

    shutil.copy2(queries, ours)  # as the line says
    assert len(load_trigger_set(ours).queries) == 3
    assert not [f for f in validate_skill(skill).findings if f.rule in {"no-evals", "trigger-set-not-read"}]


@pytest.mark.parametrize("name", ["evals.json", "evals.jsonl", "evals.yaml"])
def test_a_byte_order_mark_before_a_dataset_is_dropped(tmp_path: Path, name: str) -> None:
    """Some Windows editors start a UTF-8 file with a byte order mark; the dataset reads as without it."""
    entries = [{"id": "c1", "prompt": "say hi", "expected_output": "hi"}]
    texts = {
        "evals.json": json.dumps({"skill_name": "demo", "evals": entries}),
        "evals.jsonl": "\n".join(json.dumps(entry) for entry in entries),
        "evals.yaml": "skill_name: demo\nevals:\n  - id: c1\n    prompt: say hi\n    expected_output: hi\n",
    }
    plain, marked = tmp_path / "plain" / name, tmp_path / "marked" / name
    for path, prefix in ((plain, b""), (marked, b"\xef\xbb\xbf")):
        path.parent.mkdir()
        path.write_bytes(prefix + texts[name].encode())
    with_mark, without = load_dataset(marked), load_dataset(plain)
    assert [case.id for case in with_mark.cases] == ["c1"]
    assert with_mark.cases == without.cases and with_mark.digest == without.digest
