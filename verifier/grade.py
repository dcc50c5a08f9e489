"""Grading one trial from its evidence, and `skilleval grade`, which does it offline for a trajectory file.

`grade` runs the deterministic checks and takes the LLM judges' verdicts from `verifier.judges` (run by the caller,
which owns the event loop); without them the judges are recorded as not configured, never 0.0. With no usable
trajectory the deterministic metrics score 0.0 and the reward says why: an agent that left nothing to grade
did not do the task.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from verifier import safe_io
from verifier.agent_logs import MAX_EVIDENCE_BYTES
from verifier.checks.skill_efficiency import check_skill_efficiency
from verifier.checks.skill_entry import ACCEPTABLE_ALTERNATE_SCORE, acceptable_skills, evaluated_skill, should_trigger
from verifier.checks.skill_execution import check_skill_execution
from verifier.evidence import JUDGE_METRICS, NO_TRAJECTORY, STANDARD_METRICS, MetricResult, TrajectoryEvidence
from verifier.judges.config import NOT_CONFIGURED
from verifier.skill_folders import HARBOR_SKILLS_DIRS, with_skills_dir
from verifier.trajectory import TRAJECTORY_FILE, evidence_from_atif, load_evidence

Check = Callable[[TrajectoryEvidence, Mapping[str, Any]], MetricResult]


def _security_check() -> Check | None:
    """The security check, imported late: it lives in its own module and may not be installed in this tree yet."""
    try:
        module = importlib.import_module("verifier.checks.security")
    except ImportError:
        return None
    return getattr(module, "check_security", None)


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _jsonable(value.model_dump(mode="json"))
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN is not JSON; report it as unscored
        return None
    return value


def _clamp(score: float | None) -> float | None:
    if score is None:
        return None
    return round(max(0.0, min(1.0, float(score))), 4)


def _run(
    name: str, evidence: TrajectoryEvidence, entry: Mapping[str, Any], judged: Mapping[str, MetricResult]
) -> MetricResult:
    if name in JUDGE_METRICS:
        if not evidence.usable:
            return MetricResult(score=None, details={"status": "error", "error": NO_TRAJECTORY})
        if name in judged:
            return judged[name]
        return MetricResult(score=None, details={"status": "not_configured", "reason": NOT_CONFIGURED})
    if name == "security":
        if not evidence.usable:
            return MetricResult(score=0.0, details={"error": NO_TRAJECTORY, "findings": []})
        check = _security_check()
        if check is None:
            return MetricResult(score=None, details={"error": "security check not available", "findings": []})
        return check(evidence, entry)
    if name == "skill_execution":
        return check_skill_execution(evidence, entry)
    return check_skill_efficiency(evidence, entry)


def grade(
    evidence: TrajectoryEvidence,
    entry: Mapping[str, Any],
    metrics: Sequence[str] | None = None,
    judged: Mapping[str, MetricResult] | None = None,
) -> dict[str, Any]:
    """Scores (None = unscored) and details for the selected standard metrics, in report order.

    `judged` holds the LLM judges' results when a judge model is configured; a judge that ran and failed makes
    the trial's evaluation failed (`evaluation_errors`), which is not the same as judges not being configured.
    """
    wanted = [name for name in STANDARD_METRICS if metrics is None or name in set(metrics)]
    unknown = sorted(set(metrics or ()) - set(STANDARD_METRICS))
    if unknown:
        raise ValueError(f"unknown metric(s): {', '.join(unknown)}")
    scores: dict[str, float | None] = {}
    details: dict[str, Any] = {}
    for name in wanted:
        result = _run(name, evidence, entry, judged or {})
        scores[name] = _clamp(result.score)
        details[name] = _jsonable(result.details)
    accepted = acceptable_skills(entry)
    if len(accepted) > 1:
        details["_skill_routing_policy"] = {
            "expected_skill": accepted[0],
            "acceptable_alternates": accepted[1:],
            "acceptable_alternate_score": ACCEPTABLE_ALTERNATE_SCORE,
        }
    if evidence.source != TRAJECTORY_FILE or evidence.problems or evidence.segments:
        details["_trajectory_load"] = {"source": evidence.source, "problems": evidence.problems[:20]}
        if evidence.segments:
            details["_trajectory_load"]["segments"] = evidence.segments
        if not evidence.usable:
            details["_trajectory_load"]["error"] = NO_TRAJECTORY
    graded: dict[str, Any] = {"metrics": scores, "details": details, "trajectory_source": evidence.source}
    errors = {
        name: details[name].get("error")
        for name in (judged or {})
        if name in scores and scores[name] is None and details[name].get("status") == "error"
    }
    if errors:
        graded["evaluation_status"] = "failed"
        graded["evaluation_errors"] = errors
    if not evidence.usable:
        graded["error"] = NO_TRAJECTORY
    return graded


# ---- skilleval grade -------------------------------------------------------------------------------------------


class UsageError(Exception):
    """Unusable input for `skilleval grade`; its message is the one line printed on stderr."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


# Reads a case from a dataset the way a run does: (dataset path, case id) -> (entry as entry.json holds it, the
# skill folder's name or None with the reason). Supplied by the `skilleval` command, which owns dataset loading.
CaseLoader = Callable[[Path, str], "tuple[dict[str, Any], str | None, str]"]


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="skilleval grade", description="Grade one trajectory offline and print the reward JSON.")
    parser.add_argument(
        "--trajectory",
        required=True,
        help="trajectory.json, the agent log folder holding it, a replay file (its {skills_dir} written out as the "
        "first --skills-dir, else /runtime/skills), or a trial's file from a run folder (its trajectory)",
    )
    parser.add_argument("--case", help="a dataset entry as JSON (or use --dataset with --case-id)")
    parser.add_argument(
        "--dataset",
        help="the skill's dataset (evals/evals.json ...); the case is read as a run reads "
        "it, and the skill under test is the folder holding SKILL.md next to evals/",
    )
    parser.add_argument("--case-id", help="the case to grade, with --dataset")
    parser.add_argument(
        "--skill",
        help="the skill under test (the skill folder's name, as a run sets it); with "
        "--case, an entry without expected_skill then expects this skill, as in an evals.json run",
    )
    parser.add_argument(
        "--skills-dir",
        action="append",
        dest="skills_dirs",
        metavar="DIR",
        help="a folder the trial installed skills into, as the agent saw it (repeatable); a skill counts as the "
        "skill under test only when loaded from one (default: the folders our trials install skills into for "
        "the trajectory's agent)",
    )
    parser.add_argument("--metrics", help=f"comma-separated subset of: {','.join(STANDARD_METRICS)}")
    parser.add_argument(
        "--judge-model",
        help="model for the LLM judges (default: LLM_JUDGE_MODEL or "
        "SKILL_EVAL_JUDGE_MODEL; unset: judges not configured)",
    )
    parser.add_argument("--judge-cache-dir", help="judge verdict cache folder (e.g. <results-root>/.judge-cache)")
    parser.add_argument("--judge-cache", default="on", choices=("on", "off", "read", "write"))
    return parser


def _read_case(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"case file not found: {path}") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"case file {path} is not readable JSON: {error}") from None
    if not isinstance(data, dict):
        raise UsageError(f"case file {path} must hold one dataset entry (a JSON object)")
    if isinstance(data.get("evals"), list) or isinstance(data.get("cases"), list):
        raise UsageError(f"case file {path} holds a whole dataset; pass a single entry")
    return data


def entry_for_grading(case: Mapping[str, Any], skill: str | None) -> dict[str, Any]:
    """The case as the verifier's entry.json would hold it: runtime aliases, and the skill under test.

    A run fills an entry's missing expected_skill from evals.json's skill_name (the skill's own name), so an entry
    copied from there and graded with `--skill` expects that skill too.
    """
    entry = dict(case)
    if "expected_skill" not in entry and entry.get("skill_name"):
        entry["expected_skill"] = entry["skill_name"]
    if "expected_skill" not in entry and skill:
        entry["expected_skill"] = skill
    entry.setdefault("question", entry.get("prompt"))
    entry.setdefault("ground_truth", entry.get("expected_output"))
    entry.setdefault("expected_behavior", entry.get("assertions", entry.get("expectations")))
    if skill:
        entry["evaluated_skill"] = skill
    elif not entry.get("evaluated_skill"):
        entry["evaluated_skill"] = entry.get("expected_skill") or ""
    entry.setdefault("has_skill", True)
    return entry


# A trial's file in a run folder (`<run>/<agent>/<arm>/trials/<case>.<attempt>.json`, up to 30 MB) holds the
# trajectory under this key; read with a cap of its own, since a trajectory alone is capped lower.
TRIAL_FILE_TRAJECTORY_KEY = "trajectory"
MAX_TRIAL_FILE_BYTES = 32 * 1024 * 1024


def _trial_file_trajectory(path: Path) -> dict[str, Any] | None:
    """The trajectory a trial's file holds, None when `path` is not a trial's file; refused when it holds none."""
    try:
        text = safe_io.read_text(path.parent, path.name, max_bytes=MAX_TRIAL_FILE_BYTES, errors="replace")
        data = json.loads(text)
    except (OSError, ValueError, safe_io.FileTooLargeError):
        return None  # load_evidence reads it again and says what is wrong with it
    if not isinstance(data, dict) or "steps" in data or TRIAL_FILE_TRAJECTORY_KEY not in data:
        return None
    trajectory = data[TRIAL_FILE_TRAJECTORY_KEY]
    if not isinstance(trajectory, dict):
        where = data.get("trial_dir") or "the trial's folder"
        raise UsageError(
            f"{path} is a trial's file that holds no trajectory (none was written, or it was over the size limit); "
            f"pass agent/trajectory.json from {where}"
        )
    return trajectory


def _evidence_for(path: Path, skills_dir: str) -> TrajectoryEvidence:
    """The evidence in a trajectory file, an agent log folder or a trial's file, `{skills_dir}` written out."""
    if path.is_dir():
        return load_evidence(path, skills_dir=skills_dir)
    if not path.is_file():
        raise UsageError(f"trajectory not found: {path}")
    trajectory = _trial_file_trajectory(path)
    if trajectory is None:
        return load_evidence(path.parent, path, skills_dir=skills_dir)
    text = with_skills_dir(json.dumps(trajectory), skills_dir)
    if len(text) > MAX_EVIDENCE_BYTES:
        raise UsageError(f"{path}: its trajectory is over {MAX_EVIDENCE_BYTES} bytes, more than a run grades")
    return evidence_from_atif(text, source=f"{path.name} (its trajectory)")


def _metrics_arg(value: str | None) -> list[str] | None:
    if not value:
        return None
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in STANDARD_METRICS]
    if unknown:
        raise UsageError(f"unknown metric(s) {', '.join(unknown)}; choose from {','.join(STANDARD_METRICS)}")
    return names


def _judge(
    evidence: TrajectoryEvidence, entry: dict[str, Any], args: argparse.Namespace, metrics: list[str] | None
) -> dict[str, MetricResult]:
    """The judges' verdicts when a judge model is configured and a judge metric is asked for."""
    import asyncio

    from verifier.judges import judge_trial
    from verifier.judges.config import JudgeConfigError

    if metrics is not None and not set(metrics) & set(JUDGE_METRICS):
        return {}
    settings = {"model": args.judge_model, "cache": args.judge_cache, "cache_dir": args.judge_cache_dir}
    try:
        return asyncio.run(judge_trial(evidence, entry, settings))
    except JudgeConfigError as error:
        raise UsageError(str(error)) from None


def _case_and_skill(args: argparse.Namespace, case_loader: CaseLoader | None) -> tuple[dict[str, Any], str | None]:
    """The case and the skill under test, from --case (+ --skill) or from --dataset + --case-id (+ --skill)."""
    if args.dataset or args.case_id:
        if args.case:
            raise UsageError("give either --case FILE or --dataset FILE --case-id ID, not both")
        if not (args.dataset and args.case_id):
            raise UsageError("--dataset and --case-id go together")
        if case_loader is None:
            raise UsageError("--dataset needs the skilleval command (pytest-skilleval installed)")
        case, folder_skill, why = case_loader(Path(args.dataset), args.case_id)
        skill = args.skill or folder_skill
        if not skill:
            raise UsageError(f"cannot tell the skill under test: {why}; pass --skill NAME")
        return case, skill
    if not args.case:
        raise UsageError("one of --case FILE or --dataset FILE --case-id ID is required")
    return _read_case(Path(args.case)), args.skill


def _check_gradable(entry: Mapping[str, Any], metrics: list[str] | None) -> str | None:
    """Refuse a case that cannot be graded as the run would grade it; return a note for one graded partly."""
    if metrics is not None and "skill_execution" not in metrics:
        return None
    trigger = should_trigger(entry)
    if trigger is False and not evaluated_skill(entry):
        raise UsageError(
            "this case is a negative control, and grading it needs the skill under test: pass "
            "--skill NAME, or --dataset FILE --case-id ID to take it from the skill folder as a run does"
        )
    if trigger is None:
        return (
            "note: the case names no expected_skill and no --skill was given, so skill_execution is skipped "
            "(pass --skill NAME, or --dataset FILE --case-id ID, to grade it as a run would)"
        )
    return None


def run_grade_command(argv: list[str], case_loader: CaseLoader | None = None) -> int:
    """`skilleval grade`: print one reward JSON object; 0 when graded, 2 with a one-line reason when not."""
    try:
        args = _parser().parse_args(argv)
        metrics = _metrics_arg(args.metrics)
        case, skill = _case_and_skill(args, case_loader)
        entry = entry_for_grading(case, skill)
        if args.skills_dirs:
            entry["skills_dirs"] = list(args.skills_dirs)
        note = _check_gradable(entry, metrics)
        skills_dir = args.skills_dirs[0] if args.skills_dirs else HARBOR_SKILLS_DIRS[0]
        evidence = _evidence_for(Path(args.trajectory), skills_dir)
        if not evidence.usable:
            reasons = "; ".join(evidence.problems[:3])
            raise UsageError(f"{NO_TRAJECTORY} at {args.trajectory}" + (f" ({reasons})" if reasons else ""))
        graded = grade(evidence, entry, metrics, judged=_judge(evidence, entry, args, metrics))
        if note:
            print(f"skilleval grade: {note}", file=sys.stderr)
    except UsageError as error:
        print(f"skilleval grade: error: {error}", file=sys.stderr)
        return 2
    except SystemExit as stop:  # --help
        return int(stop.code or 0)
    # A reader that left early (`| head`) is the `skilleval` command's to end quietly (its main), as for every command.
    sys.stdout.write(json.dumps(graded, ensure_ascii=False) + "\n")
    return 0
