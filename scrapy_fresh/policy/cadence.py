r"""How far ahead a cycle run looks: records due before the next run is nearer.

In cycle mode (:setting:`FRESH_MODE` ``"cycle"``) the crawl runs now and then -- from
cron, say -- and fetches what is due. A record due a minute after a run starts would wait
a whole period :math:`P` for the next run. Nutch's generator has the same problem and
lets the operator add days to the current time (``generate -adddays``); we measure the
period instead.

Fetching a record due :math:`\delta` from now makes it :math:`\delta` early (its refresh
time shortened by that much); leaving it makes it :math:`P - \delta` late (that long
possibly stale). The nearer of the two wins: a run takes every record due before

.. math::

    t_{now} + P/2 \qquad\text{(rounding the due time to the nearest run)}

so no record is more than half a period from its refresh time, instead of up to a
whole period late. :math:`P` is a moving average, in log space, of the gaps between run
starts (:func:`next_period`), like the site refresh time of new URLs (Sharma & Dixit's
cold start, seed ``sharma-dixit-self-adjusting-refresh-time``): one run started by hand
between two cron runs moves it part of the way only.

Pure: standard library only, no clock.
"""

from __future__ import annotations

import math

from scrapy_fresh.policy._validate import check_non_negative, check_positive

__all__ = ["PERIOD_WEIGHT", "lookahead", "next_period"]

#: Weight of the newest gap in the log-space moving average of the period.
PERIOD_WEIGHT = 0.5


def next_period(previous: float | None, gap_secs: float, weight: float = PERIOD_WEIGHT) -> float:
    r"""Return the new estimate of the time between runs after a gap of ``gap_secs``.

    :math:`P' = P^{1-w}\,g^{w}` (a moving average of :math:`\ln g`); the first gap is
    taken as it is.

    >>> next_period(None, 3600.0)
    3600.0
    >>> round(next_period(3600.0, 4 * 3600.0))  # halfway between, in log space
    7200
    """
    gap = check_positive("gap_secs", gap_secs)
    if previous is None:
        return gap
    old = check_positive("previous", previous)
    w = check_non_negative("weight", weight)
    if w > 1.0:
        raise ValueError(f"weight ({weight!r}) must be within [0, 1].")
    return math.exp((1.0 - w) * math.log(old) + w * math.log(gap))


def lookahead(period_secs: float | None) -> float:
    """Return how far past now a cycle run takes records as due: half the period
    between runs (module docstring), 0 while the period is unknown.

    >>> lookahead(6 * 3600.0) / 3600.0
    3.0
    >>> lookahead(None)
    0.0
    """
    if period_secs is None:
        return 0.0
    return check_positive("period_secs", period_secs) / 2.0
