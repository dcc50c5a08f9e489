"""`skilleval validate`'s replay check, informative only: the replay agent needs `evals/replays/<case>[.<arm>].json`
per case and arm, and `evals/replays/<query>.json` per trigger query; live agents need none."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_skilleval.authoring.findings import ARMS, REPLAY_ARM_NAMES, ValidationContext


def check_replays(ctx: ValidationContext, trigger_ids: Sequence[str] = ()) -> None:
    replays = ctx.evals_dir / "replays"
    case_ids = [case.id for case in ctx.valid_cases] + [task.case_id for task in ctx.tasks]
    arms = ARMS if ctx.paired else ARMS[:1]
    for case_id in dict.fromkeys(case_ids):
        missing = [
            arm
            for arm in arms
            if not any(
                (replays / name).is_file() for name in (f"{case_id}.{REPLAY_ARM_NAMES[arm]}.json", f"{case_id}.json")
            )
        ]
        if missing:
            ctx.add(
                "replay-missing",
                "info",
                f"case {case_id!r}: no replay for {', '.join(missing)} (evals/replays/<case id>.json or "
                "<case id>.<arm>.json); only the replay agent needs one",
                replays,
            )
    for query_id in trigger_ids:
        if not any((replays / name).is_file() for name in (f"{query_id}.with-skill.json", f"{query_id}.json")):
            ctx.add(
                "replay-missing",
                "info",
                f"trigger query {query_id!r}: no replay (evals/replays/<query id>.json); only the replay agent "
                "needs one",
                replays,
            )
