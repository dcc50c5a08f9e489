"""skill_execution: the should_trigger table, activation, sub-scores, composite examples and negative controls
(facts sections 3.1-3.8), with tool calls shaped like Claude Code, Codex and OpenCode write them."""

from __future__ import annotations

import pytest

from tests.unit.verifier.skill_builders import (
    NO_EVIDENCE,
    SKILLS,
    SMOKE,
    bash,
    call,
    codex_shell,
    evidence,
    exec_command,
    oc_bash,
    oc_read,
    read,
    skill_tool,
)
from verifier.checks._execution_parts import check_activation, check_error_recovery, check_workflow_order
from verifier.checks.skill_entry import acceptable_skills
from verifier.checks.skill_execution import check_skill_execution, should_trigger
from verifier.evidence import NO_TRAJECTORY, TrajectoryEvidence

# ---- 3.1 should_trigger and acceptable skills -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"expected_skill": "target", "should_trigger": False}, False),
        ({"expected_skill": None, "should_trigger": True}, True),
        ({"expected_skill": "target"}, True),
        ({"expected_skill": None}, False),
        ({}, None),
        ({"expected_skill": ""}, False),
        # Decision: a should_trigger key holding null means "not said", not False.
        ({"expected_skill": "target", "should_trigger": None}, True),
        ({"expected_skill": "target", "should_trigger": "false"}, False),
    ],
)
def test_should_trigger_tri_state(entry, expected):
    assert should_trigger(entry) is expected


def test_acceptable_skills_expected_first_then_deduplicated_alternates():
    entry = {
        "expected_skill": "api-caller",
        "acceptable_alternates": ["http-client", "api-caller", {"name": "rest-helper"}],
    }
    assert acceptable_skills(entry) == ["api-caller", "http-client", "rest-helper"]


def test_acceptable_skills_from_string_and_dict_keys():
    assert acceptable_skills({"expected_skill": "a", "acceptable_skills": "b, c\nB"}) == ["a", "b", "c"]
    assert acceptable_skills(
        {"expected_skill": "a", "acceptable_skills": [{"skill": "x"}, {"expected_skill": "y"}]}
    ) == ["a", "x", "y"]


# ---- 3.3 activation ---------------------------------------------------------------------------------------------


def activation(*calls, accepted=("api-caller",)):
    return check_activation(evidence(*calls).tool_calls, list(accepted))


def test_activation_skipped_without_expected_skill():
    assert activation(bash("ls"), accepted=())["score"] == 1.0


def test_activation_skill_tool():
    result = activation(skill_tool("api-caller"))
    assert result["score"] == 1.0 and result["via"] == "Skill tool" and result["call_index"] == 0


def test_activation_skill_tool_fuzzy_and_alternate():
    assert activation(skill_tool("my-api-caller-v2"))["score"] == 1.0
    result = activation(skill_tool("http-client"), accepted=("api-caller", "http-client"))
    assert result["score"] == 0.75 and result["match_type"] == "acceptable_alternate"


def test_activation_native_read_claude_code():
    result = activation(read(f"{SKILLS}/api-caller/SKILL.md"))
    assert result["score"] == 1.0
    assert result["path"] == f"{SKILLS}/api-caller/SKILL.md"
    assert result["match_type"] == "expected" and result["matched_skill"] == "api-caller"


@pytest.mark.parametrize(
    "root", ["/harbor/skills", "/runtime/skills", "/root/.claude/skills", "~/.agents/skills", "$HOME/.agents/skills"]
)
def test_activation_native_read_under_any_skills_root(root):
    assert activation(read(f"{root}/api-caller/SKILL.md"))["score"] == 1.0


@pytest.mark.parametrize(
    "path",
    [
        "/installed-agent/codex-home/skills/.system/api-caller/SKILL.md",  # codex's bundled skills
        "/workspace/copies/api-caller/SKILL.md",
        "/runtime/skills/other/api-caller/SKILL.md",  # not a skill folder of the skills folder
    ],
)
def test_activation_needs_the_skill_in_a_skills_folder_of_the_trial(path):
    result = activation(read(path))
    assert result["score"] == 0.0 and result["skill_md_reads"][0]["path"] == path


def test_skills_dirs_of_the_case_replace_the_defaults():
    calls = evidence(read("/opt/skills/api-caller/SKILL.md")).tool_calls
    assert check_activation(calls, ["api-caller"])["score"] == 0.0
    assert check_activation(calls, ["api-caller"], skills_dirs=("/opt/skills",))["score"] == 1.0


def test_activation_read_file_and_opencode_read():
    assert activation(call("read_file", path=f"{SKILLS}/api-caller/SKILL.md"))["score"] == 1.0
    assert activation(oc_read("/runtime/skills/api-caller/SKILL.md"))["score"] == 1.0


def test_activation_native_read_is_case_sensitive_on_skill_md():
    assert activation(read(f"{SKILLS}/api-caller/skill.md"))["score"] == 0.0


def test_activation_native_read_of_other_skill_fails():
    result = activation(read(f"{SKILLS}/other-skill/SKILL.md"))
    assert result["score"] == 0.0
    assert result["skill_md_reads"][0]["path"] == f"{SKILLS}/other-skill/SKILL.md"


def test_activation_alternate_read_scores_075():
    result = activation(read(f"{SKILLS}/http-client/SKILL.md"), accepted=("api-caller", "http-client"))
    assert result["score"] == 0.75 and result["match_type"] == "acceptable_alternate"


def test_activation_name_from_path_is_exact():
    # "api-caller-v2" is not "api-caller": the folder name is compared exactly.
    assert activation(read(f"{SKILLS}/api-caller-v2/SKILL.md"))["score"] == 0.0


def test_activation_skill_tool_for_different_skill():
    result = activation(skill_tool("calculator"))
    assert result["score"] == 0.0 and "different skill" in result["message"]


def test_activation_shell_read_capped_at_075():
    result = check_activation(evidence(bash(f"cat {SMOKE}", "name: sandbox-smoke")).tool_calls, ["sandbox-smoke"])
    assert result["score"] == 0.75 and result["via"] == "shell read command"


@pytest.mark.parametrize(
    "command",
    [
        f"sed -n '1,220p' {SMOKE}",
        f"head -n 220 {SMOKE}",
        f"p='{SMOKE}' && sed -n '1,220p' \"$p\"",
        f"cat /workspace/README.md && sed -n '1,220p' {SMOKE}",
        f"bash -lc 'cat {SMOKE}'",
    ],
)
def test_activation_shell_reads(command):
    result = check_activation(evidence(bash(command, "name: sandbox-smoke")).tool_calls, ["sandbox-smoke"])
    assert result["score"] == 0.75


@pytest.mark.parametrize(
    "command",
    [
        "grep 'SKILL' /workspace/config.json",
        "sed -n '/SKILL/p' /workspace/config.json",
        "awk '/SKILL/ {print}' /workspace/config.json",
        "sed -n '/SKILL.md/p' /workspace/config.json",
        "awk '/SKILL.md/ {print}' /workspace/config.json",
        "head -n 5 /workspace/notes-about-SKILL.md.txt",
        "sed -n '1p' /workspace/a.txt > /workspace/skills/sandbox-smoke/SKILL.md",
        "cat > /workspace/skills/sandbox-smoke/SKILL.md",
        f"echo sed {SMOKE}",
        f"grep -n 'name:' {SMOKE}",
        "find /tmp/agent-home -name SKILL.md",
        # malformed quoting: no read, no crash
        "sed -n '/SKILL.md/p /workspace/config.json",
        f"cat '{SMOKE}",
    ],
)
def test_activation_non_reads_fail_even_when_output_names_the_skill(command):
    calls = evidence(bash(command, "sandbox-smoke SKILL.md name: sandbox-smoke")).tool_calls
    assert check_activation(calls, ["sandbox-smoke"])["score"] == 0.0


def test_activation_shell_read_is_placed_from_its_workdir():
    shaped = call("exec_command", "---\nname: sandbox-smoke\n---", cmd="cat ./SKILL.md")
    assert check_activation(evidence(shaped).tool_calls, ["sandbox-smoke"])["score"] == 0.0
    placed = call(
        "exec_command",
        "---\nname: sandbox-smoke\n---",
        cmd="cat ./SKILL.md",
        workdir="/root/.agents/skills/sandbox-smoke",
    )
    assert check_activation(evidence(placed).tool_calls, ["sandbox-smoke"])["score"] == 0.75


def test_a_skill_name_in_an_output_is_not_activation():
    # The skill is identified by the path of the SKILL.md that was read, never by a name seen in an output.
    calls = evidence(call("ReadMany", "==> /skills/api-caller/SKILL.md <==", paths=["/skills/x/SKILL.md"])).tool_calls
    assert check_activation(calls, ["api-caller"])["score"] == 0.0


def test_activation_codex_and_opencode_shell_reads():
    for shaped in (
        exec_command("sed -n '1,200p' /runtime/skills/calc/SKILL.md"),
        codex_shell(["bash", "-lc", "cat /harbor/skills/calc/SKILL.md"]),
        oc_bash("cat ~/.config/opencode/skills/calc/SKILL.md"),
    ):
        assert check_activation(evidence(shaped).tool_calls, ["calc"])["score"] == 0.75


# ---- 3.6-3.7 workflow order and error recovery -----------------------------------------------------------------


def test_workflow_order_cases():
    def order(*calls, expected="calc"):
        return check_workflow_order(evidence(*calls).tool_calls, expected)

    assert order()["score"] == 0.0
    assert order(read(f"{SKILLS}/calc/SKILL.md"), bash("python calc.py"))["score"] == 1.0
    assert order(bash(f"cat {SMOKE}"))["message"] == "Skill activated (no execution needed)"
    assert order(bash("python calc.py"))["score"] == 0.0
    assert order(bash("python calc.py"), expected="")["score"] == 1.0
    assert order(bash("python calc.py"), read(f"{SKILLS}/calc/SKILL.md"), bash("python calc.py"))["score"] == 1.0
    # --help and `which ` probes are not executions; a skill tool counts as reading first.
    assert order(bash("calc --help"))["score"] == 0.0
    assert order(bash("python calc.py"), skill_tool("calc"))["score"] == 1.0
    assert order(bash("grep 'SKILL' /workspace/config.json"), bash("python run.py"))["score"] == 0.0


def test_error_recovery_agent_fault():
    calls = evidence(bash("python calc.py 1 +", "Traceback (most recent call last)"), bash("python calc.py 1 + 2", "3"))
    result = check_error_recovery(calls.tool_calls)
    assert result["score"] == 0.9 and result["agent_faults"] == 1
    assert result["corrections"][0]["fault"] == "agent" and result["corrections"][0]["steps_to_fix"] == 1


def test_error_recovery_skill_fault():
    calls = evidence(
        bash("python /skills/calc/calc.py", "python: can't open file: No such file or directory"),
        bash("python /skills/calc/scripts/calc.py", "3"),
    )
    result = check_error_recovery(calls.tool_calls)
    assert result["score"] == 0.75 and result["skill_faults"] == 1


def test_error_recovery_unfixed_failures_and_window():
    assert check_error_recovery(evidence(bash("python x.py", "Traceback")).tool_calls)["score"] == 1.0
    far = [bash("python x.py", "Traceback")] + [bash(f"ls {i}") for i in range(5)] + [bash("python x.py", "ok")]
    assert check_error_recovery(evidence(*far).tool_calls)["corrections"] == []
    assert check_error_recovery([])["score"] == 1.0


def test_error_recovery_sees_rebuilt_log_status():
    calls = evidence(exec_command("pytest", "status=failed exit_code=4\n"), exec_command("pytest -x", "ok"))
    assert check_error_recovery(calls.tool_calls)["agent_faults"] == 1


def test_error_recovery_agent_faults_floor_at_half():
    calls = []
    for i in range(7):
        calls += [bash(f"python a{i}.py", "Traceback"), bash(f"python a{i}.py", "ok")]
    assert check_error_recovery(evidence(*calls).tool_calls)["score"] == 0.5


# ---- 3.2 composite examples (facts 4.3 table: expected skill calc, script calc.py) ----------------------------

CALC = {"id": "c1", "expected_skill": "calc", "expected_script": "calc.py", "evaluated_skill": "calc"}
CALC_MD = f"{SKILLS}/calc/SKILL.md"


@pytest.mark.parametrize(
    ("calls", "entry", "score", "sub"),
    [
        ([read(CALC_MD), bash(f"python {SKILLS}/calc/scripts/calc.py 2+2", "4")], CALC, 1.0, {}),
        ([bash(f"cat {CALC_MD}"), bash("python calc.py 2+2", "4")], CALC, 0.9375, {"activation": 0.75}),
        # Facts give the plain mean (0.5 and 0.75) for the next two; seed 003 wins: no activation, score 0.0.
        ([bash("python calc.py 2+2", "4")], CALC, 0.0, {"activation": 0.0, "workflow_order": 0.0}),
        (
            [read(f"{SKILLS}/calculator/SKILL.md"), bash("python calc.py 2+2", "4")],
            {**CALC, "acceptable_skills": ["calculator"]},
            0.9375,
            {"activation": 0.75},
        ),
        ([read(f"{SKILLS}/other/SKILL.md"), bash("python calc.py 2+2", "4")], CALC, 0.0, {"activation": 0.0}),
        (
            [read(CALC_MD, "Run scripts/calc.py with an expression"), bash("python3 -c 'print(4)'", "4")],
            CALC,
            0.9375,
            {"script_execution": 0.75},
        ),
        (
            [read(CALC_MD), bash("python calc.py 2+", "Traceback (most recent call last)"), bash("python calc.py 2+2")],
            CALC,
            0.975,
            {"error_recovery": 0.9},
        ),
        (
            [read(CALC_MD), bash("python calc.py 2+2", "bash: no such file or directory"), bash("python calc.py 2+2")],
            CALC,
            0.9375,
            {"error_recovery": 0.75},
        ),
    ],
    ids=[
        "read-then-run",
        "shell-read",
        "script-only",
        "alternate",
        "wrong-skill",
        "script-in-output",
        "agent-fault",
        "skill-fault",
    ],
)
def test_composite_examples(calls, entry, score, sub):
    result = check_skill_execution(evidence(*calls), entry)
    assert result.score == score
    for name, value in sub.items():
        assert result.details[name]["score"] == value
    assert result.details["negative_control"] is False
    assert result.details["activation"]["score"] is not None


def test_failed_activation_gate_keeps_the_sub_score_mean():
    result = check_skill_execution(evidence(read(f"{SKILLS}/other/SKILL.md"), bash("python calc.py 2+2", "4")), CALC)
    assert result.score == 0.0 and result.details["activation_gate"] is True
    assert result.details["sub_score_mean"] == 0.75


def test_script_execution_without_exec_calls():
    result = check_skill_execution(evidence(read(CALC_MD)), CALC)
    assert result.details["script_execution"]["score"] == 0.0
    assert result.details["script_execution"]["message"] == "No execute/run_code call found"


def test_positive_without_tool_calls_is_zero_with_confirmed_activation():
    result = check_skill_execution(evidence(), CALC)
    assert result.score == 0.0 and result.details["activation"]["score"] == 0.0


def test_positive_without_expected_skill_is_skipped():
    result = check_skill_execution(evidence(bash("ls")), {"expected_skill": None, "should_trigger": True})
    assert result.score == 1.0 and result.details["skipped"] and result.details["activation"]["score"] is None


def test_unlabeled_case_is_skipped():
    result = check_skill_execution(evidence(bash("ls")), {"id": "legacy"})
    assert result.score == 1.0 and result.details["message"] == "No expected_skill -- skipped"
    assert result.details["activation"]["score"] is None


def test_no_trajectory_scores_zero_with_unknown_activation():
    result = check_skill_execution(NO_EVIDENCE, CALC)
    assert result.score == 0.0 and result.details["error"] == NO_TRAJECTORY
    assert result.details["activation"]["score"] is None


def test_positive_case_reports_skill_invoked():
    assert check_skill_execution(evidence(read(CALC_MD)), CALC).details["skill_invoked"] is True
    assert check_skill_execution(evidence(bash("ls")), CALC).details["skill_invoked"] is False


def test_positive_ignores_evaluated_skill():
    entry = {**CALC, "evaluated_skill": "something-else"}
    assert check_skill_execution(evidence(read(CALC_MD), bash("python calc.py")), entry).score == 1.0


# ---- 3.8 negative controls --------------------------------------------------------------------------------------

NEG = {"id": "n1", "expected_skill": "demo", "should_trigger": False, "evaluated_skill": "demo"}
S = "/workspace/skills/demo/SKILL.md"
R = "/workspace/skills/demo/scripts/run.py"


def negative(*calls, entry=NEG):
    return check_skill_execution(evidence(*calls), entry)


@pytest.mark.parametrize(
    ("shaped", "passed"),
    [
        (skill_tool("demo"), False),
        (skill_tool("DEMO"), False),
        (skill_tool("demo-helper"), True),
        (read(S), False),
        (read("/workspace/skills/demo-helper/SKILL.md"), True),
        (read("/workspace/skills/demo/subdir/SKILL.md"), True),
        (read("/workspace/skills/demo/SKILL.md/notes"), True),
        (read("/workspace/skills/other/../demo/./SKILL.md"), False),
        (call("open_file", file_path=S), False),
        (call("mcp__filesystem__open_file", path=S), False),
        (call("Grep", path=S), False),
        (call("Read", filename=S), False),
        (call("Read"), None),
        (read("/workspace/skills/other/SKILL.md"), True),
        (oc_read(S), False),
    ],
)
def test_negative_control_tool_vectors(shaped, passed):
    result = negative(shaped)
    assert result.details["negative_check"]["passed"] is passed
    assert result.score == (1.0 if passed else 0.0)
    assert result.details["negative_control"] is True
    assert result.details["activation"]["score"] is None


TRIGGERED = [
    f"cat {S}",
    "cat /workspace/skills/demo/./SKILL.md",
    "cat /workspace/skills/demo//SKILL.md",
    "cat /workspace/skills/'demo'/SKILL.md",
    r"cat 'C:\skills\demo\SKILL.md'",
    f"python {R}",
    f"printf ignored\ncat {S}",
    f"echo ignored\npython {R}",
    f"/usr/bin/env python {R}",
    f"bash -c 'python {R}'",
    f"dash -c 'cat {S}'",
    f"sh -c 'cat {S}'",
    f"zsh -c 'command cat {S}'",
    f"command cat {S}",
    f"command env MODE=test cat {S}",
    f"env MODE=test cat {S}",
    f"env -i python {R}",
    "source /workspace/skills/demo/scripts/run.sh",
    ". /workspace/skills/demo/scripts/run.sh",
    "exec /workspace/skills/demo/scripts/run.sh",
    f"exec python {R}",
    f"CONTENT=$(cat {S})",
    f"timeout 10 cat {S}",
    f"nice python {R}",
    f"echo prep & cat {S}",
    f'echo "$(cat {S})"',
    f"echo $(cat {S})",
    f'printf %s "$(cat {S})"',
    f"echo <(cat {S})",
    f"echo `cat {S}`",
    "P=/workspace/skills/demo; cat $P/SKILL.md",
    'P=/workspace/skills/demo; cat "${P}/SKILL.md"',
    "cd /workspace/skills/demo && cat SKILL.md",
    f"sh -c -- 'cat {S}'",
    f"bash -c -- 'python {R}'",
]
NOT_TRIGGERED = [
    f"echo {S}",
    f"printf {R}",
    "cat /workspace/skills/demo-helper/SKILL.md",
    "printf demo",
    f"bash -c 'echo {S}'",
    f"dash -c 'echo {S}'",
    f"bash -c 'echo {R}'",
    f"env -- echo {S}",
    f"env echo {S}",
    f"echo 'note\ncat {S}'",
    f"echo {S}\nprintf {R}",
    f"CONTENT=$(printf {S})",
    f"timeout 10 echo {S}",
    f"nice echo {S}",
    f"echo '$(cat {S})'",
    f"echo '`cat {S}`'",
    "P=/workspace/skills/demo; echo $P/SKILL.md",
    "cd /workspace/skills/demo && echo SKILL.md",
]
UNDETERMINABLE = [
    " ".join(["pad"] * 256) + " && cat /skills/demo/SKILL.md",
    "echo " + "a" * 32_768 + f"; cat {S}",
    "bash -c \"bash -c 'bash -c \\\"cat " + S + "\\\"'\"",
    f"mystery-wrapper cat {S}",
    "cat /workspace/skills/dem?/SKILL.md",
    "find /workspace/skills/demo -name SKILL.md -exec cat {} ';'",
    f"python -c \"print(open('{S}').read())\"",
]


@pytest.mark.parametrize("command", TRIGGERED)
def test_negative_control_triggered_commands(command):
    result = negative(bash(command))
    assert result.details["negative_check"]["passed"] is False and result.score == 0.0
    assert result.details["negative_check"]["evidence"][0]["call_index"] == 0


@pytest.mark.parametrize("command", NOT_TRIGGERED)
def test_negative_control_inert_commands(command):
    result = negative(bash(command))
    assert result.details["negative_check"]["passed"] is True and result.score == 1.0


@pytest.mark.parametrize("command", UNDETERMINABLE)
def test_negative_control_undeterminable_commands_score_zero(command):
    result = negative(bash(command))
    assert result.details["negative_check"]["passed"] is None and result.score == 0.0
    assert result.details["skill_invoked"] is None


def test_negative_control_codex_and_opencode_shapes():
    assert negative(codex_shell(["bash", "-lc", f"cat {S}"])).score == 0.0
    assert negative(exec_command(f"sed -n '1,80p' {S}")).score == 0.0
    assert negative(oc_bash(f"python3 {R}")).score == 0.0
    assert negative(exec_command("ls /workspace", "a b")).score == 1.0


def test_negative_control_cwd_carries_across_calls_and_workdir():
    assert negative(bash("cd /workspace/skills/demo"), bash("cat SKILL.md")).score == 0.0
    assert negative(call("exec_command", cmd="cat SKILL.md", workdir="/workspace/skills/demo")).score == 0.0


def test_negative_scoring_uses_trusted_identity():
    spoof = {"expected_skill": "authored-spoof", "should_trigger": False, "evaluated_skill": "trusted-target"}
    assert negative(read("/workspace/skills/trusted-target/SKILL.md"), entry=spoof).score == 0.0
    assert negative(read("/workspace/skills/other/SKILL.md"), entry=spoof).score == 1.0
    assert negative(entry=spoof).score == 1.0


def test_negative_with_null_expected_skill_reading_trusted_target():
    entry = {"expected_skill": None, "evaluated_skill": "demo"}
    assert negative(read(S), entry=entry).score == 0.0


def test_negative_without_trusted_identity_is_unscored():
    result = negative(read(S), entry={"expected_skill": "demo", "should_trigger": False})
    assert result.score is None and "evaluated_skill" in result.details["message"]


def test_legacy_direct_negative_without_calls_passes():
    assert negative(entry={"expected_skill": "demo", "should_trigger": False, "evaluated_skill": "demo"}).score == 1.0


def test_negative_without_trajectory_scores_zero():
    result = check_skill_execution(NO_EVIDENCE, NEG)
    assert result.score == 0.0 and result.details["negative_control"] is True


def test_evidence_type_is_the_shared_model():
    assert isinstance(evidence(), TrajectoryEvidence)


def test_older_claude_code_skill_tool_argument():
    assert activation(call("Skill", command="api-caller"))["score"] == 1.0


def test_a_failure_line_counts_for_the_file_it_names():
    # terminus-2 answers an episode with one screen for all its commands: the other skill's failed read does not
    # undo this skill's successful one.
    screen = (
        "$ cat /runtime/skills/api-caller/SKILL.md\n---\nname: api-caller\n---\n"
        "$ cat /runtime/skills/other/SKILL.md\ncat: /runtime/skills/other/SKILL.md: No such file or directory\n"
    )
    ok = call("bash_command", screen, keystrokes="cat /runtime/skills/api-caller/SKILL.md\n")
    assert activation(ok)["score"] == 0.75
    failed = call("bash_command", screen, keystrokes="cat /runtime/skills/other/SKILL.md\n")
    assert activation(failed, accepted=("other",))["score"] == 0.0
