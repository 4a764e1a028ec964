"""Who reads which page when: the access model of Xu et al.'s experiments.

Seed ``xu-content-provider-friendly-crawler``, Section 5.1 and Table 2: accesses are
synthetic, Zipf-distributed over pages (:math:`\\theta = 0.85` by default) and Poisson over
time. Page popularity is a random permutation of Zipf ranks (seeded), so it is unrelated
to how often a page changes. The same page weights feed the access-weighted metric
:math:`P_{fresh}(R)` (eq. 1-3) and, when the crawler is told of popularity, the
``access_count`` of each record (what a spider would pass in ``meta["fresh_accesses"]``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from scrapy_fresh.simulator.trace import DAY

__all__ = ["AccessModel", "poisson_times", "zipf_weights"]


def zipf_weights(n: int, theta: float, rng: random.Random) -> list[float]:
    """Return ``n`` popularity shares summing to 1: rank ``r`` gets :math:`\\propto r^{-\\theta}`,
    ranks shuffled over pages by ``rng``. ``theta = 0`` gives equal shares.

    >>> [round(w, 3) for w in sorted(zipf_weights(3, 1.0, random.Random(0)), reverse=True)]
    [0.545, 0.273, 0.182]
    """
    if n < 1:
        raise ValueError(f"n ({n!r}) must be 1 or more.")
    if theta < 0:
        raise ValueError(f"theta ({theta!r}) must be 0 or more.")
    raw = [1.0 / (rank**theta) for rank in range(1, n + 1)]
    total = sum(raw)
    shares = [w / total for w in raw]
    rng.shuffle(shares)
    return shares


def poisson_times(
    rate_per_sec: float, start: float, end: float, rng: random.Random
) -> list[float]:
    """Times of a Poisson process of rate ``rate_per_sec`` over ``(start, end)``, sorted."""
    times: list[float] = []
    if rate_per_sec <= 0:
        return times
    t = start + rng.expovariate(rate_per_sec)
    while t < end:
        times.append(t)
        t += rng.expovariate(rate_per_sec)
    return times


@dataclass(frozen=True)
class AccessModel:
    """Zipf over pages, Poisson over time.

    :param theta: Zipf skew over pages (Xu et al. Table 2: 0.85).
    :param per_page_per_day: mean accesses per page per day (all pages together get
        ``n * per_page_per_day`` a day).
    """

    theta: float = 0.85
    per_page_per_day: float = 1.0

    def __post_init__(self) -> None:
        if self.theta < 0:
            raise ValueError(f"theta ({self.theta!r}) must be 0 or more.")
        if self.per_page_per_day <= 0:
            raise ValueError(f"per_page_per_day ({self.per_page_per_day!r}) must be above 0.")

    def weights(self, n: int, rng: random.Random) -> list[float]:
        """Popularity shares of ``n`` pages."""
        return zipf_weights(n, self.theta, rng)

    def daily_accesses(self, weights: list[float]) -> list[float]:
        """Expected accesses per day of each page."""
        total = self.per_page_per_day * len(weights)
        return [w * total for w in weights]

    def sample(
        self, weights: list[float], start: float, end: float, rng: random.Random
    ) -> list[list[float]]:
        """Access times per page over ``(start, end)``."""
        return [poisson_times(a / DAY, start, end, rng) for a in self.daily_accesses(weights)]
