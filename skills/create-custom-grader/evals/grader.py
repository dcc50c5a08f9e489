#!/usr/bin/env python3
"""Custom grader for create-custom-grader's own evals (Python 3 standard library only).

Each positive case hands the agent a target skill and a benchmark under /workspace/input/<case>/ and asks for a
custom grader. This grader judges what the agent left in that target skill:

- grader_authored      evals/grader.py (or grader.sh for shell cases) exists, is a regular file and parses;
- mode_choice          evals/config.yml sets the grading mode the case calls for;
- dataset_mapping      every benchmark case is an evals.json entry with "files": ["files/<id>"], its fixtures
                       copied to evals/files/<id>/, and the target skill as expected skill;
- grader_contract      the authored grader, run on the case's known good and known bad workspaces (shipped in the
                       case files under checks/), exits 0 and writes a reward the plugin would accept;
- good_output_passes / bad_output_fails   its verdicts on those two workspaces (overall >= 0.5 passes);
- proof_stated         the agent's last message says what was not validated.

`skilleval validate --harbor-contract --strict` is not run: the sandbox need not have pytest-skilleval installed.
The contract is checked by running the authored grader the way a trial does and applying the reward rules here.
The negative case (plain dataset authoring) checks that the requested entry was added and no grader was written.
"""

from __future__ import annotations

import ast
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

RESERVED_ANYWHERE = {"security", "skill_execution", "skill_efficiency", "accuracy", "goal_accuracy", "behavior_check"}
RESERVED_IN_BLOCKS = RESERVED_ANYWHERE | {"overall", "details", "metrics", "metric_set", "entry_id"}
PASS_AT = 0.5


def env_path(name: str, default: str) -> Path:
    return Path(os.environ.get(name) or default)


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def last_agent_message(trajectory: Any) -> str:
    steps = trajectory.get("steps") if isinstance(trajectory, dict) else None
    messages = [s.get("message") for s in steps or [] if isinstance(s, dict) and s.get("source") == "agent"]
    texts = [m for m in messages if isinstance(m, str) and m.strip()]
    return texts[-1] if texts else ""


class Scores:
    """Metric scores with one reason each; `overall` is their mean."""

    def __init__(self) -> None:
        self.metrics: dict[str, float] = {}
        self.details: dict[str, dict[str, Any]] = {}

    def add(self, name: str, score: float, reason: str) -> None:
        self.metrics[name] = round(score, 4)
        self.details[name] = {"score": round(score, 4), "reason": reason}

    def reward(self) -> dict[str, Any]:
        overall = sum(self.metrics.values()) / len(self.metrics) if self.metrics else 0.0
        return {"overall": round(overall, 4), "custom_metrics": self.metrics, "details": self.details}


def authored_grader(evals: Path, language: str) -> tuple[Path | None, str]:
    """(the grader a run would use, why it is or is not acceptable)."""
    wanted = evals / ("grader.sh" if language == "shell" else "grader.py")
    if not wanted.exists():
        return None, f"no {wanted.name} in {evals}"
    if language == "shell" and (evals / "grader.py").exists():
        return None, "grader.py exists beside grader.sh and would win; the shell grader would never run"
    if wanted.is_symlink() or not wanted.is_file():
        return None, f"{wanted.name} is not a regular file"
    if language == "shell":
        done = subprocess.run(["bash", "-n", str(wanted)], capture_output=True, text=True, check=False)
        return (wanted, "grader.sh parses") if done.returncode == 0 else (None, f"bash -n: {done.stderr.strip()}")
    try:
        tree = ast.parse(wanted.read_text(encoding="utf-8"))
    except (SyntaxError, ValueError) as exc:
        return None, f"grader.py does not parse: {exc}"
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level
    }
    foreign = sorted(modules - set(sys.stdlib_module_names) - {"__future__"})
    if foreign:
        return None, f"grader.py imports {foreign}, which a bare sandbox image does not have"
    return wanted, "grader.py parses and imports only the standard library"


def configured_mode(evals: Path) -> str:
    for name in ("config.yml", "config.yaml"):
        path = evals / name
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                key, _, value = line.split("#", 1)[0].strip().partition(":")
                if key == "mode" and value.strip():
                    return value.strip().strip("'\"")
            return "default"
    return "default"


def dataset_rows(evals: Path) -> tuple[list[dict[str, Any]], str | None]:
    data = load_json(evals / "evals.json")
    if isinstance(data, dict) and isinstance(data.get("evals"), list):
        return [r for r in data["evals"] if isinstance(r, dict)], data.get("skill_name")
    return [], None


def mapping_score(evals: Path, target: str, fixtures: dict[str, list[str]]) -> tuple[float, str]:
    rows, skill_name = dataset_rows(evals)
    if not rows:
        return 0.0, "evals/evals.json is missing or not in the agentskills shape"
    problems = []
    for case_id, names in fixtures.items():
        row = next((r for r in rows if str(r.get("id")) == case_id), None)
        if row is None:
            problems.append(f"{case_id}: no entry")
            continue
        if row.get("expected_skill", skill_name) != target:
            problems.append(f"{case_id}: expected skill is {row.get('expected_skill', skill_name)!r}, not {target!r}")
        files = row.get("files", "<omitted>")
        if files not in ([f"files/{case_id}"], [f"evals/files/{case_id}"]):
            problems.append(
                f"{case_id}: files is {files!r}, not ['files/{case_id}'] (an omitted files key stages "
                "every case's inputs)"
            )
        missing = [n for n in names if not (evals / "files" / case_id / n).is_file()]
        if missing:
            problems.append(f"{case_id}: fixtures {missing} not copied to evals/files/{case_id}/")
    if problems:
        return 0.0, "; ".join(problems)
    return 1.0, f"{len(fixtures)} benchmark case(s) mapped with per-case files and expected skill {target!r}"


def reward_verdict(reward: Any, reward_txt: Path) -> tuple[float | None, list[str]]:
    """(overall, reasons the plugin would reject the reward) for one written reward."""
    if reward is None:
        try:
            value = float(reward_txt.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            return None, ["wrote no reward at $HARBOR_REWARD_JSON or $HARBOR_REWARD_TXT (hard-coded paths?)"]
        return (value if 0 <= value <= 1 else None), []
    if not isinstance(reward, dict):
        return None, ["reward.json is not a JSON object"]
    problems = [f"metric name {k!r} is reserved for the standard evaluators" for k in reward if k in RESERVED_ANYWHERE]
    for block in ("custom_metrics", "metrics"):
        if block in reward and not isinstance(reward[block], dict):
            problems.append(f"{block!r} is not an object")
        elif isinstance(reward.get(block), dict):
            problems += [f"{k!r} inside {block!r} is a reserved name" for k in reward[block] if k in RESERVED_IN_BLOCKS]
    overall = reward.get("overall")
    ok = isinstance(overall, (int, float)) and not isinstance(overall, bool) and math.isfinite(overall)
    if not ok or not 0 <= overall <= 1:
        return None, problems + [f"overall {overall!r} is not a number in [0, 1]"]
    return float(overall), problems


def run_on(grader: Path, fixture: Path, entry: dict[str, Any]) -> tuple[float | None, list[str]]:
    """Run the authored grader on a scratch copy of a fixture workspace, as a trial would."""
    with tempfile.TemporaryDirectory(prefix="authored-grader-") as scratch:
        root = Path(scratch)
        workspace, tests, verifier = root / "workspace", root / "tests", root / "logs" / "verifier"
        shutil.copytree(fixture, workspace)
        tests.mkdir()
        verifier.mkdir(parents=True)
        (tests / "entry.json").write_text(json.dumps(entry), encoding="utf-8")
        env = dict(
            os.environ,
            HARBOR_WORKSPACE_DIR=str(workspace),
            HARBOR_TESTS_DIR=str(tests),
            HARBOR_ENTRY_JSON=str(tests / "entry.json"),
            HARBOR_LOGS_DIR=str(root / "logs"),
            HARBOR_AGENT_LOGS_DIR=str(root / "logs" / "agent"),
            HARBOR_VERIFIER_DIR=str(verifier),
            HARBOR_ATIF_PATH=str(root / "logs" / "agent" / "trajectory.json"),
            HARBOR_REWARD_JSON=str(verifier / "reward.json"),
            HARBOR_REWARD_TXT=str(verifier / "reward.txt"),
        )
        command = [sys.executable if grader.suffix == ".py" else "bash", str(grader)]
        try:
            done = subprocess.run(
                command, cwd=workspace, env=env, capture_output=True, text=True, timeout=60, check=False
            )
        except subprocess.TimeoutExpired:
            return None, ["the grader ran longer than 60 s"]
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
            return None, [f"the grader exited with {done.returncode}: {tail[0][:200]}"]
        path = verifier / "reward.json"
        reward = load_json(path) if path.exists() else None
        if path.exists() and reward is None:
            return None, ["reward.json is not valid JSON"]
        return reward_verdict(reward, verifier / "reward.txt")


def grade_positive(entry: dict[str, Any], workspace: Path, scores: Scores) -> None:
    skill_dir = workspace / entry["target_skill_dir"]
    evals, target = skill_dir / "evals", skill_dir.name
    grader, why = authored_grader(evals, entry.get("grader_language", "python"))
    scores.add("grader_authored", 1.0 if grader else 0.0, why)
    expected_mode, mode = entry["expected_mode"], configured_mode(evals)
    scores.add(
        "mode_choice",
        1.0 if mode == expected_mode else 0.0,
        f"grading mode is {mode}"
        + ("" if mode == expected_mode else f", the case calls for {expected_mode}")
        + (" (default ignores the grader)" if mode == "default" else ""),
    )
    scores.add("dataset_mapping", *mapping_score(evals, target, entry.get("benchmark_fixtures", {})))
    runs = {}
    if grader is not None:
        case_id = entry["fixture_case"]
        rows, skill_name = dataset_rows(evals)
        authored = next((dict(r) for r in rows if str(r.get("id")) == case_id), {"id": case_id})
        authored.setdefault("expected_skill", skill_name or target)
        authored.update(
            evaluated_skill=target, has_skill=True, arm="with_skill", grading_mode=expected_mode, custom_grader=True
        )
        for label in ("good", "bad"):
            runs[label] = run_on(grader, workspace / entry[f"{label}_workspace"], authored)
    kept = [label for label, (overall, problems) in runs.items() if overall is not None and not problems]
    problems = [f"{label}: {p}" for label, (_, found) in runs.items() for p in found]
    scores.add(
        "grader_contract",
        len(kept) / 2,
        "; ".join(problems)
        if problems
        else ("reward contract kept on both workspaces" if kept else "no grader to run"),
    )
    for label, metric, should_pass in (("good", "good_output_passes", True), ("bad", "bad_output_fails", False)):
        overall, found = runs.get(label, (None, ["no grader to run"]))
        if overall is None or found:
            scores.add(metric, 0.0, f"no usable verdict on the {label} workspace")
        else:
            right = (overall >= PASS_AT) == should_pass
            scores.add(
                metric,
                1.0 if right else 0.0,
                f"the {label} workspace scored {overall}"
                + ("" if right else f" (expected {'>=' if should_pass else '<'} {PASS_AT})"),
            )


def grade_negative(entry: dict[str, Any], workspace: Path, scores: Scores) -> None:
    evals = workspace / entry["target_skill_dir"] / "evals"
    rows, _ = dataset_rows(evals)
    row = next((r for r in rows if str(r.get("id")) == entry["new_entry_id"]), None)
    negative = row is not None and (
        row.get("should_trigger") is False or ("expected_skill" in row and row["expected_skill"] in (None, ""))
    )
    kept = any(str(r.get("id")) == "summarise-notes" for r in rows)
    scores.add(
        "dataset_entry_added",
        1.0 if negative and kept else 0.0,
        f"entry {entry['new_entry_id']!r} "
        + ("added as a negative case" if negative else "missing or not marked negative")
        + ("" if kept else "; the existing entry was lost"),
    )
    written = [p.name for p in (evals / "grader.py", evals / "grader.sh", evals / "config.yml") if p.exists()]
    scores.add(
        "no_grader_written",
        0.0 if written else 1.0,
        f"wrote {written} for a dataset-only request" if written else "no grader or config written",
    )


def main() -> int:
    logs = os.environ.get("HARBOR_LOGS_DIR") or "/logs"
    tests_dir = os.environ.get("HARBOR_TESTS_DIR") or "/tests"
    entry = load_json(env_path("HARBOR_ENTRY_JSON", f"{tests_dir}/entry.json")) or {}
    workspace = env_path("HARBOR_WORKSPACE_DIR", "/workspace")
    agent_logs = os.environ.get("HARBOR_AGENT_LOGS_DIR") or f"{logs}/agent"
    trajectory = load_json(env_path("HARBOR_ATIF_PATH", f"{agent_logs}/trajectory.json"))
    scores = Scores()
    if entry.get("new_entry_id"):
        grade_negative(entry, workspace, scores)
    else:
        grade_positive(entry, workspace, scores)
        final = last_agent_message(trajectory)
        stated = "not validated" in final.lower()
        scores.add(
            "proof_stated",
            1.0 if stated else 0.0,
            "the final message says what was not validated"
            if stated
            else "the final message does not say what was left unvalidated",
        )
    verifier = env_path("HARBOR_VERIFIER_DIR", f"{logs}/verifier")
    reward = scores.reward()
    reward_json = env_path("HARBOR_REWARD_JSON", f"{verifier}/reward.json")
    reward_json.parent.mkdir(parents=True, exist_ok=True)
    reward_json.write_text(json.dumps(reward, indent=2) + "\n", encoding="utf-8")
    env_path("HARBOR_REWARD_TXT", f"{verifier}/reward.txt").write_text(f"{reward['overall']}\n", encoding="utf-8")
    print(json.dumps(reward, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
