"""Resource bombs in author files end as one located error, fast and in little memory (issue 9, item 9).

Memory is measured with tracemalloc (peak of Python allocations while loading), an assertion on bounded behaviour
rather than on timing: unbounded, the alias bomb and the entry flood cost gigabytes.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.skill.bounded_parse import MAX_DEPTH, MAX_YAML_NODES, ParseLimitError, load_json
from pytest_skilleval.skill.bounded_yaml import load_yaml
from pytest_skilleval.skill.config_file import ConfigError, load_config
from pytest_skilleval.skill.dataset import MAX_ENTRIES, DatasetError, load_dataset

MiB = 1024 * 1024


def alias_bomb(levels: int = 9) -> str:
    """The billion-laughs shape: each level repeats the previous one nine times (9**9 ~ 387 million strings)."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghijklm"[: levels - 1]:
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
        previous = name
    return "\n".join(lines) + "\n"


def peak_mib(action: Callable[[], Any]) -> tuple[BaseException | None, float]:
    tracemalloc.start()
    try:
        action()
        raised = None
    except Exception as error:  # noqa: BLE001 - the caller asserts on it
        raised = error
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return raised, peak / MiB


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / "evals" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def entry(case_id: str) -> dict[str, str]:
    return {"id": case_id, "prompt": "p", "expected_output": "e"}


# --- YAML aliases ------------------------------------------------------------------------------------------------


def test_yaml_alias_bomb_in_a_dataset_is_refused_in_little_memory(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "evals.yaml",
        "skill_name: x\nevals:\n  - id: a\n    prompt: p\n    expected_output: e\n" + alias_bomb(),
    )
    raised, peak = peak_mib(lambda: load_dataset(path))
    assert isinstance(raised, DatasetError)
    assert str(raised).startswith(f"{path}: ")
    assert f"the YAML has more than {MAX_YAML_NODES:,} nodes" in str(raised) and "alias expanded" in str(raised)
    assert "(at line " in str(raised)
    assert peak < 20, f"peak {peak:.1f} MiB"


def test_yaml_alias_bomb_in_config_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "config.yml", "schema_version: 1\n" + alias_bomb())
    raised, peak = peak_mib(lambda: load_config(tmp_path / "evals"))
    assert isinstance(raised, ConfigError)
    assert "config.yml" in str(raised) and f"more than {MAX_YAML_NODES:,} nodes" in str(raised)
    assert peak < 20, f"peak {peak:.1f} MiB"


def test_a_flat_yaml_flood_stops_at_the_node_limit() -> None:
    raised, peak = peak_mib(lambda: load_yaml("evals:\n" + "- a\n" * (MAX_YAML_NODES + 10)))
    assert isinstance(raised, ParseLimitError) and f"more than {MAX_YAML_NODES:,} nodes" in str(raised)
    assert peak < 200, f"peak {peak:.1f} MiB"


def test_recursive_yaml_alias_is_refused() -> None:
    with pytest.raises(ParseLimitError, match="refers to the node that contains it"):
        load_yaml("a: &a [1, *a]\n")


def test_modest_alias_use_still_loads() -> None:
    text = "shared: &checks [says hello, is polite]\nevals:\n" + "".join(
        f"  - {{id: c{i}, prompt: p, expected_output: e, assertions: *checks}}\n" for i in range(200)
    )
    data = load_yaml(text)
    assert data["evals"][199]["assertions"] == ["says hello", "is polite"]


# --- nesting depth -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["evals.json", "evals.yaml"])
def test_200k_deep_nesting_is_a_clean_dataset_error(tmp_path: Path, name: str) -> None:
    depth = 200_000
    body = "[" * depth + "]" * depth
    text = body if name.endswith(".json") else f"skill_name: x\nevals: {body}\n"
    path = write(tmp_path, name, text)
    raised, peak = peak_mib(lambda: load_dataset(path))
    assert isinstance(raised, DatasetError), repr(raised)
    assert f"nested deeper than {MAX_DEPTH} levels" in str(raised)
    assert str(raised).startswith(str(path))
    assert peak < 50, f"peak {peak:.1f} MiB"


def test_deep_nesting_in_one_jsonl_line_names_the_line(tmp_path: Path) -> None:
    deep = json.dumps(entry("b") | {"extra": "x"}).replace('"x"', "[" * 70 + "]" * 70)
    path = write(tmp_path, "evals.jsonl", json.dumps(entry("a")) + "\n" + deep + "\n")
    with pytest.raises(DatasetError, match=r"line 2: nested deeper than 64 levels"):
        load_dataset(path)


def test_nesting_at_the_limit_loads() -> None:
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(ParseLimitError):
        load_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert load_yaml("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)) is not None
    with pytest.raises(ParseLimitError):
        load_yaml("a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH)


def test_deep_config_yml_is_a_config_error(tmp_path: Path) -> None:
    write(tmp_path, "config.yml", "schema_version: 1\nharbor: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(ConfigError, match="nested deeper than 64 levels"):
        load_config(tmp_path / "evals")


# --- entry count -------------------------------------------------------------------------------------------------


def test_300k_entry_jsonl_under_the_size_cap_stops_at_the_limit(tmp_path: Path) -> None:
    line = json.dumps(entry("c")) + "\n"
    path = write(tmp_path, "evals.jsonl", line * 300_000)
    assert path.stat().st_size < 64 * MiB
    raised, peak = peak_mib(lambda: load_dataset(path))
    assert isinstance(raised, DatasetError)
    assert f"more than {MAX_ENTRIES:,} entries" in str(raised)
    # The text itself (~14 MiB, read once) dominates; validating 300k entries would cost gigabytes.
    assert peak < 3 * path.stat().st_size / MiB + 10, f"peak {peak:.1f} MiB"


def test_too_many_json_entries_are_refused_before_validation(tmp_path: Path) -> None:
    data = {"skill_name": "x", "evals": [entry(f"c{i}") for i in range(MAX_ENTRIES + 1)]}
    path = write(tmp_path, "evals.json", json.dumps(data))
    with pytest.raises(DatasetError, match=r"field 'evals': has 10,001 entries; the limit per dataset is 10,000"):
        load_dataset(path)


def test_entries_at_the_limit_load(tmp_path: Path) -> None:
    path = write(tmp_path, "evals.jsonl", "".join(json.dumps(entry(f"c{i}")) + "\n" for i in range(MAX_ENTRIES)))
    assert len(load_dataset(path).cases) == MAX_ENTRIES


# --- YAML error location -----------------------------------------------------------------------------------------

UNTERMINATED = """\
skill_name: x
evals:
  - id: a
    prompt: p
    expected_output: e
  - id: b
    prompt: q
    expected_output: "never closed
  - id: c
    prompt: r
    expected_output: s
"""


def test_unterminated_quote_is_reported_where_it_opens(tmp_path: Path) -> None:
    path = write(tmp_path, "evals.yaml", UNTERMINATED)
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    message = str(caught.value)
    assert "invalid YAML at line 8 column 22: while scanning a quoted scalar" in message
    assert "line 11" not in message.split("noticed")[0]


def test_parser_errors_point_at_the_offending_token(tmp_path: Path) -> None:
    path = write(tmp_path, "evals.yaml", "skill_name: x\nevals:\n  - id: a\n    prompt: p\n   bad: 1\n")
    with pytest.raises(DatasetError, match="invalid YAML at line 5 column 4: while parsing a block collection"):
        load_dataset(path)


def test_config_yaml_errors_point_at_the_start_too(tmp_path: Path) -> None:
    write(tmp_path, "config.yml", "schema_version: 1\ngrading:\n  mode: 'default\nharbor: {}\n")
    with pytest.raises(ConfigError, match="invalid YAML at line 3 column 9: while scanning a quoted scalar"):
        load_config(tmp_path / "evals")
