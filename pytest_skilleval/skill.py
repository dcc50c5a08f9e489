"""A skill folder as the plugin sees it: where its evals live and the settings that apply to it."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_skilleval.options import RunSettings, SettingsSources, merge_settings

GRADER_NAMES = ("grader.py", "grader.sh")


class SkillFolder:
    """One skill: a folder with SKILL.md. Settings are merged once per skill (its evals/config.yml applies)."""

    def __init__(self, path: Path, sources: SettingsSources) -> None:
        self.path = path.resolve()
        self._sources = sources

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
        """evals/config.yml as a validated model, or None; raises the config module's error on bad input."""
        try:
            from pytest_skilleval.config_file import load_config
        except ImportError:  # the config model is optional until it lands
            return None
        return load_config(self.evals_dir)

    @cached_property
    def settings(self) -> RunSettings:
        raw = None
        if self.config is not None:
            raw = self.config.model_dump(mode="json", by_alias=False, exclude_none=True)
        return merge_settings(self._sources, raw)

    @cached_property
    def grader(self) -> Path | None:
        return find_grader(self.evals_dir)


def find_grader(evals_dir: Path) -> Path | None:
    """The author's custom grader: evals/grader.py, else evals/grader.sh (a regular file, no symlinks)."""
    for name in GRADER_NAMES:
        candidate = evals_dir / name
        if candidate.is_file() and not candidate.is_symlink():
            return candidate
    return None


def find_skill_root(path: Path) -> Path | None:
    """The skill folder a dataset or task file belongs to: the nearest ancestor of evals/ holding SKILL.md."""
    for parent in path.parents:
        if parent.name == "evals" and (parent.parent / "SKILL.md").is_file():
            return parent.parent
    return None
