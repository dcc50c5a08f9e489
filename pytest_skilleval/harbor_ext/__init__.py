"""Stable public import paths (`pytest_skilleval.harbor_ext.local_env:LocalEnvironment`, ...) job configs may name."""
