"""SKILL.md's front matter against the Agent Skills rules (agentskills.io/specification): what validate reports,
what a run warns about, and what `skilleval init` writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilleval.authoring.cli import main
from pytest_skilleval.authoring.description_proposer import description_of, front_matter, with_description
from pytest_skilleval.authoring.validate import validate_skill
from pytest_skilleval.skill.skill_md import front_matter_problems, missing_front_matter
from pytest_skilleval.skill.skill_names import name_mismatch, skill_md_name
from tests.support import HELLO_SKILL


def skill(tmp_path: Path, text: str, folder: str = "demo") -> Path:
    path = tmp_path / folder
    path.mkdir()
    (path / "SKILL.md").write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "rules"),
    [
        ("# demo\nNo front matter at all.\n", ["skill-md-front-matter"]),
        ("---\nname: demo\ndescription: [unclosed\n---\n", ["skill-md-front-matter"]),
        ("---\nname: demo\ndescription: Use it: always\n---\n", ["skill-md-front-matter"]),
        ("---\n- a list\n---\n", ["skill-md-front-matter"]),
        ("---\nname: demo\ndescription: \"\"\n---\n", ["skill-md-description"]),
        ("---\nname: demo\n---\n", ["skill-md-description"]),
        ("---\ndescription: Greets.\n---\n", ["skill-md-name"]),
        ("---\n---\n", ["skill-md-name", "skill-md-description"]),
    ],
)
def test_what_no_agent_gets_past_is_fatal(tmp_path: Path, text: str, rules: list[str]) -> None:
    problems = front_matter_problems(skill(tmp_path, text))
    assert [p.rule for p in problems] == rules and all(p.fatal for p in problems)


@pytest.mark.parametrize(
    ("text", "folder", "needle"),
    [
        ("---\nname: Demo_Skill\ndescription: Greets.\n---\n", "Demo_Skill", "lowercase letters, digits and hyphens"),
        (f"---\nname: {'a' * 65}\ndescription: Greets.\n---\n", "a" * 65, "65 characters long"),
        ("---\nname: other\ndescription: Greets.\n---\n", "demo", "is not its folder's name 'demo'"),
        (f"---\nname: demo\ndescription: {'d' * 1025}\n---\n", "demo", "1025 characters long"),
    ],
)
def test_a_rule_some_agents_enforce_is_not_fatal(tmp_path: Path, text: str, folder: str, needle: str) -> None:
    [problem] = front_matter_problems(skill(tmp_path, text, folder))
    assert not problem.fatal and needle in problem.message


@pytest.mark.parametrize(
    "text",
    [
        "---\nname: demo\ndescription: Greets people by name.\n---\n# demo\n",
        "---\nname: demo\ndescription: >\n  Greets people\n  by name.\n---\n",
        "---\nname: demo\ndescription:\n  Greets people by name.\n---\n",
        "\ufeff---\nname: 'demo'\ndescription: \"Greets: by name\"  # quoted\n---\n",
        "---\r\nname: demo\r\ndescription: Greets people by name.\r\n---\r\n# demo\r\n",  # a Windows editor's
    ],
)
def test_front_matter_that_keeps_the_rules_has_no_problem(tmp_path: Path, text: str) -> None:
    folder = skill(tmp_path, text)
    assert front_matter_problems(folder) == [] and missing_front_matter(folder) == []


def test_the_collection_check_sees_the_fatal_ones_without_yaml(tmp_path: Path) -> None:
    assert [p.rule for p in missing_front_matter(skill(tmp_path, "# demo\n"))] == ["skill-md-front-matter"]
    empty = skill(tmp_path, "---\nname: demo\ndescription: ''\n---\n", "other")
    assert [p.rule for p in missing_front_matter(empty)] == ["skill-md-description"]


def test_examples_and_shipped_skills_keep_the_rules() -> None:
    repo = HELLO_SKILL.parents[1]
    for skill_md in [*repo.glob("examples/*/SKILL.md"), *repo.glob("skills/*/SKILL.md")]:
        assert front_matter_problems(skill_md.parent) == [], skill_md


@pytest.mark.parametrize(
    ("text", "severity"),
    [("# demo\n", "error"), ("---\nname: demo\ndescription: ''\n---\n", "error"), ("---\nname: x\n", "error")],
)
def test_validate_reports_them_by_severity(tmp_path: Path, text: str, severity: str) -> None:
    folder = skill(tmp_path, text)
    report = validate_skill(folder)
    found = [f for f in report.findings if f.rule.startswith("skill-md-")]
    assert found and {f.severity for f in found} == {severity} and not report.ok()
    assert found[0].path == folder.resolve() / "SKILL.md"


def test_validate_warns_on_a_name_off_the_rules_and_fails_only_when_strict(tmp_path: Path) -> None:
    folder = skill(tmp_path, "---\nname: other\ndescription: Greets.\n---\n")
    report = validate_skill(folder)
    assert [(f.rule, f.severity) for f in report.findings if f.rule.startswith("skill-md-")] == [
        ("skill-md-name", "warning")
    ]
    assert not report.ok(strict=True)


@pytest.mark.parametrize("description", ["Use it: always", "- a dash first", "Ends with a colon:", "Say #1 only"])
def test_init_writes_a_description_yaml_reads_back(tmp_path: Path, description: str) -> None:
    import yaml

    assert main(["init", str(tmp_path / "x"), "--description", description]) == 0
    folder = tmp_path / "x"
    assert front_matter_problems(folder) == []
    text = (folder / "SKILL.md").read_text()
    assert yaml.safe_load(text.split("---")[1])["description"] == description


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_every_reader_of_the_front_matter_reads_it_one_way(tmp_path: Path, ending: str, bom: str) -> None:
    """Collection's name check, validate's rules and optimize-description's proposer read SKILL.md through one reader
    (skill/skill_md.py): a Windows editor's line endings and byte-order mark are front matter for each of them."""
    lines = ["---", "name: 'greeter'  # quoted", "description: >", "  Greets people", "  by name.", "---", "# body", ""]
    text = bom + ending.join(lines)
    folder = skill(tmp_path, text, "greeter")
    assert front_matter_problems(folder) == [] and missing_front_matter(folder) == []
    assert skill_md_name(folder) == "greeter"
    renamed = folder.rename(tmp_path / "other")  # the folder and the declared name disagree: the line names both
    assert "(folder 'other', SKILL.md name 'greeter')" in (name_mismatch(renamed, "greeter") or "")

    assert description_of(text) == "Greets people by name."
    edited = with_description(text, "Greets anyone.")
    assert description_of(edited) == "Greets anyone." and edited.startswith(bom + "---" + ending)
    assert edited.endswith(ending.join(["---", "# body", ""]))
    assert edited.count("\n") == edited.count(ending)  # the new line keeps the file's line ending
    assert front_matter(edited)[2] == "# body" + ending
