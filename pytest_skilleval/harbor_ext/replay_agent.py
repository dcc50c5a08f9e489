"""Alias kept for import paths printed by earlier releases; the agent lives in `pytest_skilleval.harbor`."""

from pytest_skilleval.harbor.replay_agent import ReplayAgent

__all__ = ["ReplayAgent"]
