"""A stable public import path for the replay agent, which lives in `pytest_skilleval.harbor`."""

from pytest_skilleval.harbor.replay_agent import ReplayAgent

__all__ = ["ReplayAgent"]
