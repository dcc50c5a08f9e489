"""Harbor ``replay`` agent: replays a recorded ATIF trajectory instead of calling a model.

Why: evals must be runnable (and the plugin testable) with no API key, yet the grader should
still see real effects in the sandbox. The agent reads
``<replay_dir>/<case_id>.<with-skill|without-skill>.json``, else ``<replay_dir>/<case_id>.json``
(an ATIF ``Trajectory``). By default it re-executes, in order, what the recorded agent did in the environment and
replaces each call's observation content with the real output:

- a shell tool call (a shell tool, `verifier.tools.is_exec_tool`, whose arguments hold ``command`` or ``cmd``; a list
  is shell-joined) runs in the call's ``workdir``/``cwd`` folder (else ``/workspace``); its output is stdout then
  stderr, plus ``[exit code: N]`` when N is non-zero;
- terminus-2's keystrokes are typed into a tmux session, and OpenHands' ``str_replace_editor`` edits are made to the
  file (`replay_actions`);
- claude-code's ``Write`` and ``Edit`` and codex's ``apply_patch`` (the tool, or run through ``exec_command``) are
  file edits made in the sandbox with that tool's rules (`replay_edits`);
- a step without tool calls whose message carries them (terminus-2 with ``raw_content``, OpenHands without function
  calling; `verifier.message_calls`) has those calls replayed, read the way the grader reads them.

Agent messages are kept. A trajectory whose root ``extra`` holds ``{"replay": {"execute": false}}`` is written as it
is, nothing run.

Placeholder: every literal ``{skills_dir}`` in the trajectory (commands, arguments, messages)
is replaced by the skills dir Harbor gives the agent (``self.skills_dir``: ``/harbor/skills`` on
Harbor 0.24, ``/runtime/skills`` on 0.25, or the task's ``[environment] skills_dir``). In the
without-skill arm Harbor passes none, so Harbor's default location is used, where nothing is
installed; a replay such as ``cat {skills_dir}/hello-skill/SKILL.md`` therefore works on both
Harbor versions and fails honestly in the baseline arm.

Output: ``trajectory.json`` in ``self.logs_dir`` (the host's ``<trial>/agent/``; Harbor uploads it
to ``/logs/agent/`` before verification); token and cost totals go into the ``AgentContext``
from ``final_metrics``, else from the summed step metrics.

The agent's own record is authoritative: a replayed command can write ``/logs/agent/trajectory.json``, and
Harbor's download of ``/logs/agent`` then overwrites the host copy with that forgery. The record is kept in
memory (``self.record``) and ``restore_record()`` writes it back; the runner calls it when verification starts,
so the host grades what the agent did, never a file from the sandbox.

A recorded ``workdir`` is entered inside the sandbox (``cd`` before the command), never handed to the environment
as its cwd: the local environment checks a cwd on the host, so a recorded ``/proc/<host pid>`` would tell host
folders that exist from ones that do not. Both now get the same "cwd does not exist in the sandbox" answer.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Observation, ObservationResult, Step, Trajectory
from harbor.models.trial.paths import EnvironmentPaths

from pytest_skilleval import __version__
from pytest_skilleval.harbor.replay_actions import Editor, Terminal, is_edit, keystrokes_of
from pytest_skilleval.harbor.replay_edits import apply_patch, claude_edit, is_claude_edit, patch_call
from pytest_skilleval.results.trajectory_cap import MAX_TRAJECTORY_READ_BYTES
from pytest_skilleval.skill.bounded_parse import ParseLimitError, read_author_file
from verifier import safe_io
from verifier.atif_repair import repaired
from verifier.message_calls import acts_in_text, agent_shape, text_calls
from verifier.skill_folders import with_skills_dir
from verifier.tools import is_exec_tool

REPLAY_AGENT_IMPORT_PATH = "pytest_skilleval.harbor.replay_agent:ReplayAgent"
DEFAULT_CWD = "/workspace"
_ARM_SPELLING = {
    "with_skill": "with-skill",
    "with-skill": "with-skill",
    "without_skill": "without-skill",
    "without-skill": "without-skill",
    "baseline_skill": "baseline-skill",
    "baseline-skill": "baseline-skill",
}


class ReplayFileNotFoundError(FileNotFoundError):
    """No replay file exists for the case and arm."""


class ReplayFileError(ValueError):
    """The replay file is a link, not a regular file, or over the size cap."""


def replay_candidates(replay_dir: str | Path, case_id: str, arm: str) -> list[Path]:
    """Paths tried for a case, most specific first."""
    spelled = _ARM_SPELLING.get(arm)
    if spelled is None:
        raise ValueError(f"arm must be 'with_skill', 'without_skill' or 'baseline_skill'; got {arm!r}")
    root = Path(replay_dir)
    # The baseline_skill arm has a skill too (an earlier version): without its own replay it replays with-skill's.
    also = [root / f"{case_id}.with-skill.json"] if spelled == "baseline-skill" else []
    return [root / f"{case_id}.{spelled}.json", *also, root / f"{case_id}.json"]


def find_replay(replay_dir: str | Path, case_id: str, arm: str) -> Path:
    """The replay file for a case and arm, or an error naming every path looked for."""
    candidates = replay_candidates(replay_dir, case_id, arm)
    for path in candidates:
        if path.is_file():
            return path
    looked = ", ".join(str(p) for p in candidates)
    raise ReplayFileNotFoundError(f"no replay trajectory for case {case_id!r} ({arm}); looked for: {looked}")


def shell_command(arguments: dict[str, Any], tool: str | None = None) -> str | None:
    """The shell command of a tool call, or None when it is not a shell call: `tool`, when given, must be a shell
    tool (`verifier.tools.is_exec_tool`: `Bash`, `exec_command`, `execute_bash`, ...), so a `command` argument of
    another tool (a Skill, a task tracker) is never run; input typed to a running process (`is_input`) is not either."""
    if tool is not None and not is_exec_tool(tool):
        return None
    if arguments.get("is_input") in (True, "true"):
        return None
    raw = arguments.get("command", arguments.get("cmd"))
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list) and raw and all(isinstance(part, str) for part in raw):
        return shlex.join(raw)
    return None


def in_workdir(command: str, workdir: str) -> str:
    """`command` run from `workdir` as the sandbox sees it; a folder it lacks is one error, whatever the host has."""
    missing = shlex.quote(f"cwd does not exist in the sandbox: {workdir}")
    return f"cd -- {shlex.quote(workdir)} 2>/dev/null || {{ echo {missing} >&2; exit 1; }}\n{command}"


def format_output(stdout: str | None, stderr: str | None, return_code: int) -> str:
    """What a terminal tool would show the model."""
    text = (stdout or "") + (stderr or "")
    if return_code != 0:
        text = f"{text.rstrip(chr(10))}\n[exit code: {return_code}]".lstrip("\n")
    return text


def fill_context(trajectory: Trajectory, context: AgentContext) -> None:
    """Tokens/cost from final_metrics, else summed step metrics; unknown stays None."""
    final = trajectory.final_metrics
    if final is not None and any(
        v is not None for v in (final.total_prompt_tokens, final.total_completion_tokens, final.total_cost_usd)
    ):
        context.n_input_tokens = final.total_prompt_tokens
        context.n_output_tokens = final.total_completion_tokens
        context.n_cache_tokens = final.total_cached_tokens
        context.cost_usd = final.total_cost_usd
        return
    metrics = [step.metrics for step in trajectory.steps if step.metrics is not None]
    if not metrics:
        return

    def total(name: str) -> Any:
        values = [getattr(m, name) for m in metrics if getattr(m, name) is not None]
        return sum(values) if values else None

    context.n_input_tokens = total("prompt_tokens")
    context.n_output_tokens = total("completion_tokens")
    context.n_cache_tokens = total("cached_tokens")
    context.cost_usd = total("cost_usd")


def _record(step: Step, call_ids: list[str | None], content: str, exit_code: int | None) -> None:
    """Put a replayed output in the observation results of `call_ids`, else in the step's results without a call id
    (the shared output terminus-2 and OpenHands without function calling write); add one when there is neither."""
    if step.observation is None:
        step.observation = Observation(results=[])
    ids = {call_id for call_id in call_ids if call_id is not None}
    matches = [r for r in step.observation.results if r.source_call_id in ids]
    if not matches:
        matches = [r for r in step.observation.results if r.source_call_id is None]
    if not matches:
        single = call_ids[0] if len(call_ids) == 1 else None
        matches = [ObservationResult(source_call_id=single)]
        step.observation.results.append(matches[0])
    extra: dict[str, Any] = {"replayed": True}
    if exit_code is not None:
        extra["exit_code"] = exit_code
    for obs in matches:
        obs.content = content
        obs.extra = {**(obs.extra or {}), **extra}


class ReplayAgent(BaseAgent):
    """Deterministic agent that replays (and by default re-executes) an ATIF trajectory."""

    capabilities = AgentCapabilities(skills=True, atif=True)

    def __init__(
        self,
        logs_dir: Path,
        model_name: str | None = None,
        *args: Any,
        replay_dir: str | None = None,
        case_id: str | None = None,
        arm: str = "with_skill",
        **kwargs: Any,
    ) -> None:
        super().__init__(logs_dir, model_name, *args, **kwargs)
        if not replay_dir or not case_id:
            raise ValueError("the replay agent needs the kwargs replay_dir and case_id")
        self.replay_dir = Path(replay_dir)
        self.case_id = str(case_id)
        self.arm = str(arm)
        self.candidates = replay_candidates(self.replay_dir, self.case_id, self.arm)
        self.replay_path: Path | None = None
        self.executed_calls = 0
        self.record: Trajectory | None = None

    @staticmethod
    def name() -> str:
        return "replay"

    def version(self) -> str:
        return __version__

    @property
    def effective_skills_dir(self) -> str:
        """Where skills live in this sandbox (Harbor's default when none were injected)."""
        return self.skills_dir or EnvironmentPaths().default_skills_dir.as_posix()

    def read_replay(self) -> Trajectory:
        """Read the replay file, with ``{skills_dir}`` substituted."""
        if self.replay_path is None:
            self.replay_path = find_replay(self.replay_dir, self.case_id, self.arm)
        try:  # the skill's file: never through a link, never past the cap (a 3 GiB replay was read whole)
            text = read_author_file(self.replay_path, MAX_TRAJECTORY_READ_BYTES).decode("utf-8")
        except ParseLimitError as error:
            raise ReplayFileError(f"replay {self.replay_path} {error.message}") from None
        data = json.loads(with_skills_dir(text, self.effective_skills_dir))
        if isinstance(data, dict):
            data, _ = repaired(data)  # what real agents write that the strict model refuses (verifier.atif_repair)
        return Trajectory.model_validate(data)

    async def setup(self, environment: BaseEnvironment) -> None:
        # Fail before the agent phase when the replay is missing or not valid ATIF.
        self.read_replay()

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        trajectory = self.read_replay()
        replay_cfg = (trajectory.extra or {}).get("replay") or {}
        execute = replay_cfg.get("execute", True) is not False
        fill_context(trajectory, context)
        self.executed_calls = 0
        try:
            if execute:
                await self._execute(trajectory, environment)
        finally:
            # Also on timeout/cancellation: a partial trajectory is still evidence.
            executed = self.executed_calls
            extra = dict(trajectory.extra or {})
            extra["replay"] = {**replay_cfg, "source": str(self.replay_path), "executed_calls": executed}
            trajectory.extra = extra
            self._write(trajectory)
            context.metadata = {
                **(context.metadata or {}),
                "replay_source": str(self.replay_path),
                "replay_executed_calls": executed,
            }

    async def _execute(self, trajectory: Trajectory, environment: BaseEnvironment) -> None:
        """Run each step's calls in order (its tool calls, else the calls its message carries); put the real output
        in their observations."""
        document = trajectory.to_json_dict()
        agent, parser = agent_shape(document)
        in_text = acts_in_text(agent, document["steps"])
        terminal, editor = Terminal(environment), Editor(environment)
        for position, step in enumerate(trajectory.steps):
            calls: list[tuple[str | None, str, dict[str, Any]]] = [
                (c.tool_call_id, c.function_name, c.arguments) for c in step.tool_calls or []
            ]
            if in_text:
                carried = text_calls(agent, parser, step.model_dump(mode="json"), f"text_{position}")
                calls = [(None, c["function_name"], c.get("arguments") or {}) for c in (carried or ("", []))[1]]
            typed: list[str | None] = []
            for call_id, tool, arguments in calls:
                keys = keystrokes_of(arguments)
                if keys is not None:
                    await terminal.type(*keys)
                    typed.append(call_id)
                elif is_edit(tool, arguments):
                    content, code = await editor.apply(arguments)
                    _record(step, [call_id], content, code)
                elif is_claude_edit(tool, arguments):
                    content, code = await claude_edit(editor, tool, arguments)
                    _record(step, [call_id], content, code)
                elif (patch := patch_call(tool, arguments, DEFAULT_CWD)) is not None:
                    content, code = await apply_patch(editor, patch)
                    _record(step, [call_id], content, code)
                elif (command := shell_command(arguments, tool)) is not None:
                    workdir = arguments.get("workdir") or arguments.get("cwd")
                    if workdir:
                        command = in_workdir(command, str(workdir))
                    result = await environment.exec(command, cwd=DEFAULT_CWD)
                    _record(
                        step,
                        [call_id],
                        format_output(result.stdout, result.stderr, result.return_code),
                        result.return_code,
                    )
                else:
                    continue
                self.executed_calls += 1
            if typed:
                # terminus-2 reads the terminal once per reply: one output for the step's commands together.
                _record(step, typed, await terminal.output(), None)

    def _write(self, trajectory: Trajectory) -> None:
        self.record = trajectory
        self.restore_record()

    def restore_record(self) -> None:
        """Write the agent's own trajectory over whatever the sandbox left at ``<logs_dir>/trajectory.json``.

        The old file is replaced (renamed over), never written through; a link there raises UnsafePathError.
        """
        if self.record is None:
            return
        text = json.dumps(self.record.to_json_dict(), indent=2, ensure_ascii=False) + "\n"
        safe_io.write_text(self.logs_dir, "trajectory.json", text)
