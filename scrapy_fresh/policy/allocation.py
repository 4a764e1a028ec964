r"""Crawl-budget allocation baselines: uniform, proportional, Cho-optimal, LambdaCrawl.

Each function splits a budget of ``budget`` crawls per time unit among pages with Poisson
change rates ``rates`` (changes per the same time unit) and returns one crawl rate per page,
summing to ``budget``. These are the baselines named in the design (DESIGN.md, "What we
measure") and discussed in seed ``edwards-adaptive-incremental-crawler-webfountain``
(Section 2.1: uniform vs proportional, after Cho & Garcia-Molina) and seed
``xu-content-provider-friendly-crawler`` (Section 2: Cho & Garcia-Molina solve the
allocation with Lagrange multipliers).

* :func:`uniform`: every page the same rate.
* :func:`proportional`: rates proportional to change rates.
* :func:`cho_optimal`: maximises the summed freshness of fixed-interval revisits (J. Cho,
  H. Garcia-Molina, "Synchronizing a database to improve freshness", SIGMOD 2000).
* :func:`lambdacrawl_optimal`: minimises the summed harmonic staleness of Poisson crawls
  (A. Kolobov, Y. Peres, C. Lu, E. Horvitz, "Staying up to Date with Online Content Changes
  Using Reinforcement Learning for Scheduling", NeurIPS 2019).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import check_non_negative

__all__ = [
    "cho_marginal_gain",
    "cho_optimal",
    "lambdacrawl_optimal",
    "proportional",
    "uniform",
]

_MAX_ITERATIONS = 200
_RELATIVE_TOLERANCE = 1e-13
# Budgets beyond this ratio to the largest rate (or below its inverse) take the limit shape.
_EXTREME = 1e250
# Rates (weights) below this fraction of the largest count as 0: never changing (unimportant).
_NEGLIGIBLE = 1e-150


def _check_rates(rates: Sequence[float]) -> list[float]:
    if isinstance(rates, (str, bytes)) or not isinstance(rates, Sequence):
        raise TypeError(
            f"rates must be a sequence of numbers, got {type(rates).__name__}: {rates!r}."
        )
    return [check_non_negative(f"rates[{i}]", r) for i, r in enumerate(rates)]


def _check_weights(weights: Sequence[float] | None, count: int) -> list[float]:
    if weights is None:
        return [1.0] * count
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
        raise TypeError(
            f"weights must be a sequence of numbers, got {type(weights).__name__}: {weights!r}."
        )
    if len(weights) != count:
        raise ConfigError(
            f"weights ({len(weights)} values) must have one value per rate ({count} rates)."
        )
    return [check_non_negative(f"weights[{i}]", w) for i, w in enumerate(weights)]


def uniform(rates: Sequence[float], budget: float) -> list[float]:
    """Give every page the same crawl rate, ``budget / len(rates)``.

    The uniform policy of Cho & Garcia-Molina (SIGMOD 2000), discussed in seed
    ``edwards-adaptive-incremental-crawler-webfountain`` (Section 2.1; its Strategy 2,
    "crawling each page just once during a cycle").

    >>> uniform([1, 2, 3, 4, 5], 5)
    [1.0, 1.0, 1.0, 1.0, 1.0]
    >>> uniform([], 5)
    []
    """
    checked = _check_rates(rates)
    total = check_non_negative("budget", budget)
    if not checked:
        return []
    return [total / len(checked)] * len(checked)


def proportional(rates: Sequence[float], budget: float) -> list[float]:
    """Give each page a crawl rate proportional to its change rate.

    The proportional policy of Cho & Garcia-Molina (SIGMOD 2000), discussed in seed
    ``edwards-adaptive-incremental-crawler-webfountain`` (Section 2.1). Falls back to
    :func:`uniform` when no page changes.

    >>> proportional([1, 2, 3, 4, 5], 5)
    [0.3333333333333333, 0.6666666666666666, 1.0, 1.3333333333333333, 1.6666666666666667]
    """
    checked = _check_rates(rates)
    total = check_non_negative("budget", budget)
    change_sum = math.fsum(checked)
    if change_sum <= 0:
        return uniform(checked, total)
    return [total * r / change_sum for r in checked]


def _g(r: float) -> float:
    """1 - (1 + r) e^-r, with a series below r = 0.5 (no cancellation)."""
    if r < 0.5:
        # sum_{k>=2} (-1)^k (k - 1) r^k / k!
        total = 0.0
        power_over_fact = r  # r^1 / 1!
        for k in range(2, 30):
            power_over_fact *= r / k
            term = (k - 1) * power_over_fact
            total += term if k % 2 == 0 else -term
            if term < 1e-18 * total:
                break
        return total
    return -math.expm1(-r) - r * math.exp(-r)


def cho_marginal_gain(rate: float, frequency: float) -> float:
    r"""Return :math:`\partial F/\partial f` of the freshness :math:`F = (1 - e^{-\lambda/f})f/\lambda`.

    Cho & Garcia-Molina (SIGMOD 2000): the freshness gained per extra crawl of a page
    with change rate :math:`\lambda` crawled :math:`f` times per unit time,
    :math:`\big(1 - (1 + r)e^{-r}\big)/\lambda` with :math:`r = \lambda/f`. It falls
    from :math:`1/\lambda` at :math:`f \to 0` to 0: the fastest-changing pages have the
    smallest gain at the start, which is why :func:`cho_optimal` can drop them.

    >>> round(cho_marginal_gain(2.0, 1.0), 6)
    0.296997
    >>> cho_marginal_gain(2.0, 0.0), cho_marginal_gain(0.0, 1.0)
    (0.5, 0.0)
    """
    lam = check_non_negative("rate", rate)
    f = check_non_negative("frequency", frequency)
    if lam == 0.0:
        return 0.0
    if f == 0.0:
        return 1.0 / lam
    return _g(lam / f) / lam


def _solve_g(y: float) -> float:
    """Return r > 0 with _g(r) == y, for 0 < y < 1 (safeguarded Newton)."""
    if y < 1e-20:
        # g(r) = r^2/2 - r^3/3 + ...: r = s + s^2/3 + O(s^3) with s = sqrt(2y).
        s = math.sqrt(2.0 * y)
        return s + s * s / 3.0
    lo, hi = 0.0, 1.0
    while _g(hi) < y:
        lo, hi = hi, hi * 2.0
    guess = math.sqrt(2.0 * y)  # g(r) ~ r^2 / 2 for small r
    r = guess if lo < guess < hi else (lo + hi) / 2.0
    for _ in range(_MAX_ITERATIONS):
        value = _g(r) - y
        if value > 0:
            hi = r
        else:
            lo = r
        slope = r * math.exp(-r)
        candidate = r - value / slope if slope > 0 else (lo + hi) / 2.0
        if not lo < candidate < hi:
            candidate = (lo + hi) / 2.0
        if abs(candidate - r) <= 1e-15 * r or hi - lo <= 1e-15 * hi:
            return candidate
        r = candidate
    return r


def _normalise(
    rates: list[float], weights: list[float]
) -> tuple[list[float], list[float], list[bool], float] | None:
    """Scale weights and rates to a maximum of 1 (both problems are scale invariant).

    Returns the scaled rates and weights, which pages take part, and the rate scale; or
    ``None`` when no page both changes and matters. Weights, then rates, below
    _NEGLIGIBLE of the largest count as 0.
    """
    active = [r > 0 and w > 0 for r, w in zip(rates, weights, strict=True)]
    if not any(active):
        return None
    top_weight = max(w for w, a in zip(weights, active, strict=True) if a)
    ws = [w / top_weight if a else 0.0 for w, a in zip(weights, active, strict=True)]
    active = [a and w >= _NEGLIGIBLE for a, w in zip(active, ws, strict=True)]
    top_rate = max(r for r, a in zip(rates, active, strict=True) if a)
    rs = [r / top_rate if a else 0.0 for r, a in zip(rates, active, strict=True)]
    active = [a and r >= _NEGLIGIBLE for a, r in zip(active, rs, strict=True)]
    return rs, ws, active, top_rate


def _spread(shares: list[float], budget: float) -> list[float]:
    total = math.fsum(shares)
    return [x / total * budget for x in shares]


def _solve_budget(
    share: Callable[[float], list[float]],
    budget: float,
    hi: float,
    small_limit: list[float],
    large_limit: list[float],
) -> list[float]:
    """Find the multiplier m with sum(share(m)) == budget, share decreasing in m.

    ``hi`` is a first guess. When the budget is beyond what floats can bracket, the
    allocation tends to ``small_limit`` (m -> 0) or ``large_limit`` (m -> inf) up to
    scale, and that shape is returned. The last bracket [lo, hi] is closed by linear
    interpolation between share(lo) and share(hi), which spends the budget exactly even
    where share jumps at float resolution (a page at its threshold).
    """
    upper = share(hi)
    while math.fsum(upper) > budget:
        hi *= 16.0
        if not hi < 1e300:
            return _spread(large_limit, budget)
        upper = share(hi)
    lo, lower = hi, upper
    while math.fsum(lower) <= budget:
        hi, upper = lo, lower
        lo /= 16.0
        if not lo > 1e-300:
            return _spread(small_limit, budget)
        lower = share(lo)
    # sum(lower) > budget >= sum(upper): bisect in log space.
    for _ in range(_MAX_ITERATIONS):
        if hi / lo <= 1.0 + _RELATIVE_TOLERANCE:
            break
        mid = math.sqrt(lo) * math.sqrt(hi)
        candidate = share(mid)
        if math.fsum(candidate) > budget:
            lo, lower = mid, candidate
        else:
            hi, upper = mid, candidate
    low_sum, high_sum = math.fsum(lower), math.fsum(upper)
    t = (budget - high_sum) / (low_sum - high_sum)
    result = [u + t * (v - u) for u, v in zip(upper, lower, strict=True)]
    return _spread(result, budget) if math.fsum(result) > 0 else result


def cho_optimal(
    rates: Sequence[float], budget: float, weights: Sequence[float] | None = None
) -> list[float]:
    r"""Return the crawl rates that maximise total freshness (Cho & Garcia-Molina).

    Cho & Garcia-Molina, "Synchronizing a database to improve freshness" (SIGMOD 2000),
    the optimal allocation for fixed-interval revisits: maximise
    :math:`\sum_i w_i F(\lambda_i, f_i)` with :math:`F = (1 - e^{-\lambda/f})f/\lambda`
    (:func:`scrapy_fresh.policy.metrics.poisson_freshness`) subject to
    :math:`\sum_i f_i = \text{budget}`. The Lagrange condition
    :math:`w_i\,\partial F/\partial f_i = \mu` (:func:`cho_marginal_gain`) is solved for
    each :math:`f_i` by safeguarded Newton/bisection, and :math:`\mu` by bisection so
    that the budget is met. A page whose marginal gain at :math:`f \to 0`,
    :math:`w_i/\lambda_i`, is at most :math:`\mu` gets 0: it changes too often to be
    worth keeping fresh. Pages that never change (or weigh 0) get 0; if no page can use
    the budget, it is spread uniformly. Rates and weights below :math:`10^{-150}` of the
    largest count as 0.

    :param rates: change rates :math:`\lambda_i`, per time unit.
    :param budget: crawls per time unit.
    :param weights: importance :math:`w_i` of each page (default 1).

    Rates 1..5 per day, 5 crawls per day (Cho & Garcia-Molina's example):

    >>> [round(f, 2) for f in cho_optimal([1, 2, 3, 4, 5], 5)]
    [1.15, 1.36, 1.35, 1.14, 0.0]
    """
    lams = _check_rates(rates)
    ws = _check_weights(weights, len(lams))
    total = check_non_negative("budget", budget)
    if not lams:
        return []
    if total == 0:
        return [0.0] * len(lams)
    prepared = _normalise(lams, ws)
    if prepared is None:
        return uniform(lams, total)
    lams, ws, active, scale = prepared
    pairs = sorted({(lam, w) for lam, w, a in zip(lams, ws, active, strict=True) if a})
    # Budget -> infinity: f ~ sqrt(lam w / (2 mu)); budget -> 0: only the pages with the
    # largest w / lam (the highest marginal gain at f = 0) are crawled.
    small = [math.sqrt(lam * w) if a else 0.0 for lam, w, a in zip(lams, ws, active, strict=True)]
    top = max(w / lam for lam, w in pairs)
    large = [
        1.0 if a and w / lam >= top * (1 - 1e-12) else 0.0
        for lam, w, a in zip(lams, ws, active, strict=True)
    ]
    budget_scaled = total / scale
    if budget_scaled > _EXTREME:
        return _spread(small, total)
    if budget_scaled < 1.0 / _EXTREME:
        return _spread(large, total)

    def share(mu: float) -> list[float]:
        solved: dict[tuple[float, float], float] = {}
        for lam, w in pairs:
            y = mu * lam / w
            if y >= 1.0:
                solved[lam, w] = 0.0
            elif y > 0.0:
                solved[lam, w] = lam / _solve_g(y)
            else:  # mu * lam underflowed: the small-y limit f = sqrt(lam w / (2 mu))
                solved[lam, w] = math.sqrt(lam) * math.sqrt(w / (2.0 * mu))
        return [solved[lam, w] if a else 0.0 for lam, w, a in zip(lams, ws, active, strict=True)]

    result = _solve_budget(share, budget_scaled, top, small, large)
    return [f * scale for f in result]


def lambdacrawl_optimal(
    rates: Sequence[float], budget: float, weights: Sequence[float] | None = None
) -> list[float]:
    r"""Return the crawl rates that minimise total harmonic staleness (LambdaCrawl).

    Kolobov, Peres, Lu, Horvitz, NeurIPS 2019, the optimum for sources with incomplete
    change observations (the crawler only sees whether a page changed). Symbols as in
    the paper: :math:`\Delta_i` is page :math:`i`'s change rate (``rates``),
    :math:`\mu_i` its importance (``weights``), :math:`\rho_i` its crawl rate (the
    result, in the same time unit as :math:`\Delta_i`), :math:`R` the budget and
    :math:`\lambda` the Lagrange multiplier (not a change rate here). Crawling at random
    times with rate :math:`\rho_i`, the expected harmonic staleness is
    :math:`\mu_i\ln(1 + \Delta_i/\rho_i)`
    (:func:`scrapy_fresh.policy.metrics.poisson_harmonic_staleness`); minimising the sum
    subject to :math:`\sum_i \rho_i = R` gives
    :math:`\mu_i\Delta_i/(\rho_i(\rho_i + \Delta_i)) = \lambda`, i.e.

    .. math::

        \rho_i = \frac{-\Delta_i + \sqrt{\Delta_i^2 + 4\mu_i\Delta_i/\lambda}}{2}

    with :math:`\lambda` found by bisection so that the budget holds exactly. (It is
    evaluated as :math:`2\mu_i\Delta_i / \big(\lambda(\Delta_i + \sqrt{\Delta_i^2 +
    4\mu_i\Delta_i/\lambda})\big)`, the same value without cancellation.) Unlike
    :func:`cho_optimal` every changing page gets a positive rate: the marginal cost of
    never crawling is infinite. Pages that never change (or weigh 0) get 0; if no page
    can use the budget, it is spread uniformly. Rates and weights below
    :math:`10^{-150}` of the largest count as 0.

    >>> [round(r, 3) for r in lambdacrawl_optimal([1, 2, 3, 4, 5], 5)]
    [0.783, 0.947, 1.037, 1.096, 1.137]
    """
    deltas = _check_rates(rates)
    mus = _check_weights(weights, len(deltas))
    total = check_non_negative("budget", budget)
    if not deltas:
        return []
    if total == 0:
        return [0.0] * len(deltas)
    prepared = _normalise(deltas, mus)
    if prepared is None:
        return uniform(deltas, total)
    deltas, mus, active, scale = prepared
    # lambda -> 0 (budget -> infinity): rho ~ sqrt(mu Delta / lambda);
    # lambda -> infinity (budget -> 0): rho ~ mu / lambda.
    small = [math.sqrt(m * d) if a else 0.0 for d, m, a in zip(deltas, mus, active, strict=True)]
    large = [m if a else 0.0 for m, a in zip(mus, active, strict=True)]
    budget_scaled = total / scale
    if budget_scaled > _EXTREME:
        return _spread(small, total)
    if budget_scaled < 1.0 / _EXTREME:
        return _spread(large, total)

    def share(lagrange: float) -> list[float]:
        result = []
        for delta, mu, a in zip(deltas, mus, active, strict=True):
            if not a:
                result.append(0.0)
                continue
            a_term = mu * delta / lagrange
            root = math.sqrt(delta * delta + 4.0 * a_term)
            result.append(2.0 * a_term / (delta + root))
        return result

    # Start where the largest page alone would take the whole budget.
    start = max(
        m * d / (budget_scaled + d) / budget_scaled
        for d, m, a in zip(deltas, mus, active, strict=True)
        if a
    )
    start = min(max(start, 1e-250), 1e250)
    result = _solve_budget(share, budget_scaled, start, small, large)
    return [r * scale for r in result]
