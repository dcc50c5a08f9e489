"""Regenerate skills/create-custom-grader/evals/replays/ (both arms of every case).

The replays embed the graders the agents write (JSON-escaped shell heredocs), so edit them here and rerun:
    python3 scripts/make_custom_grader_replays.py
The with-skill replays also record SKILL.md as read; rerun after editing it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SKILL = Path(__file__).resolve().parents[1] / "skills" / "create-custom-grader"
OUT = SKILL / "evals" / "replays"
S = "{skills_dir}/create-custom-grader"

RUBRIC_GRADER = r'''#!/usr/bin/env python3
"""Rubric grader for word-count: one metric per rubric item of the case (entry["rubric"]), weighted overall."""
import json
import os
import sys
from pathlib import Path

VERIFIER = os.environ.get("HARBOR_VERIFIER_DIR") or "/logs/verifier"
ENTRY = Path(os.environ.get("HARBOR_ENTRY_JSON") or "/tests/entry.json")
WORKSPACE = Path(os.environ.get("HARBOR_WORKSPACE_DIR") or "/workspace")
REWARD_JSON = Path(os.environ.get("HARBOR_REWARD_JSON") or VERIFIER + "/reward.json")
REWARD_TXT = Path(os.environ.get("HARBOR_REWARD_TXT") or VERIFIER + "/reward.txt")


def check(item):
    try:
        data = json.loads((WORKSPACE / item["file"]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0.0, item["file"] + " is missing or not JSON"
    got = data.get(item["key"]) if isinstance(data, dict) else None
    if got == item["equals"]:
        return 1.0, "%s is %r, as required" % (item["key"], got)
    return 0.0, "%s is %r, expected %r" % (item["key"], got, item["equals"])


def main():
    entry = json.loads(ENTRY.read_text(encoding="utf-8"))
    metrics, details, total, weights = {}, {}, 0.0, 0.0
    for item in entry.get("rubric") or []:
        name = "rubric_" + item["name"]
        score, reason = check(item)
        metrics[name], details[name] = score, {"score": score, "reason": reason}
        weight = float(item.get("weight", 1))
        total, weights = total + score * weight, weights + weight
    overall = round(total / weights, 4) if weights else 0.0
    REWARD_JSON.parent.mkdir(parents=True, exist_ok=True)
    REWARD_JSON.write_text(json.dumps({"overall": overall, "custom_metrics": metrics, "details": details}, indent=2))
    REWARD_TXT.write_text("%s\n" % overall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

PYTEST_GRADER = r'''#!/usr/bin/env python3
"""custom_only grader for slugify, ported from benchmark/tests/test_slug.py (no pytest needed in the sandbox).

One metric per test; overall is 1.0 only when every test passes, as the team's suite decides.
"""
import json
import os
import sys
from pathlib import Path

VERIFIER = os.environ.get("HARBOR_VERIFIER_DIR") or "/logs/verifier"
WORKSPACE = Path(os.environ.get("HARBOR_WORKSPACE_DIR") or "/workspace")
REWARD_JSON = Path(os.environ.get("HARBOR_REWARD_JSON") or VERIFIER + "/reward.json")
REWARD_TXT = Path(os.environ.get("HARBOR_REWARD_TXT") or VERIFIER + "/reward.txt")
SLUG = WORKSPACE / "output" / "slug.txt"


def slug_text():
    return SLUG.read_text(encoding="utf-8").strip() if SLUG.is_file() else None


def test_slug_file_exists():
    return SLUG.is_file(), "output/slug.txt " + ("exists" if SLUG.is_file() else "is missing")


def test_slug_value():
    text = slug_text()
    return text == "hello-world-2026", "slug is %r, expected 'hello-world-2026'" % text


def test_slug_is_lowercase_ascii_without_spaces():
    text = slug_text()
    ok = text is not None and text == text.lower() and text.isascii() and " " not in text
    return ok, "slug %r is %slowercase ASCII without spaces" % (text, "" if ok else "not ")


def main():
    metrics, details = {}, {}
    for test in (test_slug_file_exists, test_slug_value, test_slug_is_lowercase_ascii_without_spaces):
        passed, reason = test()
        name = "pytest_" + test.__name__[len("test_"):]
        metrics[name] = 1.0 if passed else 0.0
        details[name] = {"score": metrics[name], "reason": reason}
    overall = 1.0 if all(value == 1.0 for value in metrics.values()) else 0.0
    REWARD_JSON.parent.mkdir(parents=True, exist_ok=True)
    REWARD_JSON.write_text(json.dumps({"overall": overall, "custom_metrics": metrics, "details": details}, indent=2))
    REWARD_TXT.write_text("%s\n" % overall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

SHELL_GRADER = r'''#!/usr/bin/env bash
# Shell grader for release-notes, ported from benchmark/verify.sh: one metric per check of the verifier,
# verifier_pass (and overall) 1.0 only when every check passes, as verify.sh's exit status decides.
set -u
ws="${HARBOR_WORKSPACE_DIR:-/workspace}"
verifier="${HARBOR_VERIFIER_DIR:-/logs/verifier}"
reward_json="${HARBOR_REWARD_JSON:-$verifier/reward.json}"
reward_txt="${HARBOR_REWARD_TXT:-$verifier/reward.txt}"
notes="$ws/output/RELEASE_NOTES.md"

score() { if "$@" 2>/dev/null; then echo 1.0; else echo 0.0; fi; }
no_todo() { test -f "$notes" && ! grep -qi 'TODO' "$notes"; }

present=$(score test -f "$notes")
title=$(score grep -q '^# Release 1\.2' "$notes")
fixes=$(score grep -q '^## Fixes' "$notes")
clean=$(score no_todo)
overall=0.0
if [ "$present $title $fixes $clean" = "1.0 1.0 1.0 1.0" ]; then overall=1.0; fi

mkdir -p "$(dirname "$reward_json")"
cat > "$reward_json" <<JSON
{"overall": $overall,
 "custom_metrics": {"verifier_pass": $overall, "notes_present": $present, "notes_title": $title,
                    "notes_fixes_section": $fixes, "notes_no_todo": $clean},
 "details": {"verifier_pass": {"score": $overall,
                               "reason": "present=$present title=$title fixes=$fixes no_todo=$clean"}}}
JSON
echo "$overall" > "$reward_txt"
'''

BASE_RUBRIC_GRADER = r'''import json
import os
from pathlib import Path

try:
    data = json.loads(Path("output/count.json").read_text())
except (OSError, ValueError):
    data = {}
score = 1.0 if data.get("words") == 12 and data.get("lines") == 3 else 0.0
path = Path(os.environ.get("HARBOR_REWARD_JSON", "/logs/verifier/reward.json"))
path.parent.mkdir(parents=True, exist_ok=True)
path.write_text(json.dumps({"overall": score, "accuracy": score}))
'''

BASE_PYTEST_GRADER = r'''import json
import os
from pathlib import Path

workspace = Path(os.environ.get("HARBOR_WORKSPACE_DIR", "/workspace"))
ok = (workspace / "output" / "slug.txt").is_file()
path = Path(os.environ.get("HARBOR_REWARD_JSON", "/logs/verifier/reward.json"))
path.parent.mkdir(parents=True, exist_ok=True)
path.write_text(json.dumps({"overall": 1.0 if ok else 0.0, "slug_written": 1.0 if ok else 0.0}))
'''

BASE_SHELL_GRADER = r'''#!/usr/bin/env bash
if bash /workspace/input/shell-verifier/benchmark/verify.sh; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
'''


class Trajectory:
    def __init__(self, case, arm, prompt):
        self.case, self.arm = case, arm
        self.steps = [{"step_id": 1, "timestamp": "2026-11-30T10:00:01Z", "source": "user", "message": prompt}]
        self.prompt_tokens = self.completion_tokens = 0

    def _step(self, message, call=None, output=""):
        n = len(self.steps) + 1
        prompt, completion = 1500 + 400 * n, 60 + (len(json.dumps(call)) // 8 if call else 30)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        step = {
            "step_id": n,
            "timestamp": f"2026-11-30T10:00:{n:02d}Z",
            "source": "agent",
            "model_name": "recorded/demo-model",
            "message": message,
            "metrics": {"prompt_tokens": prompt, "completion_tokens": completion, "cached_tokens": 0},
        }
        if call:
            call_id = f"call_{n}_0"
            step["tool_calls"] = [{"tool_call_id": call_id, **call}]
            step["observation"] = {"results": [{"source_call_id": call_id, "content": output}]}
        self.steps.append(step)

    def read(self, message, path, content):
        self._step(message, {"function_name": "Read", "arguments": {"file_path": path}}, content)

    def bash(self, message, command):
        self._step(
            message,
            {"function_name": "Bash", "arguments": {"command": command, "workdir": "/workspace"}},
            "(replaced when re-run)",
        )

    def done(self, message):
        self._step(message)
        slug = "with-skill" if self.arm == "with" else "without-skill"
        doc = {
            "schema_version": "ATIF-v1.6",
            "session_id": f"{self.case}-{slug}",
            "agent": {"name": "claude-code", "version": "2.0.14", "model_name": "recorded/demo-model"},
            "steps": self.steps,
            "notes": f"Hand-written replay for {self.case} ({slug}). '{{skills_dir}}' is replaced by Harbor's "
            "skills dir at replay time; shell commands are re-executed.",
            "final_metrics": {
                "total_prompt_tokens": self.prompt_tokens,
                "total_completion_tokens": self.completion_tokens,
                "total_steps": len(self.steps),
            },
        }
        (OUT / f"{self.case}.{slug}.json").write_text(json.dumps(doc, indent=2) + "\n")


def heredoc(path, text, tag="EOF"):
    return f"cat > {path} <<'{tag}'\n{text}{tag}"


def config(path, mode):
    return f"printf 'schema_version: 1\\ngrading:\\n  mode: {mode}\\n' > {path}"


def positive(
    case, skill, bench_case, prompt, mode, grader_name, grader_text, base_grader_text, base_mode, fixture_note
):
    entry = json.loads((SKILL / "evals" / "evals.json").read_text())
    entry = next(e for e in entry["evals"] if e["id"] == case)
    base = f"/workspace/input/{case}"
    target, evals = f"{base}/{skill}", f"{base}/{skill}/evals"
    skill_md = (SKILL / "SKILL.md").read_text()
    # with skill
    t = Trajectory(case, "with", entry["prompt"])
    t.read(
        "A benchmark to bring into skilleval as a custom grader: reading the create-custom-grader skill.",
        f"{S}/SKILL.md",
        skill_md,
    )
    t.bash(
        "Reading the target skill and the benchmark before writing anything.",
        f"cat {target}/SKILL.md {base}/benchmark/task.json; ls -R {base}/benchmark {base}/checks",
    )
    if case != "rubric-task-json":
        t.bash(
            "Reading the team's verifier so the grader ports its checks.",
            f"cat {base}/benchmark/{'tests/test_slug.py' if case == 'pytest-check' else 'verify.sh'}",
        )
    t.bash(
        "Mapping the benchmark cases into evals.json with per-case files folders.",
        f"python3 {S}/scripts/benchmark_to_evals.py {base}/benchmark/task.json {target}",
    )
    t.bash(
        f"Mode: {mode}. {prompt} Writing the grader and config.yml.",
        heredoc(f"{evals}/{grader_name}", grader_text, "GRADER") + "\n" + config(f"{evals}/config.yml", mode),
    )
    t.bash(
        "Proving the grader on the known good and known bad workspaces.",
        f"python3 {S}/scripts/check_grader.py {target} --case {bench_case} --workspace {base}/checks/good "
        f"--expect-pass && python3 {S}/scripts/check_grader.py {target} --case {bench_case} "
        f"--workspace {base}/checks/bad --expect-fail",
    )
    t.done(
        f"Done. Validated: check_grader.py kept the reward contract on checks/good (pass) and checks/bad "
        f"(fail) for {bench_case}; evals.json maps the benchmark with files ['files/{bench_case}']; mode {mode}. "
        f"Not validated: skilleval validate --harbor-contract --strict (skilleval is not installed in this "
        f"sandbox) and a real with-skill/baseline run (no agent credentials here). {fixture_note}"
    )
    # without skill
    t = Trajectory(case, "without", entry["prompt"])
    t.bash("Looking at the benchmark.", f"cat {base}/benchmark/task.json")
    dataset = {
        "skill_name": skill,
        "evals": [
            {
                "id": bench_case,
                "prompt": "See the benchmark task " + bench_case,
                "expected_output": entry["expected_output"].split(";")[0],
            }
        ],
    }
    command = (
        f"mkdir -p {evals}\n"
        + heredoc(f"{evals}/evals.json", json.dumps(dataset, indent=2) + "\n")
        + "\n"
        + heredoc(f"{evals}/{grader_name}", base_grader_text, "GRADER")
    )
    if base_mode:
        command += "\n" + config(f"{evals}/config.yml", base_mode)
    t.bash("Writing a dataset entry and a grader for the benchmark.", command)
    t.done(f"Done: {skill} now has evals/evals.json and evals/{grader_name}.")


def negative():
    entry = json.loads((SKILL / "evals" / "evals.json").read_text())
    entry = next(e for e in entry["evals"] if e["id"] == "negative-plain-dataset")
    path = "/workspace/input/plain-dataset/notes-skill/evals/evals.json"
    script = (
        "python3 - <<'EOF'\nimport json\nfrom pathlib import Path\n"
        f"path = Path(\"{path}\")\n"
        "data = json.loads(path.read_text())\n"
        "data[\"evals\"].append({\"id\": \"weather-question\", "
        "\"prompt\": \"What is the weather in Paris today?\", "
        "\"expected_output\": \"An answer that does not use the notes skill\", \"expected_skill\": None, "
        "\"files\": []})\n"
        "path.write_text(json.dumps(data, indent=2) + \"\\n\")\nEOF"
    )
    for arm in ("with", "without"):
        t = Trajectory("negative-plain-dataset", arm, entry["prompt"])
        t.bash("A plain dataset edit: no custom grading is needed. Reading the dataset.", f"cat {path}")
        t.bash("Adding the negative case with expected_skill null.", script)
        t.bash("Checking the result.", f"python3 -m json.tool {path}")
        t.done("Added weather-question as a negative case (expected_skill null); no grader was needed.")


def main(argv: list[str] | None = None) -> int:
    """Write every replay to OUT (or to the folder given as the only argument)."""
    global OUT
    args = sys.argv[1:] if argv is None else argv
    if args:
        OUT = Path(args[0])
    OUT.mkdir(parents=True, exist_ok=True)
    positive(
        "rubric-task-json",
        "word-count",
        "short-poem",
        "The rubric adds to the standard scores, so the grader scores one metric per rubric item.",
        "default_plus_custom",
        "grader.py",
        RUBRIC_GRADER,
        BASE_RUBRIC_GRADER,
        "default_plus_custom",
        "The prompt of short-poem says poem.txt; in the sandbox it is /workspace/input/short-poem/poem.txt.",
    )
    positive(
        "pytest-check",
        "slugify",
        "title-slug",
        "The team's pytest check owns pass/fail, so custom_only with the tests ported to stdlib checks.",
        "custom_only",
        "grader.py",
        PYTEST_GRADER,
        BASE_PYTEST_GRADER,
        None,
        "The benchmark's 'verifier' field was not mapped: the grader replaces it.",
    )
    positive(
        "shell-verifier",
        "release-notes",
        "notes-1-2",
        "verify.sh adds to the standard scores, so a shell grader with one metric per check.",
        "default_plus_custom",
        "grader.sh",
        SHELL_GRADER,
        BASE_SHELL_GRADER,
        "default_plus_custom",
        "The benchmark's 'verifier' field was not mapped: grader.sh replaces it.",
    )
    negative()
    print(f"wrote {len(list(OUT.glob('*.json')))} replays to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
