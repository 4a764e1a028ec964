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

That is the ``"xu"`` rule. The default, ``"gain"`` (:setting:`FRESH_PRIORITY_SCORE`), ranks
a re-crawl by the expected fresh time the fetch buys (:mod:`scrapy_fresh.policy.gain`,
after Cho & Garcia-Molina), times the page's popularity: under a crawl budget the
pages that change faster than the budget can follow score low, which Xu et al.'s
scores, growing with the time since the last crawl alone, cannot see. Provider
knowledge enters the same way: a known past update makes the change certain (eq. 4's
role) and the announced ones (eq. 6's update times and :math:`P_{update}`, the slot rule
of Section 4.1) say how long the fetched copy stays fresh. :func:`~scrapy_fresh.frontier.planner.plan_cycle` is how a cycle
spends its budget with these scores (``FreshScheduler`` and the simulator share it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scrapy_fresh.policy.gain import (
    announced_unchecked,
    gain_unchecked,
    known_gain,
    recent_rate_unchecked,
)
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
from scrapy_fresh.policy.refresh import DEFAULT_DECAY, decayed_visits
from scrapy_fresh.store.base import PageState, Provider

__all__ = ["SCORE_RULES", "ScoreParams", "gain_score", "priority_score"]

#: The re-crawl scores :setting:`FRESH_PRIORITY_SCORE` may name.
SCORE_RULES = ("gain", "xu")

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
    #: Re-crawl score: ``"gain"`` (:func:`gain_score`) or ``"xu"`` (Xu et al. alone).
    rule: str = "gain"
    #: Per-visit decay of the degree of success (the refresh rule's), for the rate.
    decay: float = DEFAULT_DECAY
    #: A cycle with budget left also takes records not due yet, best score first.
    fill: bool = True
    #: Super providers announce their changes this long ahead (seconds): a super
    #: record's announcements are complete up to ``now`` plus this, and were so since its
    #: last crawl (0: only up to its latest announced time).
    #: See :func:`~scrapy_fresh.policy.gain.announced_fresh_secs`.
    announce_secs: float = 0.0
    #: The share of their changes super providers announce, for a record that holds no
    #: announcement (else the mean :math:`P_{update}` of those it holds).
    announce_share: float = 0.0

    def __post_init__(self) -> None:
        if self.rule not in SCORE_RULES:
            raise ValueError(f"rule ({self.rule!r}) must be one of {', '.join(SCORE_RULES)}.")
        if not 0.0 < self.decay <= 1.0:
            raise ValueError(f"decay ({self.decay!r}) must be within (0, 1].")
        if not self.announce_secs >= 0.0:
            raise ValueError(f"announce_secs ({self.announce_secs!r}) must be 0 or more.")
        if not 0.0 <= self.announce_share <= 1.0:
            raise ValueError(f"announce_share ({self.announce_share!r}) must be within [0, 1].")


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
    if params.rule == "gain":
        return gain_score(state, now, params)
    last = min(state.last_crawl, now)
    elapsed = now - last
    weight = max(float(state.access_count), 1.0)
    accesses = weight * elapsed / _DAY
    if state.provider is Provider.NORMAL:
        return past_unknown_score(last, accesses, now, c=params.c, time_unit=params.time_unit)
    count = min(params.max_accesses, max(1, round(accesses)))
    access_times = spread_accesses(count, last, now)
    past = past_known_score(
        last, state.past_updates, access_times, now, time_unit=params.time_unit
    )
    if state.provider is Provider.SMART:
        return past
    upcoming = [(t, p) for t, p in state.future_updates if t <= now]
    if not upcoming:
        return past
    p_update = max(p for _, p in upcoming)
    future = future_score(p_update, [weight] * params.s, alpha=params.alpha, s=params.s)
    return unified_score(past, future, beta=params.beta)


def gain_score(state: PageState, now: float, params: ScoreParams = ScoreParams()) -> float:
    r"""Return the expected fresh time (seconds) a fetch of ``state`` at ``now`` buys,
    times its popularity (accesses per day, at least 1).

    :func:`scrapy_fresh.policy.gain.fetch_gain` :math:`(1 - e^{-\lambda a})(1 -
    e^{-\lambda H})/\lambda` with :math:`a` the time since the last crawl, :math:`H` the
    page's own mean interval between visits (what the budget has allowed it so far: the
    fresh time a fetch buys ends at the next fetch) and :math:`\lambda` the rate of its
    recent visits (:func:`~scrapy_fresh.policy.gain.recent_rate` on the decayed p_c, at
    least half a change over the time those decayed visits cover,
    :func:`~scrapy_fresh.policy.gain.rate_floor` over
    :func:`~scrapy_fresh.policy.gain.recent_window_secs`).

    Smart and super pages (Xu et al. Table 1) use what their provider said
    (:func:`~scrapy_fresh.policy.gain.known_gain`): a known update after the last crawl
    (or an announced one whose time has passed, with its :math:`P_{update}`) makes the
    change certain (probable). A super page's fresh time is the time to its next real
    change given its announcements
    (:func:`~scrapy_fresh.policy.gain.announced_fresh_secs`: within the known window
    only unannounced changes surprise), and the chance it changed since the last crawl
    comes from the same survival over the announcements that have passed
    (:attr:`ScoreParams.announce_secs`, :attr:`ScoreParams.announce_share`).

    >>> from scrapy_fresh.store.base import PageState
    >>> day = 86400.0
    >>> calm = PageState("a", "http://a/", first_seen=0.0, last_crawl=9 * day, visits=10,
    ...                  p_c=0.5)
    >>> busy = PageState("b", "http://b/", first_seen=0.0, last_crawl=9 * day, visits=10,
    ...                  p_c=1.0)
    >>> gain_score(busy, 10 * day) < gain_score(calm, 10 * day)  # busy: soon stale again
    True
    >>> gain_score(calm, 10 * day) < gain_score(calm, 11 * day)
    True
    """
    last = min(state.last_crawl if state.last_crawl is not None else now, now)
    watched = max(now - state.first_seen, 1.0)
    visits = state.visits
    horizon = watched / visits if visits > 0 else watched
    # recent_rate, at least half a change over the time its decayed counts cover
    # (rate_floor over recent_window_secs: n mean intervals, not the whole time
    # watched); the record's fields are valid, so the unchecked forms (this runs per
    # candidate).
    covered = decayed_visits(visits, params.decay) * horizon if visits > 0 else watched
    rate = max(
        recent_rate_unchecked(min(max(state.p_c, 0.0), 1.0), visits, params.decay, horizon),
        0.5 / covered,
    )
    elapsed = now - last
    weight = max(float(state.access_count), 1.0)
    if state.provider is Provider.NORMAL:
        return weight * gain_unchecked(rate, elapsed, horizon)
    if state.provider is Provider.SUPER:
        return weight * _super_gain(state, now, last, rate, horizon, params)
    p_changed = -math.expm1(-rate * elapsed)
    if any(t > last for t in state.past_updates):
        p_changed = 1.0
    for t, p in state.future_updates:
        if last < t <= now:
            p_changed = max(p_changed, p)
    return weight * known_gain(p_changed, rate, horizon)


def _super_gain(
    state: PageState, now: float, last: float, rate: float, horizon: float, params: ScoreParams
) -> float:
    """The gain of a fetch of a super record: the chance it changed since ``last``, given
    the announced updates that have passed, times the fresh time until the next real
    change (:func:`~scrapy_fresh.policy.gain.announced_fresh_secs`)."""
    updates = state.future_updates  # sorted by time
    # The share of changes its provider announces: what it says its announcements are
    # worth (the simulator's providers announce a share P_update of their changes).
    share = sum(p for _, p in updates) / len(updates) if updates else params.announce_share
    ahead = [(t - now, p) for t, p in updates if t > now]
    # Within the known window the next fetch waits for an announced change: the fetch
    # buys fresh time up to the window's end at least, whatever the past intervals.
    known = max(params.announce_secs, ahead[-1][0]) if ahead else params.announce_secs
    fresh = announced_unchecked(rate, max(horizon, known), ahead, share, params.announce_secs)[1]
    if any(t > last for t in state.past_updates):
        return fresh  # a known change since the last crawl (eq. 4's role)
    elapsed = now - last
    passed = [(t - last, p) for t, p in updates if last < t <= now]
    if params.announce_secs > 0.0:
        known = elapsed  # announced ahead all along
    else:
        known = min(elapsed, max(updates[-1][0] - last, 0.0)) if updates else 0.0
    unchanged = announced_unchecked(rate, elapsed, passed, share, known)[0]
    return (1.0 - unchanged) * fresh
