"""Every setting as declared on `RunSettings`: its declaration and field, which ones a resume may change, and the
default as `--help` and the docs show it. Read by the flags, the ini keys, config.yml and resume alike."""

from __future__ import annotations

from pydantic.fields import FieldInfo

from pytest_skilleval.skill.setting_specs import Setting
from pytest_skilleval.skill.settings import RunSettings


def declared_settings() -> dict[str, tuple[Setting, FieldInfo]]:
    """Every setting by its `RunSettings` field: its declaration and the field (type, range, default)."""
    found: dict[str, tuple[Setting, FieldInfo]] = {}
    for name, info in RunSettings.model_fields.items():
        declaration = next((item for item in info.metadata if isinstance(item, Setting)), None)
        if declaration is None:
            raise TypeError(f"RunSettings.{name} has no Setting declaration")
        found[name] = (declaration, info)
    return found


def unmeasured_settings() -> frozenset[str]:
    """Fields that change how fast or where a run goes, never what it measures (a resume may change them)."""
    return frozenset(name for name, (setting, _) in declared_settings().items() if not setting.measured)


def shown_default(name: str) -> str:
    """The default of a setting as `--help` and the docs say it."""
    setting, info = declared_settings()[name]
    if setting.default_text is not None:
        return setting.default_text
    value = info.get_default(call_default_factory=True)
    if isinstance(value, bool):
        return "on" if value else "off"
    if value in (None, [], {}):
        return "none"
    return ",".join(value) if isinstance(value, list) else str(value)
