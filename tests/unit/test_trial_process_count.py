"""`--trial-processes auto`: one trial process per core, shared among xdist workers, none below two; taken from the
command line, the ini file and evals/config.yml alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_skilleval.dispatch import trial_process_count
from pytest_skilleval.skill.config_file import ConfigError, load_config
from pytest_skilleval.skill.setting_specs import count_or_auto
from pytest_skilleval.skill.settings import RunSettings


@pytest.mark.parametrize(
    "cores, workers, expected",
    [(2, 1, 2), (8, 1, 8), (8, 2, 4), (8, 3, 2), (2, 2, 0), (1, 1, 0), (3, 2, 0), (64, 4, 16)],
)
def test_auto_is_one_per_core_shared_among_the_workers_and_none_below_two(
    cores: int, workers: int, expected: int
) -> None:
    assert trial_process_count("auto", cores=cores, workers=workers) == expected


def test_a_number_is_taken_as_asked_whatever_the_machine() -> None:
    assert trial_process_count(0, cores=8, workers=1) == 0
    assert trial_process_count(1, cores=8, workers=4) == 1
    assert trial_process_count(3, cores=1, workers=1) == 3  # capped at the cores where the processes start


def test_auto_reads_the_cores_this_process_may_run_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5})  # read through usable_cores
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")  # a parent run's worker: not this session's
    assert trial_process_count("auto") == 6
    assert trial_process_count("auto", workers=3) == 2


@pytest.mark.parametrize("text, value", [("auto", "auto"), (" AUTO ", "auto"), ("0", 0), ("4", 4)])
def test_the_flag_and_ini_text_parse(text: str, value: object) -> None:
    assert count_or_auto(text) == value
    assert RunSettings(trial_processes=count_or_auto(text)).trial_processes == value


@pytest.mark.parametrize("text", ["some", "-1", "2.5"])
def test_other_words_are_refused(text: str) -> None:
    with pytest.raises((ValueError, ValidationError)):
        RunSettings(trial_processes=count_or_auto(text))


def test_config_yml_takes_auto_and_names_the_field_for_anything_else(tmp_path: Path) -> None:
    (tmp_path / "config.yml").write_text("schema_version: 1\nharbor:\n  trial_processes: auto\n")
    config = load_config(tmp_path)
    assert config is not None and config.harbor is not None and config.harbor.trial_processes == "auto"
    (tmp_path / "config.yml").write_text("schema_version: 1\nharbor:\n  trial_processes: many\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert info.value.field == "harbor.trial_processes"


def test_the_workers_are_this_session_s_xdist_workers() -> None:
    from types import SimpleNamespace

    from pytest_skilleval.dispatch import _xdist_workers

    assert _xdist_workers(SimpleNamespace(workerinput={"workerid": "gw0", "workercount": 4})) == 4  # type: ignore[arg-type]
    assert _xdist_workers(SimpleNamespace()) == 1  # type: ignore[arg-type]
