"""Drafting an `evals.json` from a skill's SKILL.md through litellm: one starter case, or a covering set, checked
by the same reader a run uses before anyone writes it.

Used by `skilleval create-eval-dataset` (into the skill's evals/) and `pytest --skill-eval --autopilot` (into the
run's results folder). The model is asked for the whole document, `{"skill_name", "evals": [...]}`, as JSON; a
reply that is not one JSON document, a refusal, or a case the dataset reader rejects is an error naming what was
wrong, and nothing is written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilleval.skill.dataset import DATASET_NAMES, Dataset, DatasetError, find_dataset, parse_dataset
from verifier.judges.config import API_KEY_VAR, JudgeConfig, JudgeConfigError, litellm_model, load_config
from verifier.judges.jsontext import extract_json
from verifier.redact import Redactor

SKILL_MD_CAP = 64 * 1024  # SKILL.md beyond this is cut before it reaches the prompt
FULL_MAX_CASES = 30
NO_MODEL = (
    "no drafting model: pass {flag}, or set SKILL_EVAL_LLM_MODEL (or LLM_JUDGE_MODEL, SKILL_EVAL_JUDGE_MODEL), "
    "or SKILL_EVAL_LLM_PROVIDER for its default model"
)


class DraftError(ValueError):
    """Drafting failed: no model, the request failed, the model refused, or its document is not a valid dataset."""


@dataclass(frozen=True)
class Draft:
    """A drafted dataset that the run's own reader accepted: its text (as written) and where the model came from."""

    text: str
    dataset: Dataset
    model: str
    model_source: str


def drafting_config(
    model: str | None, env: Mapping[str, str] | None = None, model_flag: str = "--model"
) -> JudgeConfig:
    """The model, endpoint and key to draft with: `model` (given by `model_flag`: `skilleval`'s `--model`, pytest's
    `--judge-model`), else the judge/LLM model settings."""
    try:
        config = load_config(os.environ if env is None else env, model=model, cache_mode="off")
    except JudgeConfigError as error:
        raise DraftError(str(error)) from None
    if config is None:
        raise DraftError(NO_MODEL.format(flag=model_flag))
    return config


def skill_name_of(skill_dir: Path) -> str:
    return skill_dir.resolve().name


def read_skill_md(skill_dir: Path) -> str:
    """SKILL.md as text, capped; a link or a missing file is an error (the skill folder is untrusted)."""
    path = skill_dir / "SKILL.md"
    if path.is_symlink() or not path.is_file():
        raise DraftError(f"{path}: not a regular file; a skill folder needs SKILL.md")
    with path.open("rb") as handle:
        data = handle.read(SKILL_MD_CAP + 1)
    text = data[:SKILL_MD_CAP].decode("utf-8", errors="replace")
    return text + ("\n[... SKILL.md cut at 64 KiB ...]" if len(data) > SKILL_MD_CAP else "")


def draft_prompt(skill_name: str, skill_md: str, *, full: bool) -> str:
    """What the drafting model is asked: the whole dataset document as JSON, a starter case or a covering set."""
    case = (
        '{"id": "short-kebab-id", "prompt": "what a user asks", "expected_output": "what a correct result looks '
        'like", "expected_skill": "%s", "assertions": ["one observable behaviour per item"]}' % skill_name
    )
    if full:
        scope = (
            "Write a covering set: 4 to 8 positive cases that exercise the skill's distinct uses (each with "
            f'"expected_skill": "{skill_name}"), and 2 to 4 near-miss negative controls, requests that look related '
            'but that this skill should not handle, each with "expected_skill": null. Give every case 1 to 4 '
            "assertions an observer can check in the agent's actions or output."
        )
    else:
        scope = (
            "Write exactly ONE starter case: a realistic request this skill is meant for, with "
            f'"expected_skill": "{skill_name}" and 1 to 3 assertions.'
        )
    return (
        "You draft evaluation cases for an agent skill. The skill's SKILL.md is between the markers.\n"
        "<<<SKILL.md\n" + skill_md + "\nSKILL.md>>>\n\n" + scope + "\n\n"
        f'Answer with ONE JSON document and nothing else: {{"skill_name": "{skill_name}", "evals": [...]}} '
        f"where each case looks like {case}. Ids are letters, digits, '.', '_' or '-', unique."
    )


def _require_provider_key(litellm: Any, routed: str, model: str) -> None:
    """Before any request: the provider's key variable (litellm's `validate_environment`, keys only: a missing base
    URL has a default) is set, else one line naming it; the provider's own error says it deep in a long HTTP 500."""
    try:
        missing = litellm.validate_environment(routed).get("missing_keys") or []
    except Exception:  # noqa: BLE001 - a model litellm cannot tell about: the request says what is wrong
        return
    keys = [name for name in missing if str(name).endswith("_API_KEY")]
    if keys:
        raise DraftError(
            f"the drafting model {model} needs {' or '.join(keys)}: set it (or {API_KEY_VAR}), or choose another "
            "drafting model"
        )


def request_draft(config: JudgeConfig, prompt: str) -> str:
    """One request through litellm (no retries of its own); the reply's text, or DraftError on a refusal or an
    error (redacted: the key never reaches the message)."""
    import litellm

    litellm.suppress_debug_info = True  # its help banner on every error is noise next to our one line
    params: dict[str, Any] = {
        "model": litellm_model(config.model, config.provider),
        "messages": [{"role": "user", "content": prompt}],
        "max_retries": 0,
        "timeout": config.request_timeout,
    }
    if config.base_url:
        params["api_base"] = config.base_url
    if config.api_key_var:
        params["api_key"] = os.environ.get(config.api_key_var)
    elif not config.base_url:
        _require_provider_key(litellm, params["model"], config.model)
    try:
        response = litellm.completion(**params)
    except Exception as error:  # noqa: BLE001 - every provider error becomes one line
        status = getattr(error, "status_code", None)
        text = (f"HTTP {status}: " if status else "") + f"{type(error).__name__}: {error}"
        raise DraftError(f"the drafting request to {config.model} failed: {one_line(text)}") from None
    choice = response.choices[0]
    message = choice.message
    refusal = getattr(message, "refusal", None)
    if getattr(choice, "finish_reason", None) in ("content_filter", "refusal") or (
        isinstance(refusal, str) and refusal.strip()
    ):
        said = refusal if isinstance(refusal, str) and refusal.strip() else "content filter"
        raise DraftError(f"the drafting model {config.model} refused: {one_line(said)}")
    content = message.content if isinstance(getattr(message, "content", None), str) else ""
    if not content.strip():
        raise DraftError(f"the drafting model {config.model} returned an empty reply")
    return content


def one_line(text: str, limit: int = 300) -> str:
    """`text` redacted (no key from the environment), on one line, capped: a model's words in our error line."""
    flat = " ".join(Redactor.from_environment(os.environ).text(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def parse_draft(reply: str, skill_name: str, *, full: bool, path: Path) -> tuple[str, Dataset]:
    """The reply's one JSON document, checked the way a run reads `path`, plus the drafting rules (a starter is
    one positive case; a covering set has a negative control). Returns the text to write and the dataset."""
    document = extract_json(reply)
    if not isinstance(document, dict):
        raise DraftError(
            'the drafting model\'s reply is not one JSON document {"skill_name", "evals": [...]}: '
            + one_line(reply, 160)
        )
    if not isinstance(document.get("evals"), list):
        raise DraftError("the drafted document has no 'evals' list")
    document = {**document, "skill_name": skill_name}
    for index, case in enumerate(document["evals"]):
        for field in ("prompt", "expected_output"):
            value = case.get(field) if isinstance(case, dict) else None
            if not isinstance(value, str) or not value.strip():
                raise DraftError(f"drafted case {index + 1}: field '{field}' must be a non-empty string")
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    try:
        dataset = parse_dataset(path, text)
    except DatasetError as error:
        raise DraftError(f"the drafted dataset fails validation: {error.message} ({error_place(error)})") from None
    positives = [case for case in dataset.cases if case.expected_skill]
    if not full and (len(dataset.cases) != 1 or not positives):
        raise DraftError(f"a starter draft is one positive case; the model returned {len(dataset.cases)} case(s)")
    if full and not (positives and len(positives) < len(dataset.cases) <= FULL_MAX_CASES):
        raise DraftError(
            f"a covering set needs positive cases and at least one negative control (expected_skill: null), at "
            f"most {FULL_MAX_CASES} cases; the model returned {len(dataset.cases)}, {len(positives)} positive"
        )
    return text, dataset


def error_place(error: DatasetError) -> str:
    """Where a reader's error points: the entry and the field."""
    return ", ".join(part for part in (error.entry, f"field '{error.field}'" if error.field else None) if part)


def draft_dataset(
    skill_dir: Path, *, full: bool, model: str | None, target: Path, model_flag: str = "--model"
) -> Draft:
    """Ask the model for a dataset for `skill_dir` and check it as `target` would be read. Nothing is written."""
    config = drafting_config(model, model_flag=model_flag)
    name = skill_name_of(skill_dir)
    reply = request_draft(config, draft_prompt(name, read_skill_md(skill_dir), full=full))
    text, dataset = parse_draft(reply, name, full=full, path=target)
    return Draft(text=text, dataset=dataset, model=config.model, model_source=config.model_source)


def existing_source(evals_dir: Path) -> Path | None:
    """An accepted evaluation source already there: a dataset file, or native tasks under evals/harbor/."""
    dataset = find_dataset(evals_dir)
    if dataset is not None:
        return dataset
    harbor = evals_dir / "harbor"
    if harbor.is_dir() and any(harbor.glob("*/task.toml")):
        return harbor
    return None


def write_new(path: Path, text: str) -> None:
    """Create `path` with `text`; never over an existing file, never through a link (O_EXCL|O_NOFOLLOW)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


__all__ = [
    "DATASET_NAMES",
    "Draft",
    "DraftError",
    "draft_dataset",
    "error_place",
    "existing_source",
    "one_line",
    "write_new",
]
