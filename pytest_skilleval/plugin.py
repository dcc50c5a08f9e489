"""pytest hooks only; each delegates to a module with one job."""

from __future__ import annotations

import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval import options
from pytest_skilleval.collect import (
    MARKER,
    TRIGGER_MARKER,
    ConfigFile,
    DatasetFile,
    NativeTaskFile,
    OrphanEvalsFile,
    SkillEvalItem,
    TriggerFile,
    TriggerItem,
    ignored_in_skill,
    orphan_evals_dir,
)
from pytest_skilleval.item_record import junit_item_properties, record_property_value, redact_record
from pytest_skilleval.plan_lines import planned_lines
from pytest_skilleval.results.keys import USER_PROPERTY_KEY
from pytest_skilleval.results.run_paths import new_run_id
from pytest_skilleval.session import STATE_KEY, SkillEvalSession, get_state, process_ends_with
from pytest_skilleval.skill.config_file import CONFIG_FILE_NAMES
from pytest_skilleval.skill.dataset import DATASET_NAMES
from pytest_skilleval.skill.folder import find_skill_root
from pytest_skilleval.skill.host_code import enclosing_skill
from pytest_skilleval.skill.triggers import TRIGGER_NAMES

RUN_ID_KEY = "skilleval_run_id"
AUTOPILOT_KEY = "skilleval_autopilot_swaps"  # workerinput: the controller's --autopilot copies, by skill path


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_skilleval import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(agent, arm, attempt, case): a pytest-skilleval trial (select with -m)"
    )
    config.addinivalue_line(
        "markers", f"{TRIGGER_MARKER}(should_trigger, split): a trigger-set trial (evals/triggers.json)"
    )
    if not config.getoption("skill_eval", False):
        return
    from pytest_skilleval.harbor.process_env import prepare_process

    # a level the user asked for wins; under --co nothing runs, and Harbor itself is never imported; otherwise each
    # trial's warnings go under its own item, not whichever item is in setup
    prepare_process(
        hold_logs=not (
            config.getoption("collectonly", False) or config.getoption("log_level", None) or config.getini("log_level")
        )
    )
    # Harbor warns about its own API churn on every trial, from whichever thread runs it; not the author's concern.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:harbor")
    sources = options.read_sources(config)
    # the command line and ini alone must already make sense, and the environment they ask for must work here
    settings = options.merge_settings(sources)
    options.check_environment(settings)
    from pytest_skilleval.skill.judging import JudgeConfigError, judge_banner

    try:
        banner = judge_banner(settings)
    except JudgeConfigError as error:
        raise pytest.UsageError(f"skilleval judges: {error}") from None
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput[RUN_ID_KEY] if workerinput and RUN_ID_KEY in workerinput else new_run_id()
    state = SkillEvalSession(config, sources, run_id)
    state.judge_banner = banner
    if settings.autopilot and workerinput is None:
        from pytest_skilleval.autopilot import prepare_autopilot

        state.autopilot_notes, state.autopilot_swaps = prepare_autopilot(config, settings, run_id)
    elif workerinput and workerinput.get(AUTOPILOT_KEY):
        from pytest_skilleval.autopilot import apply_swaps

        apply_swaps(config, workerinput[AUTOPILOT_KEY])
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(state, "skilleval-session")
    state.signals.install()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(), "skilleval-xdist")


class XdistHooks:
    """Every worker must use the controller's run id so the results tree is one run; a SIGTERM to the controller
    reaches the workers as the Ctrl+C it stands for."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        from pytest_skilleval.signals import child_pids

        state = get_state(node.config)
        if state is not None:
            node.workerinput[RUN_ID_KEY] = state.run_id
            node.workerinput[AUTOPILOT_KEY] = state.autopilot_swaps
            state.signals.workers = child_pids

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker stopped by a Ctrl+C (or the SIGTERM passed on to it as one) stops the run here as a Ctrl+C
        does: otherwise xdist takes it for a crashed worker and starts another, which a session already stopping
        never shuts down (seen once in CI: the controller waited on the new worker for good)."""
        if error == "keyboard-interrupt":
            raise KeyboardInterrupt


@pytest.hookimpl(tryfirst=True)  # before the terminal reporter asks for the header
def pytest_sessionstart(session: pytest.Session) -> None:
    """Fix the run plan before anything is collected or run (on the controller, or the only process)."""
    state = get_state(session.config)
    if state is None:
        return
    _keep_trial_records_out_of_capture(session.config)
    if _is_worker(session.config):
        return
    state.fix_plans(list(session.config.args), session.config.invocation_params.dir)
    state.check_resumable()
    from pytest_skilleval.lifecycle import run_preflight

    run_preflight(state)


def _keep_trial_records_out_of_capture(config: pytest.Config) -> None:
    """pytest's log capture (registered after our configure) drops the records of held trials: each is shown
    under its own item (`_report_trial_log`), not under whichever item was in setup when it was logged."""
    from pytest_skilleval.harbor.process_env import not_a_trial_record

    capture = config.pluginmanager.get_plugin("logging-plugin")
    for name in ("report_handler", "caplog_handler"):
        handler = getattr(capture, name, None)
        if handler is not None:
            handler.addFilter(not_a_trial_record)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Said once, before the first trial: judges that will not run, and how many trials each skill plans (and
    whether they call models)."""
    state = get_state(config)
    if state is None or _is_worker(config):
        return []
    from pytest_skilleval.compat import terminal_width
    from pytest_skilleval.results.summary_text import wrap

    lines = ([state.judge_banner] if state.judge_banner else []) + state.credential_lines + planned_lines(state)
    return [part for line in lines for part in wrap(line, terminal_width(config))]


def pytest_unconfigure(config: pytest.Config) -> None:
    state = get_state(config)
    if state is not None:
        state.signals.release(process_ends=process_ends_with(config))


@pytest.hookimpl(tryfirst=True)  # before pytest imports the first conftest.py (its own implementation is trylast)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """A conftest.py or pytest config file inside a skill folder is the skill's code on this machine: refused."""
    from pytest_skilleval.trust import refuse_skill_code

    refuse_skill_code(early_config)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Inside a skill folder only its datasets and native task.toml files (and the folders leading to them) are
    collected: nothing a skill ships is a test module (scripts, fixtures, graders and Harbor test scripts would
    otherwise be imported on the host as Python tests)."""
    state = get_state(config)
    if state is None:
        return None
    if ignored_in_skill(collection_path):
        return True
    left_out = state.left_out()
    if left_out and any(collection_path.resolve().is_relative_to(root) for root in left_out):
        return True  # --changed-since: this skill did not change
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A folder inside a skill is a plain folder, never a Python package: pytest would import its __init__.py."""
    if get_state(parent.config) is None or enclosing_skill(path) is None:
        return None
    return pytest.Dir.from_parent(parent, path=path)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = get_state(parent.config)
    if state is None:
        return None
    skill_root = find_skill_root(file_path)
    if skill_root is None:
        if orphan_evals_dir(file_path) is not None:
            return OrphanEvalsFile.from_parent(parent, path=file_path)
        return None
    skill = state.skill(skill_root)
    evals = skill.evals_dir
    if file_path.parent == evals and file_path.name in DATASET_NAMES:
        return DatasetFile.from_parent(parent, path=file_path, skill=skill)
    if file_path.parent == evals and file_path.name in TRIGGER_NAMES:
        return TriggerFile.from_parent(parent, path=file_path, skill=skill)
    if file_path.parent == evals and file_path.name in CONFIG_FILE_NAMES:
        return ConfigFile.from_parent(parent, path=file_path, skill=skill)
    if file_path.name == "task.toml" and file_path.parent.parent == evals / "harbor":
        if file_path.parent.name.startswith((".", "_")):
            return None
        return NativeTaskFile.from_parent(parent, path=file_path, skill=skill)
    return None


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect: a selection that leaves nothing is not a missing skill
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """A command-line path that yielded nothing becomes one collection error saying what was expected."""
    state = get_state(config)
    if state is None:
        return
    from pytest_skilleval.hints import missing_skill_reports

    for report in state.drop_refused(items):  # a skill whose resume is refused: one error, the others resume
        state.collect_errors.skill_nodeids.add(report.nodeid)
        session.ihook.pytest_collectreport(report=report)
    for report in missing_skill_reports(config, items, [*state.collect_error_paths, *state.left_out()]):
        state.collect_errors.skill_nodeids.add(report.nodeid)  # a skill's error: the other skills still run
        session.ihook.pytest_collectreport(report=report)


@pytest.fixture(scope="session")
def skilleval_runner(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Any:
    """Runs one trial per call: `run(spec) -> TrialRecord`. Override it in a conftest to run trials elsewhere."""
    from pytest_skilleval.harbor.runner import SkillEvalRunner

    state = get_state(pytestconfig)
    if state is None:
        raise pytest.UsageError("skilleval_runner needs --skill-eval")
    return SkillEvalRunner(tmp_path_factory.mktemp("skilleval"), state.skills, state.run_id)


@pytest.fixture
def skilleval_trial(request: pytest.FixtureRequest, skilleval_runner: Any) -> Any:
    """Runs the item's trial during setup, so an infrastructure failure is an ERROR rather than a FAIL."""
    from pytest_skilleval.harbor.runner import TrialError
    from pytest_skilleval.pass_rule import TrialOutcome

    item = request.node
    if not isinstance(item, SkillEvalItem):
        pytest.skip("skilleval_trial only applies to skilleval items")
    from pytest_skilleval.dispatch import trial_record

    state = get_state(item.config)
    if state is None:
        raise pytest.UsageError("skilleval_trial needs --skill-eval")
    if isinstance(item, TriggerItem):
        from pytest_skilleval.pass_rule import trigger_outcome

        trigger = trial_record(item, skilleval_runner, state)
        _report_trial_log(item, trigger.trial_dir, state.redactor)
        return trigger_outcome(item, trigger, state)
    record = redact_record(trial_record(item, skilleval_runner, state), state.redactor)
    _report_trial_log(item, record.trial_dir, state.redactor)
    text = record_property_value(record)
    item.user_properties.append((USER_PROPERTY_KEY, text))
    state.made_here(item.nodeid, text, record)
    if getattr(item.config.option, "xmlpath", None):  # only a JUnit report reads them; else kept for nothing
        item.user_properties.extend(junit_item_properties(record))
    if record.status == "skipped":
        pytest.skip(record.reason or "skipped")
    if record.status == "error":
        raise TrialError(record.error or "the trial failed")
    if record.status == "unscored":
        raise TrialError(record.reason or "the trial produced no score")
    return TrialOutcome(
        record=record,
        pass_threshold=item.session.config.stash[STATE_KEY].skill(item.spec.skill_dir).settings.pass_threshold,
    )


def _report_trial_log(item: pytest.Item, trial_dir: str | None, redactor: Any) -> None:
    """The Harbor warnings and errors of the item's own trial, as its "Captured log setup" (pytest shows it for a
    failed or errored item): held by trial name while the trial ran, whichever item was in setup then."""
    from pytest_skilleval.harbor.process_env import trial_log_lines

    lines = trial_log_lines(Path(trial_dir).name) if trial_dir else []
    if lines:
        item.add_report_section("setup", "log", redactor.text("\n".join(lines)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Our own failures read as one line of explanation, never a traceback into the plugin."""
    report = yield
    if not isinstance(item, SkillEvalItem):
        return report
    if call.excinfo is not None and report.failed:
        from pytest_skilleval.harbor.runner import TrialError
        from pytest_skilleval.pass_rule import TrialFailed

        if isinstance(call.excinfo.value, (TrialError, TrialFailed)):
            report.longrepr = str(call.excinfo.value)
    state = get_state(item.config)
    if state is not None:
        # Failure text and captured output reach the terminal and JUnit: the same redaction as every file.
        if report.failed and report.longrepr is not None:
            text = str(report.longrepr)
            redacted = state.redactor.text(text)
            if redacted != text or isinstance(report.longrepr, str):
                report.longrepr = redacted
        report.sections = [(title, state.redactor.text(content)) for title, content in report.sections]
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    """An item that has run (its three reports logged) lets its trial spec go: memory kept per trial."""
    try:
        return (yield)
    finally:
        if isinstance(item, SkillEvalItem):
            item.forget_spec()


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """Show each trial's score beside its outcome in verbose runs."""
    state = get_state(config) if report.when == "call" and report.passed else None
    if state is None:
        return None
    for key, value in report.user_properties:
        if key == USER_PROPERTY_KEY and isinstance(value, str):
            overall = state.reported_overall(report.nodeid, value)
            if overall is not None:
                return "passed", ".", (f"PASSED ({overall:.2f})", {"green": True})
    return None


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)  # before junitxml writes its file, so the run-level properties make it in
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = get_state(session.config)
    if state is None:
        return
    if "pytest_skilleval.dispatch" in sys.modules:
        # Only a session that ran a trial (which imports dispatch) can have trials to stop; `--co` never imports
        # Harbor's trial machinery at all.
        from pytest_skilleval.dispatch import shutdown

        shutdown(session)
    state.after_trials()
    if "pytest_skilleval.harbor.nv_bridge" in sys.modules:  # the NVIDIA bridge this process started, if any
        from pytest_skilleval.harbor.nv_bridge import stop_bridges

        stop_bridges()
    if _is_worker(session.config):
        _reap_trial_processes(session)
        return
    state.early.trials_over()  # the last job folders' deletion and the trial files' sync start now
    stopped = state.collect_errors.summary_line()
    if stopped is not None:
        state.summary_lines.append(stopped)
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and state.changes() and not state.case_plans:
        session.exitstatus = pytest.ExitCode.OK  # --changed-since: no skill changed, and the header said so
    from pytest_skilleval.lifecycle import remove_job_folders

    try:
        if state.has_records() or state.early.opened():
            from pytest_skilleval.reporting import finish_session

            finish_session(state, session, exitstatus)
    finally:
        remove_job_folders(state)
        _reap_trial_processes(session)  # they exit while the results are written


def _reap_trial_processes(session: pytest.Session) -> None:
    if "pytest_skilleval.dispatch" in sys.modules:
        from pytest_skilleval.dispatch import reap

        reap(session)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = get_state(config)
    if state is None:
        from pytest_skilleval.hints import no_flag_hint

        hint = no_flag_hint(config, exitstatus)
        if hint is not None:
            terminalreporter.write_line(hint, yellow=True)
        return
    if _is_worker(config) or not (state.summary_lines or state.autopilot_notes):
        return
    terminalreporter.section("skilleval")
    for line in [*state.summary_lines, *state.autopilot_notes]:
        terminalreporter.write_line(state.redactor.text(line))
