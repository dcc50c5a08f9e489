"""The run plan: what a skill defines (cases, negatives, dataset digest and snapshot) and the trials it expands to.

The case plan is read once, when the session starts, and carried to its end: a dataset edited during the run does
not change what the aggregate expects. Under xdist the controller builds it from the same command-line paths the
workers collect, so it survives a crashed worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SkipValidation

from pytest_skilleval.results.keys import Arm, TrialKey
from pytest_skilleval.skill.baseline import BaselineVersion, resolve_baseline
from pytest_skilleval.skill.dataset import DatasetError, find_dataset
from pytest_skilleval.skill.folder import SkillFolder
from pytest_skilleval.skill.skill_names import name_mismatch, unnamed_skill_cases


class TrialSpec(BaseModel):
    """Everything one item needs to run its trial; plain data so a runner fixture can be swapped freely."""

    skill_dir: Path
    skill_name: str
    case_id: str
    source: Literal["dataset", "native", "trigger"]
    # Not validated (so not copied): built from an already validated dataset entry, shared read-only by the case's
    # items (a copy per item was most of an item's memory and garbage-collector work at 20,000 items).
    entry: Annotated[dict[str, Any], SkipValidation] = Field(
        default_factory=dict, description="The dataset entry as entry.json carries it."
    )
    files: Annotated[list[str] | None, SkipValidation] = Field(
        default=None, description="Inputs relative to evals/; None = all evals/files/."
    )
    native_task_dir: Path | None = None
    agent: str
    arm: Arm
    attempt: int
    nodeid: str = ""

    @property
    def label(self) -> str:
        if self.source == "trigger":
            return trigger_label(self.agent, self.attempt)
        return trial_label(self.agent, self.arm, self.attempt)

    @property
    def agent_slug(self) -> str:
        """The agent (variant) name as one path component of a trial's folder names (`module:Class`, `a@b/c`)."""
        return self.agent.replace(":", "_").replace("/", "_")

    @property
    def key(self) -> TrialKey:
        """A trigger query's key never equals a case's (`:` is in no case id): they share no resume, stop-on-pass
        or scheduling state."""
        case = f"trigger:{self.case_id}" if self.source == "trigger" else self.case_id
        return TrialKey(case, self.agent, self.arm, self.attempt)

    def record_fields(self) -> dict[str, Any]:
        """Where this trial's record sits: the same in every record made for it (run, regraded or skipped)."""
        return {
            "skill": self.skill_name,
            "skill_dir": str(self.skill_dir),
            "case": self.case_id,
            "agent": self.agent,
            "arm": self.arm,
            "attempt": self.attempt,
            "nodeid": self.nodeid,
        }


def trial_label(agent: str, arm: str, attempt: int, version: str | None = None) -> str:
    """The trial's part of its node id: `<agent>-<arm>-<attempt>`; the baseline_skill arm names its version
    (`<agent>-baseline_skill@<short sha or folder>-<attempt>`)."""
    if arm == "baseline_skill" and version:
        return f"{agent}-{arm}@{version}-{attempt}"
    return f"{agent}-{arm}-{attempt}"


def trigger_label(agent: str, attempt: int) -> str:
    """A trigger item's part of its node id: `<agent>-<attempt>` (it has one arm: the skill installed)."""
    return f"{agent}-{attempt}"


def trigger_trials(skill: SkillFolder) -> Iterator[tuple[str, int]]:
    """(agent, attempt) for each trial of one trigger query, in the fixed order every xdist worker collects; the
    agent is a variant's name (`codex@gpt-5`) when one agent runs on several models, as for cases."""
    settings = skill.settings
    for variant in settings.variants:
        for attempt in range(1, settings.n_attempts + 1):
            yield variant.name, attempt


def baseline_version(skill: SkillFolder) -> BaselineVersion | None:
    """The version the baseline_skill arm runs, resolved once per skill and process; None without that arm."""
    given = skill.settings.baseline_skill
    if not given or "baseline_skill" not in skill.settings.arms:
        return None
    return skill.once("baseline_version", lambda: resolve_baseline(given, skill.path))


def case_trials(skill: SkillFolder) -> tuple[tuple[str, Arm, int], ...]:
    """(agent, arm, attempt) for each trial of one case, in the fixed order every xdist worker collects; the agent
    is a variant's name (`codex`, or `codex@gpt-5` when codex runs on several models). The same for every case of
    the skill, so made once (the settings' variants and arms are computed properties)."""

    def trials() -> tuple[tuple[str, Arm, int], ...]:
        settings = skill.settings
        return tuple(
            (variant.name, arm, attempt)
            for variant in settings.variants
            for arm in settings.arms
            for attempt in range(1, settings.n_attempts + 1)
        )

    return skill.once("case_trials", trials)


class CasePlan(BaseModel):
    """The cases a skill defines, before any selection, as read at session start."""

    cases: list[str] = Field(default_factory=list)
    negative_cases: list[str] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    digest: str | None = None
    snapshot: dict[str, Any] | None = None
    selected: list[str] | None = Field(default=None, description="Under --max-cases: the cases that run.")
    triggers: list[dict[str, Any]] = Field(
        default_factory=list, description="The trigger set's queries (id, should_trigger, split), as read at start."
    )
    triggers_digest: str | None = None
    unreadable: str | None = Field(
        default=None, description="The dataset file that could not be read (its collection error says why)."
    )


def native_case_names(evals_dir: Path) -> list[str]:
    harbor = evals_dir / "harbor"
    if not harbor.is_dir():
        return []
    return sorted(p.parent.name for p in harbor.glob("*/task.toml") if not p.parent.name.startswith((".", "_")))


def case_plan(skill: SkillFolder) -> CasePlan:
    """Read the skill's dataset and native tasks; an unreadable dataset contributes no cases (collection says why)."""
    from verifier.checks.skill_entry import should_trigger  # EvalCase.is_negative's rule, on entries made once

    plan = CasePlan(summary={"dataset": None, "n_dataset_cases": 0, "n_native_tasks": 0})
    path = find_dataset(skill.evals_dir)
    if path is not None:
        try:
            dataset = skill.load_dataset(path)
        except DatasetError:
            dataset = None
            plan.unreadable = path.name
        if dataset is not None:
            entries = skill.entries(dataset)
            plan.cases = [case.id for case in dataset.cases]
            plan.negative_cases = [
                case.id for case, entry in zip(dataset.cases, entries, strict=True) if should_trigger(entry) is False
            ]
            plan.summary.update(
                dataset=path.name,
                shape=dataset.shape,
                n_dataset_cases=len(plan.cases),
                n_negative_cases=len(plan.negative_cases),
            )
            mismatch = name_mismatch(skill.path, dataset.skill_name, path.name)
            if mismatch:
                plan.summary["skill_name_mismatch"] = mismatch
            unnamed = unnamed_skill_cases(skill.path, path.name, entries)
            if unnamed:
                plan.summary["unnamed_skill_cases"] = unnamed
            plan.digest = dataset.digest
            plan.snapshot = {
                "dataset": path.name,
                "shape": dataset.shape,
                "skill_name": dataset.skill_name,
                "entries": list(entries),
            }
    _add_triggers(plan, skill)
    try:
        source = skill.settings.task_source
    except Exception:  # noqa: BLE001 - a bad evals/config.yml is collection's to report
        source = "auto"
    native = [] if source == "evals_json" else native_case_names(skill.evals_dir)
    plan.summary["n_native_tasks"] = len(native)
    if source == "native_harbor":
        plan.cases = list(native)
        plan.negative_cases = [case for case in plan.negative_cases if case in native]
    plan.cases += [case for case in native if case not in plan.cases]
    try:
        selected = selected_cases(skill)
    except Exception:  # noqa: BLE001 - a bad evals/config.yml is collection's to report
        selected = None
    if selected is not None:
        plan.selected = [case for case in plan.cases if case in selected]
        if plan.snapshot is not None:
            plan.snapshot["entries"] = [e for e in plan.snapshot["entries"] if str(e.get("id")) in selected]
    return plan


def _add_triggers(plan: CasePlan, skill: SkillFolder) -> None:
    """The trigger set's queries; an unreadable set contributes none (its collector says why)."""
    from pytest_skilleval.skill.triggers import find_trigger_set, load_trigger_set

    path = find_trigger_set(skill.evals_dir)
    if path is None:
        return
    try:
        triggers = load_trigger_set(path)
    except DatasetError:
        return
    plan.triggers = [
        {"id": query.id, "should_trigger": query.should_trigger, "split": query.split} for query in triggers.queries
    ]
    plan.triggers_digest = triggers.digest
    plan.summary.update(triggers=path.name, n_trigger_queries=len(plan.triggers))


def native_claims(evals_dir: Path) -> dict[str, str]:
    """Native tasks, readable or not: task folder name -> the dataset entry id it replaces.

    One rule for every refusal: a task refused by Harbor's own model or by a plugin rule claims its entry
    all the same, so the entry never runs in its place; why it was refused is reported by its own collector.
    """
    names = native_case_names(evals_dir)
    if not names:
        return {}  # no native task: Harbor's task model is never imported
    from pytest_skilleval.skill.native_claims import claimed_entry_id

    claims = {}
    for name in names:
        entry_id = claimed_entry_id(evals_dir / "harbor" / name)
        if entry_id is not None:
            claims[name] = entry_id
    return claims


def staged_order(dataset_ids: list[str], claims: dict[str, str]) -> list[str]:
    """Case ids in staged order: dataset order (an entry a native task replaces takes the task's place),
    then the remaining native tasks by folder name."""
    replaced_by = {entry: name for name, entry in claims.items()}
    order = [replaced_by.get(case_id, case_id) for case_id in dataset_ids]
    placed = set(order)
    return order + [name for name in sorted(claims) if name not in placed]


def selected_cases(skill: SkillFolder) -> set[str] | None:
    """The first `max_cases` cases in staged order, or None when every case runs."""
    limit = skill.settings.max_cases
    if limit is None:
        return None

    def first_cases() -> set[str]:
        path = find_dataset(skill.evals_dir)
        try:
            dataset_ids = [case.id for case in skill.load_dataset(path).cases] if path is not None else []
        except DatasetError:
            dataset_ids = []
        return set(staged_order(dataset_ids, native_claims(skill.evals_dir))[:limit])

    # once per skill and session: each native task's collector asks, and reading every task's claim each time made
    # collecting n native tasks cost n^2 task reads
    return skill.once("selected_cases", first_cases)
