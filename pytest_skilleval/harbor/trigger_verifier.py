"""Harbor `BaseVerifier` for trigger items: the trigger verdict, read on the host from the agent's trajectory.

Nothing runs in the sandbox: the verdict is the activation detector's (`verifier.triggering`), for the skill under
test and for each distractor installed beside it. It is written to `<trial>/verifier/trigger.json`; Harbor gets
`{"triggered": 1.0 | 0.0}` (nothing when the detector could not tell).
"""

from __future__ import annotations

import json
from typing import Any

from harbor.models.verifier.result import VerifierResult

from pytest_skilleval.harbor.verifier_adapter import HostVerifier
from verifier import safe_io
from verifier.triggering import TRIGGER_FILE, trigger_verdict

IMPORT_PATH = "pytest_skilleval.harbor.trigger_verifier:TriggerVerifier"


class TriggerVerifier(HostVerifier):
    """Reads the trajectory the agent phase left on the host; links planted in the sandbox are refused."""

    def __init__(self, *, skill: str, distractors: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.skill = skill
        self.distractors = list(distractors or [])

    async def verify(self) -> VerifierResult:
        from verifier.trajectory import load_evidence

        agent_dir = str(self.env_paths.agent_dir)
        self._refuse_sandbox_links(agent_dir, f"{agent_dir}/trajectory.json")
        verdict = trigger_verdict(load_evidence(self._agent_host_dir), self.skill, self.distractors)
        host_dir = self._verifier_host_dir
        host_dir.mkdir(parents=True, exist_ok=True)
        document = self.redactor.value(verdict.model_dump(mode="json"))
        safe_io.write_text(host_dir, TRIGGER_FILE, json.dumps(document, indent=2) + "\n")
        rewards = {} if verdict.triggered is None else {"triggered": 1.0 if verdict.triggered else 0.0}
        return VerifierResult(rewards=rewards)
