"""Every run setting is declared once (a `RunSettings` field with its `Setting`), and every place a setting shows up
is generated from that declaration: the flag, the ini twin, the config.yml key, resume's comparison and --help."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pytest_skilleval.options import OPTION_SPECS
from pytest_skilleval.skill.config_file import CLI_ONLY_KEYS, SECTIONS
from pytest_skilleval.skill.setting_catalog import declared_settings, shown_default, unmeasured_settings
from pytest_skilleval.skill.settings import RunSettings

REPO = Path(__file__).resolve().parents[2]


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
        assert f"{spec.help}" in text and spec.help.endswith(default), f"{spec.flag}: --help lacks {default}"
        assert spec.setting.help in spec.help
        assert ("Command line only." in spec.help) == spec.setting.cli_only
        ini = re.search(rf"{spec.ini} \(\w+\): (.*?) (skilleval_|Environment variables)", text)
        assert ini is not None, f"{spec.flag} has no ini twin {spec.ini}"
        if spec.setting.cli_only:
            assert ini.group(1).startswith(f"refused: {spec.flag} is command line only")


def test_resume_compares_exactly_the_measured_settings() -> None:
    measured = {field for field, (setting, _) in declared_settings().items() if setting.measured}
    assert measured == set(RunSettings.model_fields) - unmeasured_settings()
    assert {"agents", "grading_mode", "n_attempts", "env_kwargs", "timeout_multiplier"} <= measured
    assert {"n_concurrent", "results_dir", "trust_skill_code", "resume"} <= unmeasured_settings()


def test_trust_skill_code_is_declared_command_line_only_and_reaches_the_settings() -> None:
    from pytest_skilleval.options import SettingsSources, merge_settings

    setting, _ = declared_settings()["trust_skill_code"]
    assert setting.cli_only and not setting.measured and "runs the skill's code on this machine" in setting.help
    assert merge_settings(SettingsSources(cli={}, ini={})).trust_skill_code is False
    assert merge_settings(SettingsSources(cli={"trust_skill_code": True}, ini={})).trust_skill_code is True


def _running_rows() -> dict[str, list[str]]:
    """docs/running.md's options table: each row's cells, by the flag it starts with."""
    text = (REPO / "docs" / "running.md").read_text()
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\| `(--[a-z-]+)", line)
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if match and len(cells) == 5:  # the options table: option, ini key, config.yml, default, meaning
            rows.setdefault(match.group(1), cells)
    return rows


def test_the_options_table_in_the_docs_matches_the_declarations() -> None:
    rows = _running_rows()
    for spec in OPTION_SPECS:
        assert spec.flag in rows, f"docs/running.md has no row for {spec.flag}"
        _, ini, config, *_ = rows[spec.flag]
        if spec.setting.cli_only:
            assert ini == config == "(command line only)", spec.flag
        else:
            assert ini.startswith(f"`{spec.ini}`"), spec.flag
        if spec.setting.config is not None:
            assert config.startswith(f"`{spec.setting.config}"), f"{spec.flag}: config.yml key {spec.setting.config}"
        else:
            assert not config.startswith("`"), f"{spec.flag} has no config.yml key but the docs give one"
