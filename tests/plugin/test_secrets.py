"""No secret reaches anything we write or print (issue 9, item 6).

Fake secrets are planted in the host environment and passed as `--agent-kwarg replay:api_key=...` (the local
environment refuses unknown `--ek` keys); the replayed agent and the grader print them every way they can (an env
dump, stderr, reward details, a crash traceback, token-shaped literals), with `sandbox=none` so the sandbox sees the
whole host environment. Then every byte under the results dir, the JUnit XML and the terminal output is searched.
"""

from __future__ import annotations

import json
import secrets

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, bash_replay
from verifier.redact import REDACTED, Redactor

# Token-shaped literals an agent might print that no variable holds.
LITERALS = {
    "github": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "aws": "AKIA" + "Z7QWERTYUIOPASDF",
    "slack": "xoxb-" + "123456789012-abcdefghijkl",
    "bearer": "Bearer " + "abc.DEF-ghi_JKL123456789",
}

GRADER = """
import json, os, sys
from pathlib import Path

entry = json.loads(Path(os.environ["HARBOR_ENTRY_JSON"]).read_text())
verifier = Path(os.environ["HARBOR_VERIFIER_DIR"])
verifier.mkdir(parents=True, exist_ok=True)
for name, value in sorted(os.environ.items()):
    print(f"{name}={value}")
print("service token:", os.environ.get("MY_SERVICE_TOKEN"), file=sys.stderr)
if entry["id"] == "crasher":
    raise RuntimeError("grader crashed holding " + os.environ["OPENAI_API_KEY"] + " " + os.environ["MY_DB_PASSWORD"])
(verifier / "reward.json").write_text(json.dumps({
    "leaky": 1.0,
    "details": {"leaky": "saw " + os.environ["OPENAI_API_KEY"] + " and " + os.environ["MY_SERVICE_TOKEN"]},
}))
"""


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {
        "OPENAI_API_KEY": "sk-test-" + secrets.token_hex(16),
        "MY_SERVICE_TOKEN": "svc_" + secrets.token_urlsafe(18),
        "MY_DB_PASSWORD": "Pw-" + secrets.token_hex(6),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def test_no_secret_reaches_the_results_junit_or_terminal(skill_project: SkillProject, planted: dict[str, str]) -> None:
    ek_secret = "ekval-" + secrets.token_hex(12)
    entries = [{"id": case, "prompt": f"do {case}", "expected_output": "done"} for case in ("printer", "crasher")]
    skill = skill_project.make_skill("demo", {"skill_name": "demo", "evals": entries}, grader=False)
    (skill / "evals" / "grader.py").write_text(GRADER)
    replay = bash_replay(
        "env",
        "echo \"$OPENAI_API_KEY\" >&2; echo \"token=$MY_SERVICE_TOKEN\"",
        "echo " + " ".join(f"'{v}'" for v in LITERALS.values()),
        "python3 -c 'import os; raise SystemExit(os.environ[\"MY_DB_PASSWORD\"])'",
    )
    for case in ("printer", "crasher"):
        (skill / "evals" / "replays" / f"{case}.json").write_text(json.dumps(replay))

    junit = skill_project.root / "junit.xml"
    result = skill_project.run(
        *LOCAL_REPLAY,
        "--grading-mode",
        "default_plus_custom",
        "--ek",
        "sandbox=none",
        "--agent-kwarg",
        f"replay:api_key={ek_secret}",
        f"--junitxml={junit}",
        "-rA",
        "-vv",
    )
    assert result.parseoutcomes().get("errors") == 2  # the crasher, in both arms

    written = [result.stdout.str(), result.stderr.str(), junit.read_text(errors="replace")]
    files = [p for p in (skill_project.root / "results").rglob("*") if p.is_file()]
    trial_files = [p for p in files if p.parent.name == "trials"]
    assert any(json.loads(p.read_text())["trajectory"] for p in trial_files)  # trajectories were written...
    assert any(p.name == "result.json" for p in files)
    written += [p.read_text(errors="replace") for p in files]
    everything = "\n".join(written)
    for name, value in {**planted, "--agent-kwarg replay:api_key": ek_secret, **LITERALS}.items():
        assert value not in everything, f"{name} leaked"
    assert REDACTED in everything  # the output is still there, with the secrets cut out
    assert "grader crashed holding" in everything


def test_redactor_units() -> None:
    redactor = Redactor.from_environment(
        {
            "OPENAI_API_KEY": "sk-abc123def456ghi789",
            "AUTH_MODE": "default",
            "PATH": "/usr/bin",
            "PGPASSWORD": "s3cr3t-pass",
            "MAX_TOKENS": "4096000000000000",
        },
        [{"api_key": "kw-secret-1", "sandbox": "none"}],
    )
    text = "sk-abc123def456ghi789 default /usr/bin s3cr3t-pass kw-secret-1 none 4096000000000000"
    assert redactor.text(text) == f"{REDACTED} default /usr/bin {REDACTED} {REDACTED} none 4096000000000000"
    assert redactor.text("postgres://user:hunter2x@db/x") == f"postgres://user:{REDACTED}@db/x"
    assert redactor.value({"api_key": "short", "grading_mode": "default", "n": 1.5}) == {
        "api_key": REDACTED,
        "grading_mode": "default",
        "n": 1.5,
    }
    quoted = Redactor(['pa"ss\\word1'])
    assert (
        quoted.json_bytes(json.dumps({"x": 'pa"ss\\word1'}).encode())
        == (json.dumps({"x": REDACTED}, indent=2) + "\n").encode()
    )
