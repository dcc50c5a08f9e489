"""Harbor `BaseVerifier` adapter: grades a trial on the host after the agent phase.

Only user code that must see the sandbox runs inside it: the author's `grader.py`/`grader.sh`. The deterministic
checks read the trajectory on the host, so judge credentials and the grading engine never enter the container.
The full result goes to `<trial>/verifier/skilleval_reward.json`; Harbor gets the flat numeric part.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from harbor.models.trial.paths import EnvironmentPaths
from harbor.models.verifier.result import VerifierResult
from harbor.verifier.base import BaseVerifier

from verifier.custom import SanitizedReward, flat_numeric_reward, read_grader_reward
from verifier.evidence import STANDARD_METRICS
from verifier.scoring import overall_basis, trial_overall

RICH_REWARD_NAME = "skilleval_reward.json"
CUSTOM_REWARD_NAME = "custom_reward.json"
GRADER_OUTPUT_NAME = "grader-output.txt"
IMPORT_PATH = "pytest_skilleval.harbor.verifier_adapter:HostVerifier"


class GraderCrashed(RuntimeError):
    """The author's grader exited non-zero; the message carries the tail of its output."""


class RewardMissing(RuntimeError):
    """The grader ran but wrote neither reward.json nor reward.txt."""


class RewardRejected(RuntimeError):
    """The grader's reward broke the contract (reserved names, limits, bad JSON); nothing of it is scored."""


def grader_environment(paths: EnvironmentPaths) -> dict[str, str]:
    """The HARBOR_* variables a grader reads, at their in-sandbox locations (SPEC section 1)."""
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


def flat_rewards(rich: dict[str, Any]) -> dict[str, float]:
    """Harbor accepts only a flat object of finite numbers: scored metrics, custom metrics and overall."""
    return flat_numeric_reward({**rich.get("custom_metrics", {}), **rich.get("metrics", {}),
                                "overall": rich.get("overall")})


class HostVerifier(BaseVerifier):
    """Runs the author's grader in the sandbox (when the grading mode uses it) and the standard checks here."""

    def __init__(self, *, grading_mode: str = "default", grader: str | None = None,
                 judge: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.grading_mode = grading_mode
        self.grader = grader
        self.judge = judge
        self.env_paths = EnvironmentPaths()

    @property
    def _verifier_host_dir(self) -> Path:
        return Path(self.trial_paths.verifier_dir)

    @property
    def _agent_host_dir(self) -> Path:
        return Path(self.trial_paths.agent_dir)

    async def _prepare_sandbox(self) -> None:
        """Put tests/ at /tests and the host-side trajectory where an in-sandbox grader looks for it."""
        await self.environment.exec(
            f"mkdir -p {shlex.quote(str(self.env_paths.verifier_dir))} {shlex.quote(str(self.env_paths.agent_dir))}"
        )
        await self.environment.upload_dir(self.task.paths.tests_dir, str(self.env_paths.tests_dir))
        trajectory = self._agent_host_dir / "trajectory.json"
        if trajectory.is_file():
            await self.environment.upload_file(trajectory, f"{self.env_paths.agent_dir}/trajectory.json")

    async def _run_grader(self) -> SanitizedReward:
        grader = f"{self.env_paths.tests_dir}/{self.grader}"
        command = f"python3 {shlex.quote(grader)}" if self.grader.endswith(".py") else f"bash {shlex.quote(grader)}"
        env = {**grader_environment(self.env_paths), **(self.verifier_env or {}), **self.override_env}
        timeout = int(self.task.config.verifier.timeout_sec)
        result = await self.environment.exec(command, cwd="/workspace", env=env, timeout_sec=timeout)
        host_dir = self._verifier_host_dir
        host_dir.mkdir(parents=True, exist_ok=True)
        await self.environment.download_dir(str(self.env_paths.verifier_dir), host_dir)
        output = (result.stdout or "") + (result.stderr or "")
        (host_dir / GRADER_OUTPUT_NAME).write_text(output, encoding="utf-8")
        if result.return_code != 0:
            tail = " | ".join(output.strip().splitlines()[-5:])
            raise GraderCrashed(f"{self.grader} exited with code {result.return_code}: {tail or 'no output'}")
        return self._read_grader_reward(host_dir)

    def _read_grader_reward(self, host_dir: Path) -> SanitizedReward:
        reward_json, reward_txt = host_dir / "reward.json", host_dir / "reward.txt"
        if not reward_json.is_file() and not reward_txt.is_file():
            raise RewardMissing(f"{self.grader} wrote neither reward.json nor reward.txt in {self.env_paths.verifier_dir}")
        sanitized = read_grader_reward(reward_json, reward_txt, self.grading_mode)
        if reward_json.is_file():
            reward_json.replace(host_dir / CUSTOM_REWARD_NAME)
        if sanitized.errors:
            raise RewardRejected(f"{self.grader}'s reward was rejected: " + "; ".join(sanitized.errors))
        return sanitized

    async def _standard_grade(self, entry: dict[str, Any]) -> dict[str, Any]:
        from verifier.grade import entry_for_grading, grade
        from verifier.judges import judge_trial
        from verifier.trajectory import load_evidence

        evidence = load_evidence(self._agent_host_dir)
        judged = await judge_trial(evidence, entry_for_grading(entry, None), self.judge)
        return grade(evidence, entry, judged=judged)

    async def verify(self) -> VerifierResult:
        entry = json.loads((Path(self.task.paths.tests_dir) / "entry.json").read_text(encoding="utf-8"))
        rich: dict[str, Any] = {
            "entry_id": entry.get("id"),
            "grading_mode": self.grading_mode,
            "metrics": {name: None for name in STANDARD_METRICS},
            "custom_metrics": {},
            "custom_overall": None,
            "details": {},
        }
        uses_grader = self.grader is not None and self.grading_mode in ("default_plus_custom", "custom_only")
        if uses_grader:
            await self._prepare_sandbox()
            custom = await self._run_grader()
            rich["custom_metrics"] = custom.custom_metrics
            rich["custom_overall"] = custom.overall
            rich["details"]["custom"] = custom.model_dump(mode="json", exclude={"custom_metrics", "overall"})
        if self.grading_mode != "custom_only":
            standard = await self._standard_grade(entry)
            rich["metrics"].update(standard.get("metrics", {}))
            rich["details"].update(standard.get("details", {}))
            rich["trajectory_source"] = standard.get("trajectory_source")
            for key in ("evaluation_status", "evaluation_errors"):
                if key in standard:
                    rich[key] = standard[key]
        rich["overall"] = trial_overall(self.grading_mode, rich["metrics"], rich["custom_overall"])
        rich["overall_basis"] = overall_basis(self.grading_mode, rich["metrics"])
        if rich.get("evaluation_status") == "failed":
            rich["overall"] = None  # a judge that failed leaves the trial unscored, never partially scored
        host_dir = self._verifier_host_dir
        host_dir.mkdir(parents=True, exist_ok=True)
        (host_dir / RICH_REWARD_NAME).write_text(json.dumps(rich, indent=2, default=str) + "\n", encoding="utf-8")
        flat = flat_rewards(rich)
        (host_dir / "reward.json").write_text(json.dumps(flat, indent=2) + "\n", encoding="utf-8")
        if rich["overall"] is not None:
            (host_dir / "reward.txt").write_text(f"{rich['overall']}\n", encoding="utf-8")
        return VerifierResult(rewards=flat)
