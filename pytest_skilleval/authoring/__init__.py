"""Authoring commands: the `skilleval` CLI, `validate`, and the scaffolds with their templates."""
