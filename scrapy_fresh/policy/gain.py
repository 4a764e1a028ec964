r"""Expected freshness a fetch buys: the budget-aware score of a re-crawl.

Under a crawl budget every fetch competes with every other, so a page should be ranked
by what a fetch of it *now* is worth. For a page with Poisson change rate
:math:`\lambda`, last fetched :math:`a` seconds ago and next fetched about :math:`H`
seconds from now (Cho & Garcia-Molina, "Synchronizing a database to improve freshness",
SIGMOD 2000, Section 2: freshness of a Poisson page):

.. math::

    G(\lambda, a, H) = \underbrace{(1 - e^{-\lambda a})}_{P(\text{changed since the last fetch})}
        \times \underbrace{\frac{1 - e^{-\lambda H}}{\lambda}}_{E[\text{fresh time until the next change or fetch}]}

The first factor is the chance that the stored copy is stale, so that the fetch makes it
fresh at all; the second the expected time the copy then stays fresh, until the next
change or the next fetch (after which the freshness belongs to that fetch). Both factors
are Cho & Garcia-Molina's: :math:`(1 - e^{-\lambda H})/(\lambda H)` is their freshness of
a page synchronised every :math:`H` (:func:`~scrapy_fresh.policy.metrics.poisson_freshness`).

:math:`G` is at most :math:`1/\lambda`: a page that changes much faster than it can be
fetched is worth little whatever its age, which is Cho & Garcia-Molina's "give up on the
fastest pages" (their optimum, :func:`~scrapy_fresh.policy.allocation.cho_optimal`, gives
them nothing once :math:`1/\lambda` is below the Lagrange multiplier :math:`\mu`).
Serving the highest :math:`G` first is the greedy form of that optimum: in the steady
state a page is fetched when :math:`G` reaches the value of the last fetch the budget
allows, the same threshold :math:`\mu` for every page, as in the Lagrange condition.

The rate comes from the page's own visits (:func:`recent_rate`: Cho & Garcia-Molina's
improved estimator over decayed counts, so a page that slows down or wakes up is
followed within a few visits) and never goes below half a change over what was watched
(:func:`rate_floor`, the +0.5 of the same estimator), so that a page that has not changed
yet is still fetched, ever more rarely.

Pure: standard library only, no clock (``now`` is never read; times are arguments).
"""

from __future__ import annotations

import math

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import check_non_negative, check_positive, check_probability

__all__ = [
    "change_probability",
    "expected_fresh_secs",
    "fetch_gain",
    "gain_unchecked",
    "known_gain",
    "rate_floor",
    "recent_rate",
    "recent_rate_unchecked",
]


def change_probability(rate: float, elapsed_secs: float) -> float:
    r"""Return :math:`1 - e^{-\lambda a}`: the chance a Poisson page changed within ``elapsed_secs``.

    Cho & Garcia-Molina (SIGMOD 2000), Section 2: changes are a Poisson process of rate
    :math:`\lambda`, so the copy fetched :math:`a` ago is still fresh with probability
    :math:`e^{-\lambda a}`.

    >>> round(change_probability(1 / 86400, 86400), 6)
    0.632121
    >>> change_probability(0.0, 1e9), change_probability(1.0, 0.0)
    (0.0, 0.0)
    """
    lam = check_non_negative("rate", rate)
    a = check_non_negative("elapsed_secs", elapsed_secs)
    return -math.expm1(-lam * a)


def expected_fresh_secs(rate: float, horizon_secs: float) -> float:
    r"""Return :math:`(1 - e^{-\lambda H})/\lambda`: expected fresh time within ``horizon_secs``.

    Cho & Garcia-Molina (SIGMOD 2000), Section 2: a copy fetched now stays fresh until
    the next change, after an exponential time of mean :math:`1/\lambda`; cut at the next
    fetch :math:`H` later, its expected fresh time is :math:`\int_0^H e^{-\lambda t}\,dt`.
    It tends to :math:`H` as :math:`\lambda \to 0` and to :math:`1/\lambda` as
    :math:`H \to \infty`, and is below both.

    >>> round(expected_fresh_secs(1 / 86400, 86400) / 86400, 6)
    0.632121
    >>> expected_fresh_secs(0.0, 3600.0)
    3600.0
    """
    lam = check_non_negative("rate", rate)
    h = check_non_negative("horizon_secs", horizon_secs)
    x = lam * h
    if x < 1e-9:
        return h * (1.0 - x / 2.0)
    return -math.expm1(-x) / lam


def fetch_gain(rate: float, elapsed_secs: float, horizon_secs: float) -> float:
    r"""Return :math:`G = (1 - e^{-\lambda a})(1 - e^{-\lambda H})/\lambda`, in seconds.

    The expected fresh time a fetch buys (module docstring): the page changed since its
    last fetch ``elapsed_secs`` ago (:func:`change_probability`) times the fresh time until
    its next change or its next fetch ``horizon_secs`` ahead (:func:`expected_fresh_secs`).
    Increasing in the age, bounded by :math:`1/\lambda`, by :math:`H` and by
    :math:`\lambda a H`.

    A page changing once a day, fetched a day ago and again in a day, against one changing
    every hour (hopeless on a daily budget: worth at most an hour):

    >>> round(fetch_gain(1 / 86400, 86400, 86400) / 3600, 2)
    9.59
    >>> round(fetch_gain(1 / 3600, 86400, 86400) / 3600, 2)
    1.0
    """
    lam = check_non_negative("rate", rate)
    a = check_non_negative("elapsed_secs", elapsed_secs)
    h = check_non_negative("horizon_secs", horizon_secs)
    return gain_unchecked(lam, a, h)


def gain_unchecked(rate: float, elapsed_secs: float, horizon_secs: float) -> float:
    """:func:`fetch_gain` for arguments already known to be valid (no checks: the
    scheduler scores every candidate record of a cycle with it).

    >>> gain_unchecked(0.0, 10.0, 5.0)
    0.0
    """
    x = rate * horizon_secs
    fresh = horizon_secs * (1.0 - x / 2.0) if x < 1e-9 else -math.expm1(-x) / rate
    return -math.expm1(-rate * elapsed_secs) * fresh


def known_gain(
    p_changed: float,
    rate: float,
    horizon_secs: float,
    next_change_secs: float | None = None,
    p_next: float = 1.0,
) -> float:
    r"""Return the gain of a fetch when the provider tells more than a visit does.

    Xu et al. (seed ``xu-content-provider-friendly-crawler``, Section 4.1 and eq. 4-7):
    a smart provider's known past update makes the stale copy certain
    (``p_changed = 1``, the role of :math:`S_{past}^{known}`, eq. 4); a super provider's
    announced update ``next_change_secs`` from now, real with probability ``p_next``
    (:math:`P_{update}`, eq. 6), cuts the fresh time the fetch can buy: fetched just
    before an announced change, the copy is stale again at once. Hence Xu et al.'s slot
    rule ("the first available crawling slot after the future update time"): the gain is

    .. math::

        p_{changed}\Big(p\,\frac{1 - e^{-\lambda\min(H, d)}}{\lambda}
            + (1 - p)\,\frac{1 - e^{-\lambda H}}{\lambda}\Big)

    with :math:`d` the time to the announced change (``None``: nothing announced).

    >>> known_gain(1.0, 0.0, 86400.0, next_change_secs=600.0)
    600.0
    >>> known_gain(1.0, 0.0, 86400.0, next_change_secs=600.0, p_next=0.5)
    43500.0
    >>> known_gain(0.0, 1e-5, 86400.0)
    0.0
    """
    p = check_probability("p_changed", p_changed)
    q = check_probability("p_next", p_next)
    full = expected_fresh_secs(rate, horizon_secs)
    if next_change_secs is None:
        return p * full
    d = check_non_negative("next_change_secs", next_change_secs)
    cut = expected_fresh_secs(rate, min(d, check_non_negative("horizon_secs", horizon_secs)))
    return p * (q * cut + (1.0 - q) * full)


def recent_rate(p_c: float, visits: int, decay: float, interval_secs: float) -> float:
    r"""Return a change rate (per second) from the decayed degree of success.

    Cho & Garcia-Molina's improved estimator (2003, "Estimation of frequency: existence
    of change"), :math:`\hat r = -\ln\frac{\bar X + 0.5}{n + 0.5}` per visit interval,
    applied to the *decayed* counts the refresh rule keeps: after ``visits`` visits with
    per-visit decay ``decay`` the decayed visit count is :math:`n = (1 - d^{v})/(1 - d)`
    (``visits`` when ``d = 1``) and the unchanged ones :math:`\bar X = n(1 - p_c)`, with
    :math:`p_c` Sharma & Dixit's degree of success (seed
    ``sharma-dixit-self-adjusting-refresh-time``, Section III). Divided by the mean
    interval between visits. Unlike the lifetime estimate it follows a page that slows
    down or wakes up within about a half-life of visits. 0.0 with no visits.

    >>> round(recent_rate(0.3, 10, 1.0, 1.0), 6)
    0.336472
    >>> recent_rate(0.5, 0, 0.9, 86400.0)
    0.0
    """
    pc = check_probability("p_c", p_c)
    d = check_probability("decay", decay)
    if d == 0.0:
        raise ConfigError(f"decay ({decay!r}) must be within (0, 1].")
    if isinstance(visits, bool) or not isinstance(visits, int) or visits < 0:
        raise ConfigError(f"visits ({visits!r}) must be an int, 0 or more.")
    interval = check_positive("interval_secs", interval_secs)
    return recent_rate_unchecked(pc, visits, d, interval)


def recent_rate_unchecked(p_c: float, visits: int, decay: float, interval_secs: float) -> float:
    """:func:`recent_rate` for arguments already known to be valid (no checks).

    >>> recent_rate_unchecked(1.0, 1, 1.0, 2.0) == recent_rate(1.0, 1, 1.0, 2.0)
    True
    """
    if visits <= 0:
        return 0.0
    d = decay
    n = float(visits) if d >= 1.0 else -math.expm1(visits * math.log(d)) / (1.0 - d)
    return max(0.0, -math.log((n * (1.0 - p_c) + 0.5) / (n + 0.5))) / interval_secs


def rate_floor(rate: float, watched_secs: float) -> float:
    r"""Return ``rate``, but at least half a change over the ``watched_secs`` observed.

    The +0.5 of Cho & Garcia-Molina's improved estimator as a prior: a page seen for
    :math:`T` seconds without a change is taken to change at :math:`0.5/T`, so it keeps a
    gain that grows with its age and is fetched ever more rarely, never never.

    >>> rate_floor(0.0, 86400.0) * 86400.0
    0.5
    >>> rate_floor(1e-3, 86400.0)
    0.001
    """
    lam = check_non_negative("rate", rate)
    watched = check_positive("watched_secs", watched_secs)
    return max(lam, 0.5 / watched)
