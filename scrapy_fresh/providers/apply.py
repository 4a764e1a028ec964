r"""What provider signals do to a URL record (:class:`~scrapy_fresh.store.base.PageState`).

Shared by the crawl (:mod:`scrapy_fresh.crawl.provider_middleware`), pushed notifications
(:mod:`scrapy_fresh.notify.record`) and the simulator, so that all three treat a signal alike.
No Scrapy, no clock: every function takes ``now``.

Seed ``xu-content-provider-friendly-crawler``:

* past update times go into ``past_updates``, the input of :math:`S_{past}^{known}`
  (eq. 4); an update after the last crawl makes the page due now ("for the past
  update, the current available crawling slot", Section 4.1);
* announced updates go into ``future_updates`` (time, :math:`P_{update}`), the input
  of :math:`S_{future}` and :math:`S_{unified}` (eq. 6-7); the page becomes due at the
  first slot after the earliest announced time (Section 4.1);
* a not-before time (``<ttl>``, ``max-age``, ``Expires``) is a floor on the next due
  time and a quiet window (``<skipHours>``/``<skipDays>``) pushes it past the window:
  the provider says nothing changes before then. Such a *quiet claim* moves the due
  time only by the share of the claimed time its host has earned
  (:func:`~scrapy_fresh.policy.trust.quiet_weight`, :func:`~scrapy_fresh.policy.trust.deferred_due`):
  followed in full, a false one would never be seen to fail.

The level a page's signals earn (:func:`detected_level`): ``super`` with an upcoming
announced update, ``smart`` with known past updates, else ``normal``.
"""

from __future__ import annotations

from collections.abc import Iterable

from scrapy_fresh.policy.trust import deferred_due
from scrapy_fresh.providers.signals import QuietWindow
from scrapy_fresh.store.base import MAX_FUTURE_UPDATES, MAX_PAST_UPDATES, PageState, Provider

__all__ = [
    "SLOT_DELAY_SECS",
    "add_announced",
    "add_past",
    "consume_announced",
    "detected_level",
    "signal_due",
]

#: A page announced to change at ``t`` is due at ``t + SLOT_DELAY_SECS``: the first slot
#: strictly after the update (a fetch at the very instant could precede it).
SLOT_DELAY_SECS = 1.0


def add_past(state: PageState, times: Iterable[float]) -> int:
    """Add past update times not known yet; return how many were new.

    >>> s = PageState("k", "u", past_updates=[10.0])
    >>> add_past(s, [10.0, 20.0, 20.0]), s.past_updates
    (1, [10.0, 20.0])
    """
    known = set(state.past_updates)
    new = {float(t) for t in times} - known
    if new:  # the newest MAX_PAST_UPDATES, as PageState.add_past_update keeps
        state.past_updates = sorted(known | new)[-MAX_PAST_UPDATES:]
    return len(new)


def add_announced(state: PageState, updates: Iterable[tuple[float, float]], now: float) -> int:
    """Add announced updates later than ``now``; an instant already announced keeps the
    higher probability. Return how many instants were new.

    At most :data:`~scrapy_fresh.store.base.MAX_FUTURE_UPDATES` are kept: first the
    oldest of those that have passed (kept until the next visit, to say the page
    changed) make room, then the latest upcoming ones go, so a page left unvisited
    still hears of its next updates.

    >>> s = PageState("k", "u")
    >>> add_announced(s, [(50.0, 0.5), (50.0, 0.8), (5.0, 1.0)], now=10.0), s.future_updates
    (1, [(50.0, 0.8)])
    """
    merged = dict(state.future_updates)
    moved = False
    new = 0
    for t, p in updates:
        if t <= now:
            continue
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"probability ({p!r}) must be within [0, 1].")
        known = merged.get(t)
        if known is None:
            new += 1
        if known is None or p > known:
            merged[t] = float(p)
            moved = True
    if moved:  # the soonest MAX_FUTURE_UPDATES, as PageState.add_future_update keeps,
        # once the oldest passed ones (not visited yet) make room for upcoming ones
        ordered = sorted(merged.items())
        passed = sum(1 for t, _ in ordered if t <= now)
        drop = min(passed, max(0, len(ordered) - MAX_FUTURE_UPDATES))
        state.future_updates = ordered[drop:][:MAX_FUTURE_UPDATES]
    return new


def consume_announced(state: PageState, now: float) -> list[tuple[float, float]]:
    """Drop the announced updates a visit at ``now`` covered; return them.

    >>> s = PageState("k", "u", future_updates=[(5.0, 0.5), (50.0, 0.8)])
    >>> consume_announced(s, 10.0), s.future_updates
    ([(5.0, 0.5)], [(50.0, 0.8)])
    """
    covered = [(t, p) for t, p in state.future_updates if t <= now]
    if covered:
        state.future_updates = [(t, p) for t, p in state.future_updates if t > now]
    return covered


def detected_level(
    state: PageState, now: float, *, past_trusted: bool = True, future_trusted: bool = True
) -> Provider:
    """The provider level the record's own data supports (Xu et al. Section 3.3).

    >>> detected_level(PageState("k", "u", future_updates=[(20.0, 0.5)]), 10.0).value
    'super'
    >>> detected_level(PageState("k", "u", past_updates=[5.0]), 10.0).value
    'smart'
    >>> detected_level(PageState("k", "u", past_updates=[5.0]), 10.0, past_trusted=False).value
    'normal'
    """
    if future_trusted and any(t > now for t, _ in state.future_updates):
        return Provider.SUPER
    if past_trusted and state.past_updates:
        return Provider.SMART
    return Provider.NORMAL


def signal_due(
    state: PageState,
    now: float,
    *,
    not_before: float | None = None,
    quiet: QuietWindow | None = None,
    use_past: bool = True,
    use_future: bool = True,
    max_wait_secs: float | None = None,
    quiet_weight: float = 1.0,
    own_due: float | None = None,
) -> float:
    """The next due time of ``state`` once its signals are taken into account.

    Starts from ``state.next_due`` (the refresh rule's); a not-before time is a floor
    (at most ``max_wait_secs`` after ``now``); then the first slot after the earliest
    upcoming announced update, if sooner; a known update after the last crawl makes
    it due ``now``; finally a quiet window pushes it to the window's end.

    The not-before time and the quiet window are quiet claims: they move the due time
    from the page's own due time ``own_due`` (default ``state.next_due``) only by the
    share ``quiet_weight`` of the way to the claimed time
    (:func:`~scrapy_fresh.policy.trust.deferred_due`; 1, the default, follows them in
    full):

    >>> s = PageState("k", "u", last_crawl=0.0, next_due=1000.0)
    >>> signal_due(s, 10.0, not_before=2000.0, quiet_weight=0.25)
    1250.0

    >>> s = PageState("k", "u", last_crawl=0.0, next_due=1000.0)
    >>> signal_due(s, 10.0, not_before=2000.0)
    2000.0
    >>> s.future_updates = [(500.0, 0.8)]
    >>> signal_due(s, 10.0, not_before=100.0)
    501.0
    >>> s.past_updates = [5.0]
    >>> signal_due(s, 10.0)
    10.0
    """
    due = state.next_due
    base = due if own_due is None else own_due
    if not_before is not None:
        floor = not_before if max_wait_secs is None else min(not_before, now + max_wait_secs)
        due = max(due, deferred_due(base, floor, quiet_weight))
    if use_future:
        upcoming = [t for t, _ in state.future_updates if t > now]
        if upcoming:
            due = min(due, min(upcoming) + SLOT_DELAY_SECS)
    if use_past:
        last = state.last_crawl
        if last is not None and any(t > last for t in state.past_updates):
            due = min(due, now)
    if quiet is not None:
        due = deferred_due(due, quiet.end_of_quiet(due), quiet_weight)
    return due
