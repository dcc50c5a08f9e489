"""A skill folder as the plugin sees it: where its evals live and the settings that apply to it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from pytest_skilleval.results.run_paths import run_results_folder
from pytest_skilleval.skill.config_file import ConfigError, load_config
from pytest_skilleval.skill.dataset import Dataset, find_dataset, parse_dataset, read_text
from pytest_skilleval.skill.foreign_formats import foreign_layout
from pytest_skilleval.skill.judging import judge_run_config
from pytest_skilleval.skill.kwarg_values import redacted_kwargs
from pytest_skilleval.skill.settings import RunSettings
from pytest_skilleval.skill.skill_content import content_digest
from pytest_skilleval.skill.triggers import find_trigger_set, unread_trigger_set

# Merges the session's sources (CLI, ini) with this skill's evals/config.yml; supplied by the pytest side.
SettingsMerger = Callable[[Mapping[str, Any] | None], RunSettings]

GRADER_NAMES = ("grader.py", "grader.sh")
T = TypeVar("T")


class SkillFolder:
    """One skill: a folder with SKILL.md. Settings are merged once per skill (its evals/config.yml applies).

    `pytest_outputs`: what the pytest session itself writes (`--junitxml`, its cache, ...), left out of the skill's
    copy and digest where it lies inside the skill folder."""

    def __init__(self, path: Path, merge: SettingsMerger, pytest_outputs: tuple[Path, ...] = ()) -> None:
        self.path = path.resolve()
        self._merge = merge
        self.pytest_outputs = pytest_outputs
        self._entries: tuple[Path, str, list[dict[str, Any]]] | None = None
        self._datasets: dict[Path, tuple[str, Dataset]] = {}
        self._once: dict[str, Any] = {}

    @classmethod
    def with_settings(cls, path: Path, settings: RunSettings, pytest_outputs: tuple[Path, ...] = ()) -> SkillFolder:
        """The skill with settings another process already merged (a trial process): not merged or read again."""
        folder = cls(path, lambda _raw: settings, pytest_outputs)
        folder.__dict__["settings"] = settings  # cached_property's own slot
        return folder

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def evals_dir(self) -> Path:
        return self.path / "evals"

    @property
    def replays_dir(self) -> Path:
        return self.evals_dir / "replays"

    @cached_property
    def config(self) -> Any | None:
        """evals/config.yml as a validated model, or None; raises the config module's error on bad input, and on a
        link where the run reads evals/ (`evals_link`): one error for the skill, before anything is read."""
        problem = evals_link(self.path)
        if problem is not None:
            raise ConfigError(*problem)
        return load_config(self.evals_dir)

    @cached_property
    def settings(self) -> RunSettings:
        raw = None
        if self.config is not None:
            raw = self.config.model_dump(mode="json", by_alias=False, exclude_none=True)
        return self._merge(raw)

    def run_config(self) -> dict[str, Any]:
        """The settings as run, plus the skill's content digest; values of environment and agent kwargs that look like
        credentials never reach a file."""
        config = self.settings.model_dump(mode="json")
        config["env_kwargs"] = redacted_kwargs(config.get("env_kwargs", {}))
        config["agent_kwargs"] = {
            agent: redacted_kwargs(kwargs) for agent, kwargs in config.get("agent_kwargs", {}).items()
        }
        config["skill_digest"] = self.digest
        config["judge"] = judge_run_config(self.settings)
        if self.settings.local_sandbox is not None:
            config["sandbox"] = self.settings.local_sandbox
        return config

    def load_dataset(self, path: Path) -> Dataset:
        """`load_dataset`, parsed once per content: the run plan, the dataset's collector and each native task's
        collector read the same file (a native task per entry made collection quadratic). Raises DatasetError."""
        text = read_text(path)
        cached = self._datasets.get(path)
        if cached is None or cached[0] != text:
            cached = self._datasets[path] = (text, parse_dataset(path, text))
        return cached[1]

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """`compute()` the first time `key` is asked for, the same value after: for what the run plan fixes when the
        session starts (the --max-cases cut), which every collector of the skill would otherwise recompute."""
        if key not in self._once:
            self._once[key] = compute()
        return self._once[key]

    def entries(self, dataset: Dataset) -> list[dict[str, Any]]:
        """Each case's `entry_json()`, made once per dataset content: the run plan's snapshot and the items read the
        same dicts (never written to), so 10,000 entries are held once, not once for the plan and once for the items.
        """
        if self._entries is None or self._entries[:2] != (dataset.path, dataset.digest):
            self._entries = (dataset.path, dataset.digest, [case.entry_json() for case in dataset.cases])
        return self._entries[2]

    @cached_property
    def digest(self) -> str:
        own = run_results_folder(self.path, self.settings.results_dir, os.environ)
        return content_digest(self.path, (*self.pytest_outputs, *((own,) if own is not None else ())))

    @cached_property
    def grader(self) -> Path | None:
        return find_grader(self.evals_dir)


def evals_link(skill_dir: Path) -> tuple[Path, str, str] | None:
    """(path, field, message) for the first symbolic link among what the run reads of evals/ by name besides its
    dataset, trigger set and config file (whose readers refuse a link under their own names): the folder, the grader
    and the replays; None when there is none. A linked evals/ was read wherever it pointed, and a linked grader was
    passed over in silence: the skill ran without its custom grader."""
    evals = skill_dir / "evals"
    for path in (evals, *(evals / name for name in (*GRADER_NAMES, "replays"))):
        if path.is_symlink():
            fix = "copy the folder here in its place" if path.is_dir() else "copy the file here in its place"
            return path, "", f"is a symbolic link to {os.readlink(path)}; links in a skill are never followed: {fix}"
        if path == evals and not path.is_dir():
            return None
    return None


def find_grader(evals_dir: Path) -> Path | None:
    """The author's custom grader: evals/grader.py, else evals/grader.sh (a regular file, no symlinks)."""
    for name in GRADER_NAMES:
        candidate = evals_dir / name
        if candidate.is_file() and not candidate.is_symlink():
            return candidate
    return None


def arg_path(arg: str, invocation_dir: Path) -> Path:
    """The path a command-line argument names (a node id's `::` part dropped), absolute from where pytest started;
    not resolved, so a link on the command line stays visible to whoever checks it."""
    target = Path(arg.split("::", 1)[0])
    return target if target.is_absolute() else invocation_dir / target


def find_skill_root(path: Path) -> Path | None:
    """The skill folder a dataset or task file belongs to: the nearest ancestor of evals/ holding SKILL.md."""
    for parent in path.parents:
        if parent.name == "evals" and (parent.parent / "SKILL.md").is_file():
            return parent.parent
    return None


_NEVER_SKILLS = frozenset({".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache", ".tox"})


def skill_roots_under(path: Path) -> list[Path]:
    """Every skill a collection of `path` can reach: the skill `path` sits in, or the skills below it.

    Used at session start to fix the run plan before (and independently of) collection, which the xdist controller
    never does. A skill's own evals/ is not searched: nothing inside it is a skill the plugin collects.
    """
    path = path.resolve()
    # a skill named itself comes first: `--autopilot` runs a copy that sits in the original's evals/results/
    if path.is_dir() and (path / "SKILL.md").is_file() and (path / "evals").is_dir():
        return [path]
    inside = find_skill_root(path / "_") if path.is_dir() else find_skill_root(path)
    if inside is not None:
        return [inside]
    return [root for root in skills_below(path) if (root / "evals").is_dir()]


def skills_below(path: Path) -> list[Path]:
    """Every folder holding a SKILL.md at or below `path`, an evals/ or not (`--autopilot` drafts for bare ones);
    no skill's evals/, no hidden or tool folder is searched."""
    if not path.is_dir():
        return []
    roots = []
    for current, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if d not in _NEVER_SKILLS and not d.startswith(".") and d != "evals")
        if "SKILL.md" in files:
            roots.append(Path(current))
    return roots


def skills_without_evals(path: Path) -> list[Path]:
    """The skills below the folder `path` (not a skill, nor inside one) that have no evals/ and so are passed over by
    a run of the folder, in name order; none when no skill below has evals/ (then nothing runs, which
    `no_skill_reason` says)."""
    path = path.resolve()
    if not path.is_dir() or (path / "SKILL.md").is_file() or find_skill_root(path / "_") is not None:
        return []
    below = skills_below(path)
    if not any((root / "evals").is_dir() for root in below):
        return []
    return sorted((root for root in below if not (root / "evals").is_dir()), key=lambda root: root.name)


def draft_commands(skill: Path) -> str:
    """Both ways from a bare skill to a run: draft a dataset to review, or let one run draft a starter case."""
    return (
        f"draft one with `skilleval create-eval-dataset {skill}` (review it, then run), or run "
        f"`pytest --skill-eval {skill} --autopilot` (a starter case drafted into the results folder)"
    )


def _draft_hint(skill: Path) -> str:
    return f"{draft_commands(skill)}; expected {EXPECTED_LAYOUT}"


def _skill_md_misspelt(folder: Path) -> str | None:
    """A file named like SKILL.md in another letter case (or with .markdown), which the plugin does not read."""
    try:
        names = [p.name for p in folder.iterdir() if p.is_file()]
    except OSError:
        return None
    return next((n for n in names if n != "SKILL.md" and n.lower() in {"skill.md", "skill.markdown"}), None)


def missing_skill_md(evals_dir: Path) -> str:
    """Why the folder holding this evals/ is not a skill: it has no SKILL.md."""
    folder = evals_dir.parent
    message = f"{folder}: no SKILL.md here: this folder has evals/ but a skill folder needs SKILL.md next to it"
    misspelt = _skill_md_misspelt(folder)
    return message + (f" (found {misspelt}; the name must be SKILL.md)" if misspelt else "")


def has_evals_to_run(evals_dir: Path) -> bool:
    """A dataset file, a trigger set or at least one native task folder under evals/harbor/."""
    harbor = evals_dir / "harbor"
    return (
        find_dataset(evals_dir) is not None
        or (find_trigger_set(evals_dir) is not None and foreign_layout(evals_dir) is None)
        or (harbor.is_dir() and any(harbor.glob("*/task.toml")))
    )


EXPECTED_LAYOUT = (
    "a skill folder: SKILL.md next to evals/, which holds evals.json (or .jsonl, .yaml, .yml), a trigger set "
    "triggers.json (or .jsonl, .yaml, .yml) or native tasks under evals/harbor/<case>/task.toml"
)


def no_skill_reason(path: Path) -> str:
    """What is missing when a path given to `--skill-eval` yields nothing to run, and what was expected."""
    path = path.resolve()
    folder = path if path.is_dir() else path.parent
    roots = skill_roots_under(path)
    if roots:
        empty = [root for root in roots if not has_evals_to_run(root / "evals")]
        if empty:
            names = ", ".join(str(root / "evals") for root in empty[:5])
            foreign = foreign_layout(empty[0] / "evals")
            if foreign:
                return f"{names}: {foreign}"
            hint = unread_trigger_set(empty[0] / "evals") or _draft_hint(empty[0])
            return f"{names}: no dataset and no native task here, so nothing to run; {hint}"
        return f"{path}: its skills produced no test items"
    if (folder / "SKILL.md").is_file():
        return f"{folder}: SKILL.md is here but there is no evals/ folder; {_draft_hint(folder)}"
    bare = skills_below(path)
    if bare:
        names = ", ".join(str(skill) for skill in bare[:5]) + (f" and {len(bare) - 5} more" if len(bare) > 5 else "")
        return (
            f"{names}: SKILL.md but no evals/ folder, so nothing to run; draft a dataset for each with `skilleval "
            f"create-eval-dataset SKILL_DIR` (review it, then run), or run `pytest --skill-eval {path} --autopilot` "
            "(a starter case for each, drafted into its results folder)"
        )
    if (folder / "evals").is_dir():
        return missing_skill_md(folder / "evals")
    misspelt = _skill_md_misspelt(folder)
    hint = f" (found {misspelt}; the name must be SKILL.md)" if misspelt else ""
    return f"{path}: no skill here{hint}; --skill-eval expects {EXPECTED_LAYOUT}, or a folder containing skill folders"
