"""pytest-skilleval: agent-skill evals as pytest items, run through Harbor."""

__version__ = "0.1.0"
