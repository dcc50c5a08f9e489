"""Authoring commands: the `skilleval` CLI, `validate`, the scaffolds with their templates, and the agent skills
shipped for skill authors (`skilleval install-skill`)."""
