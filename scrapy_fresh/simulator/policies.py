"""The re-crawl policies a replay compares, by their ``--policy`` names.

* ``fresh``: scrapy_fresh itself. The crawl's own code on :class:`PageState` records:
  :func:`~scrapy_fresh.frontier.revisit.record_visit` after every fetch (p_c, self-adjusting
  refresh time, change rate, bucket, next due), each step's due records ranked by
  :func:`~scrapy_fresh.frontier.scoring.priority_score` and cut to the budget as
  ``FreshScheduler`` does in a cycle, then handed out by the
  :class:`~scrapy_fresh.frontier.Frontier`. Provider signals go through
  :mod:`scrapy_fresh.simulator.providers`.
* ``uniform``, ``proportional``, ``cho-oracle``, ``lambdacrawl-oracle``: fixed revisit
  intervals from :mod:`scrapy_fresh.policy.allocation` (uniform; proportional to the rate;
  Cho & Garcia-Molina's optimum; LambdaCrawl's optimum), the last three with oracle rates
  (changes over the whole trace / its span). Phases are spread evenly over pages.
* ``nutch``: Nutch's AdaptiveFetchSchedule: interval x (1 - 0.2) after a change, x (1 + 0.4)
  otherwise, within 60 s .. 365 days.
* ``stormcrawler``: StormCrawler's adaptive scheduler: after a change
  ``(1 - d) * interval + d * min``, otherwise ``interval * (1 + i)``, d = i = 0.5, within
  60 minutes .. 14 days.
* ``sartcm``: Sharma & Dixit's refresh rule alone (``record_visit``, pages served by due
  time, no priority scores, no provider signals).
* ``webfountain``: WebFountain's change-frequency buckets (seed
  ``edwards-adaptive-incremental-crawler-webfountain``, Section 4): each page's bucket comes
  from ``record_visit``'s rate estimate; once a day the budget is split over the bucket
  rates by Cho & Garcia-Molina's optimum; pages with fewer than 3 judged visits get the
  uniform interval, pages the optimum drops the longest refresh time.
* ``clairvoyant``: the upper bound. It knows every change time and fetches right at the
  changes that are followed by the longest unchanged spans, as many as the budget allows
  in the measuring window (and, with a warm-up, starts the window fully fresh). No policy
  with the same number of fetches can be fresher: any fetch can be moved back to the
  latest change before it without losing fresh time.

Adaptive interval policies (``nutch``, ``stormcrawler``, ``sartcm``, ``webfountain``) start
every page at the uniform interval, serve due pages earliest-due first and leave the
budget unused when fewer pages are due than it allows.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from scrapy_fresh.frontier import Frontier, Politeness, Stream
from scrapy_fresh.frontier.planner import plan_cycle
from scrapy_fresh.frontier.revisit import record_visit
from scrapy_fresh.frontier.scoring import gain_score
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.policy.allocation import (
    cho_optimal,
    uniform,
)
from scrapy_fresh.policy.estimators import bucket_to_rate
from scrapy_fresh.simulator.engine import Context, ScheduledPolicy
from scrapy_fresh.simulator.providers import (
    Level,
    announce,
    announcements,
    forget_served,
    signal_change,
)
from scrapy_fresh.simulator.trace import DAY
from scrapy_fresh.store.base import PageState, SiteState, Status

__all__ = [
    "Clairvoyant",
    "Fresh",
    "Nutch",
    "Sartcm",
    "StormCrawler",
    "WebFountain",
    "fixed_schedule",
    "page_host",
    "page_key",
    "uniform_allocation",
]


def page_host(page: str) -> str:
    """The host of a trace page that is a URL, else the page name itself.

    >>> page_host("http://feeds.example.com/rss"), page_host("pep-0008")
    ('feeds.example.com', 'pep-0008')
    """
    if "://" in page:
        host = urlsplit(page).hostname
        if host:
            return host
    return page


def page_key(page: str) -> str:
    """A 40-hex record key for a trace page (the store's key format)."""
    return hashlib.sha1(page.encode("utf-8")).hexdigest()


class _DueQueue:
    """Pages by next due time, earliest first (lazy heap entries)."""

    def __init__(self, due: list[float]) -> None:
        self.due = list(due)
        self._version = [0] * len(due)
        self._heap = [(t, 0, i) for i, t in enumerate(due)]
        heapq.heapify(self._heap)

    def set(self, page: int, when: float) -> None:
        self.due[page] = when
        self._version[page] += 1
        heapq.heappush(self._heap, (when, self._version[page], page))

    def pop_due(self, now: float, limit: int) -> list[int]:
        out: list[int] = []
        heap = self._heap
        while heap and len(out) < limit and heap[0][0] <= now:
            _when, version, page = heapq.heappop(heap)
            if version == self._version[page]:
                self._version[page] += 1  # taken until set() again
                out.append(page)
        return out


# -- fixed schedules -------------------------------------------------------------------


class _FixedSchedule:
    """Fetch page ``i`` every ``1 / f_i`` seconds, phases spread evenly over pages."""

    def __init__(
        self, ctx: Context, allocate: Callable[[list[float], float], list[float]]
    ) -> None:
        self.ctx = ctx
        self.allocate = allocate

    def fetch_times(self) -> list[list[float]]:
        trace = self.ctx.trace
        freqs = self.allocate(self.ctx.oracle_rates(), self.ctx.rate)
        n = len(freqs)
        out: list[list[float]] = []
        for i, f in enumerate(freqs):
            times: list[float] = []
            if f > 0:
                interval = 1.0 / f
                k = (i + 0.5) / n
                t = trace.start + k * interval
                while t <= trace.end:
                    times.append(t)
                    k += 1.0
                    t = trace.start + k * interval
            out.append(times)
        return out


def uniform_allocation(rates: list[float], budget: float) -> list[float]:
    return uniform(rates, budget)


class Clairvoyant:
    """The bound: fetch at the changes followed by the longest unchanged spans.

    A fetch at change ``c`` keeps the page fresh until its next change, whatever else is
    fetched, so the best use of ``K`` fetches takes the ``K`` changes with the largest
    share of fresh time they buy (the span to the next change over the page's window).
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def fetch_times(self) -> list[list[float]]:
        ctx = self.ctx
        candidates: list[tuple[float, float, int]] = []
        for i, (changes, window) in enumerate(zip(ctx.trace.changes, ctx.windows, strict=True)):
            if window is None:
                continue
            start, end = window
            lo = bisect.bisect_left(changes, start)
            hi = bisect.bisect_right(changes, end)
            for j in range(lo, hi):
                nxt = changes[j + 1] if j + 1 < hi else end
                if nxt > changes[j]:
                    candidates.append(((nxt - changes[j]) / (end - start), -changes[j], i))
        chosen = heapq.nlargest(ctx.budget_fetches, candidates)
        # After a warm-up the measuring starts fully fresh: a free fetch of every page
        # then (not counted; the trace start's fetch plays that part without warm-up).
        synced = ctx.measure_start > ctx.trace.start
        out: list[list[float]] = [[ctx.measure_start] if synced else [] for _ in ctx.windows]
        for _, neg_t, i in chosen:
            out[i].append(-neg_t)
        for times in out:
            times.sort()
        return out


# -- adaptive intervals -----------------------------------------------------------------


class _IntervalRule:
    """Interval per page, adjusted after each visit; due pages served earliest first."""

    low = 60.0
    high = 365 * DAY

    def __init__(self, ctx: Context) -> None:
        n = ctx.n
        first = DAY / ctx.config.budget
        self.interval = [first] * n
        self.queue = _DueQueue([ctx.trace.start + first * (i + 0.5) / n for i in range(n)])

    def adjust(self, interval: float, changed: bool) -> float:
        raise NotImplementedError

    def signals(self, prev: float, now: float) -> None:
        pass

    def select(self, now: float, capacity: int) -> list[int]:
        return self.queue.pop_due(now, capacity)

    def visited(self, page: int, now: float, changed: bool, latest: float | None) -> None:
        value = min(max(self.adjust(self.interval[page], changed), self.low), self.high)
        self.interval[page] = value
        self.queue.set(page, now + value)


class Nutch(_IntervalRule):
    """Nutch AdaptiveFetchSchedule (INC_RATE 0.4, DEC_RATE 0.2, 60 s .. 365 days)."""

    def adjust(self, interval: float, changed: bool) -> float:
        return interval * (1.0 - 0.2) if changed else interval * (1.0 + 0.4)


class StormCrawler(_IntervalRule):
    """StormCrawler's adaptive scheduler (rates 0.5, 60 minutes .. 14 days)."""

    low = 3600.0
    high = 14 * DAY

    def adjust(self, interval: float, changed: bool) -> float:
        return (1.0 - 0.5) * interval + 0.5 * self.low if changed else interval * (1.0 + 0.5)


# -- policies on PageState records --------------------------------------------------------


class _Records:
    """One :class:`PageState` per trace page, first fetched at the trace start."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        config = ctx.config
        self.revisit = config.revisit
        start = ctx.trace.start
        self.states: list[PageState] = []
        self.sites: dict[str, SiteState] = {}
        self.site_of: list[SiteState] = []
        for i, page in enumerate(ctx.trace.pages):
            host = page_host(page)
            site = self.sites.get(host)
            if site is None:
                site = self.sites[host] = SiteState(host)
            state = PageState(
                key=page_key(page),
                url=page,
                host=host,
                doc_id=i + 1,
                status=Status.QUEUED,
                provider=self._level(i).provider,
                first_seen=start,
                next_due=start,
                refresh_secs=self.revisit.default_refresh_secs,
                p_l=self.revisit.p_l,
                p_g=self.revisit.p_g,
                access_count=round(ctx.daily_accesses[i]) if config.know_accesses else 0,
                request={"url": page},
            )
            record_visit(state, Outcome.NEW, start, self.revisit, site)
            self.states.append(state)
            self.site_of.append(site)

    def _level(self, page: int) -> Level:
        return Level.NORMAL

    def record(self, page: int, now: float, changed: bool) -> PageState:
        state = self.states[page]
        outcome = Outcome.CHANGED if changed else Outcome.UNCHANGED
        return record_visit(state, outcome, now, self.revisit, self.site_of[page])


class Sartcm(_Records):
    """Sharma & Dixit's refresh rule alone: due pages earliest first."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.queue = _DueQueue([s.next_due for s in self.states])

    def signals(self, prev: float, now: float) -> None:
        pass

    def select(self, now: float, capacity: int) -> list[int]:
        return self.queue.pop_due(now, capacity)

    def visited(self, page: int, now: float, changed: bool, latest: float | None) -> None:
        state = self.record(page, now, changed)
        self.queue.set(page, state.next_due)


class WebFountain(Sartcm):
    """Change-frequency buckets, the budget split over bucket rates once a day."""

    min_visits = 3

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.uniform_interval = DAY / ctx.config.budget
        self.interval = [self.uniform_interval] * ctx.n
        self.next_allocation = ctx.trace.start + DAY
        self._last_allocation: tuple[list[int], tuple[int, ...]] | None = None

    def _allocate(self) -> None:
        known = [i for i, s in enumerate(self.states) if s.visits >= self.min_visits]
        if not known:
            return
        buckets = tuple(self.states[i].change_bucket for i in known)
        if (known, buckets) == self._last_allocation:
            return  # same buckets, same split
        self._last_allocation = (known, buckets)
        spare = self.ctx.rate * len(known) / self.ctx.n
        rates = [bucket_to_rate(b) for b in buckets]
        for i, f in zip(known, cho_optimal(rates, spare), strict=True):
            self.interval[i] = 1.0 / f if f > 0 else self.revisit.max_refresh_secs
            state = self.states[i]
            due = (state.last_crawl or self.ctx.trace.start) + self.interval[i]
            if due != self.queue.due[i]:
                self.queue.set(i, due)

    def select(self, now: float, capacity: int) -> list[int]:
        if now >= self.next_allocation:
            self._allocate()
            self.next_allocation += DAY
        return self.queue.pop_due(now, capacity)

    def visited(self, page: int, now: float, changed: bool, latest: float | None) -> None:
        self.record(page, now, changed)
        self.queue.set(page, now + self.interval[page])


@dataclass(frozen=True, order=False)
class _Later:
    """Due order reversed: in a max-first heap of equal scores, earlier due wins."""

    next_due: float
    key: str

    def __lt__(self, other: _Later) -> bool:
        return (self.next_due, self.key) > (other.next_due, other.key)

    def __gt__(self, other: _Later) -> bool:
        return (self.next_due, self.key) < (other.next_due, other.key)


class Fresh(_Records):
    """scrapy_fresh's crawl: due records, priority scores, the frontier, record_visit.

    Speed-up (same choices): with the ``gain`` score and normal providers only, a
    record's score never falls between its visits (:func:`gain_score` grows with the
    time since the last crawl, its rate and horizon scale together), so its score at
    the end of a window bounds it within the window. Each cycle scores only the records
    whose bound can still beat the cycle's last pick (:meth:`_top`), instead of every
    record, and hands those to the same planner
    (:func:`~scrapy_fresh.frontier.planner.plan_cycle`).
    """

    #: Set False to score every record each cycle (the tests compare both).
    prune = True
    #: Cycles per window of score bounds.
    window_steps = 6

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.lookahead = ctx.config.lookahead_secs
        # The scores' rate uses the refresh rule's p_c decay (as FreshRuntime does).
        self.params = replace(ctx.config.score, decay=self.revisit.decay)
        if any(lv is Level.SUPER for lv in ctx.levels):
            # The crawler knows what its super providers promise: every change they
            # announce, announced horizon_secs ahead, a share `precision` of them.
            mix = ctx.config.providers
            self.params = replace(
                self.params, announce_secs=mix.horizon_secs, announce_share=mix.precision
            )
        self._pruning = (
            self.prune
            and self.params.rule == "gain"
            and all(lv is Level.NORMAL for lv in ctx.levels)
            and getattr(ctx.config.providers, "signals", "off") == "off"
            and self.lookahead == 0
        )
        self._window = self.window_steps * ctx.config.step_secs
        self._bound_end = -math.inf
        self._bounds: list[tuple[float, int]] = []
        self._moved: dict[int, float] = {}
        self.frontier = Frontier(Politeness(0.0), new_share=0.0)
        self.index = {s.key: i for i, s in enumerate(self.states)}
        self.due: set[int] = set()
        self.heap = [(s.next_due, s.key, i) for i, s in enumerate(self.states)]
        heapq.heapify(self.heap)
        trace = ctx.trace
        levels = ctx.levels
        signalled = [i for i, lv in enumerate(levels) if lv in (Level.SMART, Level.SUPER)]
        self.signals_due = sorted(
            (t, i) for i in signalled for t in trace.changes[i] if t > trace.start
        )
        self.signal_pos = 0
        mix = ctx.config.providers
        horizon = mix.horizon_secs
        self.precision = mix.precision
        rng = ctx.rng
        self.announced = sorted(
            (max(trace.start, t - horizon), t, i)
            for i, lv in enumerate(levels)
            if lv is Level.SUPER
            for t in announcements(trace.changes[i], mix.precision, trace.start, trace.end, rng)
        )
        self.announce_pos = 0

    def _level(self, page: int) -> Level:
        return self.ctx.levels[page]

    def _requeue(self, page: int) -> None:
        if page not in self.due:
            state = self.states[page]
            heapq.heappush(self.heap, (state.next_due, state.key, page))

    def signals(self, prev: float, now: float) -> None:
        events, pos = self.signals_due, self.signal_pos
        while pos < len(events) and events[pos][0] <= now:
            when, page = events[pos]
            state = self.states[page]
            before = state.next_due
            signal_change(state, when, now)
            if state.next_due != before:
                self._requeue(page)
            pos += 1
        self.signal_pos = pos
        notes, pos = self.announced, self.announce_pos
        while pos < len(notes) and notes[pos][0] <= now:
            _, when, page = notes[pos]
            state = self.states[page]
            before = state.next_due
            announce(state, when, self.precision, now)
            if state.next_due != before:
                self._requeue(page)
            pos += 1
        self.announce_pos = pos

    def select(self, now: float, capacity: int) -> list[int]:
        heap, states = self.heap, self.states
        cut = now + self.lookahead
        while heap and heap[0][0] <= cut:
            when, _, page = heapq.heappop(heap)
            if states[page].next_due == when:
                self.due.add(page)
        params = self.params
        if not self.due and not params.fill:
            return []
        # The crawl's planner on the records a store gives FreshScheduler: the due ones
        # in due order (with FRESH_CYCLE_FILL every other one too), or, pruned, the ones
        # whose score can still make the cut (the same picks: tests/test_planner.py).
        due = self.due
        ordered = [
            states[i] for i in sorted(due, key=lambda i: (states[i].next_due, states[i].key))
        ]
        if not self._pruning:
            candidates = ordered
            if params.fill:
                candidates = ordered + [s for i, s in enumerate(states) if i not in due]
        elif len(ordered) <= capacity:  # all the due ones, then the best others
            room = capacity - len(ordered) if params.fill else 0
            candidates = ordered + self._top(
                room, now, lambda i: i not in due and self._allowed(states[i], now)
            )
        else:  # binding: the best of all (or of the due ones without fill)
            fill = params.fill
            candidates = self._top(
                capacity, now, lambda i: i in due or (fill and self._allowed(states[i], now))
            )
        plan = plan_cycle(candidates, now, capacity, params, cut=cut, allowed=self._allowed)
        frontier = self.frontier
        for score, state in plan.taken:
            state.status = Status.IN_FLIGHT
            state.in_flight_since = now
            frontier.push(state.key, state.host, score, Stream.REFRESH, now)
        out: list[int] = []
        while (popped := frontier.pop(now)) is not None:
            out.append(self.index[popped.key])
        return out

    def _allowed(self, state: PageState, now: float) -> bool:
        """Whether the schedule rules (``SimConfig.revisit.rules``) allow fetching
        ``state`` before its due time, as the crawler's planner asks."""
        rules = self.revisit.rules
        return not rules or rules.allows(state.url, state.host, state.last_crawl, now)

    def _top(self, k: int, now: float, keep: Callable[[int], bool]) -> list[PageState]:
        """The ``k`` records of highest score at ``now`` (see the class doc) among those
        ``keep`` accepts, best first; equal scores in due order (``next_due``, key), as
        the planner ranks them."""
        if k <= 0:
            return []
        states, params = self.states, self.params
        if now > self._bound_end:  # a new window: every record's score at its end
            self._bound_end = now + self._window
            self._bounds = sorted(
                ((gain_score(s, self._bound_end, params), i) for i, s in enumerate(states)),
                reverse=True,
            )
            self._moved = {}
        moved = self._moved  # records visited in this window: their new bounds
        fresh_bounds = sorted(((b, i) for i, b in moved.items()), reverse=True)
        seen: set[int] = set()
        best: list[tuple[float, _Later, int]] = []  # min-heap, the k best
        for bound, page in heapq.merge(self._bounds, fresh_bounds, reverse=True):
            if len(best) == k and bound < best[0][0]:
                break  # no record left can beat the k-th best
            if page in seen or moved.get(page, bound) != bound:
                continue  # a bound from before the record's visit in this window
            seen.add(page)
            if not keep(page):
                continue
            state = states[page]
            entry = (gain_score(state, now, params), _Later(state.next_due, state.key), page)
            if len(best) < k:
                heapq.heappush(best, entry)
            elif entry > best[0]:
                heapq.heapreplace(best, entry)
        return [states[page] for _, _, page in sorted(best, reverse=True)]

    def visited(self, page: int, now: float, changed: bool, latest: float | None) -> None:
        state = self.states[page]
        if changed and latest is not None and self.ctx.levels[page] is Level.LASTMOD:
            state.add_past_update(latest)  # as the runtime stores Last-Modified
        self.record(page, now, changed)
        forget_served(state, now)
        self.due.discard(page)
        heapq.heappush(self.heap, (state.next_due, state.key, page))
        if self._pruning and now <= self._bound_end:
            self._moved[page] = gain_score(state, self._bound_end, self.params)


def fixed_schedule(
    allocate: Callable[[list[float], float], list[float]],
) -> Callable[[Context], ScheduledPolicy]:
    return lambda ctx: _FixedSchedule(ctx, allocate)
