"""The session's start line counts in words that agree with their number ("1 case", "2 cases")."""

from __future__ import annotations

import pytest

from pytest_skilleval.results.summary_text import counted


@pytest.mark.parametrize(
    ("amount", "noun", "said"),
    [(0, "case", "0 cases"), (1, "case", "1 case"), (2, "agent", "2 agents"), (1, "trigger trial", "1 trigger trial")],
)
def test_a_count_takes_its_noun_in_the_number_it_needs(amount: int, noun: str, said: str) -> None:
    assert counted(amount, noun) == said
