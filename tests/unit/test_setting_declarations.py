"""Every run setting is declared once (a `RunSettings` field with its `Setting`), and every place a setting shows up
is generated from that declaration: the flag, the ini twin, the config.yml key, resume's comparison and --help."""

from __future__ import annotations

import re
import subprocess
import sys

from pytest_skilleval.options import OPTION_SPECS
from pytest_skilleval.resume import NOT_MEASURED
from pytest_skilleval.skill.config_file import CLI_ONLY_KEYS, SECTIONS
from pytest_skilleval.skill.settings import RunSettings, declared_settings, shown_default


def pytest_help() -> str:
    """`pytest --help` as a user sees it, columns joined so a wrapped help text reads as one line per option."""
    text = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "400", "PATH": "/usr/bin:/bin", "HARBOR_TELEMETRY": "0"},
    ).stdout
    return re.sub(r"\s+", " ", text)


def test_every_field_is_a_declared_setting() -> None:
    assert set(declared_settings()) == set(RunSettings.model_fields)


def test_every_setting_has_a_flag_or_a_config_key() -> None:
    flags = {spec.field for spec in OPTION_SPECS}
    for field, (setting, _) in declared_settings().items():
        assert field in flags or setting.config_path is not None, f"{field} can be set from nowhere"
        if setting.config_path is not None:
            section, key = setting.config_path
            assert key in SECTIONS[section].model_fields, f"{field}: no {setting.config} key in config.yml"
        if setting.cli_only:
            assert setting.config_path is None, f"{field} is command line only but has a config.yml key"
            assert field in CLI_ONLY_KEYS, f"naming {field} in config.yml does not say it is command line only"


def test_help_shows_every_flag_its_ini_twin_and_its_default() -> None:
    text = pytest_help()
    for spec in OPTION_SPECS:
        assert spec.flag in text, spec.flag
        default = f"(default: {shown_default(spec.field)})"
        assert f"{spec.setting.help} {default}" in text, f"{spec.flag}: --help lacks {default}"
        ini = re.search(rf"{spec.ini} \(\w+\): (.*?) (skilleval_|Environment variables)", text)
        assert ini is not None, f"{spec.flag} has no ini twin {spec.ini}"
        if spec.setting.cli_only:
            assert ini.group(1).startswith(f"refused: {spec.flag} is command line only")


def test_resume_compares_exactly_the_measured_settings() -> None:
    measured = {field for field, (setting, _) in declared_settings().items() if setting.measured}
    assert measured == set(RunSettings.model_fields) - NOT_MEASURED
    assert {"agents", "grading_mode", "n_attempts", "env_kwargs", "timeout_multiplier"} <= measured
    assert {"n_concurrent", "results_dir", "trust_skill_code", "resume"} <= NOT_MEASURED


def test_trust_skill_code_is_declared_command_line_only_and_reaches_the_settings() -> None:
    from pytest_skilleval.options import SettingsSources, merge_settings

    setting, _ = declared_settings()["trust_skill_code"]
    assert setting.cli_only and not setting.measured and "runs the skill's code on this machine" in setting.help
    assert merge_settings(SettingsSources(cli={}, ini={})).trust_skill_code is False
    assert merge_settings(SettingsSources(cli={"trust_skill_code": True}, ini={})).trust_skill_code is True
