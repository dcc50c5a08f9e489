"""Harbor ``idle`` agent: runs no command and answers nothing, for `skilleval check-suite`.

A case whose checks, grader or judge already pass when the agent does nothing cannot tell a working skill from a
broken one; a negative control that such an agent fails asks for more than "leave the skill alone". Running this
agent through the normal trial and grading path finds both. Its record is one user step (the instruction) and one
agent step with an empty message and no tool calls, written to ``trajectory.json`` in ``self.logs_dir`` and
written again when verification starts (``restore_record``, as the replay agent does), so nothing the sandbox
holds is graded in its place.
"""

from __future__ import annotations

import json
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.agents.capabilities import AgentCapabilities
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory

from pytest_skilleval import __version__
from verifier import safe_io

IDLE_AGENT_IMPORT_PATH = "pytest_skilleval.harbor.idle_agent:IdleAgent"


def idle_trajectory(instruction: str) -> Trajectory:
    """The record of an agent that read the instruction and did nothing: no tool call, an empty answer."""
    return Trajectory.model_validate(
        {
            "schema_version": "ATIF-v1.6",
            "session_id": "idle",
            "agent": {"name": "idle", "version": __version__},
            "steps": [
                {"step_id": 1, "source": "user", "message": instruction},
                {"step_id": 2, "source": "agent", "message": ""},
            ],
        }
    )


class IdleAgent(BaseAgent):
    """An agent that does nothing: the baseline every case must be able to fail."""

    capabilities = AgentCapabilities(skills=True, atif=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.record: Trajectory | None = None

    @staticmethod
    def name() -> str:
        return "idle"

    def version(self) -> str:
        return __version__

    async def setup(self, environment: BaseEnvironment) -> None:
        return None

    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        self.record = idle_trajectory(instruction)
        self.restore_record()

    def restore_record(self) -> None:
        """Write the agent's own (empty) record over whatever the sandbox left at ``<logs_dir>/trajectory.json``."""
        if self.record is None:
            return
        text = json.dumps(self.record.to_json_dict(), indent=2, ensure_ascii=False) + "\n"
        safe_io.write_text(self.logs_dir, "trajectory.json", text)
