"""Authoring commands: the `skilleval` CLI, `validate`, the scaffolds and templates, and `install-skill`."""
