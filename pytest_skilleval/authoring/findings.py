"""What `validate` reports: findings with a rule, a severity and a path, and the context the checks share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_skilleval.skill.config_file import EvalsConfigBase
from pytest_skilleval.skill.dataset import Dataset, EvalCase
from pytest_skilleval.skill.folder import find_grader
from pytest_skilleval.skill.native_tasks import NativeTask

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
ARMS = ("with_skill", "without_skill")
REPLAY_ARM_NAMES = {"with_skill": "with-skill", "without_skill": "without-skill"}


class UsageError(Exception):
    """Bad flags or a path that is not a skill folder: exit 2 with one line on stderr."""


@dataclass(frozen=True)
class ValidationFinding:
    """One problem: a stable rule id, how bad it is, what to change, and the file it is about."""

    rule: str
    severity: Severity
    message: str
    path: Path | None = None

    def as_json(self, display: str) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "message": self.message, "path": display}


@dataclass
class ValidationReport:
    """All findings for one skill folder."""

    skill_dir: Path
    findings: list[ValidationFinding] = field(default_factory=list)

    def of(self, severity: Severity) -> list[ValidationFinding]:
        return [finding for finding in self.findings if finding.severity == severity]

    @property
    def errors(self) -> list[ValidationFinding]:
        return self.of("error")

    @property
    def warnings(self) -> list[ValidationFinding]:
        return self.of("warning")

    def ok(self, strict: bool = False) -> bool:
        """Errors always fail; warnings fail only in strict mode; info never does."""
        return not self.errors and not (strict and self.warnings)

    def rules(self) -> set[str]:
        return {finding.rule for finding in self.findings}


@dataclass
class ValidationContext:
    """What the checks share: the skill, its parsed config and dataset (when readable) and the run shape."""

    skill_dir: Path
    grading_mode: str
    paired: bool
    config: EvalsConfigBase | None = None
    config_path: Path | None = None
    dataset: Dataset | None = None
    dataset_path: Path | None = None
    valid_cases: list[EvalCase] = field(default_factory=list)
    tasks: list[NativeTask] = field(default_factory=list)
    pass_env: list[str] = field(default_factory=list)
    findings: list[ValidationFinding] = field(default_factory=list)

    @property
    def evals_dir(self) -> Path:
        return self.skill_dir / "evals"

    def add(self, rule: str, severity: Severity, message: str, path: Path | None = None) -> None:
        self.findings.append(ValidationFinding(rule, severity, message, path))

    def usable_grader(self) -> Path | None:
        """The grader a run would use."""
        return find_grader(self.evals_dir)
