"""What model claude-code asks its endpoint for: the same on every supported Harbor release.

With `ANTHROPIC_BASE_URL` set (a gateway, or the scripted model server), Harbor 0.25 tells Claude Code the model
without its provider (`--agent-model claude-code=anthropic/claude-x` asks for `claude-x`), and points Claude Code's
model aliases (sonnet, opus, haiku, fable, the subagent model) at it unless the host sets them; Harbor 0.24 passes the
name as given (`anthropic/claude-x`), which an Anthropic-compatible endpoint does not know. The agent's own
environment (Harbor's `AgentConfig.env`) outranks what either release sets for one command, so these values make
0.24 ask for what 0.25 does; on 0.25 they are what Harbor sets anyway.
"""

from __future__ import annotations

from collections.abc import Mapping

PROVIDER_PREFIX = "anthropic/"
# Claude Code's model aliases, which both releases point at the trial's model behind a custom endpoint.
ALIAS_VARIABLES = (
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_DEFAULT_FABLE_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)


def claude_code_model_env(model: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The model variables claude-code gets behind a custom `ANTHROPIC_BASE_URL`; empty otherwise."""
    if not model or not model.startswith(PROVIDER_PREFIX) or not environ.get("ANTHROPIC_BASE_URL"):
        return {}
    bare = model.removeprefix(PROVIDER_PREFIX)
    return {"ANTHROPIC_MODEL": bare, **{name: environ.get(name) or bare for name in ALIAS_VARIABLES}}
