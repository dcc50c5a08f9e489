"""Statistics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from pytest_skilleval.results import stats


def test_mean_of_nothing_is_none_not_zero() -> None:
    assert stats.mean([]) is None
    assert stats.mean([0.1, 0.2]) == pytest.approx(0.15)


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.7062), (4, 2.7764), (10, 2.2281), (29, 2.0452), (1000, 1.9623)],
)
def test_student_t_quantile_matches_tables(df: int, expected: float) -> None:
    assert stats.student_t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)
    assert stats.student_t_quantile(0.025, df) == pytest.approx(-expected, abs=1e-4)


def test_student_t_cdf_symmetry() -> None:
    assert stats.student_t_cdf(0.0, 3) == pytest.approx(0.5)
    assert stats.student_t_cdf(2.7764, 4) == pytest.approx(0.975, abs=1e-5)


def test_expanded_tail_probability() -> None:
    # n = 5: Phi(-sqrt(5/4) * 2.776445) = Phi(-3.10416) ~= 0.000954
    assert stats.expanded_tail_probability(5) == pytest.approx(0.000954, abs=2e-6)
    # large n converges to the plain 2.5% tail
    assert stats.expanded_tail_probability(10_000) == pytest.approx(0.025, abs=2e-4)
    with pytest.raises(ValueError):
        stats.expanded_tail_probability(1)


def test_quantile_type7() -> None:
    assert stats.quantile([1.0, 2.0, 3.0, 4.0], 0.5) == pytest.approx(2.5)
    assert stats.quantile([1.0, 2.0, 3.0, 4.0], 0.25) == pytest.approx(1.75)
    assert stats.quantile([1.0, 2.0, 3.0, 4.0], 0.0) == 1.0
    assert stats.quantile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0


def test_wilson_interval_hand_computed() -> None:
    # p = 0.7, z = 1.96: centre (0.7 + 0.19208) / 1.38416, half 1.96 * sqrt(0.021 + 0.009604) / 1.38416
    lo, hi = stats.wilson_interval(7, 10)  # type: ignore[misc]
    assert lo == pytest.approx(0.39678, abs=1e-4)
    assert hi == pytest.approx(0.89221, abs=1e-4)
    lo, hi = stats.wilson_interval(0, 5)  # type: ignore[misc]
    assert lo == 0.0
    assert hi == pytest.approx(0.43449, abs=1e-4)
    lo, hi = stats.wilson_interval(5, 5)  # type: ignore[misc]
    assert hi == 1.0 and lo == pytest.approx(1 - 0.43449, abs=1e-4)
    assert stats.wilson_interval(0, 0) is None


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),  # no discordant pairs
        (6, 1, 0.125),  # 2 * (1 + 7) / 128
        (1, 6, 0.125),  # symmetric
        (5, 1, 0.21875),  # 2 * (1 + 6) / 64
        (10, 0, 2 / 1024),
        (3, 3, 1.0),  # capped at 1
    ],
)
def test_mcnemar_exact(b: int, c: int, p: float) -> None:
    assert stats.mcnemar_exact(b, c) == pytest.approx(p)


def test_unbiased_pass_at_k_and_pass_hat_k() -> None:
    # n = 5 attempts, c = 2 passing
    assert stats.pass_at_k_unbiased(5, 2, 1) == pytest.approx(0.4)
    assert stats.pass_at_k_unbiased(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert stats.pass_hat_k(5, 2, 1) == pytest.approx(0.4)
    assert stats.pass_hat_k(5, 2, 2) == pytest.approx(1 / 10)
    assert stats.pass_hat_k(5, 2, 3) == 0.0
    # n - c < k: every draw of k contains a pass
    assert stats.pass_at_k_unbiased(3, 2, 2) == 1.0
    assert stats.pass_at_k_unbiased(3, 0, 3) == 0.0
    assert stats.pass_hat_k(3, 3, 3) == 1.0
    # k beyond the attempts run is not estimable, not zero
    assert stats.pass_at_k_unbiased(2, 1, 3) is None
    assert stats.pass_hat_k(2, 1, 3) is None
    with pytest.raises(ValueError):
        stats.pass_at_k_unbiased(2, 3, 1)


def test_bootstrap_needs_two_pairs() -> None:
    assert stats.paired_bootstrap_ci([]) is None
    assert stats.paired_bootstrap_ci([0.3]) is None


def test_bootstrap_constant_differences_collapse() -> None:
    assert stats.paired_bootstrap_ci([0.1, 0.1, 0.1]) == (0.1, 0.1)


def test_bootstrap_two_pairs_spans_the_range() -> None:
    # resampled means of [0, 1] are 0, 0.5, 1; the expanded tail for n=2 is ~1e-72, so the interval is [0, 1]
    assert stats.paired_bootstrap_ci([0.0, 1.0]) == (0.0, 1.0)


def test_bootstrap_known_sample_matches_expanded_normal_width() -> None:
    # 20 pairs alternating 0.0 / 0.2: mean 0.1, population sd 0.1, bootstrap SE 0.1 / sqrt(20) = 0.02236;
    # expanded critical value sqrt(20/19) * t_19 = 1.0260 * 2.0930 = 2.147, half-width ~0.048 -> [0.052, 0.148]
    lo, hi = stats.paired_bootstrap_ci([0.0, 0.2] * 10)  # type: ignore[misc]
    assert lo == pytest.approx(0.052, abs=0.006)
    assert hi == pytest.approx(0.148, abs=0.006)


def test_bootstrap_is_wider_than_plain_percentile_for_small_n() -> None:
    import random

    diffs = [0.4, 0.3, 0.2, 0.1, 0.0]
    lo, hi = stats.paired_bootstrap_ci(diffs)  # type: ignore[misc]
    rng = random.Random(stats.BOOTSTRAP_SEED)
    boot = sorted(math.fsum(rng.choices(diffs, k=5)) / 5 for _ in range(stats.BOOTSTRAP_RESAMPLES))
    plain = (stats.quantile(boot, 0.025), stats.quantile(boot, 0.975))
    assert lo < plain[0] and hi > plain[1]
    assert 0.0 <= lo < 0.2 < hi <= 0.4


def test_bootstrap_is_deterministic() -> None:
    diffs = [0.05, -0.1, 0.3, 0.2, 0.0, 0.12]
    assert stats.paired_bootstrap_ci(diffs) == stats.paired_bootstrap_ci(list(diffs))
