r"""Priority of a due record: Xu et al.'s provider-aware scores applied to a PageState.

Seed ``xu-content-provider-friendly-crawler``, Section 4.2 and Table 1 (by the text's
equation numbers): normal -> :math:`S_{past}^{unknown}` (eq. 5), smart ->
:math:`S_{past}^{known}` (eq. 4) over its known past updates, super -> :math:`S_{unified}`
(eq. 7) of its next announced update, or eq. 4 when none is announced.

A crawler sees no user accesses, so the page's ``access_count`` is read as its
popularity: accesses per day (1 unless a spider says otherwise, ``meta["fresh_accesses"]``),
spread evenly over time. Durations are measured in ``time_unit`` seconds (one hour by
default), the unit that makes :math:`\beta` of eq. 7 balance a duration against the
unitless :math:`S_{future}`; the paper leaves it open.
"""

from __future__ import annotations

from dataclasses import dataclass

from scrapy_fresh.policy.priority import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_C,
    DEFAULT_S,
    future_score,
    past_known_score,
    past_unknown_score,
    spread_accesses,
    unified_score,
)
from scrapy_fresh.store.base import PageState, Provider

__all__ = ["ScoreParams", "priority_score"]

_DAY = 86400.0


@dataclass(frozen=True)
class ScoreParams:
    """Constants of the scores (Xu et al. Table 2 defaults)."""

    alpha: float = DEFAULT_ALPHA
    beta: float = DEFAULT_BETA
    s: int = DEFAULT_S
    c: float = DEFAULT_C
    time_unit: float = 3600.0
    #: At most this many evenly spread accesses are simulated for eq. 4.
    max_accesses: int = 64


def priority_score(state: PageState, now: float, params: ScoreParams = ScoreParams()) -> float:
    """Return the priority of re-crawling ``state`` at ``now`` (higher goes first).

    A never-crawled record scores from its request priority (the discovery stream is
    ordered like Scrapy orders new requests).

    >>> from scrapy_fresh.store.base import PageState
    >>> old = PageState("k", "http://a/", last_crawl=0.0, access_count=1)
    >>> priority_score(old, now=7200.0) > priority_score(old, now=3600.0)
    True
    """
    if state.last_crawl is None:
        return float(state.request.get("priority", 0) or 0)
    last = min(state.last_crawl, now)
    elapsed = now - last
    weight = max(float(state.access_count), 1.0)
    accesses = weight * elapsed / _DAY
    if state.provider is Provider.NORMAL:
        return past_unknown_score(last, accesses, now, c=params.c, time_unit=params.time_unit)
    count = min(params.max_accesses, max(1, round(accesses)))
    access_times = spread_accesses(count, last, now)
    past = past_known_score(last, state.past_updates, access_times, now,
                            time_unit=params.time_unit)
    if state.provider is Provider.SMART:
        return past
    upcoming = [(t, p) for t, p in state.future_updates if t <= now]
    if not upcoming:
        return past
    p_update = max(p for _, p in upcoming)
    future = future_score(p_update, [weight] * params.s, alpha=params.alpha, s=params.s)
    return unified_score(past, future, beta=params.beta)
