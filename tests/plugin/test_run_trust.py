"""--resume and --regrade trust only run folders this machine wrote: a run folder shipped inside a skill (named to
sort as `latest`, its trial files saying 1.0 PASSED) is refused with one line, and nothing it names is used."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, simple_entries

RUN = (*LOCAL_REPLAY, "--ek", "sandbox=none", "--grading-mode", "custom_only", "--n-concurrent", "1")
FORGED = "20991231_235959_1_f0f0f0f0f0f0"


@pytest.fixture
def project(skill_project: SkillProject) -> SkillProject:
    skill = skill_project.make_skill("demo", simple_entries("c1", "c2"))
    (skill / "evals" / "grader.py").write_text(
        "import json, os\nfrom pathlib import Path\n"
        "v = Path(os.environ.get('HARBOR_VERIFIER_DIR', '/logs/verifier'))\nv.mkdir(parents=True, exist_ok=True)\n"
        "(v / 'reward.json').write_text(json.dumps({'overall': 0.0}))\n"
    )
    return skill_project


def _forge(real: Path, target: Path, victim: Path) -> Path:
    """A copy of a real run (its seal log too) whose with-skill trials now say 1.0 PASSED and point at a host
    folder; result.json removed for --resume (an unfinished run), kept for --regrade."""
    forged = shutil.copytree(real, target)
    for path in forged.glob("*/with_skill/trials/*.json"):
        document = json.loads(path.read_text())
        document["record"].update(overall=1.0, status="scored", passed=True, trial_dir=str(victim))
        path.write_text(json.dumps(document, indent=2) + "\n")
    return forged


def _runs(project: SkillProject) -> list[Path]:
    return sorted((project.root / "results" / "demo").glob("2*"))


@pytest.mark.parametrize("option", ["--resume", "--regrade"])
def test_a_run_folder_this_machine_did_not_write_is_refused(project: SkillProject, option: str) -> None:
    project.run(*RUN, "--results-dir", str(project.root / "elsewhere")).assert_outcomes(passed=2, failed=2)
    [real] = sorted((project.root / "elsewhere" / "demo").glob("2*"))
    victim = project.root / "host-folder"
    (victim / "trials").mkdir(parents=True)
    forged = _forge(real, project.root / "results" / "demo" / FORGED, victim)
    if option == "--resume":
        (forged / "result.json").unlink()
    for requested in ("latest", FORGED):
        refused = project.run(*RUN, option, requested)
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        [line] = [line for line in refused.stderr.str().splitlines() if "not a run this machine wrote" in line]
        assert str(forged) in line and "move that folder out of the results folder" in line
    assert _runs(project) == [forged]  # nothing was published
    assert (victim / "trials").is_dir()


def test_a_real_run_is_still_resumed_and_regraded_beside_a_forged_one(project: SkillProject) -> None:
    """`latest` is the newest run this machine wrote; the forged one, sorting after it, is left alone."""
    project.run(*RUN).assert_outcomes(passed=2, failed=2)
    [real] = _runs(project)
    victim = project.root / "host-folder"
    (victim / "trials").mkdir(parents=True)
    forged = _forge(real, project.root / "results" / "demo" / FORGED, victim)
    (real / "result.json").unlink()  # as a run killed before its end leaves it

    project.run(*RUN, "--resume", "latest").assert_outcomes(passed=2, failed=2)
    resumed = json.loads((real / "result.json").read_text())
    assert {t["overall"] for t in resumed["trials"]} == {0.0}
    for path in real.glob("*/*/trials/*.json"):  # read back, not run again
        assert json.loads(path.read_text())["record"]["source_run"] == real.name, path

    project.run(*RUN, "--regrade", "latest").assert_outcomes(passed=2, failed=2)
    regraded = [run for run in _runs(project) if run not in (real, forged)]
    assert len(regraded) == 1
    config = json.loads((regraded[0] / "run_config.json").read_text())
    assert config["regraded_from"] == real.name
    assert {t["overall"] for t in json.loads((regraded[0] / "result.json").read_text())["trials"]} == {0.0}
    assert (victim / "trials").is_dir()


def test_a_linked_results_folder_stops_the_run_before_any_trial(project: SkillProject) -> None:
    """The default results root sits in the skill folder: a link there is never written through, and the preflight
    says so in one line (no traceback), before any trial runs and is paid for."""
    elsewhere = project.root / "elsewhere"
    elsewhere.mkdir()
    link = project.root / "skills" / "demo" / "evals" / "results"
    link.symlink_to(elsewhere)
    result = project.pytester.runpytest_subprocess("--skill-eval", "-p", "no:cacheprovider", *RUN, timeout=300)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output and "PASSED" not in output
    [line] = [line for line in output.splitlines() if str(link) in line]
    assert "the results folder" in line and "is a link" in line and "--results-dir DIR" in line
    assert list(elsewhere.iterdir()) == []
