"""The README's walkthrough and CI example stay true: the demo command is the Makefile's, the item count is the
demo skill's, and the GitHub Actions example parses, gates on the verdict and uploads report.html."""

from __future__ import annotations

import contextlib
import json
import re
import shlex

import pytest
import yaml

from tests.support import HELLO_SKILL, REPO

README = (REPO / "README.md").read_text()


def _demo_recipe() -> list[str]:
    makefile = (REPO / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n\t(.+)$", makefile, re.M)
    assert recipe, "Makefile has no demo recipe"
    return [
        word
        for word in shlex.split(recipe.group(1).replace("$(VENV)", ".venv"))
        if word != "-p" and word != "no:cacheprovider"
    ]


def test_the_walkthrough_runs_what_make_demo_runs() -> None:
    shown = re.search(r"`make demo` runs\s+`([^`]+)`", README)
    assert shown, "README no longer says what make demo runs"
    assert shlex.split(shown.group(1)) == _demo_recipe()


def test_the_walkthrough_counts_the_demo_items() -> None:
    cases = len(json.loads((HELLO_SKILL / "evals" / "evals.json").read_text())["evals"])
    queries = len(json.loads((HELLO_SKILL / "evals" / "triggers.json").read_text()))
    attempts = int(_demo_recipe()[_demo_recipe().index("--n-attempts") + 1])
    trials, triggers = cases * 2 * attempts, queries * attempts
    assert (
        f"You see {trials + triggers} items: {trials} eval trials ({cases} cases x 2 arms x {attempts} attempts) and "
        f"{triggers} trigger trials (the {queries} queries of `evals/triggers.json` x {attempts} attempts"
    ) in " ".join(README.split())


def test_the_venv_note_names_the_error_and_the_way_out() -> None:
    text = " ".join(README.split())
    assert "unrecognized arguments: --skill-eval" in text
    assert ".venv/bin/activate" in text and ".venv/bin/pytest" in text


def test_the_github_actions_example_gates_and_uploads_the_report() -> None:
    block = re.search(r"```yaml\n(.*?)```", README, re.S)
    assert block, "README has no GitHub Actions example"
    workflow = yaml.safe_load(block.group(1))
    steps = workflow["jobs"]["skilleval"]["steps"]
    run = next(step["run"] for step in steps if "--skill-eval" in step.get("run", ""))
    assert "--block-on-agent-eval" in run
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()" and "report.html" in upload["with"]["path"]


def test_the_library_job_runs_changed_skills_with_a_cost_limit() -> None:
    from pytest_skilleval.options import OPTION_SPECS

    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", README, re.S).group(1))  # type: ignore[union-attr]
    steps = workflow["jobs"]["library"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    run = next(step["run"] for step in steps if "--skill-eval" in step.get("run", ""))
    flags = {spec.flag for spec in OPTION_SPECS}
    assert {"--changed-since", "--max-cost"} <= flags
    assert "--changed-since origin/main" in run and "--max-cost 20" in run


def test_the_skilleval_command_block_uses_only_options_each_command_lists(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each `skilleval SUB ...` line of the README names only options that `skilleval SUB --help` shows (not an
    earlier spelling kept hidden for old scripts)."""
    from pytest_skilleval.authoring.cli import main

    block = README[README.index("## The `skilleval` command") :].split("```")[1]
    lines = [line.split("#")[0] for line in block.splitlines() if line.startswith("skilleval ")]
    assert len(lines) >= 10, block
    for line in lines:
        command = line.split()[1]
        with contextlib.suppress(SystemExit):  # argparse's exit after --help, where the command lets it through
            main([command, "--help"])
        shown = capsys.readouterr().out
        assert "usage:" in shown, (command, shown)
        for flag in re.findall(r"--[a-z][a-z-]*", line):
            listed = re.search(re.escape(flag) + r"(?![a-z-])", shown)  # --arm is not --arms
            assert listed, f"README: `{line.strip()}`: {flag} is not in `skilleval {command} --help`"
