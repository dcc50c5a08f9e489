"""Harbor `BaseVerifier` adapter: grades a trial on the host after the agent phase.

Only user code that must see the sandbox runs inside it: the author's `grader.py`/`grader.sh` (a native task's own
`tests/test.sh` runs through `NativeTestVerifier`, Harbor's verifier), and only after `grading_seal` ended the agent
phase: its processes killed, /logs/verifier and /tests emptied, the grader uploaded fresh. The deterministic
checks read the trajectory on the host, so judge credentials and the grading engine never enter the container.
The full result goes to `<trial>/verifier/skilleval_reward.json`; Harbor gets the flat numeric part.

Everything the grader leaves in `/logs/verifier` is the sandbox's: it is copied and read through `verifier.safe_io`
(a link is a grader error, never followed), reward files are size-checked before they are copied, and names this
adapter writes itself are never taken from the sandbox.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path
from typing import Any

from harbor.models.trial.paths import EnvironmentPaths
from harbor.models.verifier.result import VerifierResult
from harbor.verifier.base import BaseVerifier
from harbor.verifier.verifier import Verifier

from pytest_skilleval.harbor import case_checks
from pytest_skilleval.harbor.grading_seal import end_agent_processes, seal_for_grading
from verifier import safe_io
from verifier.check_host import Snapshot, WorkspaceDiff, assemble, diff_snapshots
from verifier.check_spec import CheckResult, CheckSpec
from verifier.custom import MAX_REWARD_FILE_BYTES, SanitizedReward, read_grader_reward
from verifier.redact import Redactor
from verifier.reward import RICH_REWARD_NAME, WrittenFile, grade_on_host, hand_over

CUSTOM_REWARD_NAME = "custom_reward.json"
GRADER_OUTPUT_NAME = "grader-output.txt"
IMPORT_PATH = "pytest_skilleval.harbor.verifier_adapter:HostVerifier"
NATIVE_IMPORT_PATH = "pytest_skilleval.harbor.verifier_adapter:NativeTestVerifier"
# What only this adapter writes in <trial>/verifier: a grader that leaves files of these names gets them removed.
OWN_NAMES = (RICH_REWARD_NAME, CUSTOM_REWARD_NAME, GRADER_OUTPUT_NAME)
REWARD_NAMES = ("reward.json", "reward.txt")


class GraderCrashed(RuntimeError):
    """The author's grader exited non-zero; the message carries the tail of its output."""


class RewardMissing(RuntimeError):
    """The grader ran but wrote neither reward.json nor reward.txt."""


class RewardRejected(RuntimeError):
    """The grader's reward broke the contract (reserved names, limits, bad JSON); nothing of it is scored."""


class SandboxLinkError(RuntimeError):
    """The sandbox put a symbolic link where the host reads its logs; it is never followed."""


def sandbox_root(environment: Any) -> Path | None:
    """The host folder standing for the sandbox's `/`, for environments that have one (the `local` one)."""
    rootfs = getattr(environment, "rootfs", None)
    return Path(rootfs) if isinstance(rootfs, (str, Path)) else None


def grader_environment(paths: EnvironmentPaths) -> dict[str, str]:
    """The HARBOR_* variables a grader reads (docs/grading.md), at their in-sandbox locations."""
    logs = str(paths.logs_dir)
    agent = str(paths.agent_dir)
    verifier_dir = str(paths.verifier_dir)
    tests = str(paths.tests_dir)
    return {
        "HARBOR_LOGS_DIR": logs,
        "HARBOR_AGENT_LOGS_DIR": agent,
        "HARBOR_ATIF_PATH": f"{agent}/trajectory.json",
        "HARBOR_VERIFIER_DIR": verifier_dir,
        "HARBOR_REWARD_JSON": f"{verifier_dir}/reward.json",
        "HARBOR_REWARD_TXT": f"{verifier_dir}/reward.txt",
        "HARBOR_TESTS_DIR": tests,
        "HARBOR_ENTRY_JSON": f"{tests}/entry.json",
        "HARBOR_GRADER": f"{tests}/grader.py",
        "HARBOR_GRADER_SH": f"{tests}/grader.sh",
    }


_host_redactor: tuple[tuple[tuple[str, str], ...], Redactor] | None = None


def host_redactor() -> Redactor:
    """The redactor of this process's environment, made again only when the environment changed: every trial's
    verifier asks for it, and reading each variable's name against the credential patterns is per-trial work."""
    global _host_redactor
    key = tuple(os.environ.items())
    if _host_redactor is None or _host_redactor[0] != key:
        _host_redactor = (key, Redactor.from_environment(os.environ))
    return _host_redactor[1]


class HostVerifier(BaseVerifier):
    """Runs the author's grader in the sandbox (when the grading mode uses it) and the standard checks here."""

    def __init__(
        self,
        *,
        grading_mode: str = "default",
        grader: str | None = None,
        judge: dict[str, Any] | None = None,
        workspace_before: str | None = None,
        trial_tests: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.grading_mode = grading_mode
        self.grader = grader
        self.judge = judge
        self.workspace_before = Path(workspace_before) if workspace_before else None
        # The trial's own /tests on the host (the task's tests/, which every trial of the case and arm shares and
        # nothing changes, with the trial's own entry.json; the checks' runner is put there); None: the task's.
        self.trial_tests = Path(trial_tests) if trial_tests else None
        self.env_paths = EnvironmentPaths()
        # The grader's output may echo the host environment (sandbox=none): nothing of it is written unredacted.
        self.redactor = host_redactor()
        self._grader_output: str | None = None  # as written to grader-output.txt

    @property
    def _verifier_host_dir(self) -> Path:
        return Path(self.trial_paths.verifier_dir)

    @property
    def _agent_host_dir(self) -> Path:
        return Path(self.trial_paths.agent_dir)

    async def _prepare_sandbox(self) -> None:
        """End the agent phase (its processes, its /logs/verifier), put tests/ fresh at /tests, and the host-side
        trajectory where an in-sandbox grader looks for it."""
        await seal_for_grading(self.environment, self.env_paths, self.trial_tests or Path(self.task.paths.tests_dir))
        trajectory = self._agent_host_dir / "trajectory.json"
        problem = safe_io.link_on_path(self._agent_host_dir, trajectory.name)
        if problem:
            raise SandboxLinkError(problem)
        if not trajectory.is_file():
            return
        target = f"{self.env_paths.agent_dir}/trajectory.json"
        try:
            await self.environment.upload_file(trajectory, target)
        except Exception:  # noqa: BLE001 - every environment creates /logs/agent at start; the agent may have removed it
            await self.environment.exec(f"mkdir -p {shlex.quote(str(self.env_paths.agent_dir))}")
            await self.environment.upload_file(trajectory, target)

    def _refuse_sandbox_links(self, *container_paths: str) -> None:
        """A link where we read the sandbox's logs is a grader error naming it (checked where the host can see)."""
        root = sandbox_root(self.environment)
        if root is None:
            return
        for path in container_paths:
            problem = safe_io.link_on_path(root, path.lstrip("/"), label="/")
            if problem:
                raise SandboxLinkError(problem)

    def _verifier_dir_there(self) -> bool:
        """Whether the host sees /logs/verifier as a folder in the sandbox (reached without a link)."""
        root = sandbox_root(self.environment)
        found = None if root is None else safe_io.lstat(root, str(self.env_paths.verifier_dir).lstrip("/"))
        return found is not None and stat.S_ISDIR(found.st_mode)

    def _check_reward_sizes(self) -> None:
        """Reward files over the limit are rejected before anything is copied to the host."""
        root = sandbox_root(self.environment)
        if root is None:
            return
        for name in REWARD_NAMES:
            rel = f"{str(self.env_paths.verifier_dir).lstrip('/')}/{name}"
            try:
                size = safe_io.file_size(root, rel, label="/")
            except safe_io.UnsafePathError as error:
                raise SandboxLinkError(str(error)) from None
            if size is not None and size > MAX_REWARD_FILE_BYTES:
                raise RewardRejected(
                    f"{self.grader}'s reward was rejected: {self.env_paths.verifier_dir}/{name} is {size} bytes; "
                    f"the limit is {MAX_REWARD_FILE_BYTES} bytes (it was not copied)"
                )

    async def _download_verifier_dir(self, host_dir: Path) -> None:
        """Copy /logs/verifier to the host; files named like ours never survive, whatever else fails."""
        try:
            await self.environment.download_dir(str(self.env_paths.verifier_dir), host_dir)
        except safe_io.UnsafePathError as error:
            raise SandboxLinkError(str(error)) from None
        finally:
            for name in OWN_NAMES:
                safe_io.remove_file(host_dir, name)

    async def _run_grader(self) -> SanitizedReward:
        assert self.grader is not None  # run only when the skill has a custom grader
        grader = f"{self.env_paths.tests_dir}/{self.grader}"
        run = f"python3 {shlex.quote(grader)}" if self.grader.endswith(".py") else f"bash {shlex.quote(grader)}"
        # One exec: the verifier folder made (the agent may have removed it) and the grader run. Where the host sees
        # the sandbox and the folder is there (the usual case: the seal has just emptied it), the grader alone, a
        # command the local environment starts without a shell; else the shell's `test` builtin checks first.
        folder = shlex.quote(str(self.env_paths.verifier_dir))
        command = run if self._verifier_dir_there() else f"{{ [ -d {folder} ] || mkdir -p {folder}; }} && {run}"
        env = {**grader_environment(self.env_paths), **(self.verifier_env or {}), **self.override_env}
        timeout = int(self.task.config.verifier.timeout_sec)
        result = await self.environment.exec(command, cwd="/workspace", env=env, timeout_sec=timeout)
        host_dir = self._verifier_host_dir
        host_dir.mkdir(parents=True, exist_ok=True)
        output = self.redactor.text((result.stdout or "") + (result.stderr or ""))
        self._refuse_sandbox_links(str(self.env_paths.verifier_dir))
        self._check_reward_sizes()
        await self._download_verifier_dir(host_dir)
        safe_io.write_text(host_dir, GRADER_OUTPUT_NAME, output)
        self._grader_output = output
        if result.return_code != 0:
            tail = " | ".join(output.strip().splitlines()[-5:])
            raise GraderCrashed(f"{self.grader} exited with code {result.return_code}: {tail or 'no output'}")
        return self._read_grader_reward(host_dir)

    def _read_grader_reward(self, host_dir: Path) -> SanitizedReward:
        reward_json, reward_txt = host_dir / "reward.json", host_dir / "reward.txt"
        sanitized = read_grader_reward(reward_json, reward_txt, self.grading_mode)
        if not sanitized.errors and not reward_json.exists() and not reward_txt.exists():
            raise RewardMissing(
                f"{self.grader} wrote neither reward.json nor reward.txt in {self.env_paths.verifier_dir}"
            )
        if not sanitized.errors and reward_json.exists():
            data = safe_io.read_bytes(host_dir, "reward.json", max_bytes=MAX_REWARD_FILE_BYTES)
            safe_io.write_bytes(host_dir, CUSTOM_REWARD_NAME, data)
        safe_io.remove_file(host_dir, "reward.json")
        if sanitized.errors:
            raise RewardRejected(f"{self.grader}'s reward was rejected: " + "; ".join(sanitized.errors))
        return sanitized

    async def _run_checks(
        self, checks: list[CheckSpec] | None, before: Snapshot | None
    ) -> tuple[case_checks.SandboxChecks, WorkspaceDiff | None]:
        """The case's sandbox checks (and the after-snapshot) in the sealed sandbox; the diff when both snapshots
        exist. Processes a check command left behind are ended before anything else runs there."""
        if checks:
            found = await case_checks.run_in_sandbox(self.environment, checks, str(self.env_paths.tests_dir))
            if any(check.type == "command" for check in checks):
                await end_agent_processes(self.environment)
        else:
            found = case_checks.SandboxChecks(snapshot=await case_checks.take_snapshot(self.environment))
        after = found.snapshot if found.snapshot is not None and found.snapshot.error is None else None
        diff = diff_snapshots(before, after) if before is not None and after is not None else None
        return found, diff

    def _check_results(
        self, checks: list[CheckSpec], found: case_checks.SandboxChecks, diff: WorkspaceDiff | None
    ) -> list[CheckResult]:
        from verifier.trajectory import load_evidence

        evidence = load_evidence(self._agent_host_dir)
        return assemble(checks, found.verdicts, evidence, diff, found.problem)

    async def verify(self) -> VerifierResult:
        agent_dir = str(self.env_paths.agent_dir)
        self._refuse_sandbox_links(agent_dir, f"{agent_dir}/trajectory.json", str(self.env_paths.verifier_dir))
        tests_dir = self.trial_tests or Path(self.task.paths.tests_dir)
        entry = json.loads((tests_dir / "entry.json").read_text(encoding="utf-8"))
        checks = case_checks.case_checks(entry)
        before = case_checks.read_before(self.workspace_before) if self.workspace_before else None
        run_grader = self.grader is not None and self.grading_mode in ("default_plus_custom", "custom_only")
        custom = None
        found, diff = case_checks.SandboxChecks(), None
        if checks:
            case_checks.stage_runner(tests_dir, checks)
        if run_grader or checks or before is not None:
            await self._prepare_sandbox()
            found, diff = await self._run_checks(checks, before)
        if run_grader:
            custom = await self._run_grader()
        reward = await grade_on_host(self._agent_host_dir, entry, self.grading_mode, self.judge, custom)
        reward.set_checks(self._check_results(checks, found, diff) if checks else None)
        reward.workspace_diff = diff
        host_dir = self._verifier_host_dir
        # `scrub`: the same redacted copy as `value`, and the document itself when nothing in it needs redaction.
        document = self.redactor.scrub(json.loads(json.dumps(reward.document(), default=str)))
        rich_text = json.dumps(document, indent=2) + "\n"  # ASCII (ensure_ascii): its length is its size in bytes
        safe_io.write_text(host_dir, RICH_REWARD_NAME, rich_text)
        flat = reward.flat()
        flat_text = json.dumps(flat, indent=2) + "\n"
        safe_io.write_text(host_dir, "reward.json", flat_text)
        if reward.overall is not None:
            safe_io.write_text(host_dir, "reward.txt", f"{reward.overall}\n")
        else:
            safe_io.remove_file(host_dir, "reward.txt")
        written = {
            RICH_REWARD_NAME: WrittenFile(document, len(rich_text)),
            "reward.json": WrittenFile(flat, len(flat_text)),
        }
        if self._grader_output is not None:
            size = len(self._grader_output.encode("utf-8"))
            written[GRADER_OUTPUT_NAME] = WrittenFile(self._grader_output, size)
        hand_over(host_dir, written)
        return VerifierResult(rewards=flat)


class NativeTestVerifier(Verifier):
    """Harbor's own verifier for a native task's tests/test.sh, run only once the agent phase is over for good: its
    processes ended and /logs/verifier and /tests emptied (Harbor then uploads tests/ and runs test.sh)."""

    async def verify(self) -> VerifierResult:
        await seal_for_grading(self.environment, EnvironmentPaths.for_os(self.environment.os))
        return await super().verify()
