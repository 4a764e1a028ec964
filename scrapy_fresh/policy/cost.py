r"""Cost-aware degree of success: Sharma & Dixit's refresh rule when a check is cheap.

Seed ``sharma-dixit-self-adjusting-refresh-time`` (Section III, eq. 1-2) adjusts a page's
refresh time so that its degree of success :math:`p_c` = changes / visits stays within
:math:`[p_l, p_g]`. Every visit there is a full download, so :math:`p_c` is also the
share of the crawl's *bytes* that brought something new, and the band bounds the
downloads wasted per change found: between :math:`(1 - p_g)/p_g` and
:math:`(1 - p_l)/p_l`.

A page whose host honours validators can be checked for much less: a conditional GET
answered ``304 Not Modified`` (or a HEAD probe showing the same validators) costs a
share :math:`c` of a full download -- about 0.015 for a 304 against an 11 kB page. A
visit that finds a change still costs a full download. Measured in bytes, the share of
the effort that brought something new is then

.. math::

    \tilde p = \frac{p_c}{p_c + c\,(1 - p_c)} \qquad\text{(cost-weighted degree of success)}

which is :math:`p_c` itself for :math:`c = 1` (the paper's case). Eq. 1-2 applied to
:math:`\tilde p` with the paper's thresholds keep the *bytes* wasted per change found
within the paper's band; the refresh time settles where the raw :math:`p_c` lies in

.. math::

    \Big[\frac{c\,p_l}{1 - p_l + c\,p_l},\ \frac{c\,p_g}{1 - p_g + c\,p_g}\Big]
    \qquad\text{(}\tilde p = p_l\text{ and }\tilde p = p_g\text{ solved for }p_c\text{)}

so a cheap page is re-checked roughly :math:`1/c` times as often as a page that must
be downloaded to be checked.

The step follows the cost too (:func:`cost_aware_refresh`). Eq. 1 multiplies the refresh
time by :math:`f = t_{n+1}/t_n` once per visit, i.e. once per full download. A visit
that cost :math:`w` full downloads (:math:`w = c` for a check that found nothing,
:math:`w = 1` for a download) multiplies it by :math:`f^{\,w}`: the refresh time moves
by the same amount per byte spent as in the paper. Without this, a degree of success
estimated from a handful of cheap checks (0 until a change shows) would double the
interval after every 304 -- exactly when a check is cheapest -- and a page would drift
away from the frequent checks the band asks for long before there is evidence that it
is quiet; with it, the 1/c cheap checks that replace one full visit together move the
refresh time as far as that visit would have. For a page changing as a Poisson process of rate
:math:`\lambda`, a visit after :math:`t` finds a change with :math:`p = 1 - e^{-\lambda t}`,
so the settled interval shrinks by :math:`\ln(1 - p')/\ln(1 - p)` (about :math:`p'/p`),
see :func:`poisson_interval_ratio`. Pages without a cheap check keep :math:`c = 1`: the
paper's rule, unchanged.

:math:`c` is measured (bytes of the cheap answers over the full downloads of the same
pages, :func:`check_cost_ratio`) but never taken below a floor: a check is still a
request, with a politeness slot and server work of its own.

Everything here is pure: no clock, no I/O, standard library only.
"""

from __future__ import annotations

import math

from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.policy._validate import (
    check_count,
    check_finite,
    check_positive,
    check_probability,
)
from scrapy_fresh.policy.refresh import DEFAULT_P_G, DEFAULT_P_L, clamp_refresh, next_refresh_time

__all__ = [
    "check_cost_ratio",
    "cost_aware_band",
    "cost_aware_refresh",
    "cost_weighted_success",
    "poisson_interval_ratio",
]


def _check_cost(name: str, value: object) -> float:
    cost = check_finite(name, value)
    if not 0.0 < cost <= 1.0:
        raise ConfigError(
            f"{name} ({value!r}) must be within (0, 1]: the share of a full download "
            "that a check finding no change costs."
        )
    return cost


def cost_weighted_success(p_c: float, check_cost: float) -> float:
    r"""Return :math:`\tilde p = p_c / (p_c + c(1 - p_c))`, the share of the bytes spent
    on a page that brought in a change.

    Seed ``sharma-dixit-self-adjusting-refresh-time``, Section III (:math:`p_c`), weighted
    by what a visit costs: a visit that finds a change costs a full download, one that
    finds none costs ``check_cost`` of it. Feed the result to eq. 1-2
    (:func:`~scrapy_fresh.policy.refresh.adjust_refresh`) in place of :math:`p_c`.

    :param p_c: degree of success, within [0, 1].
    :param check_cost: share of a full download a check finding no change costs, within
        (0, 1]; 1 (no cheap check) returns ``p_c`` unchanged.

    >>> cost_weighted_success(0.6, 1.0)
    0.6
    >>> round(cost_weighted_success(0.05, 0.05), 4)  # 1 change in 20 cheap checks
    0.5128
    >>> cost_weighted_success(0.0, 0.01), cost_weighted_success(1.0, 0.01)
    (0.0, 1.0)
    """
    p = check_probability("p_c", p_c)
    c = _check_cost("check_cost", check_cost)
    if p <= 0.0:
        return 0.0
    return min(1.0, p / (p + c * (1.0 - p)))


def cost_aware_band(p_l: float, p_g: float, check_cost: float) -> tuple[float, float]:
    r"""Return the band of raw :math:`p_c` within which eq. 1-2 on :math:`\tilde p` keep
    the refresh time: :math:`c\,p / (1 - p + c\,p)` for :math:`p = p_l` and :math:`p_g`.

    The inverse of :func:`cost_weighted_success` at the paper's thresholds (seed
    ``sharma-dixit-self-adjusting-refresh-time``, eq. 2).

    >>> cost_aware_band(0.3, 0.7, 1.0)
    (0.3, 0.7)
    >>> [round(x, 4) for x in cost_aware_band(0.3, 0.7, 0.05)]
    [0.021, 0.1045]
    """
    low = check_probability("p_l", p_l)
    high = check_probability("p_g", p_g)
    if not low < high:
        raise ConfigError(f"p_l ({p_l!r}) must be lower than p_g ({p_g!r}).")
    c = _check_cost("check_cost", check_cost)

    def raw(p: float) -> float:
        return c * p / (1.0 - p + c * p) if p < 1.0 else 1.0

    return raw(low), raw(high)


def check_cost_ratio(check_bytes: float, full_bytes: float, *, floor: float) -> float | None:
    """Return the measured cost of a cheap check as a share of a full download, at least
    ``floor``; None before anything was measured.

    ``check_bytes`` adds up the bytes of the answers to checks that found no change (304s,
    HEAD answers); ``full_bytes`` what full downloads of the same pages would have cost.

    :param floor: the least a check counts for, within (0, 1]: a check is still a request.

    >>> check_cost_ratio(300, 20_000, floor=0.01)
    0.015
    >>> check_cost_ratio(300, 20_000, floor=0.05)
    0.05
    >>> check_cost_ratio(0, 0, floor=0.05) is None
    True
    """
    spent = check_count("check_bytes", check_bytes)
    full = check_count("full_bytes", full_bytes)
    low = _check_cost("floor", floor)
    if full <= 0.0:
        return None
    return min(1.0, max(low, spent / full))


def poisson_interval_ratio(p: float, p_cheap: float) -> float:
    r"""Return :math:`\ln(1 - p')/\ln(1 - p)`: how much shorter the interval at which a
    Poisson page is found changed with probability :math:`p'` is than the one for :math:`p`.

    With :math:`p = 1 - e^{-\lambda t}` (Cho & Garcia-Molina's Poisson model of change,
    seed ``clifton-web-crawling-lecture``), the interval for a given :math:`p` is
    :math:`-\ln(1 - p)/\lambda`, whatever :math:`\lambda`. Used to explain
    :func:`cost_aware_band` in interval terms.

    >>> round(poisson_interval_ratio(0.3, 0.021), 4)
    0.0595
    >>> poisson_interval_ratio(0.5, 0.5)
    1.0
    """
    full = check_probability("p", p)
    cheap = check_probability("p_cheap", p_cheap)
    if not 0.0 < full < 1.0 or not 0.0 <= cheap < 1.0:
        raise ConfigError(f"p ({p!r}) must be within (0, 1) and p_cheap ({p_cheap!r}) in [0, 1).")
    return math.log1p(-cheap) / math.log1p(-full)


def cost_aware_refresh(
    t_n: float,
    p_c: float,
    p_l: float = DEFAULT_P_L,
    p_g: float = DEFAULT_P_G,
    *,
    check_cost: float,
    visit_cost: float,
    min_secs: float,
    max_secs: float,
) -> float:
    r"""Return the next refresh time: Sharma & Dixit eq. 1-2 on the cost-weighted degree
    of success, stepped in proportion to what the visit cost, clamped.

    Seed ``sharma-dixit-self-adjusting-refresh-time``, eq. 1-2, with
    :math:`\tilde p` = :func:`cost_weighted_success` in place of :math:`p_c` and the
    step :math:`f = t'/t_n` (:math:`t'` from eq. 1-2, at least ``min_secs``) taken to
    the power ``visit_cost``: :math:`t_{n+1} = t_n f^{\,w}`, then clamped to
    ``[min_secs, max_secs]``. With ``check_cost = visit_cost = 1`` this is exactly
    :func:`~scrapy_fresh.policy.refresh.adjust_refresh`.

    :param t_n: current refresh time (seconds, > 0).
    :param p_c: degree of success (changes / visits, possibly decayed), within [0, 1].
    :param check_cost: share of a full download a check of this page that finds no
        change costs, within (0, 1].
    :param visit_cost: what this visit cost, in full downloads, within (0, 1]: the
        check cost for a visit that ended in a 304 (or an unchanged HEAD answer), 1 for
        a visit that downloaded the page.

    A 304 on a page whose checks cost 5% of a download, nothing seen changing yet: the
    paper would double the refresh time; here it grows by :math:`2^{0.05}`.

    >>> round(cost_aware_refresh(3600, 0.0, check_cost=0.05, visit_cost=0.05,
    ...                          min_secs=60, max_secs=86400), 1)
    3727.0
    >>> cost_aware_refresh(3600, 0.0, check_cost=1.0, visit_cost=1.0, min_secs=60,
    ...                    max_secs=86400)
    7200.0
    >>> round(cost_aware_refresh(3600, 0.2, check_cost=0.05, visit_cost=1.0,
    ...                          min_secs=60, max_secs=86400), 1)  # a change came in
    2914.3
    """
    t = check_positive("t_n", t_n)
    w = _check_cost("visit_cost", visit_cost)
    low = check_positive("min_secs", min_secs)
    target = next_refresh_time(t, cost_weighted_success(p_c, check_cost), p_l, p_g)
    if w == 1.0:
        return clamp_refresh(target, low, max_secs)
    step = max(target, low) / t
    return clamp_refresh(t * step**w, low, max_secs)
