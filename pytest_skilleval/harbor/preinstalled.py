"""Harbor agents that use a CLI already installed in the environment instead of installing it at trial start.

Harbor's codex and claude-code agents skip their install step when their CLI is on PATH; its opencode agent always
fetches nvm from GitHub and runs `npm i -g`, which cannot work offline. With the CLIs mounted by `--ek tools=DIR`
(local environment) or baked into an image, `--agents pytest_skilleval.harbor.preinstalled:PreinstalledOpenCode`
runs opencode as Harbor's own agent does, minus that install.
"""

from __future__ import annotations

from typing import Any

from harbor.agents.installed.opencode import OpenCode

IMPORT_PATH_OPENCODE = "pytest_skilleval.harbor.preinstalled:PreinstalledOpenCode"


class PreinstalledOpenCode(OpenCode):
    """Harbor's OpenCode agent; its install step runs only when `opencode` is not on PATH already."""

    async def install(self, environment: Any) -> None:
        found = await environment.exec(command="command -v opencode >/dev/null 2>&1")
        if found.return_code == 0:
            return
        await super().install(environment)
