r"""Quality metrics: access-weighted freshness, time-averaged freshness, age and staleness.

* :math:`P_{fresh}(R)` of Xu et al. (seed ``xu-content-provider-friendly-crawler``,
  eq. 1-3): the probability that an access hits an up-to-date page.
* Time-averaged binary freshness and age of a copy, given when the page changed and when
  it was fetched (the freshness/age pair of seed ``clifton-web-crawling-lecture``, after
  Cho & Garcia-Molina).
* Time-averaged harmonic staleness (Kolobov, Peres, Lu, Horvitz, "Staying up to Date with
  Online Content Changes Using Reinforcement Learning for Scheduling", NeurIPS 2019): a copy
  that missed :math:`n` changes costs :math:`H(n) = \sum_{i=1}^{n} 1/i`.
* Poisson closed forms for a page with change rate :math:`\lambda` revisited every
  :math:`I = 1/f`: freshness :math:`(1-e^{-r})/r` and age
  :math:`\frac{1}{f}\big(\frac12 - \frac1r + \frac{1-e^{-r}}{r^2}\big)` with
  :math:`r = \lambda/f` (Cho & Garcia-Molina, "Synchronizing a database to improve
  freshness", SIGMOD 2000; the age integral of seed ``clifton-web-crawling-lecture``).

All functions are pure and take times explicitly; none reads the clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import (
    check_count,
    check_finite,
    check_non_negative,
    check_positive,
    check_probability,
    check_times,
)

__all__ = [
    "TraceMetrics",
    "expected_age",
    "f_access",
    "harmonic_number",
    "harmonic_staleness",
    "p_fresh_page",
    "p_fresh_repository",
    "poisson_age",
    "poisson_freshness",
    "poisson_harmonic_staleness",
    "time_averaged_age",
    "time_averaged_freshness",
    "trace_metrics",
]

_EULER_GAMMA = 0.57721566490153286
# Below this r (or x) the series are used: the closed forms lose digits to cancellation.
_SERIES_BELOW = 1.0
_SERIES_TERMS = 30


def harmonic_number(n: int) -> float:
    r"""Return :math:`H(n) = \sum_{i=1}^{n} 1/i`, the harmonic-staleness penalty of ``n`` changes.

    Kolobov et al. 2019 (NeurIPS), Section 3: the cost of a copy that has missed ``n``
    changes. :math:`H(0) = 0`; it grows like :math:`\ln n`, so each further missed change
    costs less than the one before (unlike binary freshness, which ignores all but the first).

    >>> harmonic_number(0), harmonic_number(1), harmonic_number(3)
    (0.0, 1.0, 1.8333333333333333)
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, got {type(n).__name__}: {n!r}.")
    if n < 0:
        raise ConfigError(f"n ({n!r}) must be 0 or higher.")
    if n <= 1000:
        return math.fsum(1.0 / i for i in range(1, n + 1))
    inv = 1.0 / n
    inv2 = inv * inv
    return math.log(n) + _EULER_GAMMA + 0.5 * inv - inv2 / 12.0 + inv2 * inv2 / 120.0


def f_access(page_accesses: float, total_accesses: float) -> float:
    """Return :math:`f_{access}(p_i)`: a page's share of the repository's accesses (Xu eq. 2).

    Seed ``xu-content-provider-friendly-crawler``, eq. 2. 0.0 when there is no access at all.

    >>> f_access(25, 100)
    0.25
    >>> f_access(0, 0)
    0.0
    """
    page = check_count("page_accesses", page_accesses)
    total = check_count("total_accesses", total_accesses)
    if page > total:
        raise ConfigError(
            f"page_accesses ({page_accesses!r}) must not exceed total_accesses "
            f"({total_accesses!r})."
        )
    return page / total if total > 0 else 0.0


def p_fresh_page(
    update_times: Iterable[float], last_crawl: float, now: float, *, time_unit: float = 1.0
) -> float:
    r"""Return :math:`P_{fresh}(p_i)` of Xu et al. eq. 3.

    Seed ``xu-content-provider-friendly-crawler``, eq. 3:

    .. math::

        P_{fresh}(p_i) = \begin{cases} 1 & \text{no missed update} \\
            \dfrac{1}{\sum_m m \times (t_{now} - t_m)} & \text{otherwise} \end{cases}

    The missed updates are those in ``(last_crawl, now]``, numbered :math:`m = 1, 2,
    \dots` oldest first (the text: the difference between now and "each missed update m
    times the number of missed update"). Each missed update degrades freshness by its age,
    weighted by its rank.

    Eq. 3 is not bounded by 1 when the weighted sum is below one time unit (and divides by
    zero for an update at ``now``), although the paper says :math:`P_{fresh}` "scales from
    0 to 1"; we return :math:`\min(1, 1/\sum)`, which is 1 for a sum of 0. The value
    depends on the time unit: ``time_unit`` divides every duration.

    >>> p_fresh_page([], 0, 100)
    1.0
    >>> p_fresh_page([40, 90], 20, 100)
    0.0125
    >>> p_fresh_page([40, 90], 20, 100, time_unit=60)
    0.75
    """
    t_lc = check_finite("last_crawl", last_crawl)
    t_now = check_finite("now", now)
    if t_now < t_lc:
        raise ConfigError(f"now ({now!r}) must not be earlier than last_crawl ({last_crawl!r}).")
    unit = check_positive("time_unit", time_unit)
    missed = [t for t in check_times("update_times", update_times) if t_lc < t <= t_now]
    degradation = math.fsum(m * (t_now - t) / unit for m, t in enumerate(missed, start=1))
    if degradation <= 1.0:
        return 1.0
    return 1.0 / degradation


def p_fresh_repository(pages: Iterable[tuple[float, float]]) -> float:
    r"""Return :math:`P_{fresh}(R) = \sum_i f_{access}(p_i) \times P_{fresh}(p_i)` (Xu eq. 1).

    Seed ``xu-content-provider-friendly-crawler``, eq. 1 with eq. 2: the probability that
    an access hits a fresh page.

    :param pages: ``(accesses, p_fresh)`` per page, ``p_fresh`` within [0, 1]
        (e.g. from :func:`p_fresh_page`).

    With no access at all the weights are undefined; every page then weighs the same (the
    plain mean), and an empty repository is fresh (1.0).

    >>> p_fresh_repository([(75, 1.0), (25, 0.2)])
    0.8
    >>> p_fresh_repository([(0, 1.0), (0, 0.5)]), p_fresh_repository([])
    (0.75, 1.0)
    """
    accesses: list[float] = []
    fresh: list[float] = []
    for i, (count, value) in enumerate(pages):
        accesses.append(check_count(f"pages[{i}] accesses", count))
        fresh.append(check_probability(f"pages[{i}] p_fresh", value))
    if not fresh:
        return 1.0
    total = math.fsum(accesses)
    if total <= 0:
        return min(1.0, math.fsum(fresh) / len(fresh))
    return min(1.0, math.fsum(a * f for a, f in zip(accesses, fresh, strict=True)) / total)


class TraceMetrics(NamedTuple):
    """Time averages over an interval, from :func:`trace_metrics`.

    Freshness and age as in seed ``clifton-web-crawling-lecture``; harmonic staleness as
    in Kolobov et al. 2019.

    >>> trace_metrics([2], [], 0, 4).freshness
    0.5
    """

    #: Fraction of the time the copy was up to date, within [0, 1].
    freshness: float
    #: Mean age: time since the first change the copy missed (0 while fresh), in seconds.
    age: float
    #: Mean harmonic staleness :math:`H(n)` of the ``n`` changes the copy missed.
    harmonic_staleness: float


def trace_metrics(
    change_times: Iterable[float], fetch_times: Iterable[float], start: float, end: float
) -> TraceMetrics:
    r"""Return the time-averaged freshness, age and harmonic staleness of one copy.

    Over ``[start, end]``, with :math:`n(t)` the changes since the last fetch:

    .. math::

        F = \frac{1}{T}\int [n(t) = 0]\,dt, \quad
        A = \frac{1}{T}\int (t - \text{first missed change})\,[n(t) > 0]\,dt, \quad
        S = \frac{1}{T}\int H(n(t))\,dt

    (binary freshness and age as in seed ``clifton-web-crawling-lecture``, after Cho &
    Garcia-Molina; harmonic staleness of Kolobov et al. 2019, Section 3).

    A fetch at time :math:`t` sees every change at or before :math:`t`. The copy's state at
    ``start`` comes from the latest fetch at or before ``start``; without one, the copy is
    taken as up to date at ``start``. An empty interval (``start == end``) reports the
    state at ``start``, with age and staleness of that instant.

    Change at 2 and 6, fetch at 4, over [0, 8]: fresh on [0, 2) and [4, 6), age grows
    from 0 to 2 twice (mean 2 x 2 / 8), one missed change half of the time:

    >>> trace_metrics([2, 6], [4], 0, 8)
    TraceMetrics(freshness=0.5, age=0.5, harmonic_staleness=0.5)
    >>> trace_metrics([], [], 0, 0)
    TraceMetrics(freshness=1.0, age=0.0, harmonic_staleness=0.0)
    """
    t0 = check_finite("start", start)
    t1 = check_finite("end", end)
    if t1 < t0:
        raise ConfigError(f"end ({end!r}) must not be earlier than start ({start!r}).")
    changes = check_times("change_times", change_times)
    fetches = check_times("fetch_times", fetch_times)

    before = [f for f in fetches if f <= t0]
    synced = before[-1] if before else t0
    pending = [c for c in changes if synced < c <= t0]
    missed = len(pending)
    stale_since = pending[0] if pending else None

    events = [(c, 0) for c in changes if t0 < c <= t1]
    events += [(f, 1) for f in fetches if t0 < f <= t1]
    events.sort()  # at equal times changes (0) come before fetches (1)

    if t1 == t0:
        age = t0 - stale_since if stale_since is not None else 0.0
        return TraceMetrics(0.0 if missed else 1.0, age, harmonic_number(missed))

    fresh_time = 0.0
    age_area = 0.0
    staleness_area = 0.0
    prev = t0
    for t, kind in [*events, (t1, 2)]:
        span = t - prev
        if span > 0:
            if stale_since is None:
                fresh_time += span
            else:
                age_area += ((t - stale_since) ** 2 - (prev - stale_since) ** 2) / 2.0
                staleness_area += harmonic_number(missed) * span
        prev = t
        if kind == 0:
            missed += 1
            if stale_since is None:
                stale_since = t
        elif kind == 1:
            missed = 0
            stale_since = None
    total = t1 - t0
    return TraceMetrics(min(1.0, fresh_time / total), age_area / total, staleness_area / total)


def time_averaged_freshness(
    change_times: Iterable[float], fetch_times: Iterable[float], start: float, end: float
) -> float:
    """Return the fraction of ``[start, end]`` during which the copy was up to date.

    Binary freshness (seed ``clifton-web-crawling-lecture``, "Freshness vs. Age"),
    averaged over time; see :func:`trace_metrics` for the conventions.

    >>> time_averaged_freshness([2, 6], [4], 0, 8)
    0.5
    """
    return trace_metrics(change_times, fetch_times, start, end).freshness


def time_averaged_age(
    change_times: Iterable[float], fetch_times: Iterable[float], start: float, end: float
) -> float:
    """Return the mean age of the copy over ``[start, end]`` (0 while it is fresh).

    Age (seed ``clifton-web-crawling-lecture``, "Age") is the time since the first change
    the copy missed; see :func:`trace_metrics` for the conventions.

    >>> time_averaged_age([2], [], 0, 4)
    0.5
    """
    return trace_metrics(change_times, fetch_times, start, end).age


def harmonic_staleness(
    change_times: Iterable[float], fetch_times: Iterable[float], start: float, end: float
) -> float:
    r"""Return the time-averaged harmonic staleness :math:`\frac{1}{T}\int H(n(t))\,dt`.

    Kolobov et al. 2019 (NeurIPS), Section 3 (the harmonic penalty, averaged over time);
    see :func:`trace_metrics` for the conventions.

    Three changes missed over the last quarter of the interval: :math:`H(3)/4`.

    >>> round(harmonic_staleness([3, 3, 3], [], 0, 4), 6)
    0.458333
    """
    return trace_metrics(change_times, fetch_times, start, end).harmonic_staleness


def poisson_freshness(change_rate: float, revisit_rate: float) -> float:
    r"""Return the expected freshness :math:`(1 - e^{-r})/r`, :math:`r = \lambda/f`.

    Cho & Garcia-Molina, "Synchronizing a database to improve freshness" (SIGMOD 2000),
    time-averaged freshness of a Poisson page (rate :math:`\lambda`) revisited at fixed
    intervals :math:`1/f` (the model of seed ``clifton-web-crawling-lecture``, "Age").
    Tends to 1 as :math:`r \to 0`; 0 when the page changes but is never revisited.

    >>> round(poisson_freshness(1.0, 1.0), 6)
    0.632121
    >>> poisson_freshness(0.0, 1.0), poisson_freshness(1.0, 0.0)
    (1.0, 0.0)
    """
    lam = check_non_negative("change_rate", change_rate)
    f = check_non_negative("revisit_rate", revisit_rate)
    if lam == 0.0:
        return 1.0
    if f == 0.0:
        return 0.0
    r = lam / f
    if r == 0.0:
        return 1.0
    return min(1.0, -math.expm1(-r) / r)


def poisson_age(change_rate: float, revisit_rate: float) -> float:
    r"""Return the expected age :math:`\frac1f\big(\frac12 - \frac1r + \frac{1-e^{-r}}{r^2}\big)`.

    Time average over a revisit interval :math:`I = 1/f` of the expected age
    :math:`t - (1-e^{-\lambda t})/\lambda` of seed ``clifton-web-crawling-lecture``
    ("Age"), as in Cho & Garcia-Molina (SIGMOD 2000), with :math:`r = \lambda/f`. Small
    :math:`r` uses the series :math:`\frac1f\sum_{k\ge1}(-1)^{k+1}r^k/(k+2)!` (no
    cancellation), so the result tends to 0 as :math:`r \to 0` and to :math:`I/2` as
    :math:`r \to \infty`.

    >>> round(poisson_age(1.0, 1.0), 6)
    0.132121
    >>> poisson_age(0.0, 1.0)
    0.0
    """
    lam = check_non_negative("change_rate", change_rate)
    f = check_positive("revisit_rate", revisit_rate)
    r = lam / f
    if r < _SERIES_BELOW:
        return _alternating_series(r, offset=2) / f
    return (0.5 - 1.0 / r - math.expm1(-r) / (r * r)) / f


def expected_age(change_rate: float, elapsed: float) -> float:
    r"""Return the expected age :math:`t - (1 - e^{-\lambda t})/\lambda` at ``elapsed`` = t.

    Seed ``clifton-web-crawling-lecture`` ("Age"):
    :math:`\text{Age}(\lambda, t) = \int_0^t \lambda e^{-\lambda x}(t - x)\,dx`, the
    expected age :math:`t` after the last crawl of a Poisson page. Small :math:`\lambda t`
    uses the series :math:`t\sum_{k\ge1}(-1)^{k+1}(\lambda t)^k/(k+1)!`.

    One change a week, a week after the crawl (in days):

    >>> round(expected_age(1 / 7, 7), 4)
    2.5752
    >>> expected_age(0.0, 7)
    0.0
    """
    lam = check_non_negative("change_rate", change_rate)
    t = check_non_negative("elapsed", elapsed)
    x = lam * t
    if x < _SERIES_BELOW:
        return t * _alternating_series(x, offset=1)
    return t + math.expm1(-x) / lam


def poisson_harmonic_staleness(change_rate: float, crawl_rate: float) -> float:
    r"""Return the expected harmonic staleness :math:`\ln(1 + \Delta/\rho)` of Poisson crawling.

    Kolobov et al. 2019 (NeurIPS), Section 4: with changes at rate :math:`\Delta` and
    crawls at random times at rate :math:`\rho`, the missed-change count is geometric with
    ratio :math:`q = \Delta/(\Delta + \rho)` and
    :math:`E[H(n)] = \sum_i q^i / i = -\ln(1 - q) = \ln(1 + \Delta/\rho)`. This is the
    per-page cost that :func:`scrapy_fresh.policy.allocation.lambdacrawl_optimal` minimises.

    >>> round(poisson_harmonic_staleness(1.0, 1.0), 6)
    0.693147
    >>> poisson_harmonic_staleness(0.0, 0.0)
    0.0
    """
    delta = check_non_negative("change_rate", change_rate)
    rho = check_non_negative("crawl_rate", crawl_rate)
    if delta == 0.0:
        return 0.0
    if rho == 0.0:
        raise ConfigError(
            f"crawl_rate ({crawl_rate!r}) must be higher than 0 when change_rate "
            f"({change_rate!r}) is: a page that changes and is never crawled is stale for ever."
        )
    return math.log1p(delta / rho)


def _alternating_series(x: float, *, offset: int) -> float:
    """Return sum_{k>=1} (-1)^(k+1) x^k / (k + offset)! for 0 <= x < 1."""
    total = 0.0
    term = 1.0 / math.factorial(offset)  # x^0 / offset!
    for k in range(1, _SERIES_TERMS):
        term *= x / (k + offset)
        total += term if k % 2 else -term
        if term < 1e-18 * abs(total):
            break
    return total
