#!/usr/bin/env python3
"""Map a task.json / task.yaml benchmark into pytest-skilleval dataset entries and per-case input folders.

    python3 benchmark_to_evals.py BENCHMARK SKILL_DIR [--skill-name NAME] [--keep FIELD]... [--force] [--dry-run]

Each benchmark case becomes one agentskills entry in SKILL_DIR/evals/evals.json. Its fixture files are copied to
SKILL_DIR/evals/files/<case-id>/ and the entry gets "files": ["files/<case-id>"] (or [] when it has none), so no
case ever sees another case's inputs. Rubrics and tags are kept as extra keys for the grader; fields it cannot map
are listed so a person decides. Standard library only (PyYAML is used for .yaml input when it is installed).
Exit status: 0 written (or printed with --dry-run), 1 refused or bad input, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

ID_KEYS = ("id", "task_id", "case_id", "name", "slug")
PROMPT_KEYS = ("prompt", "instruction", "question", "task", "input")
EXPECTED_KEYS = ("expected_output", "ground_truth", "expected", "reference_answer", "answer", "solution")
ASSERTION_KEYS = ("assertions", "expectations", "expected_behavior", "checks")
FILE_KEYS = ("files", "fixtures", "inputs")
KEPT_KEYS = ("rubric", "tags", "expected_script", "acceptable_skills")
LABEL_KEYS = ("should_trigger", "expected_skill", "negative")
CONTAINER_KEYS = ("tasks", "cases", "evals", "benchmark")
CASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
DEVICE_NAMES = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


class BenchmarkError(ValueError):
    """Bad benchmark input or a refused write; the message names the file, the case and the field."""


def load_benchmark(path: Path) -> Any:
    """The parsed benchmark file (JSON, or YAML when PyYAML is available)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchmarkError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if path.suffix.lower() in {".yaml", ".yml"}:
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError as exc:
            raise BenchmarkError(
                f"{path}: reading YAML needs PyYAML (pip install pyyaml); or convert it to JSON"
            ) from exc
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise BenchmarkError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise BenchmarkError(f"{path}: not valid JSON: {exc}") from exc


def benchmark_cases(data: Any, source: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(cases, benchmark-level fields): a list, an object holding a case list, or one case object."""
    if isinstance(data, list):
        cases, top = data, {}
    elif isinstance(data, dict):
        key = next((k for k in CONTAINER_KEYS if isinstance(data.get(k), list)), None)
        cases, top = ([data], {}) if key is None else (data[key], {k: v for k, v in data.items() if k != key})
    else:
        raise BenchmarkError(f"{source}: expected a list of cases or an object with 'tasks', got {type(data).__name__}")
    if not cases:
        raise BenchmarkError(f"{source}: no cases")
    for index, case in enumerate(cases):
        if not isinstance(case, dict):
            raise BenchmarkError(f"{source}: case {index}: expected an object, got {type(case).__name__}")
    return cases, top


def _first(case: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if case.get(key) not in (None, "", []):
            return key, case[key]
    return None, None


def check_case_id(value: Any, where: str) -> str:
    """A case id as the plugin requires it (letters, digits, . _ -; no device names)."""
    case_id = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not CASE_ID.fullmatch(case_id) or case_id.endswith("."):
        raise BenchmarkError(
            f"{where}: field 'id': {value!r} is not a valid case id (1-128 of A-Za-z0-9._-, "
            "starting with a letter or digit, not ending with '.')"
        )
    if case_id.split(".", 1)[0].casefold() in DEVICE_NAMES:
        raise BenchmarkError(f"{where}: field 'id': {case_id!r} starts with a Windows device name")
    return case_id


def _rubric_sentences(rubric: Any) -> list[str]:
    items = rubric if isinstance(rubric, list) else [rubric] if rubric else []
    sentences = []
    for item in items:
        if isinstance(item, str):
            sentences.append(item)
        elif isinstance(item, dict):
            text = next((item[k] for k in ("criterion", "description", "name") if isinstance(item.get(k), str)), None)
            if text:
                sentences.append(text)
    return sentences


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str) and item.strip()]
    return []


def _fixture_paths(value: Any, base: Path, where: str) -> list[Path]:
    paths = []
    for item in _strings(value):
        relative = Path(item)
        if relative.is_absolute() or ".." in relative.parts:
            raise BenchmarkError(f"{where}: field 'files': {item!r} must be relative to the benchmark's folder")
        source = base / relative
        if not source.exists():
            raise BenchmarkError(f"{where}: field 'files': {item!r} does not exist under {base}")
        if source.is_symlink():
            raise BenchmarkError(f"{where}: field 'files': {item!r} is a symlink; copy the real file")
        paths.append(relative)
    return paths


def map_case(
    case: dict[str, Any], index: int, skill_name: str, source: Path, keep: tuple[str, ...] = ()
) -> tuple[dict[str, Any], list[Path], list[str]]:
    """(entry, fixture paths relative to the benchmark folder, notes) for one benchmark case."""
    where = f"{source}: case {index}"
    _, raw_id = _first(case, ID_KEYS)
    case_id = check_case_id(raw_id, where)
    where = f"{source}: case {index} (id {case_id!r})"
    prompt_key, prompt = _first(case, PROMPT_KEYS)
    if not isinstance(prompt, str) or not prompt.strip():
        raise BenchmarkError(f"{where}: field 'prompt': missing (looked for {', '.join(PROMPT_KEYS)})")
    used = {k for k in ID_KEYS if case.get(k) == raw_id} | {prompt_key}
    expected_key, expected = _first(case, EXPECTED_KEYS)
    rubric_text = _rubric_sentences(case.get("rubric"))
    if expected is None and rubric_text:
        expected = "Meets the rubric: " + "; ".join(rubric_text)
    if expected is None:
        raise BenchmarkError(
            f"{where}: field 'expected_output': missing (looked for {', '.join(EXPECTED_KEYS)}, "
            "or a rubric to derive it from)"
        )
    entry: dict[str, Any] = {
        "id": case_id,
        "prompt": prompt,
        "expected_output": expected if isinstance(expected, str) else json.dumps(expected),
    }
    used.add(expected_key)
    assertion_key, assertions = _first(case, ASSERTION_KEYS)
    used.add(assertion_key)
    assertions = _strings(assertions) + rubric_text
    if assertions:
        entry["assertions"] = assertions
    negative = (
        case.get("should_trigger") is False
        or case.get("negative") is True
        or ("expected_skill" in case and case["expected_skill"] in (None, ""))
    )
    entry["expected_skill"] = None if negative else (case.get("expected_skill") or skill_name)
    used.update(LABEL_KEYS)
    file_key, file_value = _first(case, FILE_KEYS)
    used.add(file_key)
    fixtures = _fixture_paths(file_value, source.parent, where)
    entry["files"] = [f"files/{case_id}"] if fixtures else []
    for key in (*KEPT_KEYS, *keep):
        if key in case and key not in entry:
            entry[key] = case[key]
            used.add(key)
    notes = [
        f"{case_id}: field {key!r} not mapped (pass --keep {key} to keep it for the grader)"
        for key in case
        if key not in used
    ]
    for fixture in fixtures:
        if fixture.as_posix() in prompt and f"/workspace/input/{case_id}/" not in prompt:
            notes.append(
                f"{case_id}: the prompt mentions {fixture.as_posix()!r}; in the sandbox it is "
                f"/workspace/input/{case_id}/{fixture.as_posix()}"
            )
    return entry, fixtures, notes


def _existing_dataset(evals_dir: Path, skill_name: str) -> dict[str, Any]:
    others = [p.name for p in evals_dir.glob("evals.*") if p.name != "evals.json"]
    if others:
        raise BenchmarkError(f"{evals_dir}: already has {', '.join(sorted(others))}; merge into that file by hand")
    path = evals_dir / "evals.json"
    if not path.exists():
        return {"skill_name": skill_name, "evals": []}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise BenchmarkError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("evals"), list):
        raise BenchmarkError(
            f"{path}: not the agentskills shape ({{'skill_name': ..., 'evals': [...]}}); convert first"
        )
    return data


def convert(
    benchmark: Path,
    skill_dir: Path,
    skill_name: str | None = None,
    keep: tuple[str, ...] = (),
    force: bool = False,
    dry_run: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """Merge the benchmark into SKILL_DIR/evals/evals.json and copy fixtures; returns (dataset, notes)."""
    if not (skill_dir / "SKILL.md").is_file():
        raise BenchmarkError(f"{skill_dir}: no SKILL.md here; point at the target skill's folder")
    name = skill_name or skill_dir.resolve().name
    cases, top = benchmark_cases(load_benchmark(benchmark), benchmark)
    evals_dir = skill_dir / "evals"
    dataset = _existing_dataset(evals_dir, name)
    taken = {str(e.get("id")).casefold(): i for i, e in enumerate(dataset["evals"]) if isinstance(e, dict)}
    mapped, notes, seen = [], [f"benchmark field {k!r} not mapped" for k in top if k not in {"name", "skill"}], set()
    for index, case in enumerate(cases):
        entry, fixtures, case_notes = map_case(case, index, name, benchmark, keep)
        folded = entry["id"].casefold()
        if folded in seen:
            raise BenchmarkError(f"{benchmark}: case {index}: field 'id': {entry['id']!r} repeats an earlier case")
        if folded in taken and not force:
            raise BenchmarkError(f"{evals_dir / 'evals.json'}: id {entry['id']!r} already exists (use --force)")
        target = evals_dir / "files" / entry["id"]
        if fixtures and target.exists() and not force:
            raise BenchmarkError(f"{target}: already exists (use --force)")
        seen.add(folded)
        mapped.append((entry, fixtures))
        notes.extend(case_notes)
    for entry, fixtures in mapped:
        if entry["id"].casefold() in taken:
            dataset["evals"][taken[entry["id"].casefold()]] = entry
        else:
            dataset["evals"].append(entry)
        if not dry_run:
            _copy_fixtures(benchmark.parent, fixtures, evals_dir / "files" / entry["id"])
    if not dry_run:
        evals_dir.mkdir(exist_ok=True)
        (evals_dir / "evals.json").write_text(json.dumps(dataset, indent=2) + "\n", encoding="utf-8")
    return dataset, notes


def _copy_fixtures(base: Path, fixtures: list[Path], target: Path) -> None:
    for fixture in fixtures:
        source, destination = base / fixture, target / fixture
        if source.is_dir():
            shutil.copytree(source, destination, dirs_exist_ok=True)
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmark_to_evals.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("benchmark", type=Path, help="task.json, task.yaml, or a JSON/YAML list of cases")
    parser.add_argument("skill_dir", type=Path, help="the target skill's folder (holds SKILL.md)")
    parser.add_argument("--skill-name", help="expected_skill for positive cases (default: the folder's name)")
    parser.add_argument("--keep", action="append", default=[], metavar="FIELD", help="also keep this case field")
    parser.add_argument("--force", action="store_true", help="replace entries and files folders with the same id")
    parser.add_argument("--dry-run", action="store_true", help="print the dataset, write nothing")
    args = parser.parse_args(argv)
    try:
        dataset, notes = convert(
            args.benchmark, args.skill_dir, args.skill_name, tuple(args.keep), args.force, args.dry_run
        )
    except BenchmarkError as exc:
        print(f"benchmark_to_evals: {exc}", file=sys.stderr)
        return 1
    if args.dry_run:
        print(json.dumps(dataset, indent=2))
    else:
        print(f"wrote {args.skill_dir / 'evals' / 'evals.json'} ({len(dataset['evals'])} entries)")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
