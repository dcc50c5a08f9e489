"""A stable public import path for the `local` environment, which lives in `pytest_skilleval.harbor`."""

from pytest_skilleval.harbor.local_env import LocalEnvironment

__all__ = ["LocalEnvironment"]
