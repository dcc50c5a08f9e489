"""Alias kept for import paths printed by earlier releases; the environment lives in `pytest_skilleval.harbor`."""

from pytest_skilleval.harbor.local_env import LocalEnvironment

__all__ = ["LocalEnvironment"]
