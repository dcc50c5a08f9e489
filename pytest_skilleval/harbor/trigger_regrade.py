"""`--regrade` for trigger items: today's activation detector on the trajectory a finished run stored, 0 agent runs.

The stored trigger trial's file (`<run>/<agent>/triggers/<query>.<attempt>.json`, sealed by this machine) holds the
agent's trajectory and the distractors installed beside the skill; the verdict is computed again from them, so a
change to the detector (or to what counts as a load) shows on the queries without running the agent again. The
trajectory and the new verdict are laid out in a scratch folder shaped like a trial folder, which this run's trigger
file is written from.
"""

from __future__ import annotations

from pathlib import Path

from pytest_skilleval.harbor.regrade import scratch_trial
from pytest_skilleval.results.run_seal import RunSeal
from pytest_skilleval.results.trigger_files import read_trigger_document, trigger_file
from pytest_skilleval.results.triggering import TriggerRecord
from pytest_skilleval.skill.plan import TrialSpec
from verifier.trajectory import TRAJECTORY_FILE, evidence_from_atif
from verifier.triggering import TRIGGER_FILE, trigger_verdict


def regrade_trigger(spec: TrialSpec, source_run: Path, work_dir: Path) -> TriggerRecord:
    """The trigger item's record with its verdict recomputed from the source run's stored trajectory; an error
    record when the source run holds no sealed trial for it (or only one that ended in an error)."""
    identity = TriggerRecord(
        skill=spec.skill_name,
        skill_dir=str(spec.skill_dir),
        query=spec.case_id,
        agent=spec.agent,
        attempt=spec.attempt,
        nodeid=spec.nodeid,
        status="error",
        should_trigger=bool(spec.entry.get("should_trigger")),
        split=spec.entry.get("split"),
    )
    path = trigger_file(source_run, identity)
    document = read_trigger_document(source_run, path, RunSeal.of_this_machine())
    try:
        stored = TriggerRecord.model_validate(document.get("record") if document else None)
    except ValueError:
        why = "holds no sealed trigger trial for this item" if document is None else "holds an unreadable record"
        return identity.model_copy(update={"error": f"--regrade: run {source_run.name} {why} ({path.name})"})
    if stored.status == "error":
        return identity.model_copy(
            update={"error": f"--regrade: not regraded: the stored trial was an error ({stored.error})"}
        )
    trajectory = document.get("trajectory") if document else None
    work = scratch_trial(work_dir / "_triggers" / spec.case_id / f"{spec.agent_slug}-{spec.attempt}", trajectory)
    evidence = evidence_from_atif(trajectory if isinstance(trajectory, dict) else {}, source=TRAJECTORY_FILE)
    verdict = trigger_verdict(evidence, spec.skill_dir.name, stored.distractors)
    (work / "verifier" / TRIGGER_FILE).write_text(verdict.model_dump_json(indent=2) + "\n")
    return stored.model_copy(
        update={
            "nodeid": spec.nodeid,
            "status": "scored" if verdict.triggered is not None else "unscored",
            "triggered": verdict.triggered,
            "distractors_loaded": verdict.distractors_loaded,
            "reason": verdict.reason,
            "error": None,
            "trial_dir": str(work),
            "source_run": None,
            "regraded_from": source_run.name,
        }
    )
