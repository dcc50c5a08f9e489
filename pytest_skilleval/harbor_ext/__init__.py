"""Stable public import paths (`pytest_skilleval.harbor_ext.local_env:LocalEnvironment`, ...) that job configs and
scripts may name; see docs/architecture.md, Stable public paths."""
