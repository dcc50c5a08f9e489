"""Trial files are written (and job folders deleted, in batches) as items finish, not all at the session's end (issue 13: the
session's end did ~2 ms a trial that nothing overlapped). The run folder stays incomplete until result.json."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import SkillProject, simple_entries

# Runs after the plugin's own report hook, on the process that writes results (the controller under xdist), and
# logs what the run folder holds once each item's last report is in. The file is written by a writer thread, so the
# hook gives it up to 10 s (while this hook runs, the session cannot reach its end).
SNAPSHOT_CONFTEST = '''
import gc, json, os, time
from pathlib import Path
import pytest

_config = None

def pytest_configure(config):
    global _config
    _config = config

@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when != "teardown" or hasattr(_config, "workerinput"):
        return
    record = next(json.loads(v) for k, v in report.user_properties if k == "skilleval_trial")
    results = Path(os.environ["SNAPSHOT_RESULTS"])
    job = Path(record["trial_dir"]).parent.parent
    deadline = time.monotonic() + 10
    while True:
        own = list(results.glob(f"*/2*/*/*/trials/{record['case']}.{record['attempt']}.json"))
        if own or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    with open(os.environ["SNAPSHOT_LOG"], "a") as log:
        log.write(json.dumps({
            "case": record["case"], "own_file": [str(p) for p in own],
            "result_json": bool(list(results.glob("*/2*/result.json"))),
            "job_folder": job.exists(), "frozen": gc.get_freeze_count(),
        }) + "\\n")

def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        Path(os.environ["SNAPSHOT_LOG"] + ".end").write_text(str(gc.get_freeze_count()))
'''

RUN = ("--agents", "replay", "--env-mode", "local", "--ek", "sandbox=none", "--skip-baseline")


@pytest.fixture
def project(skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch) -> SkillProject:
    skill_project.pytester.makeconftest(SNAPSHOT_CONFTEST)
    monkeypatch.setenv("SNAPSHOT_RESULTS", str(skill_project.root / "results"))
    monkeypatch.setenv("SNAPSHOT_LOG", str(skill_project.root / "snapshots.jsonl"))
    skill_project.make_skill("demo", simple_entries("c1", "c2", "c3", "c4"))
    return skill_project


def _end_frozen(project: SkillProject) -> str:
    """gc.get_freeze_count() at the run's pytest_unconfigure."""
    return (project.root / "snapshots.jsonl.end").read_text()


def _snapshots(project: SkillProject) -> list[dict]:
    return [json.loads(line) for line in (project.root / "snapshots.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_each_trial_file_is_written_when_its_item_is_done(project: SkillProject, xdist: list[str]) -> None:
    result = project.run(*RUN, "--n-attempts", "2", *xdist)
    result.assert_outcomes(passed=8)
    snapshots = _snapshots(project)
    assert len(snapshots) == 8
    for snapshot in snapshots:
        assert len(snapshot["own_file"]) == 1, snapshot  # in the run folder during the run, before the session's end
        assert snapshot["result_json"] is False, snapshot  # which still marks the folder incomplete
    final = project.result_json("demo")
    # Harbor's folders of the trials are deleted in batches during the run, and none is left after it
    jobs = [Path(json.loads(Path(s["own_file"][0]).read_text())["trial_dir"]).parent.parent for s in snapshots]
    assert len(set(jobs)) == 8 and not any(job.exists() for job in jobs)
    assert len(final["trials"]) == 8
    for snapshot in snapshots:
        document = json.loads(Path(snapshot["own_file"][0]).read_text())
        assert document["record"]["case"] == snapshot["case"] and document["record"]["status"] == "scored"
        assert document["harbor_result"]["verifier_result"]["rewards"], document.keys()


def test_kept_jobs_stay_when_trial_files_are_written_early(
    project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNAPSHOT_KEEPS_JOBS", "1")
    project.run(*RUN, "--harbor-keep-jobs").assert_outcomes(passed=4)
    snapshots = _snapshots(project)
    assert [s["job_folder"] for s in snapshots] == [True] * 4
    assert all(len(s["own_file"]) == 1 for s in snapshots)


MANY_METRICS_GRADER = """
import json, os
from pathlib import Path
case = json.loads(Path(os.environ["HARBOR_ENTRY_JSON"]).read_text())["id"]
metrics = {f"{case}_metric_{i}": 1.0 for i in range(70)}
Path(os.environ["HARBOR_REWARD_JSON"]).write_text(json.dumps({"overall": 1.0, **metrics}))
"""


def test_a_record_changed_at_the_end_replaces_the_one_written_early(project: SkillProject) -> None:
    """Two cases with 70 metric names each exceed a condition's 128: at the end every trial of that condition
    becomes an error. The trial files written early are rewritten with that record, keeping Harbor's parts."""
    (project.root / "skills" / "demo" / "evals" / "grader.py").write_text(MANY_METRICS_GRADER)
    result = project.run(*RUN, "--grading-mode", "custom_only")
    assert all(s["own_file"] for s in _snapshots(project))
    final = project.result_json("demo")
    assert {t["status"] for t in final["trials"]} == {"error"}, result.stdout.str()
    for snapshot in _snapshots(project):
        document = json.loads(Path(snapshot["own_file"][0]).read_text())
        assert document["record"]["status"] == "error"
        assert document["record"]["error"] == "condition exceeded the custom metric name limit"
        assert document["record"]["custom_metrics"] == {}
        assert document["harbor_result"]["verifier_result"] is not None  # the early file's parts, kept


IN_PROCESS_SCRIPT = """
import gc, json, os
import pytest
before = gc.get_freeze_count()
code = pytest.main(json.loads(os.environ["PYTEST_ARGS"]))
print("exit", int(code), "frozen-before", before, "frozen-after", gc.get_freeze_count())
"""


@pytest.mark.slow
def test_only_a_run_that_owns_its_process_freezes_its_long_lived_objects(project: SkillProject) -> None:
    """gc.freeze() before the trials (pytest's two full collections at its end then skip imports and items) and
    after them; a run inside another program's process (pytest.main) leaves that process's collector alone."""
    project.run(*RUN).assert_outcomes(passed=4)
    assert all(s["frozen"] > 10_000 for s in _snapshots(project)), _snapshots(project)
    # and again once the trials are over: what they left is frozen too before the results and report are written
    assert int(_end_frozen(project)) > max(s["frozen"] for s in _snapshots(project))
    (project.root / "snapshots.jsonl").unlink()
    argv = ["--skill-eval", "-p", "no:cacheprovider", "--results-dir", str(project.root / "results"), *RUN]
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS_SCRIPT],
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTEST_ARGS": json.dumps(argv)},
    )
    assert "exit 0 frozen-before 0 frozen-after 0" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert [s["frozen"] for s in _snapshots(project)] == [0] * 4
    assert _end_frozen(project) == "0"


WARM_UP_SCRIPT = """
import sys
from pytest_skilleval.results.early_results import warm_up_reports
ENDS = ("pytest_skilleval.results.publish", "pytest_skilleval.results.aggregate", "pytest_skilleval.results.summary")
assert not any(name in sys.modules for name in ENDS) and "jinja2" not in sys.modules
ready = []
warm_up_reports(ready.append).join(timeout=60)
from pytest_skilleval.results import html_report
print("ends" if all(name in sys.modules for name in ENDS) else "-", html_report._environment.cache_info().currsize)
print(*[render.__name__ for render in ready], html_report._drill_down_macros.cache_info().currsize)
"""


def test_the_report_writers_are_warmed_up_in_the_background() -> None:
    """What the session's end imports (the results, the aggregate, the report) is imported while trials run."""
    # In a process of its own: importing the report modules here would change what this process's pytester runs see.
    done = subprocess.run([sys.executable, "-c", WARM_UP_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # and once loaded, the renderer of a trial's drill-down is handed over, its template loaded too
    assert done.stdout.split() == ["ends", "1", "drill_down", "1"]


PRINTING_GRADER = """
import json, os
from pathlib import Path
print("grading", json.loads(Path(os.environ["HARBOR_ENTRY_JSON"]).read_text())["id"])
Path(os.environ["HARBOR_REWARD_JSON"]).write_text(json.dumps({"overall": 1.0, "style": 0.5}))
"""


def test_what_the_verifier_wrote_reaches_the_trial_file_as_the_trial_folder_holds_it(
    project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verifier's files go to the trial file from memory in the process that ran the trial: the same parts as
    read back from the kept trial folder."""
    from pytest_skilleval.results.trial_file import TRIAL_PARTS, read_parts

    monkeypatch.setenv("SNAPSHOT_KEEPS_JOBS", "1")
    (project.root / "skills" / "demo" / "evals" / "grader.py").write_text(PRINTING_GRADER)
    project.run(*RUN, "--harbor-keep-jobs", "--grading-mode", "default_plus_custom").assert_outcomes(passed=4)
    for snapshot in _snapshots(project):
        document = json.loads(Path(snapshot["own_file"][0]).read_text())
        on_disk = read_parts(Path(document["trial_dir"]), TRIAL_PARTS, 5 * 1024 * 1024)
        assert document["grader_output"] == on_disk["grader_output"][0] == f"grading {snapshot['case']}\n"
        assert document["reward"] == on_disk["reward"][0] and document["reward"]["style"] == 0.5
        assert document["rich_reward"] == on_disk["rich_reward"][0]
        assert document["rich_reward"]["custom_metrics"] == {"style": 0.5}


def test_the_last_job_folders_are_deleted_beside_a_slow_rm_once_the_trials_are_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While trials run, one `rm` at a time deletes the job folders (the ones handed over meanwhile wait for it);
    once the trials are over (`hurry`) those waiting are deleted at once, without waiting for the `rm` still
    running, and `finish` waits for both."""
    from pytest_skilleval.results import early_results

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        (folder / "trials").mkdir(parents=True)
    real_start = early_results._Rm.start
    started: list[list[Path]] = []

    def start(folders: list[Path]) -> early_results._Rm | None:
        started.append(folders)
        if len(started) == 1:  # the first: an `rm` that takes a while (and deletes nothing itself)
            sleep = shutil.which("sleep")
            assert sleep is not None
            return early_results._Rm(os.posix_spawn(sleep, ["sleep", "3"], dict(os.environ)))
        return real_start(folders)

    monkeypatch.setattr(early_results._Rm, "start", start)
    remover = early_results.FolderRemover(batch=1)
    remover.remove(first)
    remover.remove(second)
    assert started == [[first]]  # the second waits for the first `rm`
    remover.hurry()
    assert started == [[first], [second]]
    deadline = time.monotonic() + 2
    while second.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not second.exists() and first.exists()  # gone while the slow one still runs
    remover.finish()
    assert not first.exists()  # what the slow `rm` left is removed once it is done


def test_job_folders_are_deleted_in_batches_and_none_waits_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One `rm` for `batch` folders (a start holds the interpreter lock); a folder that waited `linger` seconds goes
    with the next one handed over, and `finish` deletes whatever still waits."""
    from pytest_skilleval.results import early_results

    folders = [tmp_path / f"job{index}" for index in range(6)]
    for folder in folders:
        (folder / "trials").mkdir(parents=True)
    real_start = early_results._Rm.start
    started: list[list[Path]] = []

    def start(batch: list[Path]) -> early_results._Rm | None:
        started.append(list(batch))
        return real_start(batch)

    monkeypatch.setattr(early_results._Rm, "start", start)
    remover = early_results.FolderRemover(batch=3, linger=0.5)
    for folder in folders[:2]:
        remover.remove(folder)
    assert started == [] and all(folder.exists() for folder in folders[:2])
    remover.remove(folders[2])
    assert started == [folders[:3]]
    remover.remove(folders[3])
    time.sleep(0.6)
    remover.remove(folders[4])  # the one before has waited longer than `linger`: both go now
    assert started == [folders[:3], folders[3:5]]
    remover.remove(folders[5])
    remover.finish()
    assert not any(folder.exists() for folder in folders)


def _early(tmp_path: Path, keep_jobs: bool = True) -> Any:
    from pytest_skilleval.results.early_results import EarlyResults
    from pytest_skilleval.results.tree import RunStart
    from verifier.redact import Redactor

    return EarlyResults(
        lambda path: tmp_path / "results",
        lambda path: "20260102_030405_1_0123456789ab",
        Redactor(),
        lambda: keep_jobs,
        lambda path: RunStart({}, None),
    )


def _record(case: str) -> Any:
    from pytest_skilleval.results.records import TrialRecord

    return TrialRecord(
        skill="s", skill_dir="skills/s", case=case, agent="a", arm="with_skill", attempt=1, status="scored",
        overall=1.0, details={"security": {"findings": [{"type": "t", "message": "m"}], "reason": "why"}},
    )  # fmt: skip


def test_a_trial_that_ends_once_the_templates_are_loaded_has_its_drill_down_rendered_then(tmp_path: Path) -> None:
    """Before the report's templates are loaded (the warm-up), a trial's drill-down is kept as evidence and
    rendered at the end; after, it is rendered as the trial ends. Both are what the report renders from the file."""
    from pytest_skilleval.results.html_report import TrialDrillDown, drill_down
    from pytest_skilleval.results.trial_evidence import TrialEvidence, trial_evidence
    from pytest_skilleval.results.trial_file import trial_file

    early = _early(tmp_path)
    records = [_record("c1"), _record("c2")]
    for index, record in enumerate(records):
        if index == 1:
            early._renderer_ready(drill_down)
        early.seen(f"n{index}", record)
        early.item_done(f"n{index}")
    kept = early._evidence["skills/s"]
    assert isinstance(kept[records[0].key], TrialEvidence) and isinstance(kept[records[1].key], TrialDrillDown)
    writer = early.writer("skills/s")
    run_dir = writer.run_dir if writer is not None else None
    assert run_dir is not None
    handed = early.evidence("skills/s", run_dir)
    for record in records:
        from_file = drill_down(trial_evidence(json.loads(trial_file(run_dir, record.key).read_bytes())))
        assert handed[record.key] == from_file and from_file.findings == 1


def test_the_head_start_at_the_trials_end_is_only_a_head_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No thread left to start (a process at its limit) costs the sync's head start, never the results: the
    folders are still deleted at `finish`."""
    import threading

    from pytest_skilleval.results.early_results import FolderRemover

    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    early = _early(tmp_path)
    folder = tmp_path / "job"
    (folder / "trials").mkdir(parents=True)
    early._writer("skills/s").write(_record("c1"))
    early._remover = FolderRemover()
    early._remover._waiting.append(folder)
    early.trials_over()
    early.finish()
    assert not folder.exists()


def test_the_session_end_skips_the_job_folders_deleted_while_trials_ran(tmp_path: Path) -> None:
    """A trial whose job folder went to the remover as its item ended is not looked at again at the session's end
    (1,000 path checks there); one whose item never ended here is."""
    early = _early(tmp_path, keep_jobs=False)
    records = []
    for case in ("c1", "c2"):
        trial_dir = tmp_path / "scratch" / "s" / case / "slug" / "trials" / "t1"
        trial_dir.mkdir(parents=True)
        record = _record(case)
        record.trial_dir = str(trial_dir)
        records.append(record)
    early.seen("n1", records[0])
    early.item_done("n1")  # c2's item never reported its end (an interrupt)
    early.trials_over()
    early.finish()
    assert not (tmp_path / "scratch" / "s" / "c1" / "slug").exists()
    assert early.removed(records[0]) and not early.removed(records[1])
    assert (tmp_path / "scratch" / "s" / "c2" / "slug").is_dir()  # left to the session's end


def test_the_session_end_lets_the_warm_up_finish_its_imports_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session's end imports what the warm-up imports: it waits for the warm-up's thread first, so no module is
    imported by two threads at once (each could get the other's half-made module)."""
    import threading

    from pytest_skilleval.results import early_results

    done: list[str] = []

    def slow_warm_up(ready: Any = None) -> threading.Thread:
        thread = threading.Thread(target=lambda: (time.sleep(0.5), done.append("imported")), daemon=True)
        thread.start()
        return thread

    monkeypatch.setattr(early_results, "warm_up_reports", slow_warm_up)
    early = _early(tmp_path)
    early.warm_up = True
    early.seen("n1", _record("c1"))
    early.item_done("n1")
    assert done == []
    early.trials_over()
    assert done == ["imported"]


# Waits for the report's templates once the first item is done (so every later trial's block is rendered as it
# ends), and counts, as the session's end renders report.html, its trials and the blocks rendered ahead it used.
BLOCKS_CONFTEST = '''
import os
import pytest
from pytest_skilleval.results import html_report
from pytest_skilleval.session import get_state

_config = None
_used = {"views": 0, "ahead": 0}

def pytest_configure(config):
    global _config
    _config = config
    view = html_report._trial_view

    def counting(files, run_dir, known, threshold):
        _used["views"] += 1
        drill = known.get(files.entry.key)
        folder = html_report.trial_file_text(run_dir, files.entry)
        if drill is not None and drill.block is not None and drill.block_for == (files.entry, folder, threshold):
            _used["ahead"] += 1
        return view(files, run_dir, known, threshold)

    html_report._trial_view = counting

@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    warming = get_state(_config).early._warming
    if report.when == "teardown" and warming is not None:
        warming.join(timeout=60)

def pytest_unconfigure(config):
    with open(os.environ["BLOCKS_LOG"], "w") as log:
        log.write(f"{_used['views']} {_used['ahead']}")
'''


def test_a_trial_block_rendered_as_the_trial_ends_is_the_one_the_report_renders(
    skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the report's templates are loaded, each trial's block of report.html is rendered as it ends (its
    result.json entry made as the session's end will make it) and the report uses it: the report the session wrote
    is byte for byte the one rendered again from the run folder, and only the first trial's block (it ended before
    the templates were loaded) was rendered at the end."""
    from pytest_skilleval.results.html_report import render_report
    from pytest_skilleval.results.run_folder import load_run

    skill_project.pytester.makeconftest(BLOCKS_CONFTEST)
    monkeypatch.setenv("BLOCKS_LOG", str(skill_project.root / "blocks.txt"))
    skill_project.make_skill("demo", simple_entries("c1", "c2", "c3"))
    skill_project.run(*RUN, "--n-attempts", "2").assert_outcomes(passed=6)
    trials, ahead = map(int, (skill_project.root / "blocks.txt").read_text().split())
    assert (trials, ahead) == (6, 5)
    run_dir = next((skill_project.root / "results" / "demo").glob("2*/result.json")).parent
    assert (run_dir / "report.html").read_text(encoding="utf-8") == render_report(load_run(run_dir))
