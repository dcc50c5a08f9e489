"""`skilleval compare` on real runs: any two conditions (arms, variants, runs), with the numbers the session
printed, to 4 decimal places."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilleval.authoring.cli import main as skilleval
from tests.support import SkillProject, grow_sparse, link_from_outside, simple_entries

CASES = [f"c{i}" for i in range(1, 8)]
# custom_only: a score with many decimals, fixed by case, arm, attempt and agent (so rounding is exercised).
GRADER = """
import hashlib, json, os
from pathlib import Path

entry = json.loads(Path(os.environ.get("HARBOR_ENTRY_JSON", "/tests/entry.json")).read_text())
key = f"{entry['id']}|{entry['arm']}|{entry['attempt']}|{entry['agent']}".encode()
score = int(hashlib.sha256(key).hexdigest()[:8], 16) % 100003 / 100003
if entry["arm"] == "with_skill":
    score = min(1.0, score + 0.25)
verifier = Path(os.environ.get("HARBOR_VERIFIER_DIR", "/logs/verifier"))
verifier.mkdir(parents=True, exist_ok=True)
Path(os.environ.get("HARBOR_REWARD_JSON", verifier / "reward.json")).write_text(json.dumps({"overall": score}))
"""
A, B = "replay@x/m1", "replay@x/m2"


@pytest.fixture
def run_dir(skill_project: SkillProject) -> Path:
    skill = skill_project.make_skill("demo", simple_entries(*CASES))
    (skill / "evals" / "grader.py").write_text(GRADER)
    result = skill_project.run(
        "--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only",
        "--n-attempts", "2", "--agent-model", "replay=x/m1", "--agent-model", "replay=x/m2",
    )  # fmt: skip
    (path,) = (skill_project.root / "results" / "demo").glob("2*/result.json")
    assert json.loads(path.read_text())["execution_status"] == "succeeded", result.stdout.str()
    return path.parent


def _compare(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    capsys.readouterr()
    assert skilleval(["compare", *args, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_compare_arms_variants_and_runs(
    run_dir: Path, skill_project: SkillProject, capsys: pytest.CaptureFixture[str]
) -> None:
    """One run (seven cases, two attempts, two variants, both arms) compared every way, and two other runs."""
    two_arms_print_the_sessions_skill_lift(run_dir, capsys)
    two_variants_of_one_run(run_dir, capsys)
    sides_that_do_not_line_up_are_named(run_dir, capsys)
    two_runs_of_one_arm_each(run_dir, skill_project, capsys)
    a_partial_run_with_fewer_attempts_is_named(run_dir, skill_project, capsys)


def a_partial_run_with_fewer_attempts_is_named(
    run_dir: Path, skill_project: SkillProject, capsys: pytest.CaptureFixture[str]
) -> None:
    """A -k run of two cases with one attempt against the full run: the pairing says both, so a reader does not take
    two cases at k=1 for the whole dataset at k=2."""
    skill_project.run(
        "--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only",
        "--n-attempts", "1", "--agent-model", "replay=x/m1", "--arms", "with_skill", "-k", "c1 or c2",
    )  # fmt: skip
    partial = (skill_project.root / "results" / "demo" / "latest").resolve()
    [pair] = _compare(capsys, str(run_dir), str(partial), "--agents", f"{A},replay")  # one model: no variant name
    assert "paired over 2 case(s) scored on both sides" in pair["pairing"]
    assert "attempts per case differ: A 2, B 1 (each side's pass@k is at its own k)" in pair["pairing"]
    assert "B is a partial run: 2 of 7 cases (a -k/-m/--max-cases selection)" in pair["pairing"]
    assert not [note for note in pair["pairing"] if note.startswith("A is a partial run")]
    # a case the partial run never ran: A's own mean, B "not run" (not NO SCORE), no delta
    c3 = next(case for case in pair["cases"] if case["name"] == "c3")
    assert c3["a"] is not None and (c3["b"], c3["b_missing"], c3["delta"]) == (None, "not run", None), c3
    # the case table's heading does not claim attempts paired by number right under a note that they were not
    capsys.readouterr()
    assert skilleval(["compare", str(run_dir), str(partial), "--agents", f"{A},replay"]) == 0
    text = capsys.readouterr().out
    # the cases named as cases: skill-creator's ids are numbers, and "attempts differ ...: 1, 2" read as attempts
    assert "attempts differ in cases c1, c2 (case means compared, no per-attempt pairing)" in text, text
    assert "By case (overall; attempts paired by number where both sides ran the same ones, else case means)" in text
    [row] = [line.split() for line in text.splitlines() if line.startswith("  c3 ")]
    assert row[1:5] == [f"{c3['a']:.4f}", "not", "run", "N/A"], row


def two_runs_of_one_arm_each(run_dir: Path, skill_project: SkillProject, capsys: pytest.CaptureFixture[str]) -> None:
    """A run of the without-skill arm alone against a run of the with-skill arm alone: the grader's scores are fixed
    by case, arm, attempt and agent, so the pair is the first run's Skill Lift, to its 4 places."""
    runs = {}
    for arm in ("without_skill", "with_skill"):
        skill_project.run(
            "--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none", "--grading-mode", "custom_only",
            "--n-attempts", "2", "--agent-model", "replay=x/m1", "--agent-model", "replay=x/m2", "--arms", arm,
        )  # fmt: skip
        runs[arm] = (skill_project.root / "results" / "demo" / "latest").resolve()
    assert len({run_dir, *runs.values()}) == 3
    lift = json.loads((run_dir / "result.json").read_text())["agents"][A]["lift"]
    pair_args = ("--agents", A, "--arms", "without_skill,with_skill")
    [pair] = _compare(capsys, str(runs["without_skill"]), str(runs["with_skill"]), *pair_args)
    assert pair["lift"]["overall"] == lift["overall"] and pair["mcnemar"] == lift["mcnemar"]
    assert "paired over 7 case(s) scored on both sides" in pair["pairing"]


def two_arms_print_the_sessions_skill_lift(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((run_dir / "result.json").read_text())
    for agent in (A, B):
        lift = doc["agents"][agent]["lift"]
        [pair] = _compare(capsys, str(run_dir), "--agents", agent, "--arms", "without_skill,with_skill")
        assert pair["lift"]["overall"] == lift["overall"]
        assert pair["mcnemar"] == lift["mcnemar"] and pair["pass_at_k"] == lift["pass_at_k"]
        overall = next(d for d in pair["measures"] if d["name"] == "overall")
        assert (overall["delta"], overall["ci95"], overall["n"]) == (
            lift["overall"]["delta"],
            lift["overall"]["ci95"],
            lift["overall"]["n_pairs"],
        )
        assert "paired over 7 case(s) scored on both sides" in pair["pairing"]
    # The same from two run folders (here the same run twice): arm X of RUN_A against arm Y of RUN_B.
    [pair] = _compare(capsys, str(run_dir), str(run_dir), "--agents", A, "--arms", "without_skill,with_skill")
    assert pair["lift"]["overall"] == doc["agents"][A]["lift"]["overall"]
    # The text and markdown forms print those numbers with the session's 4 places.
    delta = doc["agents"][A]["lift"]["overall"]["delta"]
    for fmt in ("text", "md"):
        skilleval(["compare", str(run_dir), "--agents", A, "--arms", "without_skill,with_skill", "--format", fmt])
        assert f"{delta:+.4f}" in capsys.readouterr().out


def two_variants_of_one_run(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((run_dir / "result.json").read_text())
    [pair] = _compare(capsys, str(run_dir), "--agents", f"{A},{B}")
    overall = next(d for d in pair["measures"] if d["name"] == "overall")
    a_arm, b_arm = doc["agents"][A]["with_skill"], doc["agents"][B]["with_skill"]
    assert (overall["a"], overall["b"]) == (a_arm["overall"], b_arm["overall"])
    assert overall["delta"] == round(b_arm["overall"] - a_arm["overall"], 4)
    assert pair["a"].endswith(f"/{A}/with_skill") and pair["b"].endswith(f"/{B}/with_skill")
    assert [case["name"] for case in pair["cases"]] == CASES and all(case["n"] == 2 for case in pair["cases"])


def sides_that_do_not_line_up_are_named(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert skilleval(["compare", str(run_dir), "--agents", f"{A},nobody"]) == 2
    assert "no agent 'nobody'" in capsys.readouterr().err
    assert skilleval(["compare", str(run_dir), "--arms", "with_skill,baseline_skill", "--agents", A]) == 2
    assert "has no baseline_skill trials" in capsys.readouterr().err


def test_compare_two_skills_of_one_session_names_each(
    skill_project: SkillProject, capsys: pytest.CaptureFixture[str]
) -> None:
    """A skill and its renamed copy, run in one session (one run id): A and B say which skill each is, and the
    pairing says the skills differ, rather than two identical labels."""
    for name in ("demo", "demo-v2"):
        skill_project.make_skill(name, {**simple_entries("c1", "c2"), "skill_name": name})
    skill_project.run(
        "skills/demo", "skills/demo-v2", "--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none",
        "--grading-mode", "custom_only", "--skip-baseline",
    ).assert_outcomes(passed=4)  # fmt: skip
    runs = [next((skill_project.root / "results" / name).glob("2*")) for name in ("demo", "demo-v2")]
    assert runs[0].name == runs[1].name
    [pair] = _compare(capsys, *map(str, runs))
    assert pair["a"] == f"demo {runs[0].name}/replay/with_skill"
    assert pair["b"] == f"demo-v2 {runs[1].name}/replay/with_skill"
    assert "different skills: A demo, B demo-v2 (cases paired by id)" in pair["pairing"]


@pytest.mark.parametrize("tamper", ["link", "huge"])
def test_a_tampered_result_json_is_one_line_for_view_and_compare(
    skill_project: SkillProject,
    capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
    tamper: str,
) -> None:
    """A run folder is untrusted: a result.json replaced by a link (here to a valid copy outside, so following it
    would have worked) was read through it, and a 3 GiB one was read whole (12 GB of memory, then more)."""
    skill_project.make_skill("demo", simple_entries("c1"))
    skill_project.run("--agents", "replay", "--env-mode", "local", "--skip-baseline").assert_outcomes(passed=1)
    (result,) = (skill_project.root / "results" / "demo").glob("2*/result.json")
    assert skilleval(["view", str(result.parent)]) == 0
    if tamper == "link":
        outside = link_from_outside(result, tmp_path_factory.mktemp("outside"))
        expected = f"is a symbolic link (to {outside})"
    else:
        grow_sparse(result)
        expected = "not a skilleval result.json (larger than 128 MiB)"
    for command in (["view", str(result.parent)], ["compare", str(result.parent), str(result.parent)]):
        capsys.readouterr()
        assert skilleval(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(result) in err[0] and expected in err[0], err
