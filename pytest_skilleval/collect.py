"""pytest collectors for eval datasets and native Harbor tasks, and the item that runs one trial.

Node ids: `<path>/evals/evals.json::<case>[<agent>-<arm>-<attempt>]` and
`<path>/evals/harbor/<case>/task.toml::<case>[<agent>-<arm>-<attempt>]`. Items are generated in a fixed order
(case, agent, arm, attempt) so every xdist worker collects the same list.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.compat import structured_node_id
from pytest_skilleval.results.keys import Arm
from pytest_skilleval.skill.baseline import BaselineError, BaselineVersion
from pytest_skilleval.skill.case_inputs import StagingError, input_sources
from pytest_skilleval.skill.config_file import CONFIG_FILE_NAMES
from pytest_skilleval.skill.dataset import DATASET_NAMES, DatasetError, EvalCase, find_dataset
from pytest_skilleval.skill.folder import SkillFolder, missing_skill_md
from pytest_skilleval.skill.host_code import enclosing_skill
from pytest_skilleval.skill.plan import (
    TrialSpec,
    baseline_version,
    case_trials,
    native_case_names,
    native_claims,
    selected_cases,
    trial_label,
    trigger_label,
    trigger_trials,
)
from pytest_skilleval.skill.settings import LOCAL_ENV_MODES, RunSettings
from pytest_skilleval.skill.skill_copy import skill_copy_of
from pytest_skilleval.skill.skill_md import missing_front_matter
from pytest_skilleval.skill.triggers import TRIGGER_NAMES, case_id_clashes, find_trigger_set

MARKER = "skilleval"
TRIGGER_MARKER = "skilleval_trigger"
CaseFields = dict[str, Any]  # TrialSpec's fields shared by a case's trials (see `case_fields`)


class SkillEvalCollectError(Exception):
    """A collection problem that reads well without a traceback."""


def _node_id(parent: pytest.Collector, name: str) -> str:
    return f"{parent.nodeid}::{name}"


def case_fields(skill: SkillFolder, case_id: str, **fields: Any) -> CaseFields:
    """The TrialSpec fields every trial of one case shares (all but agent, arm, attempt and node id)."""
    return {"skill_dir": skill.path, "skill_name": skill.name, "case_id": case_id, **fields}


def _items(parent: pytest.Collector, skill: SkillFolder, case: CaseFields) -> Iterator[SkillEvalItem]:
    try:
        version = baseline_version(skill)
    except BaselineError as error:
        raise SkillEvalCollectError(f"{skill.path}: {error}") from None
    for agent, arm, attempt in case_trials(skill):
        yield SkillEvalItem.create(parent, case, agent, arm, attempt, version)


def _tag_mark(config: pytest.Config, tag: str) -> pytest.MarkDecorator:
    """A case tag (`tags` in evals.json, names checked by the dataset model) as a marker, registered once so
    `--strict-markers` accepts it and `-m "not slow"` selects by it."""
    registered = config.stash.setdefault(_TAGS_KEY, set())
    if tag not in registered:
        registered.add(tag)
        config.addinivalue_line("markers", f"{tag}: a case tag from a skill's evals.json")
    return getattr(pytest.mark, tag)


_TAGS_KEY = pytest.StashKey[set[str]]()


class SkillEvalItem(pytest.Function):
    """One trial: case x agent x arm x attempt. The trial runs in the `skilleval_trial` fixture (setup), so a
    Harbor or grader failure is an ERROR; the call phase then judges the score.

    The item keeps what its spec is made of (the case's fields, shared by the case's items, and its agent, arm and
    attempt) and builds its `TrialSpec` when first asked: collecting 20,000 items, `--co` or a `-k` that deselects
    most of them never pays for a spec per item (nor for the garbage collector walking them all)."""

    def __init__(self, *, case: CaseFields, agent: str, arm: Arm, attempt: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._case = case
        self._trial = (agent, arm, attempt)
        self._version: str | None = None  # the baseline_skill arm's version (short sha or folder), set by `create`
        assert self.parent is not None  # made by `create`, from its collector
        self._set_structured_id(_node_id(self.parent, self.name))
        self.extra_keyword_matches.update((agent, arm, self.originalname))

    @cached_property
    def spec(self) -> TrialSpec:
        agent, arm, attempt = self._trial
        return TrialSpec(**self._case, agent=agent, arm=arm, attempt=attempt, nodeid=self.nodeid)

    def forget_spec(self) -> None:
        """Once the item has run: nothing needs its spec any more (asked again, it is built again, equal), and kept
        by every item it would hold memory per trial for the whole session."""
        self.__dict__.pop("spec", None)

    def _set_structured_id(self, nodeid: str) -> None:
        """pytest 9.2 parses node ids into path, names and params; `--lf` and IDE runs compare those structures,
        so the id must be parsed from its string form rather than built from a name containing brackets."""
        structured = structured_node_id(nodeid)
        if structured is not None:  # pytest before structured node ids: string ids already compare as strings
            self._id = structured

    @classmethod
    def create(
        cls,
        parent: pytest.Collector,
        case: CaseFields,
        agent: str,
        arm: Arm,
        attempt: int,
        version: BaselineVersion | None = None,
    ) -> SkillEvalItem:
        """One item of `case` (TrialSpec's fields but the trial's own: see `case_fields`)."""
        case_id = case["case_id"]
        short = version.short if version is not None and arm == "baseline_skill" else None
        name = f"{case_id}[{trial_label(agent, arm, attempt, short)}]"
        # Every item of one collector has the same fixture closure (same parent, same function, no own marks but
        # the skilleval one): compute it for the first item and share it, as pytest does for parametrized tests.
        # The marker decorator is looked up once per collector too (pytest.mark checks it is registered).
        fixtureinfo = getattr(parent, "_skilleval_fixtureinfo", None)
        mark = getattr(parent, "_skilleval_mark", None)
        if mark is None:
            mark = parent._skilleval_mark = getattr(pytest.mark, MARKER)  # type: ignore[attr-defined]
        item = cls.from_parent(
            parent,
            name=name,
            case=case,
            agent=agent,
            arm=arm,
            attempt=attempt,
            callobj=_judge_trial,
            originalname=case_id,
            fixtureinfo=fixtureinfo,
        )
        if fixtureinfo is None:
            parent._skilleval_fixtureinfo = item._fixtureinfo  # type: ignore[attr-defined]
        item._version = short
        extra = {"version": version.label} if short is not None and version is not None else {}
        item.add_marker(mark(agent=agent, arm=arm, attempt=attempt, case=case_id, **extra))
        for tag in case.get("entry", {}).get("tags") or ():
            item.add_marker(_tag_mark(parent.config, tag))
        return item

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return (
            self.path,
            0,
            f"{self.originalname} [{trial_label(*self._trial, self._version)}]",
        )  # a line number: pytest needs one to report a skip

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        from pytest_skilleval.harbor.runner import TrialError
        from pytest_skilleval.pass_rule import TrialFailed

        if isinstance(excinfo.value, (TrialError, TrialFailed)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def _judge_trial(skilleval_trial: Any) -> None:
    """The call phase: the trial already ran in setup; here its score decides pass or fail."""
    from pytest_skilleval.pass_rule import judge

    judge(skilleval_trial)


class SkillCollector(pytest.File):
    """Base for collectors that belong to one skill folder."""

    def __init__(self, *, skill: SkillFolder, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.skill = skill

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, SkillEvalCollectError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def _settings_or_error(self) -> RunSettings | None:
        """The skill's settings, once its copy for the sandbox is known to work (skill/skill_copy.py: a link leaving
        the skill folder, or a skill over the caps, is one collection error for this skill); None when a bad
        evals/config.yml was already reported under its own name (`ConfigFile`)."""
        settings = self._settings_only()
        if settings is None:
            return None
        problem = skill_copy_of(self.skill).error()
        if problem:
            raise SkillEvalCollectError(problem)
        return settings

    def _settings_only(self) -> RunSettings | None:
        """The skill's settings; a bad evals/config.yml is one collection error for the skill, under config.yml's
        own node when it is collected (`ConfigFile`, collected before the files beside it): None here then. A
        `--regrade` run this skill has no part in is no fault of config.yml: the error of its first eval file."""
        try:
            return self.skill.settings
        except Exception as error:  # noqa: BLE001 - a bad evals/config.yml: one collection error for this skill
            from pytest_skilleval.regrade_plan import NotInRegradedRun

            reported = self.config.stash.setdefault(_CONFIG_REPORTED, set())
            if self.skill.path in reported:
                return None
            not_in_run = isinstance(error, NotInRegradedRun)
            if isinstance(self, ConfigFile) and not_in_run:
                return None
            if isinstance(self, ConfigFile) or not_in_run:
                reported.add(self.skill.path)
            raise SkillEvalCollectError(str(error)) from None


_CONFIG_REPORTED = pytest.StashKey[set[Path]]()  # skills whose settings error a ConfigFile reported


class ConfigFile(SkillCollector):
    """evals/config.yml (or .yaml): no items; a problem with the skill's settings is its collection error, so
    pytest's `ERROR collecting` line names the file to fix (the dataset and trigger set then say nothing more)."""

    def collect(self) -> Iterator[pytest.Item]:
        self._settings_only()  # the skill's copy is the dataset's and trigger set's to check
        return iter(())


class OrphanEvalsFile(pytest.File):
    """A dataset (or native task) in an evals/ folder with no SKILL.md beside it: one error saying so."""

    def collect(self) -> Iterator[pytest.Item]:
        raise SkillEvalCollectError(missing_skill_md(orphan_evals_dir(self.path)))  # type: ignore[arg-type]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, SkillEvalCollectError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def orphan_evals_dir(file_path: Path) -> Path | None:
    """The evals/ folder a dataset or native task.toml sits in when no SKILL.md is next to it (else None).

    A native task is reported only when its evals/ holds no dataset, so a broken skill gives one error, not one
    per task.
    """
    if file_path.parent.name == "evals" and file_path.name in DATASET_NAMES:
        evals = file_path.parent
        if find_dataset(evals) != file_path:
            return None
    elif file_path.name == "task.toml" and file_path.parent.parent.name == "harbor":
        evals = file_path.parent.parent.parent
        first = sorted(evals.glob("harbor/*/task.toml"))
        if evals.name != "evals" or find_dataset(evals) is not None or not first or first[0] != file_path:
            return None
    else:
        return None
    return None if (evals.parent / "SKILL.md").is_file() else evals


def ignored_in_skill(path: Path) -> bool:
    """Whether `path` lies in a skill folder but is none of what collection reads there: the skill folder, evals/,
    its dataset file, its trigger set, evals/harbor/, a task folder there and its task.toml."""
    skill = enclosing_skill(path)
    if skill is None:
        return False
    parts = path.relative_to(skill).parts
    if parts in ((), ("evals",), ("evals", "harbor")):
        return False
    if len(parts) == 2 and parts[0] == "evals":
        return parts[1] not in (*DATASET_NAMES, *TRIGGER_NAMES, *CONFIG_FILE_NAMES)
    if len(parts) == 3 and parts[:2] == ("evals", "harbor"):
        return not path.is_dir()
    return not (len(parts) == 4 and parts[:2] == ("evals", "harbor") and parts[3] == "task.toml")


def _pytest_strict(config: pytest.Config) -> bool:
    """pytest's own strict mode (`--strict`, or `strict = true` in the ini file, pytest >= 9): a typo'd dataset key
    is then an error, as an unknown ini key or marker is."""
    try:
        return bool(config.getini("strict"))
    except ValueError:  # a pytest without the `strict` option
        return False


class DatasetFile(SkillCollector):
    """evals/evals.json|jsonl|yaml|yml: one item per case x agent x arm x attempt."""

    def collect(self) -> Iterator[SkillEvalItem]:
        chosen = find_dataset(self.path.parent)
        if chosen is not None and chosen != self.path:
            raise SkillEvalCollectError(
                f"{self.path}: the skill already has a dataset, {chosen.name}; keep one of {', '.join(DATASET_NAMES)}"
            )
        try:
            dataset = self.skill.load_dataset(self.path)
        except DatasetError as error:
            raise SkillEvalCollectError(str(error)) from None
        if dataset.key_typos and _pytest_strict(self.config):
            typo = dataset.key_typos[0]
            raise SkillEvalCollectError(f"{self.path}: {typo.message()} (an error under pytest's strict mode)")
        for typo in dataset.key_typos:
            self.warn(pytest.PytestWarning(f"{self.path}: {typo.message()}"))
        # A SKILL.md no agent can list the skill by is worth a warning, not a stopped run: the trials still show it.
        for problem in missing_front_matter(self.skill.path):
            self.warn(pytest.PytestWarning(f"{self.skill.path / 'SKILL.md'}: [{problem.rule}] {problem.message}"))
        settings = self._settings_or_error()
        if settings is None or settings.task_source == "native_harbor":
            return  # harbor.task_source: the dataset only describes the native tasks' entries
        # A native task for an entry id replaces the task generated from that entry (the standard modes require
        # every native task to match an entry, and one case must not run twice).
        native_ids = set(native_claims(self.skill.evals_dir).values()) if settings.task_source == "auto" else set()
        cases: list[EvalCase] = [case for case in dataset.cases if case.id not in native_ids]
        selected = selected_cases(self.skill) if settings.max_cases is not None else None
        if selected is not None:
            cases = [case for case in cases if case.id in selected]
        evals_dir = self.skill.evals_dir
        entries = dict(zip((case.id for case in dataset.cases), self.skill.entries(dataset), strict=True))
        default_inputs_checked = False
        for case in cases:
            files = case.files if case.files_given else None
            # A case without `files` stages evals/files/: the same check for every such case, so made once.
            if files is not None or not default_inputs_checked:
                try:
                    input_sources(evals_dir, files, case.id)
                except StagingError as error:
                    raise SkillEvalCollectError(f"{self.path}: {error}") from None
                default_inputs_checked = default_inputs_checked or files is None
            yield from _items(
                self,
                self.skill,
                case_fields(self.skill, case.id, source="dataset", entry=entries[case.id], files=files),
            )


class NativeTaskFile(SkillCollector):
    """evals/harbor/<case>/task.toml: a native Harbor task, one item per agent x arm x attempt.

    Every staging rule is checked here, before anything runs: a task that breaks one is a collection error naming
    the rule; the other skills still run (`session.py`).
    """

    def _dataset_entries(self) -> dict[str, EvalCase] | None:
        path = find_dataset(self.skill.evals_dir)
        if path is None:
            return None
        try:
            dataset = self.skill.load_dataset(path)
        except DatasetError:
            return {}  # the dataset's own collector reports the problem
        # one index per dataset content, shared by every native task's collector (not one per task)
        return self.skill.once(
            f"cases by id {path} {dataset.digest}", lambda: {case.id: case for case in dataset.cases}
        )

    def collect(self) -> Iterator[SkillEvalItem]:
        from pytest_skilleval.skill.native_tasks import NativeTaskError, check_native_task, load_native_task

        try:
            task = load_native_task(self.path.parent)
        except NativeTaskError as error:
            raise SkillEvalCollectError(str(error)) from None
        settings = self._settings_or_error()
        if settings is None or settings.task_source == "evals_json":
            return  # harbor.task_source: only the dataset's generated tasks run
        selected = selected_cases(self.skill) if settings.max_cases is not None else None
        if selected is not None and task.case_id not in selected:
            return  # beyond --max-cases in staged order
        entries = self._dataset_entries()
        pre_agent_setup = getattr(getattr(self.skill.config, "harbor", None), "pre_agent_setup", None) or ()
        findings = check_native_task(
            task,
            grading_mode=settings.grading_mode,
            paired=settings.comparison_arm_runs,  # the baseline's rules: --skip-with-skill and --baseline-skill too
            dataset_ids=entries.keys() if entries is not None else None,
            pre_agent_setup=list(pre_agent_setup),
            staged_env=settings.pass_env,
            env_mode="local" if settings.env_mode in LOCAL_ENV_MODES else settings.env_mode,
        )
        errors = [finding for finding in findings if finding.severity == "error"]
        if errors:
            lines = "\n".join(f"  [{finding.rule}] {finding.message}" for finding in errors)
            raise SkillEvalCollectError(f"{self.path}: native task refused:\n{lines}")
        for finding in findings:
            self.warn(pytest.PytestWarning(f"{self.path}: [{finding.rule}] {finding.message}"))
        case = (entries or {}).get(task.entry_id)
        entry = case.entry_json() if case is not None else {"id": task.entry_id}
        files = case.files if case is not None and case.files_given else None
        yield from _items(
            self,
            self.skill,
            case_fields(self.skill, task.case_id, source="native", native_task_dir=task.path, entry=entry, files=files),
        )


class TriggerItem(SkillEvalItem):
    """One trigger trial: query x agent x attempt, node id `.../evals/triggers.json::<id>[<agent>-<attempt>]`. It
    has one arm (the skill installed among distractors); its record is a `TriggerRecord`, never a case's."""

    def reportinfo(self) -> tuple[Path, int | None, str]:
        agent, _, attempt = self._trial
        return (self.path, 0, f"{self.originalname} [{trigger_label(agent, attempt)}]")

    @classmethod
    def create_trigger(cls, parent: pytest.Collector, case: CaseFields, agent: str, attempt: int) -> TriggerItem:
        query_id = case["case_id"]
        item = cls.from_parent(
            parent,
            name=f"{query_id}[{trigger_label(agent, attempt)}]",
            case=case,
            agent=agent,
            arm="with_skill",
            attempt=attempt,
            callobj=_judge_trial,
            originalname=query_id,
            fixtureinfo=getattr(parent, "_skilleval_fixtureinfo", None),
        )
        if getattr(parent, "_skilleval_fixtureinfo", None) is None:
            parent._skilleval_fixtureinfo = item._fixtureinfo  # type: ignore[attr-defined]
        should = bool(case["entry"].get("should_trigger"))
        item.add_marker(getattr(pytest.mark, MARKER)(agent=agent, arm="with_skill", attempt=attempt, case=query_id))
        item.add_marker(getattr(pytest.mark, TRIGGER_MARKER)(should_trigger=should, split=case["entry"].get("split")))
        item.extra_keyword_matches.update(("trigger", "should_trigger" if should else "should_not_trigger"))
        return item


def _case_ids(skill: SkillFolder) -> list[str]:
    """The skill's case ids: its dataset's (an unreadable one has its own collection error) and its native tasks'."""
    ids = native_case_names(skill.evals_dir)
    path = find_dataset(skill.evals_dir)
    if path is not None:
        try:
            ids += [case.id for case in skill.load_dataset(path).cases]
        except DatasetError:
            pass
    return ids


class TriggerFile(SkillCollector):
    """evals/triggers.json|jsonl|yaml|yml: one item per query x agent x attempt."""

    def collect(self) -> Iterator[TriggerItem]:
        from pytest_skilleval.skill.triggers import load_trigger_set

        chosen = find_trigger_set(self.path.parent)
        if chosen is not None and chosen != self.path:
            raise SkillEvalCollectError(
                f"{self.path}: the skill already has a trigger set, {chosen.name}; keep one of "
                f"{', '.join(TRIGGER_NAMES)}"
            )
        try:
            triggers = load_trigger_set(self.path)
        except DatasetError as error:
            raise SkillEvalCollectError(str(error)) from None
        if self._settings_or_error() is None:
            return
        evals_dir = self.skill.evals_dir
        clashes = case_id_clashes(triggers.queries, _case_ids(self.skill))
        if clashes:
            raise SkillEvalCollectError(f"{self.path}: {clashes[0]}")
        for query in triggers.queries:
            files = list(query.files or [])
            try:
                input_sources(evals_dir, files, query.id)
            except StagingError as error:
                raise SkillEvalCollectError(f"{self.path}: {error}") from None
            entry = {
                "id": query.id,
                "prompt": query.query,
                "should_trigger": query.should_trigger,
                "expected_skill": self.skill.name,
                "trigger": True,
                **({"split": query.split} if query.split else {}),
            }
            case = case_fields(self.skill, query.id, source="trigger", entry=entry, files=files)
            for agent, attempt in trigger_trials(self.skill):
                yield TriggerItem.create_trigger(self, case, agent, attempt)
