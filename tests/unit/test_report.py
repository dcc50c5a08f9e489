"""report.html, BENCHMARK.md, view and compare, from run folders written by the real tree writer."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.authoring.cli import main as skilleval
from pytest_skilleval.results.aggregate import aggregate
from pytest_skilleval.results.benchmark_card import render_card
from pytest_skilleval.results.charts import score_bins
from pytest_skilleval.results.compare import compare_sides, load_side
from pytest_skilleval.results.html_report import drill_down, render_report
from pytest_skilleval.results.models import RunPlan
from pytest_skilleval.results.publish import write_run_reports
from pytest_skilleval.results.records import TokenUsage, TrialRecord
from pytest_skilleval.results.redact import redact_text
from pytest_skilleval.results.run_folder import RunFolderError, find_run, load_run
from pytest_skilleval.results.trajectory_view import MAX_STEPS, trajectory_steps
from pytest_skilleval.results.tree import write_results_tree
from pytest_skilleval.results.trial_evidence import trial_evidence

SECRET = "sk-live0123456789abcdefXYZ"
HOSTILE = "<script>alert(1)</script><img src=http://evil.example/x.png>"
CASES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")


def _trial_dir(root: Path, case: str, arm: str, attempt: int) -> Path:
    """A Harbor-like trial folder with a hostile trajectory and a rich reward carrying a finding."""
    tdir = root / f"{case}-{arm}-{attempt}"
    (tdir / "agent").mkdir(parents=True)
    (tdir / "verifier").mkdir()
    trajectory = {
        "steps": [
            {"step_id": 1, "source": "user", "message": "do it"},
            {
                "step_id": 2,
                "source": "agent",
                "message": f"running {HOSTILE}",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "Bash", "arguments": {"command": f"echo {SECRET}"}}
                ],
                "observation": {"results": [{"source_call_id": "c1", "content": f"{SECRET}\n"}]},
            },
        ]
    }
    (tdir / "agent" / "trajectory.json").write_text(json.dumps(trajectory))
    rich = {
        "metrics": {"security": 0.0},
        "overall": 0.5,
        "details": {
            "security": {
                "passed": False,
                "reason": "Agent response contains a secret",
                "findings": [
                    {
                        "type": "secret_leak",
                        "severity": "critical",
                        "source": "agent_response",
                        "message": f"leaked {HOSTILE}",
                        "evidence": f"token={SECRET}",
                    }
                ],
            }
        },
    }
    (tdir / "verifier" / "skilleval_reward.json").write_text(json.dumps(rich))
    (tdir / "verifier" / "grader-output.txt").write_text(f"grader says {HOSTILE} OPENAI_API_KEY={SECRET}\n")
    return tdir


def _records(root: Path | None, agent: str = "codex", shift: float = 0.0, attempts: int = 2) -> list[TrialRecord]:
    records = []
    for i, case in enumerate(CASES):
        for arm, base in (("with_skill", 0.8), ("without_skill", 0.4)):
            for attempt in range(1, attempts + 1):
                score = min(1.0, base + shift + 0.02 * i - 0.01 * attempt)
                records.append(
                    TrialRecord(
                        skill="s",
                        case=case,
                        agent=agent,
                        arm=arm,
                        attempt=attempt,
                        status="scored",  # type: ignore[arg-type]
                        overall=score,
                        passed=score >= 0.5,
                        metrics={"security": 1.0, "skill_execution": score, "skill_efficiency": score},
                        custom_metrics={"greeting_correct": score},
                        activation=1.0 if arm == "with_skill" else None,
                        tokens=TokenUsage(prompt=100, completion=10),
                        agent_seconds=1.5,
                        trial_dir=str(_trial_dir(root, case, arm, attempt)) if root else None,
                    )
                )
    return records


def _run(
    tmp: Path,
    records: list[TrialRecord],
    run_id: str,
    agents: tuple[str, ...] = ("codex",),
    cases: tuple[str, ...] = CASES,
    interrupted: bool = False,
) -> Path:
    plan = RunPlan(
        skill="s",
        cases=list(cases),
        agents=list(agents),
        n_attempts=2,
        evaluated_at="2026-01-02T03:04:05Z",
        interrupted=interrupted,
    )
    return write_results_tree(aggregate(records, plan), records, tmp / "results", run_id)


def _fetching_attributes(html: str) -> list[str]:
    found: list[str] = []

    class Attributes(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            for name, value in attrs:
                if name != "xmlns" and value and re.match(r"\s*(?:https?:|file:|//)", value):
                    found.append(f"<{tag} {name}={value}>")
                if value and "url(" in value:
                    found.append(f"<{tag} {name}={value}>")

    Attributes().feed(html)
    return found


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = _run(tmp_path, _records(tmp_path / "harbor"), "20260102_030405_1_0123456789ab")
    write_run_reports(run)
    return run


# ------------------------------------------------------------------------------------------- report.html


def test_report_is_self_contained_escaped_and_redacted(run_dir: Path) -> None:
    html = (run_dir / "report.html").read_text()
    assert "<script" not in html  # no script at all (pygal's inline config is stripped)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the trajectory's markup is shown, escaped
    assert "<img" not in html and 'src="http' not in html and "href=\"http" not in html
    assert SECRET not in html and "[REDACTED]" in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    # nothing reaches out: no element attribute points at a URL or a file (xmlns is a name, not a fetch)
    assert _fetching_attributes(html) == []


def test_report_puts_the_verdict_first_and_has_every_section(run_dir: Path) -> None:
    html = (run_dir / "report.html").read_text()
    verdict = html.index('id="verdict-text"')
    assert verdict < html.index("<h3>Dimensions</h3>")
    assert html.count('class="case-row"') == len(CASES)
    assert html.count('<details class="trial"') == len(CASES) * 2 * 2
    for section in (
        "With vs without the skill, per case",
        "Skill Lift with its 95% interval",
        "pass@k and pass^k",
        "Resources per arm",
        "Evaluators and custom metrics",
        "Security findings",
        "Grader details",
    ):
        assert section in html
    assert html.count("<svg") == 3  # cases, forest, pass@k
    assert "custom: greeting_correct" in html and "secret_leak" in html
    assert "grader says" in html  # the grader's output made it into the drill-down


def test_report_renders_the_same_bytes_twice(run_dir: Path) -> None:
    run = load_run(run_dir)
    assert render_report(run) == render_report(run)  # stable chart ids, no timestamps of its own


def test_a_report_given_the_drill_downs_of_its_trial_files_reads_none_of_them(run_dir: Path) -> None:
    """What the session hands over (each trial's drill-down, rendered from its file's bytes as it wrote them)
    makes the report a reader of the folder makes; given it, the report opens no trial file."""
    run = load_run(run_dir)
    from_files = render_report(run)
    known = {files.entry.key: drill_down(trial_evidence(json.loads(files.path.read_bytes()))) for files in run.trials()}
    assert any(drill.findings for drill in known.values())  # the drill-downs have something to show
    for files in run.trials():
        files.path.unlink()
    assert render_report(run, known) == from_files
    assert render_report(run) != from_files  # read from the folder now, the trials' files are missing


def test_report_without_trial_files_still_renders(tmp_path: Path) -> None:
    run = _run(tmp_path, _records(None), "20260102_030405_1_0123456789ab")
    html = render_report(load_run(run))
    assert "No trajectory.json in this trial" in html and html.count('class="case-row"') == len(CASES)


def _spread_run(tmp: Path, n_cases: int) -> str:
    """A run of `n_cases` cases, both attempts alike: without the skill 0.05 a case, with it 0.5, 0.6, ... 0.9 in
    turn; its report.html."""
    cases = tuple(f"case-{i:03d}" for i in range(n_cases))
    records = [
        TrialRecord(
            skill="s",
            case=case,
            agent="codex",
            arm=arm,
            attempt=attempt,
            status="scored",  # type: ignore[arg-type]
            overall=score,
            passed=score >= 0.5,
        )
        for i, case in enumerate(cases)
        for arm, score in (("with_skill", 0.5 + (i % 5) / 10), ("without_skill", 0.05))
        for attempt in (1, 2)
    ]
    return render_report(load_run(_run(tmp, records, "20260102_030405_1_0123456789ab", cases=cases)))


def _case_chart_values(html: str) -> list[str]:
    chart = re.search(r'<div class="chart" id="chart-cases-1">(.*?)</div>', html, re.S)
    assert chart is not None
    return re.findall(r'<desc class="value">([^<]*)</desc>', chart.group(1))


def test_a_case_chart_past_forty_cases_counts_cases_per_tenth_of_mean_overall(tmp_path: Path) -> None:
    html = _spread_run(tmp_path, 60)
    # ten bands per arm instead of 120 bars: without the skill every case in 0.0-0.1, with it 12 in each of 0.5-0.9
    assert _case_chart_values(html) == ["60", *["0"] * 9] + [*["0"] * 5, *["12"] * 5]
    assert "0.9–1.0" in html and "60 cases: the chart counts the cases of each arm" in html
    assert html.count('class="case-row"') == 60  # the table still lists every case


def test_a_case_chart_of_forty_cases_draws_a_bar_per_case(tmp_path: Path) -> None:
    html = _spread_run(tmp_path, 40)
    assert len(_case_chart_values(html)) == 80 and "the chart counts the cases" not in html


def test_score_bins_put_one_in_the_last_tenth_and_a_missing_score_in_none() -> None:
    assert score_bins([0.0, 0.09, 0.1, 0.55, 0.99, 1.0, None]) == [2, 1, 0, 0, 0, 1, 0, 0, 0, 2]


# ------------------------------------------------------------------------------------------- BENCHMARK.md


def test_card_verdict_first_labelled_columns_tiers_and_methodology(run_dir: Path) -> None:
    card = (run_dir / "BENCHMARK.md").read_text()
    lines = [line for line in card.splitlines() if line.strip()]
    assert lines[0] == "# s: skill benchmark"
    assert lines[1].startswith("**Verdict: ")
    assert "| measure | codex: Baseline → Skill (Uplift) |" in card
    assert re.search(r"\| \*\*Overall\*\* \| 0\.\d{4} → 0\.\d{4} \(\+0\.\d{4}\) \|", card)
    for tier in ("Tier 1: static analysis", "Tier 2: skill review", "Tier 3: live agent evaluation | COMPLETED"):
        assert tier in card
    assert "<details>" in card and "<summary>Methodology</summary>" in card and card.rstrip().endswith("</details>")
    assert "[report.html](report.html)" in card


def test_card_counts_one_paired_case_in_the_singular_and_says_no_interval_plainly(tmp_path: Path) -> None:
    """One case: no bootstrap interval, and one pair (not "95% no interval, 1 paired cases")."""
    records = [r for r in _records(None) if r.case == CASES[0]]
    card = render_card(load_run(_run(tmp_path, records, "20260102_030405_1_0123456789ab", cases=(CASES[0],))))
    line = next(line for line in card.splitlines() if line.startswith("- codex: overall lift"))
    assert ", no interval, 1 paired case (fewer than 5 paired cases: insufficient);" in line, line


def test_card_says_incomplete_for_a_partial_run(tmp_path: Path) -> None:
    records = [r for r in _records(None) if r.case != "zeta"]
    card = render_card(load_run(_run(tmp_path, records, "20260102_030405_1_0123456789ab")))
    assert "(INCOMPLETE" in card.splitlines()[2]
    assert "| Tier 3: live agent evaluation | INCOMPLETE" in card or "FAILED" in card


def test_card_escapes_markdown_in_names(tmp_path: Path) -> None:
    records = _records(None, agent="a|b<i>")
    card = render_card(load_run(_run(tmp_path, records, "20260102_030405_1_0123456789ab", agents=("a|b<i>",))))
    assert "a\\|b\\<i\\>: Baseline → Skill (Uplift)" in card


# ---------------------------------------------------------------------------------------- pieces


def test_redact_text_masks_tokens_and_credential_values() -> None:
    text = redact_text(f"OPENAI_API_KEY={SECRET} password: hunter2 Bearer abcdefghijkl ok")
    assert SECRET not in text and "hunter2" not in text and "abcdefghijkl" not in text and text.endswith(" ok")


def test_trajectory_steps_are_capped_and_tool_outputs_paired() -> None:
    steps = [
        {
            "step_id": i,
            "source": "agent",
            "message": "m",
            "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "Bash", "arguments": {"command": "ls"}}],
            "observation": {"results": [{"source_call_id": f"c{i}", "content": "out"}]},
        }
        for i in range(MAX_STEPS + 5)
    ]
    shown, omitted = trajectory_steps({"steps": steps})
    assert len(shown) == MAX_STEPS and omitted == 5
    assert shown[0].tool_calls[0].arguments == "ls" and shown[0].tool_calls[0].output == "out"
    assert trajectory_steps(None) == ([], 0) and trajectory_steps({"steps": "nope"}) == ([], 0)


def test_find_run_accepts_run_result_root_and_skill(run_dir: Path, tmp_path: Path) -> None:
    root = run_dir.parent
    assert find_run(run_dir) == run_dir
    assert find_run(run_dir / "result.json") == run_dir
    assert find_run(root) == run_dir
    with pytest.raises(RunFolderError, match="no skilleval run here"):
        find_run(tmp_path / "empty")


# ----------------------------------------------------------------------------------------------- view


def test_view_prints_summary_and_report_path_and_renders_a_missing_report(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run_dir / "report.html").unlink()
    assert skilleval(["view", str(run_dir.parent)]) == 0
    out = capsys.readouterr().out
    assert "Overall verdict:" in out and f"Report: {run_dir / 'report.html'}" in out
    assert (run_dir / "report.html").is_file()


def test_view_of_a_results_dir_of_several_skills_shows_each_ones_latest_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--results-dir D` over a folder of skills writes D/<skill>/<run-id>: `skilleval view D` shows each skill, in
    name order, as the session printed them."""
    for skill in ("beta", "alpha"):
        records = [record.model_copy(update={"skill": skill}) for record in _records(None)]
        plan = RunPlan(skill=skill, cases=list(CASES), agents=["codex"], n_attempts=2)
        write_results_tree(aggregate(records, plan), records, tmp_path / "results" / skill, "20260102_030405_1_0a")
    assert skilleval(["view", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    alpha, beta = out.index(" skilleval: alpha "), out.index(" skilleval: beta ")
    assert alpha < beta and out.count("Overall verdict:") == 2
    assert f"Report: {tmp_path / 'results' / 'beta' / '20260102_030405_1_0a' / 'report.html'}" in out


def test_view_without_a_run_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert skilleval(["view", str(tmp_path)]) == 2
    assert "no skilleval run here" in capsys.readouterr().err


def test_view_and_compare_of_a_skill_find_its_runs_under_skilleval_results_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session run with SKILLEVAL_RESULTS_DIR=E writes E/<skill>/<run-id>; `skilleval view SKILL_DIR` (and compare)
    in the same shell find that run, as `skilleval doctor` finds that folder, instead of 'no skilleval run here'."""
    skill = tmp_path / "skills" / "s"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\n")
    elsewhere = tmp_path / "elsewhere"
    a, b = _two_runs(elsewhere)  # written to elsewhere/results/<run-id>; moved to E/<skill> with E = elsewhere
    (elsewhere / "results").rename(elsewhere / "s")
    monkeypatch.setenv("SKILLEVAL_RESULTS_DIR", str(elsewhere))
    assert skilleval(["view", str(skill)]) == 0
    assert f"Report: {elsewhere / 's' / b.name / 'report.html'}" in capsys.readouterr().out
    assert skilleval(["compare", str(skill)]) == 0
    out = capsys.readouterr().out
    assert f"A: {a.name}/codex/with_skill" in out and f"B: {b.name}/codex/with_skill" in out
    monkeypatch.delenv("SKILLEVAL_RESULTS_DIR")
    assert skilleval(["view", str(skill)]) == 2
    assert "--results-dir" in capsys.readouterr().err  # where a run written elsewhere is to be looked for


# -------------------------------------------------------------------------------------------- compare


def _two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a = _run(tmp_path, _records(None), "20260102_030405_1_0123456789aa")
    b = _run(tmp_path, _records(None, shift=0.1), "20260102_030406_1_0123456789bb")
    return a, b


def test_compare_two_runs_gives_per_dimension_and_per_case_deltas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _two_runs(tmp_path)
    assert skilleval(["compare", str(a), str(b), "--json"]) == 0
    [pair] = json.loads(capsys.readouterr().out)
    overall = next(d for d in pair["measures"] if d["name"] == "overall")
    assert overall["n"] == len(CASES) and overall["insufficient"] is False
    # with_skill scores: 0.8 + shift (capped at 1.0) -> B is higher by at most 0.1, on every case
    assert 0 < overall["delta"] <= 0.1 and overall["ci95"][0] <= overall["delta"] <= overall["ci95"][1]
    assert [d["name"] for d in pair["cases"]] == sorted(CASES)
    assert all(d["n"] == 2 and d["ci95"] is not None for d in pair["cases"])
    correctness = next(d for d in pair["measures"] if d["name"] == "correctness")
    assert correctness["delta"] is None and correctness["n"] == 0  # unscored is never 0


def test_compare_a_results_root_uses_the_two_newest_succeeded_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _two_runs(tmp_path)
    _run(tmp_path, _records(None, shift=0.2)[:4], "20260102_030407_1_0123456789cc", interrupted=True)
    assert skilleval(["compare", str(a.parent)]) == 0
    out = capsys.readouterr().out
    assert f"A: {a.name}/codex/with_skill" in out and f"B: {b.name}/codex/with_skill" in out
    assert "By dimension" in out and "By case" in out


def test_compare_refuses_a_run_that_did_not_succeed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = _two_runs(tmp_path)
    bad = _run(tmp_path, _records(None)[:4], "20260102_030407_1_0123456789cc", interrupted=True)
    assert skilleval(["compare", str(a), str(bad)]) == 2
    assert "only succeeded runs are compared" in capsys.readouterr().err


def test_compare_two_agents_of_one_run(tmp_path: Path) -> None:
    records = _records(None, agent="one") + _records(None, agent="two", shift=-0.1)
    run = load_run(_run(tmp_path, records, "20260102_030405_1_0123456789ab", agents=("one", "two")))
    result = compare_sides(load_side(run, "one", "with_skill"), load_side(run, "two", "with_skill"))
    overall = next(d for d in result.measures if d.name == "overall")
    assert overall.delta == pytest.approx(-0.2 / 3, abs=1e-3)  # overall = mean(security 1.0, two metrics - 0.1)
    assert skilleval(["compare", str(run.path), "--agents", "one,two"]) == 0


# -------------------------------------------------------------------------------------- unusual runs


def test_report_and_card_for_a_baseline_free_run_with_an_errored_trial(tmp_path: Path) -> None:
    records = [r for r in _records(None) if r.arm == "with_skill"]
    records[0] = records[0].model_copy(
        update={"status": "error", "overall": None, "passed": None, "metrics": {}, "error": f"grader crashed: {SECRET}"}
    )
    plan = RunPlan(
        skill="s",
        cases=list(CASES),
        agents=["codex"],
        arms=["with_skill"],
        n_attempts=2,
        evaluated_at="2026-01-02T03:04:05Z",
    )
    run_dir = write_results_tree(
        aggregate(records, plan), records, tmp_path / "results", "20260102_030405_1_0123456789ab"
    )
    run = load_run(run_dir)
    html, card = render_report(run), render_card(run)
    assert "Skill Lift omitted" in html and "No lift to plot" in html
    assert html.count('class="case-row"') == len(CASES) and 'class="status-error"' in html
    assert "grader crashed: [REDACTED]" in html and SECRET not in html
    assert "FAILED" in card and "Skill Lift omitted" in card
    assert "NO SCORE → " in card  # the baseline that never ran is not a zero


def test_a_raw_terminus2_reply_is_shown_as_its_plan_and_commands() -> None:
    """terminus-2 with raw_content keeps the model's JSON reply as the message: the view shows its analysis and plan
    as text and each command as a call, as the grader reads them, never the raw JSON; a default-mode run of the
    same script shows the same."""
    recorded = Path(__file__).resolve().parents[2] / "fixtures" / "trajectories" / "terminus-2-recorded"
    views = {}
    for mode in ("raw-content", "tool-calls"):
        trajectory = json.loads((recorded / mode / "with_skill" / "trajectory.json").read_text(encoding="utf-8"))
        shown, _ = trajectory_steps(trajectory)
        views[mode] = [(s.message, [(c.name, c.arguments) for c in s.tool_calls]) for s in shown if s.source == "agent"]
    first_message, first_calls = views["raw-content"][0]
    assert first_message == "Analysis: Scripted.\nPlan: Follow the script."
    assert first_calls[0] == ("bash_command", "cat /runtime/skills/hello-skill/SKILL.md\n")
    assert "greet.py --name 'Ada Lovelace'" in first_calls[1][1]
    assert views["raw-content"][-1][1] == [("mark_task_complete", "")]
    assert not any('"commands"' in message for message, _ in views["raw-content"])
    assert [calls for _, calls in views["raw-content"]] == [calls for _, calls in views["tool-calls"]]


def test_compare_of_runs_with_no_agent_in_common_names_each_runs_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs of one skill, one per agent (claude-code, then codex): the fix names the agents to pass."""
    from pytest_skilleval.authoring.cli import main as skilleval

    first = _run(
        tmp_path, _records(None, agent="claude-code"), "20260102_030405_1_0123456789ab", agents=("claude-code",)
    )
    second = _run(tmp_path, _records(None, agent="codex"), "20260102_030406_1_0123456789ac", agents=("codex",))
    assert skilleval(["compare", str(first), str(second)]) != 0
    err = capsys.readouterr().err
    assert f"{first} ran claude-code and {second} ran codex: no agent in common" in err
    assert "--agents claude-code,codex" in err


def test_a_block_rendered_ahead_is_used_only_for_the_entry_it_was_rendered_for(run_dir: Path) -> None:
    """A trial's block rendered as the trial ended stands in for the report's own rendering only when the entry,
    the file and the pass threshold the report has are the ones it was rendered with."""
    import dataclasses

    from markupsafe import Markup

    from pytest_skilleval.results.html_report import trial_file_text, with_block

    run = load_run(run_dir)
    from_files = render_report(run)
    threshold = run.document.attempt_policy.pass_threshold
    drills = {
        files.entry.key: drill_down(trial_evidence(json.loads(files.path.read_bytes()))) for files in run.trials()
    }
    ahead = {
        files.entry.key: with_block(
            drills[files.entry.key], files.entry, trial_file_text(run.path, files.entry), threshold
        )
        for files in run.trials()
    }
    assert render_report(run, ahead) == from_files  # the same blocks the report renders itself

    def marked(entry_change: dict[str, Any]) -> dict[Any, Any]:
        found = {}
        for files in run.trials():
            drill = ahead[files.entry.key]
            entry, folder, limit = drill.block_for or (None, "", 0.0)
            changed = (entry.model_copy(update=entry_change), folder, limit) if entry_change else drill.block_for
            found[files.entry.key] = dataclasses.replace(drill, block=Markup("<p>AHEAD</p>"), block_for=changed)
        return found

    assert render_report(run, marked({})).count("<p>AHEAD</p>") == len(run.trials())
    stale = render_report(run, marked({"overall": 0.1234}))  # the end scored the trial otherwise: not used
    assert "<p>AHEAD</p>" not in stale and stale == from_files
