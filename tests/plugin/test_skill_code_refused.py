"""No skill code on the host: a conftest.py or a pytest config file inside a skill folder stops the run before pytest
loads it, with one line naming the file and `--trust-skill-code`; nothing else a skill ships is imported by
collection. Every hostile file writes a marker file when it runs; the tests look for the marker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import HELLO_SKILL, LOCAL_REPLAY, REPO, SkillProject, simple_entries

WAY_OUT = "or pass --trust-skill-code (runs the skill's code on this machine)"
NOBODY = 65534


def writes_marker(marker: Path) -> str:
    return f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"


@pytest.fixture
def marks(skill_project: SkillProject) -> Path:
    """Where hostile files leave their markers: writable by anyone, so a run as an unprivileged user could too."""
    folder = skill_project.root / "marks"
    folder.mkdir()
    folder.chmod(0o777)
    return folder


def skill_with_conftest(project: SkillProject, marks: Path, place: str) -> Path:
    skill = project.make_skill("hostile", simple_entries("one"))
    (skill / place).write_text(writes_marker(marks / "conftest"))
    return skill


def refusal_line(result: pytest.RunResult | subprocess.CompletedProcess[str]) -> str:
    """The one line the refusal prints (pytest writes usage errors to stderr as `ERROR: ...`)."""
    err = result.stderr.str() if isinstance(result, pytest.RunResult) else result.stderr
    lines = [line for line in err.splitlines() if line.startswith("ERROR: skilleval: ")]
    assert len(lines) == 1, err
    return lines[0]


# --- conftest.py in the skill --------------------------------------------------------------------------------------


RUNS = {
    "run": lambda skill: [str(skill), *LOCAL_REPLAY],
    "collect-only": lambda skill: [str(skill), "--collect-only", *LOCAL_REPLAY],
    "docker": lambda skill: [str(skill), "--agents", "replay", "--env-mode", "docker"],
    "parent folder": lambda skill: [str(skill.parent), *LOCAL_REPLAY],
}


@pytest.mark.parametrize("how", list(RUNS))
@pytest.mark.parametrize("place", ["conftest.py", "evals/conftest.py"])
def test_a_skill_conftest_never_runs(skill_project: SkillProject, marks: Path, place: str, how: str) -> None:
    skill = skill_with_conftest(skill_project, marks, place)
    result = skill_project.run(*RUNS[how](skill))
    assert not (marks / "conftest").exists()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    line = refusal_line(result)
    assert f"{skill / place} lies in the skill folder {skill}: pytest would import it on this machine" in line
    assert line.endswith(WAY_OUT)
    assert not (skill_project.root / "results").exists()


def test_a_conftest_deep_in_the_skill_is_named_too(skill_project: SkillProject, marks: Path) -> None:
    skill = skill_project.make_skill("hostile", simple_entries("one"))
    (skill / "scripts" / "tests").mkdir(parents=True)
    (skill / "scripts" / "tests" / "conftest.py").write_text(writes_marker(marks / "conftest"))
    # a command-line path inside the skill: pytest would import the conftest of every folder on the way
    result = skill_project.run(str(skill / "scripts" / "tests"), *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (marks / "conftest").exists()
    assert f"{skill / 'scripts' / 'tests' / 'conftest.py'} lies in the skill folder {skill}" in refusal_line(result)


def test_a_conftest_behind_a_linked_task_folder_is_named(skill_project: SkillProject, marks: Path) -> None:
    """pytest enters a linked folder; a walk of the skill that does not follow links would miss its conftest."""
    skill = skill_project.make_skill("hostile", simple_entries("one"))
    elsewhere = skill_project.root / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "conftest.py").write_text(writes_marker(marks / "conftest"))
    (skill / "evals" / "harbor").mkdir()
    (skill / "evals" / "harbor" / "linked").symlink_to(elsewhere, target_is_directory=True)
    result = skill_project.run(str(skill), "--collect-only", *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (marks / "conftest").exists()
    assert f"{skill / 'evals' / 'harbor' / 'linked' / 'conftest.py'} lies in the skill folder" in refusal_line(result)


def test_trusting_the_skill_runs_its_conftest(skill_project: SkillProject, marks: Path) -> None:
    skill = skill_with_conftest(skill_project, marks, "evals/conftest.py")
    result = skill_project.run(str(skill), "--trust-skill-code", "--collect-only", *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.OK
    assert (marks / "conftest").read_text() == "ran"
    result.stdout.fnmatch_lines(["*2 tests collected*"])


def test_the_skill_cannot_trust_itself(
    skill_project: SkillProject, marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the typed command line counts: not the skill's own addopts, not PYTEST_ADDOPTS."""
    skill = skill_with_conftest(skill_project, marks, "conftest.py")
    (skill / "pytest.ini").write_text("[pytest]\naddopts = --trust-skill-code\n")
    result = skill_project.run(str(skill), *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{skill / 'pytest.ini'} is pytest's config file for this run" in refusal_line(result)
    (skill / "pytest.ini").unlink()
    monkeypatch.setenv("PYTEST_ADDOPTS", "--trust-skill-code")
    result = skill_project.run(str(skill), *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{skill / 'conftest.py'} lies in the skill folder" in refusal_line(result)
    assert not (marks / "conftest").exists()


# --- a pytest config file in the skill -----------------------------------------------------------------------------

SANDBOX_OFF = {
    "pytest.ini": "[pytest]\nskilleval_ek = sandbox=none\n",
    "pyproject.toml": '[tool.pytest.ini_options]\nskilleval_ek = "sandbox=none"\n',
    "tox.ini": "[pytest]\nskilleval_ek = sandbox=none\n",
    "setup.cfg": "[tool:pytest]\nskilleval_ek = sandbox=none\n",
}


@pytest.mark.parametrize("name", list(SANDBOX_OFF))
def test_a_skill_config_file_cannot_turn_the_sandbox_off(skill_project: SkillProject, name: str) -> None:
    skill = skill_project.make_skill("hostile", simple_entries("one"))
    (skill / name).write_text(SANDBOX_OFF[name])
    result = skill_project.run(str(skill), *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    line = refusal_line(result)
    assert f"{skill / name} is pytest's config file for this run and lies in the skill folder {skill}" in line
    assert line.endswith(WAY_OUT)
    assert not (skill_project.root / "results").exists()


# A pytest config file inside the skill with a setting that weakens nothing.
HARMLESS_INI = "[pytest]\nskilleval_n_attempts = 2\n"


def test_trusting_the_skill_applies_its_config_file(skill_project: SkillProject) -> None:
    """Trusted, the skill's config file applies; a setting that weakens isolation still comes only from the command
    line, whoever wrote the file."""
    skill = skill_project.make_skill("hostile", simple_entries("one"))
    (skill / "pytest.ini").write_text(HARMLESS_INI)
    result = skill_project.run(str(skill), "--trust-skill-code", "--skip-baseline", *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert skill_project.result_json("hostile")["run_config"]["n_attempts"] == 2
    (skill / "pytest.ini").write_text(SANDBOX_OFF["pytest.ini"])
    refused = skill_project.run(str(skill), "--trust-skill-code", "--skip-baseline", *LOCAL_REPLAY)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "skilleval_ek: --ek sandbox=none weakens isolation and is command line only" in refused.stderr.str()


def test_a_pyproject_without_pytest_settings_is_not_a_config_file(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("packaged", simple_entries("one"))
    (skill / "pyproject.toml").write_text('[project]\nname = "packaged"\n')
    result = skill_project.run(str(skill), "--collect-only", *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.stdout.fnmatch_lines(["*2 tests collected*"])


# A skill's config file that, applied, imports a module the skill ships: a `-p` plugin (pythonpath makes it
# importable) or a warning class its filterwarnings names. pytest does both before it loads any installed plugin.
PLUGIN_CONFIGS = {
    "pytest.ini": "[pytest]\npythonpath = .\naddopts = -p evilplug\n",
    "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\naddopts = "-p evilplug"\n',
    "tox.ini": "[pytest]\npythonpath = .\naddopts = -p evilplug\n",
    "setup.cfg": "[tool:pytest]\npythonpath = .\naddopts = -p evilplug\n",
}


def plugin_skill(project: SkillProject, marks: Path, name: str = "pytest.ini") -> Path:
    skill = project.make_skill("hostile", simple_entries("one"))
    (skill / name).write_text(PLUGIN_CONFIGS[name])
    (skill / "evilplug.py").write_text(writes_marker(marks / "evilplug"))
    return skill


def pytest_script() -> str:
    """The `pytest` console script of this environment: how a user starts it (`python -m pytest` is the other way)."""
    script = Path(sys.executable).parent / "pytest"
    assert script.is_file(), f"no pytest script beside {sys.executable}"
    return str(script)


def run_script(
    project: SkillProject, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [
        pytest_script(),
        "--skill-eval",
        "-p",
        "no:cacheprovider",
        "--results-dir",
        str(project.root / "results"),
    ]
    environ = {**os.environ, **(env or {})}
    return subprocess.run([*command, *args], cwd=project.root, env=environ, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", list(PLUGIN_CONFIGS))
def test_a_plugin_the_skill_config_names_never_runs(skill_project: SkillProject, marks: Path, name: str) -> None:
    """`pytest --skill-eval SKILL` from a shell: the refusal comes before pytest reads the skill's config file, so
    the plugin it names is never imported (pytest imports `-p` plugins before any installed plugin's hook runs)."""
    skill = plugin_skill(skill_project, marks, name)
    done = run_script(skill_project, str(skill), *LOCAL_REPLAY)
    assert not (marks / "evilplug").exists(), done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stderr
    line = refusal_line(done)
    assert f"{skill / name} is pytest's config file for this run and lies in the skill folder {skill}" in line
    assert line.endswith(WAY_OUT)
    assert not (skill_project.root / "results").exists()


def test_a_plugin_the_skill_config_names_never_runs_with_python_m(skill_project: SkillProject, marks: Path) -> None:
    """`python -m pytest` (pytester's subprocess run), --collect-only, and --skill-eval given in PYTEST_ADDOPTS."""
    skill = plugin_skill(skill_project, marks)
    result = skill_project.run(str(skill), "--collect-only", *LOCAL_REPLAY)
    assert not (marks / "evilplug").exists()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{skill / 'pytest.ini'} is pytest's config file for this run" in refusal_line(result)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(skill), "--collect-only", *LOCAL_REPLAY],
        cwd=skill_project.root,
        env={**os.environ, "PYTEST_ADDOPTS": "--skill-eval"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert not (marks / "evilplug").exists()
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stderr
    assert f"{skill / 'pytest.ini'} is pytest's config file for this run" in refusal_line(done)


def test_a_warning_class_the_skill_config_names_is_never_imported(skill_project: SkillProject, marks: Path) -> None:
    """pytest imports the classes `filterwarnings` names while it imports plugins, before any installed plugin."""
    skill = skill_project.make_skill("hostile", simple_entries("one"))
    (skill / "pytest.ini").write_text("[pytest]\npythonpath = .\nfilterwarnings = error::evilwarn.Evil\n")
    (skill / "evilwarn.py").write_text(writes_marker(marks / "evilwarn") + "class Evil(Warning):\n    pass\n")
    done = run_script(skill_project, str(skill), "--collect-only", *LOCAL_REPLAY)
    assert not (marks / "evilwarn").exists()
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stderr
    assert f"{skill / 'pytest.ini'} is pytest's config file for this run" in refusal_line(done)


def test_trusted_the_plugin_the_skill_config_names_runs(skill_project: SkillProject, marks: Path) -> None:
    """The control: typed on the command line, --trust-skill-code lets pytest load the skill's plugin."""
    skill = plugin_skill(skill_project, marks)
    done = run_script(skill_project, str(skill), "--trust-skill-code", "--collect-only", *LOCAL_REPLAY)
    assert done.returncode == pytest.ExitCode.OK, done.stderr
    assert (marks / "evilplug").read_text() == "ran"


def test_the_parent_folder_keeps_the_skill_config_file_out(skill_project: SkillProject, marks: Path) -> None:
    """Given the folder holding the skill, pytest never reads the skill's config file (it looks upwards only)."""
    skill = plugin_skill(skill_project, marks)
    result = skill_project.run(str(skill.parent), "--collect-only", *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert not (marks / "evilplug").exists()
    result.stdout.fnmatch_lines(["*2 tests collected*"])


# --- collection imports nothing a skill ships ----------------------------------------------------------------------


def test_a_run_imports_no_python_file_of_the_skill(skill_project: SkillProject, marks: Path) -> None:
    """Packages (__init__.py) and test-named modules of a skill were imported by pytest's Python collection."""
    skill = skill_project.make_skill("hostile", simple_entries("one"))
    (skill / "scripts").mkdir()
    (skill / "harbor-like" / "tests").mkdir(parents=True)
    planted = {
        "__init__.py": "root-init",
        "evals/__init__.py": "evals-init",
        "scripts/test_helper.py": "test-module",
        "evals/test_cases.py": "evals-test-module",
        "harbor-like/tests/test_outputs.py": "nested-test-module",
    }
    for place, marker in planted.items():
        (skill / place).write_text(writes_marker(marks / marker) + "def test_planted():\n    pass\n")
    result = skill_project.run(str(skill), "--skip-baseline", *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert sorted(path.name for path in marks.iterdir()) == []
    result.stdout.fnmatch_lines(["*1 passed*"])


# --- what the project ships still runs without the flag -------------------------------------------------------------


def test_the_demo_and_the_shipped_skill_need_no_trust(skill_project: SkillProject) -> None:
    """Collected where they live: the repository's own pyproject.toml and conftest.py lie outside any skill folder."""
    shipped = REPO / "skills" / "create-custom-grader"
    result = skill_project.run(str(HELLO_SKILL), str(shipped), "--collect-only", *LOCAL_REPLAY)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert "skilleval:" not in result.stderr.str()
    result.stdout.fnmatch_lines(
        ["*<Dir hello-skill>*", "*<SkillEvalItem *", "*<Dir create-custom-grader>*", "*<SkillEvalItem *"]
    )


# --- the same as an unprivileged user ------------------------------------------------------------------------------


def run_as_nobody(project: SkillProject, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest as uid/gid 65534 with no groups. It keeps one capability, CAP_DAC_READ_SEARCH, only so it can read the
    interpreter and this checkout wherever they are installed (here under root's home); it can write nothing root
    owns."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root (to switch to an unprivileged user) and setpriv")
    command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    command += ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    command += [sys.executable, "-m", "pytest", "--skill-eval", "-p", "no:cacheprovider", *args]
    env = {"PATH": os.environ["PATH"], "HOME": "/tmp", "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(command, cwd=project.root, env=env, capture_output=True, text=True, timeout=300)


def test_as_an_unprivileged_user_a_skill_conftest_never_runs(skill_project: SkillProject, marks: Path) -> None:
    skill = skill_with_conftest(skill_project, marks, "evals/conftest.py")
    done = run_as_nobody(skill_project, str(skill), "--collect-only", *LOCAL_REPLAY)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stderr
    assert f"{skill / 'evals' / 'conftest.py'} lies in the skill folder" in refusal_line(done)
    assert not (marks / "conftest").exists()
    # (bwrap refuses to start with the capability this user keeps; --collect-only starts no sandbox anyway)
    trusted = run_as_nobody(
        skill_project, str(skill), "--collect-only", "--trust-skill-code", "--ek", "sandbox=none", *LOCAL_REPLAY
    )
    assert trusted.returncode == pytest.ExitCode.OK, trusted.stderr
    assert (marks / "conftest").stat().st_uid == NOBODY  # it would have run, as this user


def test_as_an_unprivileged_user_a_skill_config_file_is_refused(skill_project: SkillProject) -> None:
    skill = skill_project.make_skill("hostile", simple_entries("one"))
    (skill / "tox.ini").write_text(HARMLESS_INI)  # refused for being the skill's, whatever it holds
    done = run_as_nobody(skill_project, str(skill), "--collect-only", *LOCAL_REPLAY)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stderr
    assert f"{skill / 'tox.ini'} is pytest's config file for this run" in refusal_line(done)
    # This user keeps a capability to read the venv, which bwrap refuses to run with: no sandbox for the control.
    trusted = run_as_nobody(
        skill_project, str(skill), "--collect-only", "--trust-skill-code", "--ek", "sandbox=none", *LOCAL_REPLAY
    )
    assert trusted.returncode == pytest.ExitCode.OK, trusted.stderr


def test_as_an_unprivileged_user_a_plugin_the_skill_config_names_never_runs(
    skill_project: SkillProject, marks: Path
) -> None:
    skill = plugin_skill(skill_project, marks, "setup.cfg")
    done = run_as_nobody(skill_project, str(skill), "--collect-only", *LOCAL_REPLAY)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stderr
    assert f"{skill / 'setup.cfg'} is pytest's config file for this run" in refusal_line(done)
    assert not (marks / "evilplug").exists()
