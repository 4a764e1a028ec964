"""What one visit does to a URL record: p_c, refresh time, change rate, bucket, next due.

The one place where a visit's :class:`~scrapy_fresh.outcome.Outcome` becomes a record update, shared by the
crawl (the refresh pipeline and the scheduler) and the simulator. The maths lives in
:mod:`scrapy_fresh.policy`; this module applies it to :class:`~scrapy_fresh.store.base.PageState`.

* p_c: Sharma & Dixit's degree of success (seed ``sharma-dixit-self-adjusting-refresh-time``,
  Section III) as decayed counts (:class:`~scrapy_fresh.policy.refresh.SuccessCounter`).
  The decayed counts need no extra field: after ``n`` visits with decay ``d`` the decayed
  visit count is :math:`(1 - d^n)/(1 - d)` (``n`` with ``d = 1``), and the decayed change
  count is ``p_c`` times that.
* refresh time: eq. 1-2 of the same paper, clamped (:func:`~scrapy_fresh.policy.refresh.adjust_refresh`),
  applied to the *cost-weighted* degree of success in steps as large as the visit was
  costly (:func:`~scrapy_fresh.policy.cost.cost_aware_refresh`): a page that can be
  checked for a share ``check_cost`` of a full download (its host answers conditional
  requests with 304) is re-checked more often, one that must be downloaded to be
  checked (``check_cost=1``) follows the paper's rule as it is.
* the first fetch of a URL is not a visit that can show a change: it sets the fingerprint,
  the validators and the cold-start refresh time from the site.
* errors back off exponentially and never drop a URL; ``gone`` needs confirmations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scrapy_fresh import default_settings as defaults
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.policy.cost import cost_aware_refresh
from scrapy_fresh.policy.estimators import improved_rate, rate_to_bucket
from scrapy_fresh.policy.refresh import (
    DEFAULT_DECAY,
    SuccessCounter,
    cold_start,
    decayed_visits,
)
from scrapy_fresh.policy.schedule import NO_RULES, ScheduleRules
from scrapy_fresh.store.base import PageState, SiteState, Status

__all__ = ["RevisitPolicy", "record_visit"]


@dataclass(frozen=True)
class RevisitPolicy:
    """Parameters of :func:`record_visit` (from :class:`scrapy_fresh.config.FreshConfig`)."""

    p_l: float = defaults.FRESH_PC_LOWER
    p_g: float = defaults.FRESH_PC_UPPER
    min_refresh_secs: float = defaults.FRESH_MIN_REFRESH_SECS
    max_refresh_secs: float = defaults.FRESH_MAX_REFRESH_SECS
    default_refresh_secs: float = defaults.FRESH_DEFAULT_REFRESH_SECS
    decay: float = DEFAULT_DECAY
    error_backoff_secs: float = defaults.FRESH_ERROR_BACKOFF_SECS
    gone_confirmations: int = defaults.FRESH_GONE_CONFIRMATIONS
    #: Weight of a page's new refresh time in its site's (log-space moving average).
    site_weight: float = 0.1
    #: The operator's bounds (:setting:`FRESH_SCHEDULE_RULES`) on every next due time.
    rules: ScheduleRules = NO_RULES


def _counter(visits: int, p_c: float, decay: float) -> SuccessCounter:
    weight = decayed_visits(visits, decay)  # a finite float >= 0 for a stored record
    if not 0.0 <= weight < math.inf:  # (visits < 0: a record no store accepts)
        return SuccessCounter(weight, min(weight, max(0.0, p_c) * weight))  # raises
    return SuccessCounter.unchecked(weight, min(weight, max(0.0, p_c) * weight))


def record_visit(
    state: PageState,
    outcome: Outcome,
    now: float,
    policy: RevisitPolicy,
    site: SiteState | None = None,
    *,
    check_cost: float = 1.0,
) -> PageState:
    """Apply one visit's ``outcome`` at ``now`` to ``state`` (and ``site``), in place.

    Returns ``state``, now idle (or gone) with its next due time set. ``site`` gets the
    visit added to its aggregates; a first fetch starts from the site's refresh time and
    p_c (Sharma & Dixit cold start, :func:`~scrapy_fresh.policy.refresh.cold_start`).

    ``check_cost`` is what checking this page for a change costs when it finds none, as
    a share of a full download, within (0, 1]: the caller knows whether the page's host
    answers conditional requests and what its 304s weigh. The refresh time is adjusted
    by eq. 1-2 on the cost-weighted p_c, in a step as large as the visit was costly
    (:func:`~scrapy_fresh.policy.cost.cost_aware_refresh`: a ``not_modified`` visit cost
    ``check_cost``, any other judged visit a full download); ``state.p_c`` itself stays
    the plain (decayed) changes / visits. The default 1.0 is the paper's rule, exactly.

    The due time is then bounded by ``policy.rules`` (:mod:`scrapy_fresh.policy.schedule`),
    whatever the outcome: the operator's rules have the last word.
    """
    _apply_visit(state, outcome, now, policy, site, check_cost)
    if policy.rules:
        state.next_due = policy.rules.due(state.url, state.host, now, state.next_due)
    return state


def _apply_visit(
    state: PageState,
    outcome: Outcome,
    now: float,
    policy: RevisitPolicy,
    site: SiteState | None,
    check_cost: float,
) -> PageState:
    if not 0.0 < check_cost <= 1.0:  # also NaN
        raise ConfigError(f"check_cost ({check_cost!r}) must be within (0, 1].")
    state.status = Status.IDLE
    state.in_flight_since = None
    if outcome is Outcome.BLOCKED:
        state.next_due = now + policy.max_refresh_secs
        return state
    if outcome is Outcome.ERROR or outcome is Outcome.GONE:
        # A gone page stays out of the due records; the back-off says how soon a link
        # the spider follows again fetches it again (a product page back in stock),
        # doubling with each answer that finds it still gone, up to the longest refresh.
        state.errors += 1
        backoff = policy.error_backoff_secs * 2.0 ** min(state.errors - 1, 30)
        state.next_due = now + min(backoff, policy.max_refresh_secs)
        if outcome is Outcome.GONE and state.errors >= policy.gone_confirmations:
            state.status = Status.GONE
        return state
    state.errors = 0
    first = state.last_crawl is None
    if first or outcome is Outcome.NEW:
        site_secs = site.refresh_secs if site is not None else None
        site_pc = site.p_c if site is not None and site.visits else None
        state.refresh_secs, state.p_c = cold_start(site_secs, site_pc, policy.default_refresh_secs)
        state.refresh_secs = min(
            max(state.refresh_secs, policy.min_refresh_secs), policy.max_refresh_secs
        )
    else:
        changed = outcome is Outcome.CHANGED
        counter = _counter(state.visits, state.p_c, policy.decay).record(
            changed, decay=policy.decay
        )
        state.visits += 1
        state.changes += int(changed)
        state.p_c = counter.p_c
        state.refresh_secs = cost_aware_refresh(
            state.refresh_secs,
            state.p_c,
            policy.p_l,
            policy.p_g,
            check_cost=check_cost,
            # a 304 (or an unchanged HEAD answer) cost a check; anything else a download
            visit_cost=check_cost if outcome is Outcome.NOT_MODIFIED else 1.0,
            min_secs=policy.min_refresh_secs,
            max_secs=policy.max_refresh_secs,
        )
        span = now - state.first_seen
        if state.visits and span > 0:
            state.change_rate = improved_rate(state.changes, state.visits, span / state.visits)
            state.change_bucket = rate_to_bucket(state.change_rate)
        if site is not None:
            _update_site(site, changed, state.refresh_secs, now, policy)
    state.last_crawl = now
    state.next_due = now + state.refresh_secs
    return state


def _update_site(
    site: SiteState, changed: bool, page_refresh: float, now: float, policy: RevisitPolicy
) -> None:
    counter = _counter(site.visits, site.p_c, policy.decay).record(changed, decay=policy.decay)
    site.visits += 1
    site.changes += int(changed)
    site.p_c = counter.p_c
    if site.refresh_secs is None:
        site.refresh_secs = page_refresh
    else:
        w = policy.site_weight
        site.refresh_secs = math.exp(
            (1 - w) * math.log(site.refresh_secs) + w * math.log(page_refresh)
        )
    site.updated_at = now
