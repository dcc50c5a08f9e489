"""Session state: the skills seen, the trial records reported, and what happens once at the end.

Records arrive through `pytest_runtest_logreport`, which runs on the controller for every worker's reports under
xdist and in the only process otherwise, so the aggregate is the same either way and a crashed worker loses
only its own trials.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Generator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from pytest_skilleval.collect_errors import CollectionErrors
from pytest_skilleval.options import SettingsSources, merge_settings
from pytest_skilleval.pytest_outputs import pytest_outputs
from pytest_skilleval.results.early_results import EarlyResults
from pytest_skilleval.results.keys import TRIGGER_PROPERTY_KEY, USER_PROPERTY_KEY, TrialKey, TriggerKey
from pytest_skilleval.results.run_paths import resolve_results_root
from pytest_skilleval.signals import SignalGuard
from pytest_skilleval.skill.changed import ChangedSinceError, SkillChange, skill_change
from pytest_skilleval.skill.folder import SkillFolder, arg_path, skill_roots_under
from pytest_skilleval.skill.kwarg_values import kwarg_leaves
from pytest_skilleval.skill.plan import CasePlan, TrialSpec, case_plan
from pytest_skilleval.skill.setting_catalog import unmeasured_settings
from pytest_skilleval.skill.settings import RunSettings
from pytest_skilleval.skill.stored_config import as_current
from verifier.redact import Redactor

if TYPE_CHECKING:  # the record and result models: imported where a trial is reported or a stored run read
    from pytest_skilleval.harbor.budget import Budget
    from pytest_skilleval.results.records import TrialRecord
    from pytest_skilleval.results.tree import RunStart
    from pytest_skilleval.results.triggering import TriggerRecord

STATE_KEY = pytest.StashKey["SkillEvalSession"]()


def agent_kwarg_maps(parsed: dict[str, Any]) -> list[dict[str, Any]]:
    """--agent-kwarg as parsed ({AGENT: {KEY: value}}) as one {KEY: value} map per leaf, for the redactor."""
    return [{key: value} for kwargs in parsed.values() for key, value in kwarg_leaves(kwargs)]


class SkillEvalSession:
    def __init__(self, config: pytest.Config, sources: SettingsSources, run_id: str) -> None:
        self.config = config
        self.sources = sources
        self.run_id = run_id
        self.started = time.monotonic()
        self.skills: dict[Path, SkillFolder] = {}
        self.case_plans: dict[Path, CasePlan] = {}
        self._stored: dict[Path, dict[TrialKey, TrialRecord]] = {}
        self._stored_triggers: dict[Path, dict[TriggerKey, TriggerRecord]] = {}
        self._requested_runs: dict[tuple[Path, str], Path | None] = {}
        self._refusals: dict[Path, str | None] = {}  # skill -> why its part of the resumed run cannot be finished
        self._joined: dict[Path, str] = {}  # skill -> the resumed run it had no part in, whose id it runs under now
        # nodeid -> (skill_dir, the record's JSON): kept as the text the report already carries (shared, not
        # copied) and parsed once at session end, so a finished trial costs its JSON, not a parsed model.
        self._records: dict[str, tuple[str, str]] = {}
        self._parsed_records: dict[str, tuple[str, TrialRecord]] = {}  # node id -> (its text, the record parsed)
        # node id -> (the text put in its user_properties, the record it was made from), in the process that ran the
        # item, from its setup to its teardown report: that process's reports carry this very string, and the
        # record is not parsed back from it.
        self._made_here: dict[str, tuple[str, TrialRecord]] = {}
        self._skill_dirs: dict[str, str] = {}
        # Trigger items' records (evals/triggers.json), by node id: kept apart, they never join the case records.
        self._triggers: dict[str, TriggerRecord] = {}
        self._budgets: dict[Path, Budget | None] = {}
        self.budget_counted: set[str] = set()  # node ids of reused trials already added to the spend
        self.results_paths: list[Path] = []
        self.summary_lines: list[str] = []
        self.collect_error_paths: list[Path] = []
        self.collect_errors = CollectionErrors()
        self.judge_banner: str | None = None
        self.autopilot_notes: list[str] = []
        self.autopilot_swaps: dict[str, list[str]] = {}  # a path given -> the paths run instead (--autopilot)
        self.credential_validation: dict[str, Any] | None = None
        self.credential_lines: list[str] = []
        self.signals = SignalGuard()
        # One redaction pass for everything the session writes or prints (docs/security.md, "Secrets").
        self.redactor = Redactor.from_environment(
            os.environ,
            [
                sources.cli.get("env_kwargs", {}),
                sources.ini.get("env_kwargs", {}),
                *agent_kwarg_maps(sources.cli.get("agent_kwargs", {})),
            ],
        )
        # Trial files written (and job folders deleted) as items finish; on the controller or the only process.
        from pytest_skilleval.results.entries_ahead import EntriesAhead

        ahead = EntriesAhead(self._scoring_rules)
        self.early = EarlyResults(
            self.results_root, self.run_id_for, self.redactor, self.keep_jobs, self.run_start, ahead.entry
        )
        self._writes_results = not hasattr(config, "workerinput")
        self._resolved: dict[Path, Path] = {}

    def _real(self, path: Path) -> Path:
        """`path.resolve()`, walked once per path: every item asks for its skill folder (its settings, budget and
        plan) several times, and a realpath is a system call per component."""
        real = self._resolved.get(path)
        if real is None:
            real = self._resolved[path] = path.resolve()
        return real

    def skill(self, path: Path) -> SkillFolder:
        path = self._real(path)
        if path not in self.skills:
            self.skills[path] = SkillFolder(path, partial(self._merged, path), pytest_outputs(self.config))
        return self.skills[path]

    def _merged(self, skill_dir: Path, skill_config: Any) -> RunSettings:
        """The skill's settings; under --regrade with the plan of the run graded again."""
        settings = merge_settings(self.sources, skill_config)
        if settings.regrade is None:
            return settings
        from pytest_skilleval.regrade_plan import regrade_source, with_source_plan

        return with_source_plan(
            settings, self.sources.cli, skill_dir, partial(self._run_of_another_skill, skill_dir, find=regrade_source)
        )

    def fix_plans(self, args: list[str], invocation_dir: Path) -> None:
        """Read every reachable skill's cases now, so the end of the session compares against what was planned."""
        refuse_same_named_skills([root for root in self.reachable_skills() if root not in self.left_out()])
        for root in self.reachable_skills():
            if root not in self.left_out():
                self.case_plan(root)

    @functools.cache  # noqa: B019 - one session object per pytest run
    def reachable_skills(self) -> tuple[Path, ...]:
        """Every skill folder under the command line's paths."""
        found: list[Path] = []
        for arg in self.config.args:
            target = arg_path(arg, self.config.invocation_params.dir)
            found += [root.resolve() for root in skill_roots_under(target) if root.resolve() not in found]
        return tuple(found)

    @functools.cache  # noqa: B019 - one session object per pytest run
    def changes(self) -> tuple[SkillChange, ...] | None:
        """--changed-since: each reachable skill and whether it changed; None without the option."""
        ref = merge_settings(self.sources).changed_since
        if ref is None:
            return None
        try:
            return tuple(skill_change(root, ref) for root in self.reachable_skills())
        except ChangedSinceError as error:
            raise pytest.UsageError(str(error)) from None

    @functools.cache  # noqa: B019 - one session object per pytest run
    def left_out(self) -> frozenset[Path]:
        """The skill folders --changed-since leaves out (nothing under them is collected)."""
        return frozenset(change.skill_dir for change in self.changes() or () if not change.kept)

    def changed_since_line(self) -> str | None:
        changes = self.changes()
        if changes is None:
            return None
        ref = merge_settings(self.sources).changed_since
        kept = [c.reason() for c in changes if c.kept]
        left = [c.reason() for c in changes if not c.kept]
        if not kept:
            return f"skilleval: --changed-since {ref}: no skill changed ({len(left)} looked at); nothing to run"
        out = f"; leaves out {', '.join(left)}" if left else ""
        return f"skilleval: --changed-since {ref}: keeps {', '.join(kept)}{out}"

    def results_root(self, skill_dir: Path) -> Path:
        return resolve_results_root(skill_dir, self.skill(skill_dir).settings.results_dir, os.environ)

    @functools.cache  # noqa: B019 - one session object per pytest run
    def keep_jobs(self) -> bool:
        """--harbor-keep-jobs: trials' staged tasks and Harbor folders stay after their results are written."""
        return merge_settings(self.sources).harbor_keep_jobs

    def resumed_run_dir(self, skill_dir: Path) -> Path | None:
        """The run folder this session finishes (--resume), or None for a new run."""
        return self._requested_run(skill_dir, "resume")

    def regrade_source(self, skill_dir: Path) -> Path | None:
        """The finished run whose stored trials this session grades again (--regrade), or None."""
        return self._requested_run(skill_dir, "regrade")

    def _requested_run(self, skill_dir: Path, option: Literal["resume", "regrade"]) -> Path | None:
        """The run folder `--resume`/`--regrade` names, resolved once per skill (the results root is not searched
        again for every trial, and `latest` never becomes this session's own run folder)."""
        key = (self._real(skill_dir), option)
        if key not in self._requested_runs:
            self._requested_runs[key] = self._find_requested_run(key[0], option)
        return self._requested_runs[key]

    def _find_requested_run(self, skill_dir: Path, option: Literal["resume", "regrade"]) -> Path | None:
        try:
            requested = getattr(self.skill(skill_dir).settings, option)
        except pytest.UsageError:
            raise  # a usage error (a regrade's plan contradicted) stops the session at its start
        except Exception:  # noqa: BLE001 - a bad evals/config.yml is collection's to report, once
            return None
        if requested is None:
            return None
        from pytest_skilleval.regrade_plan import regrade_source
        from pytest_skilleval.results.resume import ResumeError, resolve_run_dir, run_absent

        try:
            if option == "regrade":
                return regrade_source(self.results_root(skill_dir), requested)
            return resolve_run_dir(self.results_root(skill_dir), requested)
        except ResumeError as error:
            joined = None
            if option == "resume" and run_absent(self.results_root(skill_dir), requested):
                joined = self._run_of_another_skill(skill_dir, requested, find=resolve_run_dir)
            if joined is None:
                raise pytest.UsageError(f"--{option} {requested}: {error}") from None
            self._joined[skill_dir] = joined
            return None

    def _run_of_another_skill(self, skill_dir: Path, requested: str, find: Callable[[Path, str], Path]) -> str | None:
        """The id of the run `--resume`/`--regrade` names (`find`: a results root -> that run's folder) as another
        skill of the session holds it, or None. Under --resume a skill with no part in it (the interrupted session
        could not collect this one, or selected none of its items) runs its trials in that run now, under its id, so
        the same `--resume` finds every skill's part next time; under --regrade it is this skill's one error."""
        results_dir = merge_settings(self.sources).results_dir  # the session's (no evals/config.yml key)
        for other in self.reachable_skills():
            if other != self._real(skill_dir) and other not in self.left_out():
                with contextlib.suppress(Exception):  # not there either
                    return find(resolve_results_root(other, results_dir, os.environ), requested).name
        return None

    def joined_run(self, skill_dir: Path) -> str | None:
        """The resumed run this skill had no part in and runs in now (`_run_of_another_skill`), or None."""
        self.resumed_run_dir(skill_dir)
        return self._joined.get(self._real(skill_dir))

    def budget(self, skill_dir: Path) -> Budget | None:
        """--max-cost for this skill's run (one per skill and process), or None without a limit."""
        from pytest_skilleval.harbor.budget import Budget

        skill_dir = self._real(skill_dir)
        if skill_dir not in self._budgets:
            limit = self.skill(skill_dir).settings.max_cost
            name = self.skill(skill_dir).name
            self._budgets[skill_dir] = None if limit is None else Budget.for_run(self.run_id, name, limit)
        return self._budgets[skill_dir]

    def run_id_for(self, skill_dir: Path) -> str:
        resumed = self.resumed_run_dir(skill_dir)
        return resumed.name if resumed is not None else self._joined.get(self._real(skill_dir), self.run_id)

    def run_config(self, skill_dir: Path) -> dict[str, Any]:
        """What run_config.json records: the skill's settings and digest, and the run a regrade grades again."""
        config = self.skill(skill_dir).run_config()
        if self.credential_validation is not None:
            config["credential_validation"] = self.credential_validation
        source = self.regrade_source(skill_dir)
        if source is not None:
            config["regraded_from"] = source.name
        return config

    def _scoring_rules(self, skill_dir: str) -> tuple[str, float]:
        """The skill's grading mode and pass threshold, as `reporting.build_plan` gives them to the aggregate."""
        settings = self.skill(Path(skill_dir)).settings
        return settings.grading_mode, settings.pass_threshold

    def run_start(self, skill_dir: Path) -> RunStart:
        """What the run folder's first write records, for --resume to compare: the settings and the dataset digest."""
        from pytest_skilleval.results.tree import RunStart

        return RunStart(self.run_config(skill_dir), self.case_plan(skill_dir).digest)

    def check_resumable(self) -> None:
        """At start, on the controller: a resumed skill whose dataset, skill or settings changed is one collection
        error (`drop_refused`) while another skill of the session resumes; when none would, the session stops."""
        resumed = []
        for skill_dir in self.case_plans:
            self.regrade_source(skill_dir)
            if self.resumed_run_dir(skill_dir) is not None:
                resumed.append(skill_dir)
        refused = [line for line in map(self.resume_refusal, resumed) if line]
        if refused and len(refused) == len(resumed):
            raise pytest.UsageError(f"{refused[0]}; start a new run")

    def resume_refusal(self, skill_dir: Path) -> str | None:
        """Why this skill's part of the resumed run cannot be finished (its dataset, files or settings changed since:
        mixing trials of two evaluations), or None; worked out once per skill and process (workers collect)."""
        skill_dir = self._real(skill_dir)
        if skill_dir not in self._refusals:
            self._refusals[skill_dir] = self._resume_problem(skill_dir)
        return self._refusals[skill_dir]

    def _resume_problem(self, skill_dir: Path) -> str | None:
        run_dir = self.resumed_run_dir(skill_dir)
        if run_dir is None:
            return None
        from pytest_skilleval.results.resume import resume_problem

        try:
            config = self.skill(skill_dir).run_config()
        except pytest.UsageError:
            raise
        except Exception:  # noqa: BLE001 - a bad evals/config.yml is collection's to report, once
            return None
        # what the credential check found is the session's, not a setting: a resumed run checks again
        unmeasured = unmeasured_settings() | {"credential_validation"}
        digest = self.case_plan(skill_dir).digest
        problem = resume_problem(run_dir, config, digest, unmeasured=unmeasured, as_current=as_current)
        return f"--resume {run_dir.name} ({skill_dir.name}): {problem}" if problem else None

    def drop_refused(self, items: list[pytest.Item]) -> list[pytest.CollectReport]:
        """The items of a skill whose resume is refused, taken out; one failed collection report per such skill says
        why and how to run it (the other skills resume)."""
        from pytest_skilleval.skill.folder import find_skill_root

        if merge_settings(self.sources).resume is None:
            return []
        roots = {path: find_skill_root(path) for path in {item.path for item in items}}
        reports: dict[Path, pytest.CollectReport] = {}
        kept = []
        for item in items:
            root = roots[item.path]
            refusal = self.resume_refusal(root) if root is not None else None
            if refusal is None or root is None:
                kept.append(item)
            elif root not in reports:
                fix = f"; run {root.name} in a new run (the same command without --resume, for its folder alone)"
                reports[root] = pytest.CollectReport(item.nodeid.split("::")[0], "failed", refusal + fix, [])
        items[:] = kept
        return list(reports.values())

    def stored_record(self, spec: TrialSpec) -> TrialRecord | None:
        """A finished trial of the resumed run, handed back instead of running it again."""
        return self._reused(self.stored_in(spec.skill_dir).get(spec.key), spec)

    def stored_trigger(self, spec: TrialSpec) -> TriggerRecord | None:
        """A finished trigger trial of the resumed run, handed back instead of running it again."""
        return self._reused(self.stored_triggers_in(spec.skill_dir).get((spec.case_id, spec.agent, spec.attempt)), spec)

    def _reused[R: (TrialRecord, TriggerRecord)](self, record: R | None, spec: TrialSpec) -> R | None:
        """A stored record as this session's item reports it: under its node id, naming the run it came from."""
        if record is None:
            return None
        source_run = self.run_id_for(self._real(spec.skill_dir))
        return record.model_copy(update={"nodeid": spec.nodeid, "source_run": source_run})

    def stored_in(self, skill_dir: Path) -> dict[TrialKey, TrialRecord]:
        """The resumed run's finished trials, read once per skill."""
        from pytest_skilleval.results.resume import stored_records

        return self._read_once(self._stored, skill_dir, stored_records)

    def stored_triggers_in(self, skill_dir: Path) -> dict[TriggerKey, TriggerRecord]:
        """The resumed run's finished trigger trials, read once per skill."""
        from pytest_skilleval.results.trigger_files import stored_trigger_records

        return self._read_once(self._stored_triggers, skill_dir, stored_trigger_records)

    def _read_once[K, V](
        self, cache: dict[Path, dict[K, V]], skill_dir: Path, read: Callable[[Path], dict[K, V]]
    ) -> dict[K, V]:
        """What `read` finds in the resumed run's folder (nothing without --resume), once per skill: kept under the
        item's own path, so an item costs no realpath walk."""
        stored = cache.get(skill_dir)
        if stored is None:
            run_dir = self.resumed_run_dir(self._real(skill_dir))
            stored = cache[skill_dir] = read(run_dir) if run_dir is not None else {}
        return stored

    def case_plan(self, skill_dir: Path) -> CasePlan:
        """The plan read at start; a skill first seen later (none should be) is read when first asked for."""
        skill_dir = self._real(skill_dir)
        if skill_dir not in self.case_plans:
            self.case_plans[skill_dir] = case_plan(self.skill(skill_dir))
        return self.case_plans[skill_dir]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        """The first Ctrl+C (or SIGTERM) is remembered before pytest's own reporting of it can be interrupted; a
        skill's collection errors do not stop the rest (`collect_errors`), and a session stopped opens no run folder."""
        hidden, stopped = self.collect_errors.hide(session), self.collect_errors.stopped
        try:
            self._before_trials(trials_run=not (self.config.option.collectonly or stopped or session.shouldfail))
            return (yield)
        except KeyboardInterrupt:
            if not stopped:  # pytest's stop for collection errors is not the user's Ctrl+C
                self.signals.mark_interrupted()
            raise
        finally:
            session.testsfailed += hidden

    def _before_trials(self, trials_run: bool) -> None:
        """Only in a process this pytest run owns (not an in-process run inside another session's)."""
        if not (hasattr(self.config, "workerinput") or process_ends_with(self.config)):
            return
        if self._writes_results and trials_run:
            self.early.warm_up = True  # once the first trial is done: not while the first one starts
            # Each run folder exists before any trial starts: an interrupt at any moment leaves a resumable run (not
            # for a skill whose collection failed, known here unless xdist's workers collect).
            failed = {at for error in map(self._real, self.collect_error_paths) for at in (error, *error.parents)}
            refused = {sd for sd in self.case_plans if self.resume_refusal(sd)}  # xdist: collected by the workers
            self.early.open_runs(
                sorted(sd for sd, plan in self.case_plans.items() if plan.cases and sd not in failed | refused)
            )
        # Everything alive now (imports, Harbor, the collected items) lives until the process ends: frozen, it is
        # left out of every full collection from now on (pytest forces two at its end, each walking all of it; under
        # `--co` those two are most of what follows collection).
        gc.freeze()

    def after_trials(self) -> None:
        """The trials are over: what is alive now (records, what Harbor left of each trial, its garbage) is left to
        the process's end, frozen, so the full collections the session's end would set off (the results and the
        report allocate a lot: each walked every object of the trials, ~0.2 s at 1,000 trials) and pytest's own at
        its end skip it. Only in a process this run owns, as `_before_trials`."""
        if hasattr(self.config, "workerinput") or process_ends_with(self.config):
            gc.freeze()

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        self.signals.mark_interrupted()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Registered as a plugin: sees every report, the workers' included when this is the controller."""
        from pytest_skilleval.results.records import TrialRecord
        from pytest_skilleval.results.triggering import TriggerRecord

        for index, (key, value) in enumerate(report.user_properties):
            if key == TRIGGER_PROPERTY_KEY and report.nodeid not in self._triggers:
                self._triggers[report.nodeid] = TriggerRecord.model_validate_json(str(value))
            if key != USER_PROPERTY_KEY:
                continue
            text = value if isinstance(value, str) else json.dumps(value)
            stored = self._records.get(report.nodeid)
            if stored is not None and stored[1] == text:
                # the same trial's setup, call and teardown reports: one string for all three (xdist sends copies)
                report.user_properties[index] = (key, stored[1])
                continue
            made = self._made_here.get(report.nodeid)
            record = made[1] if made is not None and made[0] is value else TrialRecord.model_validate_json(text)
            self._records.pop(report.nodeid, None)
            # Strings kept once per run, not once per trial: the report's node id (the item's own string) unless
            # the record names another, and one copy of each skill folder.
            nodeid = record.nodeid if record.nodeid and record.nodeid != report.nodeid else report.nodeid
            self._records[nodeid] = (self._skill_dirs.setdefault(record.skill_dir, record.skill_dir), text)
            if self._writes_results:
                self.early.seen(report.nodeid, record)
        if report.when == "teardown":
            self._made_here.pop(report.nodeid, None)
            if self._writes_results:
                self.early.item_done(report.nodeid)

    def made_here(self, nodeid: str, text: str, record: TrialRecord) -> None:
        """The item's record, and the JSON text its reports carry, in the process that ran it."""
        self._made_here[nodeid] = (text, record)

    def reported_overall(self, nodeid: str, text: str) -> Any:
        """The overall of the record whose JSON a report carries (the record itself when made here)."""
        made = self._made_here.get(nodeid)
        return made[1].overall if made is not None and made[0] is text else json.loads(text).get("overall")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Where collection failed: a path with an error is not also "a path that yielded nothing"."""
        path = report.nodeid.split("::", 1)[0]
        if report.failed and path:
            self.collect_error_paths.append(self.config.rootpath / path)
        if report.failed:
            self.collect_errors.seen(report, self.config.rootpath)

    @property
    def records(self) -> dict[str, TrialRecord]:
        """Every trial record seen so far, by node id (each parsed once)."""
        return {nodeid: self._parsed(nodeid, text) for nodeid, (_, text) in self._records.items()}

    def has_records(self) -> bool:
        return bool(self._records) or bool(self._triggers)

    def record_skill_dirs(self) -> list[str]:
        """The skill folders that have records (under xdist the controller collects nothing: these say which)."""
        triggers = {record.skill_dir for record in self._triggers.values()}
        return sorted({skill_dir for skill_dir, _ in self._records.values()} | triggers)

    def trigger_records(self) -> list[TriggerRecord]:
        """Every trigger trial record seen so far."""
        return list(self._triggers.values())

    def trigger_records_for(self, skill_dir: str) -> list[TriggerRecord]:
        return [record for record in self._triggers.values() if record.skill_dir == skill_dir]

    def skill_dirs_to_report(self, interrupted: bool) -> list[str]:
        """The skills whose run is written at the end: those with records and, after an interrupt, every run folder
        opened at start (0 trials, marked interrupted, resumable); an unused run folder of an uninterrupted session
        (every item of its skill deselected) is removed again."""
        with_records = set(self.record_skill_dirs())
        for skill_dir in self.early.opened():
            if skill_dir in with_records:
                continue
            if interrupted:
                with_records.add(skill_dir)
            else:
                writer = self.early.writer(skill_dir)
                if writer is not None:
                    writer.discard_unused()
        return sorted(with_records)

    def records_for(self, skill_dir: str) -> list[TrialRecord]:
        return [self._parsed(nodeid, text) for nodeid, (sd, text) in self._records.items() if sd == skill_dir]

    def _parsed(self, nodeid: str, text: str) -> TrialRecord:
        """A record parsed once for the session's end, where the results and the clean-up both read every one
        (`--co` and a session that ran nothing never import the record model)."""
        from pytest_skilleval.results.records import TrialRecord

        cached = self._parsed_records.get(nodeid)
        if cached is None or cached[0] is not text:
            cached = self._parsed_records[nodeid] = (text, TrialRecord.model_validate_json(text))
        return cached[1]


def process_ends_with(config: pytest.Config) -> bool:
    """Whether this process ends with this pytest run: pytest's own entry point (`pytest ...`, `python -m pytest`)
    exits right after it; pytester's in-process runs and other callers of pytest.main() go on, with other arguments
    than the process's."""
    return tuple(sys.argv[1:]) == tuple(config.invocation_params.args)


def get_state(config: pytest.Config) -> SkillEvalSession | None:
    return config.stash.get(STATE_KEY, None)


def refuse_same_named_skills(roots: list[Path]) -> None:
    """Two skill folders of one name in one run would share their staged copy and their trials' folders (both are
    named after the skill), so one skill's agents could be given the other's files: refused before anything runs."""
    by_name: dict[str, list[Path]] = {}
    for root in roots:
        by_name.setdefault(root.name, []).append(root)
    for name, paths in by_name.items():
        if len(paths) > 1:
            raise pytest.UsageError(
                f"skilleval: {len(paths)} skills named {name!r} in one run ({', '.join(map(str, paths))}): "
                "run each in its own pytest run (or give its folder another name)"
            )
