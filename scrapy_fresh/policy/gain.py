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
followed within a few visits) and never goes below half a change over the time those
decayed counts cover (:func:`rate_floor`, the +0.5 of the same estimator): a page quiet
for years keeps the rate its last dozen quiet visits allow, not one its whole quiet past
would, so it is still fetched, at an interval that stops growing.

Pure: standard library only, no clock (``now`` is never read; times are arguments).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import check_non_negative, check_positive, check_probability
from scrapy_fresh.policy.refresh import decayed_visits

__all__ = [
    "announced_fresh_secs",
    "announced_survival",
    "announced_unchecked",
    "change_probability",
    "expected_fresh_secs",
    "fetch_gain",
    "gain_unchecked",
    "known_gain",
    "rate_floor",
    "recent_rate",
    "recent_rate_unchecked",
    "recent_window_secs",
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


def announced_fresh_secs(
    rate: float,
    horizon_secs: float,
    announced: Iterable[tuple[float, float]] = (),
    coverage: float = 0.0,
    known_secs: float = 0.0,
) -> float:
    r"""Return the expected fresh time (seconds, up to ``horizon_secs``) of a copy fetched
    now from a provider that announces its changes ahead.

    Xu et al. (seed ``xu-content-provider-friendly-crawler``): a super provider publishes
    its future updates, each with the probability :math:`P_{update}` that it happens
    (eq. 6-7), and the crawler takes "the first available crawling slot after the future
    update time" (Section 4.1), so a fetch buys the time until the next real change. The
    ``announced`` updates are ``(d_i, p_i)``: ``d_i`` seconds from now, real with
    probability :math:`p_i`; the announcements are known ``known_secs`` ahead (at least up
    to the latest one, :math:`W`); ``coverage`` :math:`c` is the share of the page's
    changes its provider announces. Within :math:`W` only the unannounced changes can
    come unexpectedly, a Poisson process of rate :math:`(1 - c)\lambda`; beyond it nothing
    is known and changes come at the page's full rate :math:`\lambda` (Cho &
    Garcia-Molina, SIGMOD 2000, Section 2). The copy is still fresh at :math:`t` with
    probability (:func:`announced_survival`)

    .. math::

        S(t) = e^{-(1 - c)\lambda \min(t, W)} \prod_{d_i \le t} (1 - p_i)
            \; e^{-\lambda \max(0,\, t - W)}

    and the result is :math:`\int_0^H S(t)\,dt` with :math:`H` = ``horizon_secs`` (the
    next fetch takes over then).

    With every change announced exactly (:math:`c = p_i = 1`) it is the time to the next
    announced change, or :math:`W + (1 - e^{-\lambda(H - W)})/\lambda` with none: a fast
    page known to be quiet for 20 hours is worth 20 hours, not about :math:`1/\lambda`.
    With :math:`c = 0` and nothing announced it is Cho & Garcia-Molina's
    :math:`(1 - e^{-\lambda H})/\lambda` (:func:`expected_fresh_secs`), and with
    :math:`c = 0` and one announcement, the fresh time of :func:`known_gain`.

    >>> hour = 3600.0
    >>> announced_fresh_secs(1 / hour, 48 * hour, [(20 * hour, 1.0)], 1.0) / hour
    20.0
    >>> round(announced_fresh_secs(1 / hour, 48 * hour) / hour, 6)  # Cho: 1/lambda
    1.0
    >>> announced_fresh_secs(0.0, 10.0, [(4.0, 0.5)], 0.5, 8.0)  # 4 + 0.5 * 6
    7.0
    """
    lam, h, c, known, points = _check_announced(
        rate, horizon_secs, announced, coverage, known_secs
    )
    return announced_unchecked(lam, h, points, c, known)[1]


def announced_survival(
    rate: float,
    secs: float,
    announced: Iterable[tuple[float, float]] = (),
    coverage: float = 0.0,
    known_secs: float = 0.0,
) -> float:
    r"""Return :math:`S(t)` of :func:`announced_fresh_secs` at ``secs``: the chance that no
    change comes within ``secs``.

    Looking back it is the chance that a page is still unchanged ``secs`` after its last
    fetch, given the announced updates that have passed since (Xu et al.'s
    :math:`P_{update}`, eq. 6): one minus it is the :math:`p_{changed}` of
    :func:`known_gain`. With :math:`c = 0` and nothing announced it is :math:`e^{-\lambda
    t}` (:func:`change_probability`).

    >>> announced_survival(1e-3, 100.0, [(50.0, 1.0)], 1.0)
    0.0
    >>> announced_survival(1e-3, 100.0, [(50.0, 0.5)], 1.0, known_secs=100.0)
    0.5
    >>> round(announced_survival(1e-3, 100.0, [(50.0, 0.5)], 1.0), 4)  # unknown after 50 s
    0.4756
    >>> round(announced_survival(1e-3, 100.0), 6) == round(math.exp(-0.1), 6)
    True
    """
    lam, t, c, known, points = _check_announced(rate, secs, announced, coverage, known_secs)
    return announced_unchecked(lam, t, points, c, known)[0]


def _check_announced(
    rate: float,
    secs: float,
    announced: Iterable[tuple[float, float]],
    coverage: float,
    known_secs: float,
) -> tuple[float, float, float, float, list[tuple[float, float]]]:
    points = sorted(
        (check_non_negative("announced time", d), check_probability("announced probability", p))
        for d, p in announced
    )
    return (
        check_non_negative("rate", rate),
        check_non_negative("secs", secs),
        check_probability("coverage", coverage),
        check_non_negative("known_secs", known_secs),
        points,
    )


def announced_unchecked(
    rate: float,
    secs: float,
    points: list[tuple[float, float]],
    coverage: float,
    known_secs: float,
) -> tuple[float, float]:
    """:func:`announced_survival` and :func:`announced_fresh_secs` at once, for valid
    arguments with ``points`` sorted (no checks: the scheduler scores every candidate
    super record of a cycle with it).

    >>> announced_unchecked(0.0, 10.0, [(4.0, 0.5)], 0.5, 8.0)
    (0.5, 7.0)
    """
    known = max(known_secs, points[-1][0]) if points else known_secs
    inside = (1.0 - coverage) * rate  # the changes nobody announced
    total, alive, t = 0.0, 1.0, 0.0
    for d, p in points:
        if d > secs:
            break
        total += alive * _fresh_for(inside, d - t)
        alive *= math.exp(-inside * (d - t)) * (1.0 - p)
        t = d
        if alive <= 0.0:
            return 0.0, total
    end = min(known, secs)
    if end > t:
        total += alive * _fresh_for(inside, end - t)
        alive *= math.exp(-inside * (end - t))
        t = end
    if secs > t:
        total += alive * _fresh_for(rate, secs - t)
        alive *= math.exp(-rate * (secs - t))
    return alive, total


def _fresh_for(rate: float, secs: float) -> float:
    r""":math:`\int_0^x e^{-rt}\,dt` (no checks)."""
    x = rate * secs
    return secs * (1.0 - x / 2.0) if x < 1e-9 else -math.expm1(-x) / rate


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
    n = decayed_visits(visits, decay)
    return max(0.0, -math.log((n * (1.0 - p_c) + 0.5) / (n + 0.5))) / interval_secs


def rate_floor(rate: float, watched_secs: float) -> float:
    r"""Return ``rate``, but at least half a change over the ``watched_secs`` observed.

    The +0.5 of Cho & Garcia-Molina's improved estimator as a prior: a page seen for
    :math:`T` seconds without a change is taken to change at :math:`0.5/T`, so it keeps a
    gain that grows with its age and is fetched, never never. For :func:`recent_rate`,
    :math:`T` is the time its decayed counts cover (:func:`recent_window_secs`), not the
    page's whole past: the estimate rests on about :math:`1/(1 - d)` visits, and so does
    what it may conclude from their silence.

    >>> rate_floor(0.0, 86400.0) * 86400.0
    0.5
    >>> rate_floor(1e-3, 86400.0)
    0.001
    """
    lam = check_non_negative("rate", rate)
    watched = check_positive("watched_secs", watched_secs)
    return max(lam, 0.5 / watched)


def recent_window_secs(
    visits: int, decay: float, interval_secs: float, watched_secs: float
) -> float:
    r"""Return the time :func:`recent_rate`'s decayed counts cover: :math:`n I`.

    ``visits`` judged visits ``interval_secs`` apart on average, with per-visit decay
    ``decay``, weigh as :math:`n = (1 - d^{v})/(1 - d)` visits
    (:func:`~scrapy_fresh.policy.refresh.decayed_visits`, Sharma & Dixit's decayed degree
    of success): the estimate rests on the last :math:`n I` seconds, at most the
    ``watched_secs`` the page was watched (all of it before any judged visit). The time
    :func:`rate_floor` spreads its half change over.

    A page watched for 20 years, visited every 10 days: its decayed counts cover about
    149 days, and a quiet page's rate floor is half a change over those, not over 20 years.

    >>> day = 86400.0
    >>> round(recent_window_secs(730, 0.5 ** 0.1, 10 * day, 7300 * day) / day)
    149
    >>> recent_window_secs(0, 0.9, 10 * day, 3 * day) / day
    3.0
    """
    if isinstance(visits, bool) or not isinstance(visits, int) or visits < 0:
        raise ConfigError(f"visits ({visits!r}) must be an int, 0 or more.")
    d = check_probability("decay", decay)
    if d == 0.0:
        raise ConfigError(f"decay ({decay!r}) must be within (0, 1].")
    interval = check_positive("interval_secs", interval_secs)
    watched = check_positive("watched_secs", watched_secs)
    if visits == 0:
        return watched
    return min(watched, decayed_visits(visits, d) * interval)
