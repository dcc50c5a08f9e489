"""Every secret shape and every credential-named value is kept out of every artifact (issues 20, 21 and 23).

One real run of a skill with the replay agent in `--env-mode local`: the replayed commands echo each token shape
(no variable holds them) and each named value (the host environment and `--agent-kwarg` carry them, under
`DB_PASS`, `SERVICE_PWD`, `STRIPE_SK`, ...), and the grader prints its environment and crashes holding them. Then
a table of shape x artifact (result.json, the trial files, report.html, BENCHMARK.md, the JUnit XML, the terminal)
is checked; the replay folder's path, which is not a secret, must stay as it is.
"""

from __future__ import annotations

import json
import secrets

import pytest

from tests.support import LOCAL_REPLAY, SkillProject, bash_replay
from verifier.redact import REDACTED

# Token shapes an agent might print that no variable holds.
SHAPES = {
    "short sk- key": "sk-" + secrets.token_hex(5)[:9],
    "hf_ token": "hf_" + secrets.token_hex(16),
    "Stripe live key": "sk_live_" + secrets.token_hex(12),
    "Slack webhook": "https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/" + secrets.token_hex(12),
    "Sentry DSN": f"https://{secrets.token_hex(16)}@o123.ingest.sentry.io/456",
    "GitHub token": "ghp_" + secrets.token_hex(18),
    "JWT": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx" + secrets.token_hex(4) + ".c2lnbmF0dXJl",
}
# Named values with no shape at all: only their names say they are secrets.
ENV_NAMED = {name: "Zq-" + secrets.token_hex(7) for name in ("DB_PASS", "SERVICE_PWD", "STRIPE_SK")}
KWARG_NAMED = {name: "Kw-" + secrets.token_hex(7) for name in ("db_pass", "service_pwd", "stripe_sk")}
URL_NAMED = {"SLACK_WEBHOOK_URL": SHAPES["Slack webhook"], "SENTRY_DSN": SHAPES["Sentry DSN"]}

GRADER = """
import json, os
from pathlib import Path

entry = json.loads(Path(os.environ["HARBOR_ENTRY_JSON"]).read_text())
for name, value in sorted(os.environ.items()):
    print(f"{name}={value}")
if entry["id"] == "crasher":
    raise RuntimeError("grader crashed holding " + " ".join(os.environ[n] for n in %s))
verifier = Path(os.environ["HARBOR_VERIFIER_DIR"])
verifier.mkdir(parents=True, exist_ok=True)
(verifier / "reward.json").write_text(json.dumps({"leaky": 1.0, "details": {"leaky": os.environ["DB_PASS"]}}))
""" % sorted(ENV_NAMED)


def test_every_secret_shape_is_kept_out_of_every_artifact(
    skill_project: SkillProject, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for name, value in {**ENV_NAMED, **URL_NAMED}.items():
        monkeypatch.setenv(name, value)
    entries = [{"id": case, "prompt": f"do {case}", "expected_output": "done"} for case in ("printer", "crasher")]
    # A skill path with a long run of letters and digits: a path, not key material.
    skill = skill_project.make_skill(
        "demo-skill-2026-12-01-0123456789abcdef", {"skill_name": "demo", "evals": entries}, grader=False
    )
    (skill / "evals" / "grader.py").write_text(GRADER)
    replay = bash_replay(
        "env",
        "echo " + " ".join(f"'{value}'" for value in SHAPES.values()),
        "echo " + " ".join(f'"${name}"' for name in ENV_NAMED) + " >&2",
        "echo " + " ".join(f"{name}={value}" for name, value in KWARG_NAMED.items()),
        message="printing " + SHAPES["hf_ token"],
    )
    for case in ("printer", "crasher"):
        (skill / "evals" / "replays" / f"{case}.json").write_text(json.dumps(replay))
    junit = skill_project.root / "junit.xml"
    basetemp = tmp_path_factory.mktemp("jobs")
    kwargs = [arg for name, value in KWARG_NAMED.items() for arg in ("--agent-kwarg", f"replay:{name}={value}")]
    result = skill_project.run(
        *LOCAL_REPLAY,
        "--grading-mode",
        "default_plus_custom",
        "--ek",
        "sandbox=none",
        *kwargs,
        f"--junitxml={junit}",
        "--basetemp",
        str(basetemp),
        "--harbor-keep-jobs",
        "-rA",
        "-vv",
    )
    assert result.parseoutcomes().get("errors") == 2, result.stdout.str()[-3000:]  # the crasher, in both arms

    files = [path for path in (skill_project.root / "results").rglob("*") if path.is_file()]
    artifacts = {
        "result.json": [p for p in files if p.name == "result.json"],
        "trial files": [p for p in files if p.parent.name == "trials"],
        "report.html": [p for p in files if p.name == "report.html"],
        "BENCHMARK.md": [p for p in files if p.name == "BENCHMARK.md"],
        "run_config.json": [p for p in files if p.name == "run_config.json"],
    }
    assert all(artifacts.values()), {name: len(paths) for name, paths in artifacts.items()}
    texts = {name: "\n".join(p.read_text(errors="replace") for p in paths) for name, paths in artifacts.items()}
    texts["JUnit XML"] = junit.read_text(errors="replace")
    texts["terminal"] = result.stdout.str() + result.stderr.str()
    values = {**SHAPES, **ENV_NAMED, **{f"--agent-kwarg {k}": v for k, v in KWARG_NAMED.items()}}
    leaks = [(shape, artifact) for shape, value in values.items() for artifact, text in texts.items() if value in text]
    assert leaks == []
    assert all(REDACTED in texts[name] for name in ("trial files", "JUnit XML", "terminal"))
    assert "grader crashed holding" in texts["terminal"]

    # The replay folder's path is not a secret: Harbor's kept trial config and our trial files keep it.
    replays = str(skill / "evals" / "replays")
    configs = list(basetemp.rglob("trials/*/config.json"))
    assert configs and all(json.loads(p.read_text())["agent"]["kwargs"]["replay_dir"] == replays for p in configs)
    trajectories = [json.loads(p.read_text())["trajectory"] for p in artifacts["trial files"]]
    sources = {t["extra"]["replay"]["source"] for t in trajectories if t}
    assert sources and all(source.startswith(replays + "/") for source in sources), sources
