"""The results pipeline: trial records in, aggregate, statistics, results tree and terminal summary out (no pytest, no Harbor)."""
