"""Judge evidence: bundles within budgets and their `omitted` record, the deterministic fact list, character facts,
the settings read from the environment, redaction, and the three prompts built for a trial."""

from __future__ import annotations

import pytest

from tests.unit.verifier.skill_builders import bash, call, evidence
from verifier.evidence import TrajectoryEvidence
from verifier.judges import bundles
from verifier.judges.characters import character_facts, field_facts
from verifier.judges.config import JudgeConfigError, load_config
from verifier.judges.engine import build_tasks, candidates, is_negative
from verifier.judges.redact import bounded_reason, redact

ENTRY = {
    "question": "Greet Ada",
    "ground_truth": "`greet.py` writes /workspace/output/greeting.txt",
    "expected_behavior": ["runs `greet.py Ada`", "mentions `never-typed-thing`"],
    "expected_skill": "hello",
}


def trial(*calls, final: str = "done") -> TrajectoryEvidence:
    ev = evidence(*calls)
    return ev.model_copy(update={"agent_messages": ["working", final]})


def test_fact_list_marks_snippets_and_paths_observed_or_not():
    ev = trial(bash("python scripts/greet.py Ada > /workspace/output/greeting.txt", "ok"))
    facts = {f.claim: f for f in bundles.verified_facts(ev, bundles.expectation_texts(ENTRY))}
    assert facts["greet.py"].observed and facts["greet.py"].step_id == 2
    assert facts["/workspace/output/greeting.txt"].observed
    assert not facts["never-typed-thing"].observed
    header = bundles.facts_header(list(facts.values()))
    assert header.startswith("VERIFIED FACTS (deterministic):\n")
    assert "- [NOT OBSERVED] never-typed-thing" in header and "[OBSERVED step 2] greet.py ::" in header


def test_snippets_under_four_chars_and_paths_elsewhere_are_not_facts():
    tokens = bundles._fact_tokens(["`ls` then /tmp/out.txt and /workspace/output/a.txt."])
    assert tokens == [("/workspace/output/a.txt", True)]


def test_accuracy_bundle_drops_whole_sections_that_do_not_fit_and_says_so():
    big = "x" * 3000
    ev = trial(bash("echo hi > /workspace/output/a.txt", big), final="the answer")
    bundle = bundles.accuracy_bundle(ev, {"ground_truth": "a"}, budget=1000, obs_limit=1500)
    assert "FINAL RESPONSE:\nthe answer" in bundle.text
    assert "KEY OBSERVATIONS" not in bundle.text
    assert bundle.omitted.count == 1 and bundle.omitted.truncated
    assert "KEY OBSERVATIONS" in bundle.omitted.reason and len(bundle.text) <= 1000


def test_goal_bundle_lists_newest_results_first_clipped():
    ev = trial(bash("a", "first"), bash("b", "second"), bash("c", "y" * 2000))
    bundle = bundles.goal_bundle(ev, {"ground_truth": "x"}, budget=12000, obs_limit=100)
    section = bundle.text.split("RECENT TOOL RESULTS (newest first):\n", 1)[1]
    assert section.index("…[clipped]") < section.index("second") < section.index("first")
    assert bundle.omitted.count == 0 and not bundle.omitted.truncated


def test_behavior_bundle_truncates_in_the_middle_and_flags_it():
    history = [bash(f"step {i}", "z" * 300) for i in range(60)]
    ev = trial(call("Write", "", file_path="/workspace/output/a.txt", content="hello"), *history, final="F" * 2000)
    bundle = bundles.behavior_bundle(ev, ENTRY, budget=4800, final_limit=800)
    assert (
        bundle.text.index("FILE CHANGES")
        < bundle.text.index("FINAL RESPONSE")
        < bundle.text.index("USER REQUEST")
        < bundle.text.index("COMPACT TOOL HISTORY")
    )
    assert bundles.TRUNCATION_MARK in bundle.text and len(bundle.text) <= 4800
    assert bundle.omitted.truncated and "FINAL RESPONSE" in bundle.omitted.reason
    assert "Path: /workspace/output/a.txt" in bundle.text


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("Write", {"file_path": "a", "content": "x"}, True),
        ("mcp__fs__edit_file", {"path": "a"}, True),
        ("Bash", {"command": "echo x > out.txt"}, True),
        ("Bash", {"command": "ls 2>&1"}, False),
        ("Bash", {"command": "cat a | tee b"}, True),
        ("Bash", {"command": "python -c \"open('a', 'w')\""}, True),
        ("Read", {"file_path": "a"}, False),
    ],
)
def test_write_detection(tool, args, expected):
    ev = evidence(call(tool, "", **args))
    assert bundles.is_write(ev.tool_calls[0]) is expected


def test_character_facts_name_code_point_position_and_context():
    lines = field_facts("evidence", "line one\nprint(\u00a0'x')\u200b")
    assert lines[0].startswith("- evidence: U+00A0 NO-BREAK SPACE at line 2, column 7; context: ")
    assert "\\xa0" in lines[0] and "\\n" in lines[0]
    assert "U+200B ZERO WIDTH SPACE" in lines[1]
    assert character_facts({"a": "plain ascii"}) == ""


def test_character_facts_cap_at_twenty_and_count_the_rest():
    lines = field_facts("f", "\u00a0" * 25)
    assert len(lines) == 21 and lines[-1] == "- f: 5 more occurrence(s) not listed"


def test_character_facts_are_appended_only_when_enabled():
    env = {"LLM_JUDGE_MODEL": "openai/judge"}
    ev = trial(bash("echo hi"), final="Done:\u00a0ok")
    plain = {t.metric: t.prompt for t in build_tasks(ev, ENTRY, load_config(env))}
    with_facts = {
        t.metric: t.prompt
        for t in build_tasks(ev, ENTRY, load_config({**env, "SKILL_EVAL_JUDGE_CHARACTER_FACTS": "1"}))
    }
    for metric in ("accuracy", "goal_accuracy", "behavior_check"):
        assert "CHARACTER FACTS" not in plain[metric]
        assert with_facts[metric].startswith(plain[metric]) and "U+00A0" in with_facts[metric]


def test_config_needs_an_explicit_model_and_reads_knobs():
    assert load_config({"OPENAI_API_KEY": "sk-agent-key"}) is None
    config = load_config(
        {
            "SKILL_EVAL_JUDGE_MODEL": "gpt-4.1",
            "OPENAI_API_KEY": "k",
            "SKILL_EVAL_LLM_MAX_RETRIES": "2",
            "SKILL_EVAL_JUDGE_TIME_BUDGET": "5",
            "SKILL_EVAL_JUDGE_BEHAVIOR_BUDGET": "1000",
            "LLM_JUDGE_FALLBACK_MODELS": "a, gpt-4.1,a,b",
        }
    )
    assert config.model_source == "SKILL_EVAL_JUDGE_MODEL" and config.provider == "openai"
    assert config.max_retries == 2 and config.time_budget == 5.0
    assert config.effective_behavior_budget == 800 + 4000
    assert config.fallback_models == ["a", "b"]
    explicit = load_config({"LLM_JUDGE_MODEL": "env-model"}, model="anthropic/claude-x")
    assert explicit.model == "anthropic/claude-x" and explicit.model_source == "--judge-model"
    assert explicit.provider == "anthropic"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SKILL_EVAL_LLM_MAX_RETRIES": "many"}, "SKILL_EVAL_LLM_MAX_RETRIES"),
        ({"SKILL_EVAL_LLM_BASE_URL": "ftp://x"}, "only http and https"),
    ],
)
def test_config_errors_name_the_variable(env, message):
    with pytest.raises(JudgeConfigError, match=message):
        load_config({"LLM_JUDGE_MODEL": "m", **env})


def test_claude_5_5_gets_the_server_side_fallback_first():
    config = load_config({"LLM_JUDGE_MODEL": "anthropic/claude-opus-5-5", "LLM_JUDGE_FALLBACK_MODELS": "x"})
    assert candidates(config) == ["anthropic/claude-opus-5-5", "claude-opus-4-8", "x"]


def test_negative_case_and_skipped_judges():
    assert is_negative({"expected_skill": None}) and is_negative({"expected_skill": "s", "should_trigger": False})
    assert not is_negative({"expected_skill": "s"})
    tasks = {t.metric: t for t in build_tasks(trial(), {"question": "q"}, load_config({"LLM_JUDGE_MODEL": "m"}))}
    assert all(t.skipped is not None and t.skipped["score"] == 1.0 for t in tasks.values())


def test_redaction_of_configured_values_and_key_shapes():
    env = {"OPENAI_API_KEY": "super-secret-value", "GITHUB_PAT": "Zq81mXo2Lk5bN7rT"}
    text = (
        "key super-secret-value sk-abc123def456ghi nvapi-XYZ123abc456def eyJ"
        + "a" * 20
        + "."
        + "b" * 20
        + "."
        + "c" * 20
        + " pat Zq81mXo2Lk5bN7rT"
    )
    assert redact(text, env) == "key [REDACTED] [REDACTED] [REDACTED] [REDACTED] pat [REDACTED]"
    reason = bounded_reason("x" * 600, env)
    assert len(reason) == 512 and reason.endswith("...")


def test_a_crashing_judge_is_unscored_and_the_others_still_score(monkeypatch):
    import asyncio

    from verifier.evidence import MetricResult
    from verifier.judges import engine

    async def fake(task, config, cache, support):
        if task.metric == "goal_accuracy":
            raise RuntimeError("boom sk-abcdefgh12345678")
        return MetricResult(score=0.5, details={})

    monkeypatch.setattr(engine, "run_task", fake)
    results = asyncio.run(engine.run_judges(trial(), ENTRY, load_config({"LLM_JUDGE_MODEL": "m"})))
    assert results["accuracy"].score == results["behavior_check"].score == 0.5
    crashed = results["goal_accuracy"]
    assert crashed.score is None and crashed.details["status"] == "error"
    assert crashed.details["error"] == "judge crashed: RuntimeError: boom [REDACTED]"
