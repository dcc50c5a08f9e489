"""Small-sample statistics for Skill Lift and pass@k, in pure Python (no numpy/scipy in the runtime).

Everything here is deterministic: the bootstrap uses a fixed seed, so the same records always give the same
interval, which keeps result.json reproducible and diffable between runs.

Interval method (documented choice): an *expanded percentile* paired bootstrap (Hesterberg, 2015). The plain
percentile bootstrap is too narrow for the handful of cases a skill eval usually has (it behaves like a z-interval
with the population standard deviation). The expanded version keeps the bootstrap's shape but reads the resampled
distribution at a widened tail probability

    alpha' / 2 = Phi( -sqrt(n / (n - 1)) * t_{n-1, 1 - alpha/2} )

so for n = 5 the 95% interval is read at the 0.1% / 99.9% quantiles, and for large n it converges to the ordinary
2.5% / 97.5% percentile interval. With fewer than two pairs no interval is given (None).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

BOOTSTRAP_SEED = 20240917
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
MIN_PAIRS = 5  # below this many paired cases a lift is flagged "insufficient"

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CONFIDENCE",
    "MIN_PAIRS",
    "expanded_tail_probability",
    "mcnemar_exact",
    "mean",
    "normal_cdf",
    "paired_bootstrap_ci",
    "pass_at_k_unbiased",
    "pass_hat_k",
    "quantile",
    "student_t_cdf",
    "student_t_quantile",
    "wilson_interval",
]


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean; None for an empty sequence (missing is not zero)."""
    if not values:
        return None
    return math.fsum(values) / len(values)


# --------------------------------------------------------------------------------------------- distributions


def normal_cdf(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_cdf(t: float, df: float) -> float:
    """CDF of Student's t with `df` degrees of freedom."""
    if df <= 0:
        raise ValueError("df must be positive")
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def student_t_quantile(p: float, df: float) -> float:
    """Inverse of `student_t_cdf` by bisection (monotone, so robust; precision ~1e-12)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while student_t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if student_t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


# ---------------------------------------------------------------------------------------------- intervals


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (Hyndman-Fan type 7) of already sorted values."""
    if not sorted_values:
        raise ValueError("quantile of an empty sequence")
    q = min(1.0, max(0.0, q))
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def expanded_tail_probability(n: int, confidence: float = CONFIDENCE) -> float:
    """One-sided tail probability alpha'/2 at which the expanded percentile bootstrap reads its quantiles."""
    if n < 2:
        raise ValueError("needs at least two observations")
    alpha = 1.0 - confidence
    t = student_t_quantile(1.0 - alpha / 2.0, n - 1)
    return normal_cdf(-math.sqrt(n / (n - 1)) * t)


def paired_bootstrap_ci(
    differences: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Interval for the mean of per-case paired differences (cases resampled with replacement).

    `differences` holds one value per case: with-skill case mean minus without-skill case mean. Returns None for
    fewer than two cases, where no spread can be estimated.
    """
    n = len(differences)
    if n < 2:
        return None
    if max(differences) == min(differences):
        return (differences[0], differences[0])
    rng = random.Random(seed)
    data = list(differences)
    boot = sorted(math.fsum(rng.choices(data, k=n)) / n for _ in range(resamples))
    tail = expanded_tail_probability(n, confidence)
    return (quantile(boot, tail), quantile(boot, 1.0 - tail))


def wilson_interval(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion; None when n == 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError("successes must be within 0..n")
    z = -_normal_quantile_lower((1.0 - confidence) / 2.0)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _normal_quantile_lower(p: float) -> float:
    """Normal quantile by bisection on erfc (only used for a handful of fixed confidences)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if normal_cdf(mid) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


# ----------------------------------------------------------------------------------------------- tests


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pair counts.

    b = cases passing only with the skill, c = cases passing only without it. Under H0 each discordant pair is a
    fair coin, so p = min(1, 2 * P[Binomial(b + c, 1/2) <= min(b, c)]). No discordant pairs gives p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError("counts must be non-negative")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / (2**n)
    return min(1.0, 2.0 * tail)


# --------------------------------------------------------------------------------------------------- pass@k


def pass_at_k_unbiased(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k for one case: 1 - C(n-c, k) / C(n, k). None when k > n (not estimable)."""
    _check_nck(n, c, k)
    if k > n:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """pass^k for one case (all k draws pass): C(c, k) / C(n, k). None when k > n."""
    _check_nck(n, c, k)
    if k > n:
        return None
    return math.comb(c, k) / math.comb(n, k)


def _check_nck(n: int, c: int, k: int) -> None:
    if k < 1 or n < 0 or not 0 <= c <= n:
        raise ValueError(f"invalid pass@k arguments n={n} c={c} k={k}")
