"""`validate`'s per-case warnings about meaning that drifts silently (keys of other tools we do not apply,
negative controls whose assertions another tool would have inverted), and the nothing-to-run error that names
another tool's layout.

Both kinds of file collect and run, so nothing else would ever say that the run measures something other than what
the author wrote: agent-skill-eval stages files with `stage_files` and inverts the assertions of a
`should_trigger: false` case; the npm agent-skills-eval checks `tool_assertions`. Here the first two are ignored
and the assertions are judged as written.
"""

from __future__ import annotations

import re

from pytest_skilleval.authoring.findings import ValidationContext
from pytest_skilleval.results.correctness import HOW_TO_MEASURE, correctness_measured
from pytest_skilleval.skill.dataset import DATASET_NAMES, FIELD_ALIASES, EvalCase
from pytest_skilleval.skill.folder import draft_commands
from pytest_skilleval.skill.foreign_formats import foreign_layout
from pytest_skilleval.skill.triggers import AGENT_SKILL_EVAL_QUERIES, unread_trigger_set

# Keys of other eval tools that collect here (they travel to entry.json) but change nothing in a run.
NOT_APPLIED: dict[str, str] = {
    "side_effect_level": "agent-skill-eval's side-effect level is not applied (no clean-up or guard follows from it)",
    "stage_files": "agent-skill-eval's stage_files (git add of the inputs) is not applied; inputs are plain files",
    "tool_assertions": "the npm agent-skills-eval's tool_assertions are not checked; write them as assertions",
}
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|neither|nor|without|absent|avoid\w*|refus\w*|declin\w*|unchanged|instead)\b"
    r"|n't\b",
    re.IGNORECASE,
)


def positively_phrased(assertions: list[str]) -> list[str]:
    """The assertions that state something happened (no negation word): read literally on a negative control they
    ask for the very behaviour the case says must not happen."""
    return [text for text in assertions if not _NEGATION.search(text)]


def _label(case: EvalCase) -> str:
    return f"case {case.id!r}"


def check_case_keys(ctx: ValidationContext) -> None:
    """One warning per case and key of another tool that the run does not apply, and per alias that is not read
    because its runtime name is given too, with another value (skill-creator names `assertions` `expectations` in
    one document and not in the other)."""
    for case in ctx.valid_cases:
        for key, why in NOT_APPLIED.items():
            if key in (case.model_extra or {}):
                ctx.add("foreign-key-not-applied", "warning", f"{_label(case)}: '{key}': {why}", ctx.dataset_path)
        for alias in case.aliases_not_read:
            target = FIELD_ALIASES[alias]
            ctx.add(
                "alias-not-read",
                "warning",
                f"{_label(case)}: '{alias}' is not read: '{target}' is given too and wins; move what it holds into '{target}' and drop '{alias}'",
                ctx.dataset_path,
            )


def check_negative_assertions(ctx: ValidationContext) -> None:
    """A `should_trigger: false` case whose assertions are phrased positively: agent-skill-eval inverts them, this
    plugin's judge reads them as written, so the case would reward doing what it forbids."""
    for case in ctx.valid_cases:
        if case.should_trigger is not False:
            continue
        positive = positively_phrased(case.assertions)
        if positive:
            shown = "; ".join(repr(text[:80]) for text in positive[:3])
            ctx.add(
                "negative-positive-assertions",
                "warning",
                f"{_label(case)} is a negative control (should_trigger: false) with positively phrased assertions "
                f"({shown}); they are judged as written, not inverted as agent-skill-eval does: state what must "
                "stay true, e.g. 'No new git branch was created'",
                ctx.dataset_path,
            )


def check_anything_to_run(ctx: ValidationContext, triggers: list[str] | None = None) -> None:
    """Nothing would run (no dataset, no native task, no trigger set): said with the other tool's layout when
    evals/ holds one. agent-skill-eval's trigger set (evals/eval_queries.json), which no run reads, is named with
    the copy that makes it ours: in that error, or as a warning beside what does run."""
    unread = unread_trigger_set(ctx.evals_dir)
    if (
        ctx.dataset_path is None
        and not ctx.tasks
        and triggers is None
        and not any(f.rule.startswith(("native-task", "trigger")) for f in ctx.findings)
    ):
        ctx.add(
            "no-evals",
            "error",
            foreign_layout(ctx.evals_dir)
            or f"no dataset ({' or '.join(DATASET_NAMES)}) and no native task under evals/harbor/; nothing would run; "
            + (unread or draft_commands(ctx.skill_dir)),
            ctx.evals_dir,
        )
    elif unread:
        ctx.add("trigger-set-not-read", "warning", unread, ctx.evals_dir / AGENT_SKILL_EVAL_QUERIES)


def check_correctness_measured(ctx: ValidationContext) -> None:
    """A case nothing would grade for correctness: no checks, no custom grader the grading mode runs, and a judge
    only if the run is given one (validate cannot know). Its score would say the skill was used, not that the
    output was right."""
    # custom_only: the grader's (or a native task's test's) overall is the score; a missing one is its own error.
    grader = ctx.grading_mode == "custom_only" or (ctx.grading_mode != "default" and ctx.usable_grader() is not None)
    for case in ctx.valid_cases:
        if not correctness_measured(checks=bool(case.checks), grader=grader, judge=False):
            ctx.add(
                "correctness-not-measured",
                "warning",
                f"{_label(case)}: correctness is not measured unless the run has a judge (--judge-model): the case "
                f"has no checks and no custom grader runs in grading mode {ctx.grading_mode}"
                + (" (its assertions are graded only by the judge)" if case.assertions else "")
                + f"; {HOW_TO_MEASURE}",
                ctx.dataset_path,
            )


def check_cases(ctx: ValidationContext) -> None:
    """Every per-case warning, over the cases that loaded."""
    check_case_keys(ctx)
    check_negative_assertions(ctx)
    check_correctness_measured(ctx)
