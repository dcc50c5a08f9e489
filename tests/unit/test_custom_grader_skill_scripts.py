"""The create-custom-grader skill's helper scripts: benchmark_to_evals.py and check_grader.py.

The scripts ship inside the skill (they run in an agent's sandbox without pytest-skilleval), so they are loaded from
their files here. Their verdicts are checked against the plugin's own dataset loader and reward sanitizer.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_skilleval.authoring.validate_command import run_validate_command
from pytest_skilleval.skill.dataset import load_dataset
from tests.support import REPO
from verifier.custom import sanitize_custom_reward

SKILL = REPO / "skills" / "create-custom-grader"
CASE_FILES = SKILL / "evals" / "files"
REPLAYS = SKILL / "evals" / "replays"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"ccg_{name}", SKILL / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


b2e = _load("benchmark_to_evals")
checker = _load("check_grader")


def _target_skill(tmp_path: Path, case: str, skill: str) -> tuple[Path, Path]:
    """A copy of one eval case's input folder: (target skill, case folder)."""
    case_dir = tmp_path / case
    shutil.copytree(CASE_FILES / case, case_dir)
    return case_dir / skill, case_dir


# ---- benchmark_to_evals.py ---------------------------------------------------------------------------------------


def test_task_json_with_rubric_becomes_entries_the_plugin_loads(tmp_path: Path) -> None:
    skill, case = _target_skill(tmp_path, "rubric-task-json", "word-count")
    dataset, notes = b2e.convert(case / "benchmark" / "task.json", skill)
    (entry,) = dataset["evals"]
    assert entry["id"] == "short-poem"
    assert entry["files"] == ["files/short-poem"]
    assert entry["expected_skill"] == "word-count"
    assert entry["rubric"][0]["equals"] == 12 and entry["tags"] == ["smoke"]
    assert entry["expected_output"].startswith("Meets the rubric: count.json reports 12 words")
    assert entry["assertions"] == ["count.json reports 12 words", "count.json reports 3 lines"]
    assert (skill / "evals" / "files" / "short-poem" / "poem.txt").read_text().count("\n") == 3
    assert any("/workspace/input/short-poem/poem.txt" in note for note in notes)
    loaded = load_dataset(skill / "evals" / "evals.json")
    assert [case.id for case in loaded.cases] == ["short-poem"]


def test_unmapped_fields_are_listed_and_keep_preserves_them(tmp_path: Path) -> None:
    skill, case = _target_skill(tmp_path, "pytest-check", "slugify")
    _, notes = b2e.convert(case / "benchmark" / "task.json", skill, dry_run=True)
    assert any("'verifier' not mapped" in note for note in notes)
    assert not (skill / "evals").exists(), "--dry-run wrote files"
    dataset, notes = b2e.convert(case / "benchmark" / "task.json", skill, keep=("verifier",))
    assert dataset["evals"][0]["verifier"] == "tests/test_slug.py"
    assert not any("verifier" in note for note in notes)


def test_yaml_benchmark_list_with_negative_case_and_no_fixtures(tmp_path: Path) -> None:
    skill = tmp_path / "demo"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: demo\n---\n")
    bench = tmp_path / "task.yaml"
    bench.write_text(
        "- {task_id: t1, question: Do it, answer: done}\n"
        "- {task_id: t2, question: Unrelated, answer: no skill, should_trigger: false}\n"
    )
    dataset, _ = b2e.convert(bench, skill)
    assert [(e["id"], e["expected_skill"], e["files"]) for e in dataset["evals"]] == [
        ("t1", "demo", []),
        ("t2", None, []),
    ]
    assert [case.is_negative for case in load_dataset(skill / "evals" / "evals.json").cases] == [False, True]


def test_merges_into_an_existing_dataset_and_refuses_a_taken_id_without_force(tmp_path: Path) -> None:
    skill, case = _target_skill(tmp_path, "rubric-task-json", "word-count")
    (skill / "evals").mkdir()
    old = {"id": "Short-Poem", "prompt": "old", "expected_output": "old", "files": []}
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "word-count", "evals": [old]}))
    with pytest.raises(b2e.BenchmarkError, match="'short-poem' already exists"):
        b2e.convert(case / "benchmark" / "task.json", skill)
    dataset, _ = b2e.convert(case / "benchmark" / "task.json", skill, force=True)
    assert [e["id"] for e in dataset["evals"]] == ["short-poem"]


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"id": "a"}, r"case 0 \(id 'a'\): field 'prompt': missing"),
        ({"id": "a", "prompt": "p"}, r"field 'expected_output': missing"),
        ({"id": "bad id", "prompt": "p", "expected": "e"}, r"field 'id': 'bad id' is not a valid case id"),
        ({"id": "con.x", "prompt": "p", "expected": "e"}, r"Windows device name"),
        ({"id": "a", "prompt": "p", "expected": "e", "fixtures": ["../x"]}, r"field 'files'.*relative"),
        ({"id": "a", "prompt": "p", "expected": "e", "fixtures": ["nope.txt"]}, r"'nope.txt' does not exist"),
    ],
)
def test_bad_cases_name_the_file_case_and_field(tmp_path: Path, task: dict[str, Any], message: str) -> None:
    skill = tmp_path / "demo"
    skill.mkdir()
    (skill / "SKILL.md").write_text("x")
    bench = tmp_path / "task.json"
    bench.write_text(json.dumps({"tasks": [task]}))
    with pytest.raises(b2e.BenchmarkError, match=message):
        b2e.convert(bench, skill)
    assert not (skill / "evals").exists()


def test_main_exit_codes_and_legacy_dataset_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill, case = _target_skill(tmp_path, "shell-verifier", "release-notes")
    bench = str(case / "benchmark" / "task.json")
    (skill / "evals").mkdir()
    (skill / "evals" / "evals.json").write_text("[]")
    assert b2e.main([bench, str(skill)]) == 1
    assert "not the agentskills shape" in capsys.readouterr().err
    (skill / "evals" / "evals.json").unlink()
    assert b2e.main([bench, str(skill)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert b2e.main([bench, str(tmp_path)]) == 1
    assert "no SKILL.md" in capsys.readouterr().err


# ---- check_grader.py ---------------------------------------------------------------------------------------------

REWARDS = [
    {"overall": 0.5, "custom_metrics": {"rubric_words": 1.0}},
    {"overall": 0.5, "accuracy": 1.0},
    {"custom_metrics": {"overall": 1.0}},
    {"metrics": {"skill_execution": 0.5}},
    {"custom_metrics": [1.0]},
    {"custom_metrics": {"a": 1.2, "b": True, "c": "0.5", "d": 0.25}},
    {"custom_metrics": {"a": 1.0, " a ": 0.0}},
    {"custom_metrics": {"a": 1.0}, "metrics": {"a": 0.0}, "a": 0.5, "note": "text"},
    {"custom_metrics": {"": 1.0}},
    {"custom_metrics": {f"m{i}": 0.5 for i in range(129)}},
    {"entry_id": "x", "_private": 2, "overall": 1.0},
]


@pytest.mark.parametrize("reward", REWARDS, ids=range(len(REWARDS)))
def test_reward_rules_agree_with_the_plugin_sanitizer(reward: dict[str, Any]) -> None:
    problems, kept, _ = checker.reward_problems(reward)
    plugin = sanitize_custom_reward(reward, "default_plus_custom")
    assert (not problems) == plugin.ok, (problems, plugin.errors)
    if plugin.ok:
        assert kept == plugin.custom_metrics


def _replay_grader(case: str, arm: str) -> tuple[str, str]:
    """(file name, text) of the grader a replay writes with a `cat > .../evals/grader.* <<'GRADER'` command."""
    replay = json.loads((REPLAYS / f"{case}.{arm}.json").read_text())
    for step in replay["steps"]:
        for call in step.get("tool_calls") or []:
            found = re.search(
                r"/evals/(grader\.(?:py|sh)) <<'GRADER'\n(.*?)GRADER", call["arguments"].get("command", ""), re.S
            )
            if found:
                return found.group(1), found.group(2)
    raise AssertionError(f"{case}.{arm}: no grader written")


def _with_replay_outputs(tmp_path: Path, case: str, skill: str, mode: str, arm: str = "with-skill") -> Path:
    """The target skill as the replay leaves it: mapped dataset, the grader it writes, config.yml."""
    target, folder = _target_skill(tmp_path, case, skill)
    b2e.convert(folder / "benchmark" / "task.json", target)
    name, text = _replay_grader(case, arm)
    (target / "evals" / name).write_text(text)
    (target / "evals" / "config.yml").write_text(f"schema_version: 1\ngrading:\n  mode: {mode}\n")
    return target


POSITIVE = [
    ("rubric-task-json", "word-count", "short-poem", "default_plus_custom"),
    ("pytest-check", "slugify", "title-slug", "custom_only"),
    ("shell-verifier", "release-notes", "notes-1-2", "default_plus_custom"),
]


@pytest.mark.parametrize(("case", "skill", "bench_case", "mode"), POSITIVE)
def test_with_skill_graders_pass_good_fail_bad_and_validate_strict(
    tmp_path: Path, case: str, skill: str, bench_case: str, mode: str
) -> None:
    """What the with-skill replays author is exactly what the eval grader rewards, and skilleval agrees."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    target = _with_replay_outputs(tmp_path, case, skill, mode)
    good = checker.check(target, tmp_path / case / "checks" / "good", bench_case, expect="pass")
    bad = checker.check(target, tmp_path / case / "checks" / "bad", bench_case, expect="fail")
    assert good["ok"] and good["overall"] == 1.0, good
    assert bad["ok"] and bad["overall"] < 0.5, bad
    assert good["details"], "the grader gives no reasons"
    assert run_validate_command([str(target), "--harbor-contract", "--strict"]) == 0


def test_baseline_graders_break_the_contract_or_do_not_discriminate(tmp_path: Path) -> None:
    rubric = _with_replay_outputs(
        tmp_path / "a", "rubric-task-json", "word-count", "default_plus_custom", "without-skill"
    )
    report = checker.check(rubric, tmp_path / "a" / "rubric-task-json" / "checks" / "good", "short-poem")
    assert not report["ok"] and any("'accuracy'" in p for p in report["problems"])
    slug = _with_replay_outputs(tmp_path / "b", "pytest-check", "slugify", "custom_only", "without-skill")
    report = checker.check(slug, tmp_path / "b" / "pytest-check" / "checks" / "bad", "title-slug", expect="fail")
    assert not report["ok"] and "expected the grader to fail" in report["problems"][0]
    shell = _with_replay_outputs(
        tmp_path / "c", "shell-verifier", "release-notes", "default_plus_custom", "without-skill"
    )
    report = checker.check(shell, tmp_path / "c" / "shell-verifier" / "checks" / "good", "notes-1-2")
    assert not report["ok"] and any("neither" in p for p in report["problems"])


def test_check_reports_crashes_missing_graders_and_symlinks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill = tmp_path / "demo"
    (skill / "evals").mkdir(parents=True)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert "no grader.py or grader.sh" in checker.check(skill, workspace)["problems"][0]
    (skill / "evals" / "grader.py").write_text("raise SystemExit(3)\n")
    assert checker.check(skill, workspace)["problems"][0] == "the grader exited with 3"
    (skill / "evals" / "grader.py").unlink()
    (tmp_path / "real.py").write_text("")
    (skill / "evals" / "grader.py").symlink_to(tmp_path / "real.py")
    assert "not a symlink" in checker.check(skill, workspace)["problems"][0]
    (skill / "evals" / "grader.py").unlink()
    (skill / "evals" / "grader.py").write_text(
        "import json, os\nopen(os.environ['HARBOR_REWARD_JSON'], 'w').write(json.dumps({'custom_metrics': {}}))\n"
    )
    (skill / "evals" / "config.yml").write_text("schema_version: 1\ngrading:\n  mode: custom_only  # owner\n")
    assert checker.main([str(skill), "--workspace", str(workspace)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["problems"] == [
        "no usable overall (reward.json 'overall' or reward.txt); custom_only would leave the trial unscored"
    ]


def test_replays_match_their_generator_and_the_current_skill_md(tmp_path: Path) -> None:
    """The with-skill replays record SKILL.md as read; editing it (or a replay by hand) needs a regeneration."""
    spec = importlib.util.spec_from_file_location("make_replays", REPO / "scripts" / "make_custom_grader_replays.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.main([str(tmp_path)]) == 0
    fresh = {p.name: p.read_text() for p in tmp_path.glob("*.json")}
    committed = {p.name: p.read_text() for p in REPLAYS.glob("*.json")}
    assert fresh == committed, "run: python3 scripts/make_custom_grader_replays.py"


def test_the_skill_and_its_own_evals_validate_strict() -> None:
    assert run_validate_command([str(SKILL), "--harbor-contract", "--strict"]) == 0
