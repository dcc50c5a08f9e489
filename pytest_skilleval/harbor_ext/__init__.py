"""Stable import paths from earlier releases (`pytest_skilleval.harbor_ext.local_env:LocalEnvironment`, ...)."""
