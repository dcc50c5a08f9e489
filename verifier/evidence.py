"""What every check reads: the agent's trajectory reduced to tool calls and messages.

`verifier.trajectory` builds a `TrajectoryEvidence` from an ATIF file or an agent log; the checks in
`verifier.checks` read only this model, so they never care where the evidence came from.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# Names of the standard evaluators, in report order.
STANDARD_METRICS: tuple[str, ...] = (
    "security",
    "skill_execution",
    "skill_efficiency",
    "accuracy",
    "goal_accuracy",
    "behavior_check",
)
DETERMINISTIC_METRICS: tuple[str, ...] = ("security", "skill_execution", "skill_efficiency")
JUDGE_METRICS: tuple[str, ...] = ("accuracy", "goal_accuracy", "behavior_check")
# The case's own checks (weighted fraction passed): reported beside the standard evaluators, never a dimension.
CHECKS_METRIC = "checks"
REPORTED_METRICS: tuple[str, ...] = (*STANDARD_METRICS, CHECKS_METRIC)

NO_TRAJECTORY = "No trajectory or reconstructible agent log"


class ToolCallRecord(BaseModel):
    """One tool call the agent made, with the output it got back."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(description="Position among all tool calls of the trajectory, from 0.")
    step_id: int | None = None
    tool: str = Field(description="The tool's name exactly as the agent wrote it (function_name).")
    arguments: dict[str, Any] = Field(default_factory=dict)
    observation: str = ""
    call_id: str | None = None


class TrajectoryEvidence(BaseModel):
    """A trajectory, read: ordered tool calls and the agent's and user's messages."""

    source: str = Field(description="What was graded: 'trajectory.json', an agent log name, or 'none'.")
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    agent_messages: list[str] = Field(default_factory=list, description="Non-empty agent step messages, in order.")
    user_messages: list[str] = Field(default_factory=list)
    system_messages: list[str] = Field(
        default_factory=list, description="System step messages: where a harness may inject a loaded skill."
    )
    agent_name: str | None = Field(
        default=None, description="The agent that wrote it (ATIF `agent.name`, or the agent log's name)."
    )
    problems: list[str] = Field(
        default_factory=list, description="Validation problems met while reading leniently; never fatal."
    )
    detail: str | None = Field(default=None, description="Why nothing usable was found, when source is 'none'.")
    segments: list[str] = Field(
        default_factory=list, description="The trajectory files read, in order, when more than one document was."
    )

    @property
    def usable(self) -> bool:
        return self.source != "none"

    @property
    def agent_text(self) -> str:
        return "\n".join(self.agent_messages)

    @property
    def user_text(self) -> str:
        return "\n".join(self.user_messages)

    @property
    def final_response(self) -> str:
        return self.agent_messages[-1] if self.agent_messages else ""


class MetricResult(BaseModel):
    """One evaluator's verdict on one trial. `score` None means unscored, which is never the same as 0.0."""

    score: float | None
    details: dict[str, Any] = Field(default_factory=dict)


class SecurityFinding(BaseModel):
    kind: str
    severity: str  # "critical" | "warning" | "info"
    message: str
    evidence: str = Field(default="", description="At most 500 characters, secrets redacted.")
    call_index: int | None = None
    tool: str | None = None
    # Added for the security evaluator; defaults keep older constructors valid.
    source: str | None = Field(
        default=None, description="user_prompt, agent_response, agent_tool_call or tool_observation."
    )
    score_impact: bool = Field(default=True, description="Only score-impacting findings change the score.")
    target_skill_used_before: bool | None = None
