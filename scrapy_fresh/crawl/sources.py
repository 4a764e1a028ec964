"""Where a run's due records come from: one source per mode, chosen when the scheduler opens.

:class:`~scrapy_fresh.crawl.scheduler.FreshScheduler` keeps Scrapy's scheduler contract,
the leases, politeness and the frontier; a :class:`DueSource` decides which stored
records are fetched in this run and when to look again:

* :class:`CycleSource`: cycle mode, every record due by the cut-off (the open time plus
  the lookahead), read in due order a batch at a time as the frontier drains;
* :class:`BudgetSource`: cycle mode with :setting:`FRESH_CYCLE_BUDGET`, what the crawl
  planner (:func:`~scrapy_fresh.frontier.planner.plan_cycle`) picks, new URLs within
  the budget's share;
* :class:`ContinuousSource`: continuous mode, records as they come due;
* :class:`SharedSource`: :setting:`FRESH_STORE` ``"redis"``, the frontier shared with the
  other workers hands out every page, new ones too.

:func:`source_for` chooses. See :doc:`/topics/scheduler`.
"""

from __future__ import annotations

import logging
import math
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from scrapy_fresh.distributed.shared import PULL_BATCH, SharedFrontier
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.frontier.planner import plan_cycle
from scrapy_fresh.frontier.scoring import priority_score
from scrapy_fresh.policy.cadence import lookahead, next_period
from scrapy_fresh.store.base import DUE_STATUSES, DueCursorStore, PageState

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from scrapy_fresh.config import FreshConfig
    from scrapy_fresh.crawl.runtime import FreshRuntime
    from scrapy_fresh.frontier import Frontier, Stream
    from scrapy_fresh.store.base import StateStore

__all__ = [
    "CYCLE_LOW_LEASES",
    "CYCLE_MAX_LEASES",
    "REFILL_BATCH",
    "RUN_CADENCE",
    "BudgetSource",
    "ContinuousSource",
    "CycleSource",
    "DueSource",
    "SharedSource",
    "due_records",
    "source_for",
]

logger = logging.getLogger(__name__)

#: Due records loaded from the store at a time (continuous mode, and cycle mode without
#: a budget); also the page size of the cycle's reads of the store.
REFILL_BATCH = 1000
#: Cycle mode without a budget: the next batch of due records is loaded when fewer than
#: this many pages are leased (queued in the frontier or downloading)...
CYCLE_LOW_LEASES = REFILL_BATCH // 2
#: ...or when no queued host may be contacted now, while fewer than this many are.
CYCLE_MAX_LEASES = 4 * REFILL_BATCH
#: The meta record (namespace, key) that keeps cycle runs' cadence: ``started_at`` is the
#: last run's start, ``period`` the estimated time between runs
#: (:mod:`scrapy_fresh.policy.cadence`).
RUN_CADENCE = ("run", "cycle")


class Scheduling(Protocol):
    """What a source may use of the scheduler."""

    runtime: FreshRuntime
    config: FreshConfig
    frontier: Frontier
    #: When this run opened.
    opened_at: float

    def admit(self, scored: Iterable[tuple[float, PageState]], now: float) -> None:
        """Lease the records (with their scores) and queue them in the frontier."""

    def lease(self, state: PageState, stream: Stream, score: float, now: float) -> None:
        """Lease one record the shared frontier handed to this worker."""

    def may_take_early(self, state: PageState, now: float) -> bool:
        """Whether a record due within the lookahead is taken now."""

    def rules_allow(self, state: PageState, now: float) -> bool:
        """Whether the schedule rules allow fetching a record before its due time."""

    def idle(self) -> bool:
        """Whether nothing is leased or waiting to go out."""

    def leases_in_play(self) -> int:
        """Leases queued or downloading (not parked while their host is blocked)."""

    def flush_new(self) -> None:
        """Write the queued new records (then :meth:`DueSource.new_flushed`)."""

    def blocked_hosts(self) -> frozenset[str] | set[str]:
        """Hosts blocked by ``scrapy-fresh block``, as last read."""


class DueSource:
    """The due records of one run (the base: nothing is due)."""

    #: The spider stays open while nothing is due (continuous mode).
    stays_open = False
    #: This worker leases the new URLs its spider finds (else the shared frontier
    #: hands them out).
    leases_new = True
    #: A Retry-After longer than the run may wait defers the host's pages to the next
    #: run (:setting:`FRESH_CYCLE_MAX_WAIT_SECS`).
    defers_backoff = False

    def __init__(self, scheduler: Scheduling) -> None:
        self.scheduler = scheduler
        self.runtime = scheduler.runtime
        self.config = scheduler.config

    def lookahead(self, now: float) -> float:
        """Records due this long after now are due in this run."""
        return 0.0

    def open(self, now: float, cut: float) -> int:
        """Lease the run's first due records (due by ``cut``); return how many."""
        return 0

    def release_stale(self) -> int:
        """At open: put back the records an interrupted run left in flight."""
        return self.runtime.store.release_in_flight()

    def loading(self) -> bool:
        """Whether more due records are still to be loaded in this run."""
        return False

    def before_pop(self, now: float) -> None:
        """Called before the frontier is asked for the next page."""

    def top_up(self, now: float) -> bool:
        """No page may go out now: load more if there are; True if some were."""
        return False

    def wake_time(self) -> float | None:
        """When the engine should be woken to look again (None: no need)."""
        return None

    def on_timer(self, now: float) -> None:
        """The scheduler's timer fired."""

    def follow_store(self, now: float) -> None:
        """Every second or so while pages go out: see what others wrote to the store
        (a page made due by ``scrapy-fresh due``)."""

    def on_visit(self, state: PageState, now: float) -> bool:
        """A visit was recorded; True if the timer should be armed again."""
        return False

    def may_admit(self, state: PageState) -> bool:
        """Whether a record the spider found (new, or known and due) is leased now."""
        return True

    def unadmit(self) -> None:
        """A record admitted as new turned out to be known: give its unit back."""

    def new_flushed(self) -> None:
        """This worker's new records were written to the store."""

    def host_delay(self, host: str, delay: float) -> None:
        """``host``'s robots.txt asks for ``delay`` seconds between requests."""

    def host_back_off(self, host: str, until: float) -> None:
        """``host`` asked (Retry-After) not to be contacted before ``until``."""

    def hold_back(self, keys: list[str]) -> list[str]:
        """Leases of a blocked host: return those this worker keeps (parked until the
        host is unblocked); the others were handed back."""
        return keys

    def resume(self, keys: list[str]) -> list[str]:
        """Parked leases whose host is unblocked: return those that go out now (the
        others stay parked, given back at the run's end)."""
        return keys

    def close(self) -> int:
        """The run ends: give back what it leased and did not visit; return how many."""
        return self.runtime.store.release_in_flight()

    def _cycle_lookahead(self, now: float, *, cadence: bool = True) -> float:
        """:setting:`FRESH_CYCLE_LOOKAHEAD_SECS`, or half the time between runs measured
        in the store (:mod:`scrapy_fresh.policy.cadence`; ``cadence=False``: 0)."""
        fixed = self.config.cycle_lookahead_secs
        if fixed is not None:
            return fixed
        if not cadence:
            return 0.0
        periods: list[float | None] = []

        def started(value: dict[str, Any] | None) -> dict[str, Any]:
            value = value or {}
            period, last = value.get("period"), value.get("started_at")
            period = float(period) if isinstance(period, (int, float)) else None
            if isinstance(last, (int, float)) and last and now > last:
                period = next_period(period, now - last)
            periods[:] = [period]
            return {"period": period, "started_at": now}

        try:
            self.runtime.store.update_meta(*RUN_CADENCE, started)
        except StoreError as exc:
            self.runtime.store_error("record the run start in", exc)
            return 0.0
        period = periods[0]
        return lookahead(period)


class CycleSource(DueSource):
    """Cycle mode: every record due by the cut-off, read in due order a batch at a time.

    The records come in due order (most overdue first; the backend's order for a store
    without :class:`~scrapy_fresh.store.base.DueCursorStore`); each batch is ranked by
    :func:`~scrapy_fresh.frontier.scoring.priority_score` before it joins the frontier.
    The cut-off (the open time plus the lookahead) is fixed at open, and a record
    visited in this run comes due after the open time, so it is never taken twice.
    """

    defers_backoff = True

    def __init__(self, scheduler: Scheduling) -> None:
        super().__init__(scheduler)
        #: The due records not loaded yet.
        self._records: Iterator[PageState] | None = None
        #: The cycle's due cut-off.
        self.cut = -math.inf

    def lookahead(self, now: float) -> float:
        return self._cycle_lookahead(now)

    def open(self, now: float, cut: float) -> int:
        self.cut = cut
        self._records = due_records(self.runtime.store, cut)
        return self._load_more(now)

    def loading(self) -> bool:
        return self._records is not None

    def before_pop(self, now: float) -> None:
        if self._records is not None and self.scheduler.leases_in_play() < CYCLE_LOW_LEASES:
            self._load_more(now)  # keep a batch's worth of hosts to choose from

    def top_up(self, now: float) -> bool:
        return (
            self._records is not None
            and self.scheduler.leases_in_play() < CYCLE_MAX_LEASES
            and self._load_more(now) > 0
        )

    def close(self) -> int:
        self._records = None
        return super().close()

    def _in_cycle(self, state: PageState) -> bool:
        """Whether a queued or idle record due by the cut-off is fetched in this run: the
        records due at open, or due within the lookahead and not held back (as at open),
        not fetched or leased in this run."""
        if state.key in self.runtime.leases or state.key in self.runtime.records.settled:
            return False
        opened = self.scheduler.opened_at
        return state.next_due <= opened or self.scheduler.may_take_early(state, opened)

    def _load_more(self, now: float) -> int:
        """Lease the next :data:`REFILL_BATCH` due records."""
        if self._records is None:
            return 0
        batch: list[PageState] = []
        try:
            for state in self._records:
                if self._in_cycle(state):
                    batch.append(state)
                    if len(batch) >= REFILL_BATCH:
                        break
            else:
                self._records = None
        except StoreError as exc:  # the pages not read yet stay due for the next run
            self.runtime.store_error("read due records from", exc)
            self._records = None
        params = self.runtime.score_params
        scored = [(priority_score(s, now, params), i, s) for i, s in enumerate(batch)]
        scored.sort(key=lambda t: (-t[0], t[1]))
        new = [(score, s) for score, _, s in scored if s.last_crawl is None]
        old = [(score, s) for score, _, s in scored if s.last_crawl is not None]
        self.scheduler.admit(old + new, now)
        return len(batch)


class BudgetSource(CycleSource):
    """Cycle mode with :setting:`FRESH_CYCLE_BUDGET`: what the budget takes.

    One pass over the store's records (the queued and idle ones due by the cut-off, or
    all of them with :setting:`FRESH_CYCLE_FILL`) through the crawl planner
    (:func:`~scrapy_fresh.frontier.planner.plan_cycle`, the simulator's too), which keeps
    O(budget) of them. The re-crawls it takes are leased with the new URLs that fit;
    the next re-crawls that new URLs left budget for are kept as spare, handed out when
    the run has nothing else to do.
    """

    def __init__(self, scheduler: Scheduling) -> None:
        super().__init__(scheduler)
        self.budget_left = 0
        self.spare: list[tuple[float, PageState]] = []

    def open(self, now: float, cut: float) -> int:
        budget = self.config.cycle_budget
        self.cut = cut
        fill = self.runtime.score_params.fill
        blocked = self.scheduler.blocked_hosts()  # their pages would spend budget unfetched
        records = (
            r
            for r in due_records(self.runtime.store, math.inf if fill else self.cut)
            if r.host not in blocked
        )
        plan = plan_cycle(
            records,
            now,
            budget,
            self.runtime.score_params,
            cut=self.cut,
            new_share=self.config.new_url_share,
            early=self.scheduler.may_take_early,
            allowed=self.scheduler.rules_allow,
        )
        self.budget_left = plan.budget_left
        self.spare = plan.spare
        if plan.left_new or plan.left_due:
            logger.info(
                "scrapy_fresh: FRESH_CYCLE_BUDGET (%(budget)d) leaves %(old)d due re-crawls "
                "and %(new)d queued new URLs for a later run (unless the budget is not "
                "used up)",
                {"budget": budget, "old": plan.left_due, "new": plan.left_new},
                extra={"spider": self.runtime.crawler.spider},
            )
        self.scheduler.admit(plan.taken, now)
        return len(plan.taken)

    def top_up(self, now: float) -> bool:
        """Give the budget new URLs left unused to the next-best re-crawls."""
        if not self.spare or not self.budget_left or not self.scheduler.idle():
            return False
        take, self.spare = self.spare[: self.budget_left], self.spare[self.budget_left :]
        self.budget_left -= len(take)
        self.scheduler.admit(take, now)
        return bool(take)

    def may_admit(self, state: PageState) -> bool:
        """Re-crawls were chosen at open; new URLs share what is left."""
        if state.last_crawl is not None or self.budget_left <= 0:
            return False
        self.budget_left -= 1
        return True

    def unadmit(self) -> None:
        self.budget_left += 1

    def hold_back(self, keys: list[str]) -> list[str]:
        """Pages of a blocked or paused host are not fetched: their budget goes to the
        spare re-crawls (a pause begins after the plan was made)."""
        self.budget_left += len(keys)
        return keys

    def resume(self, keys: list[str]) -> list[str]:
        """Parked pages go out again only as far as the budget left allows."""
        take = keys[: max(0, self.budget_left)]
        self.budget_left -= len(take)
        return take


class ContinuousSource(DueSource):
    """Continuous mode: due records as they come due (the spider stays open)."""

    stays_open = True

    def __init__(self, scheduler: Scheduling) -> None:
        super().__init__(scheduler)
        #: The earliest due time of a record not loaded yet, as far as known.
        self.due_hint: float | None = None

    def open(self, now: float, cut: float) -> int:
        return self._refill(now)

    def _refill(self, now: float) -> int:
        store = self.runtime.store
        leases = self.runtime.leases
        batch = [s for s in store.due(now, REFILL_BATCH) if s.key not in leases]
        params = self.runtime.score_params
        self.scheduler.admit([(priority_score(s, now, params), s) for s in batch], now)
        self.due_hint = store.next_due_time()
        return len(batch)

    def wake_time(self) -> float | None:
        if self.due_hint is not None and len(self.scheduler.frontier) < REFILL_BATCH:
            return self.due_hint
        return None

    def on_timer(self, now: float) -> None:
        if self.due_hint is not None and self.due_hint <= now:
            self._refill(now)

    def follow_store(self, now: float) -> None:
        """A page made due from outside goes out within the blocked hosts' poll time."""
        try:
            due = self.runtime.store.next_due_time()
        except StoreError as exc:
            self.runtime.store_error("read the next due time in", exc)
            return
        if due is not None and (self.due_hint is None or due < self.due_hint):
            self.due_hint = due
            if due <= now:
                self._refill(now)

    def on_visit(self, state: PageState, now: float) -> bool:
        if self.due_hint is None or state.next_due < self.due_hint:
            self.due_hint = state.next_due
        return True


class SharedSource(DueSource):
    """:setting:`FRESH_STORE` ``"redis"``: the frontier shared with the other workers
    hands out every page (new URLs this worker finds are written to the store and come
    back through it); other workers' leases expire instead of being released at open."""

    leases_new = False

    def __init__(self, scheduler: Scheduling, shared: SharedFrontier, *, stays_open: bool):
        super().__init__(scheduler)
        self.shared = shared
        self.stays_open = stays_open

    @property
    def defers_backoff(self) -> bool:  # type: ignore[override]
        """Cycle mode: as with the other stores (the shared frontier does not wait for
        the host either, :class:`~scrapy_fresh.distributed.shared.SharedFrontier`)."""
        return not self.stays_open

    def lookahead(self, now: float) -> float:
        return 0.0 if self.stays_open else self._cycle_lookahead(now, cadence=False)

    def release_stale(self) -> int:
        return 0

    def open(self, now: float, cut: float) -> int:
        return self._pull(now)

    def _pull(self, now: float) -> int:
        self.scheduler.flush_new()  # this worker's discoveries go to the shared frontier first
        wanted = max(0, PULL_BATCH - len(self.scheduler.frontier))
        score = partial(priority_score, now=now, params=self.runtime.score_params)
        if not wanted:
            return 0
        blocked = self.scheduler.blocked_hosts()
        return self.shared.pull(now, self.scheduler.lease, score, wanted, busy_hosts=blocked)

    def loading(self) -> bool:
        return self.shared.waiting

    def top_up(self, now: float) -> bool:
        return self._pull(now) > 0

    def wake_time(self) -> float | None:
        """When the shared frontier may have pages for this worker; in continuous mode
        also when the next record comes due there (while Redis is unreachable: at the
        outage back-off's next try, :meth:`SharedFrontier.wake_time
        <scrapy_fresh.distributed.shared.SharedFrontier.wake_time>`). None while this
        worker's frontier is full: a pull would take nothing (its hosts' ready times
        wake it)."""
        if len(self.scheduler.frontier) >= PULL_BATCH:
            return None
        return self.shared.wake_time(due=self.stays_open)

    def on_visit(self, state: PageState, now: float) -> bool:
        self.shared.host_done(state.host, now)
        if not self.stays_open:
            return False
        due = self.shared.next_due
        if due is None or state.next_due < due:
            self.shared.next_due = state.next_due  # due again after the last pull
        return True

    def may_admit(self, state: PageState) -> bool:
        return False  # every page is handed out by the shared frontier

    def new_flushed(self) -> None:
        self.shared.waiting = False  # they are due now: ask at once, not after the poll

    def host_delay(self, host: str, delay: float) -> None:
        self.shared.set_delay(host, delay)

    def host_back_off(self, host: str, until: float) -> None:
        self.shared.back_off(host, until)

    def hold_back(self, keys: list[str]) -> list[str]:
        """Back to the shared frontier, where no worker takes them while the host is
        blocked: parked here, a block longer than the lease would let another worker
        take them and make this visit a lost one."""
        self.shared.give_back(keys)
        for key in keys:
            self.runtime.leases.pop(key, None)
        return []

    def close(self) -> int:
        return self.shared.give_back(list(self.runtime.leases))


def source_for(scheduler: Scheduling, settings: object) -> DueSource:
    """The due-record source of this run's mode and store."""
    runtime = scheduler.runtime
    config = scheduler.config
    continuous = config.mode == "continuous"
    shared = SharedFrontier.for_crawl(runtime.store, config, settings)
    if shared is not None:
        return SharedSource(scheduler, shared, stays_open=continuous)
    if continuous:
        return ContinuousSource(scheduler)
    if config.cycle_budget:
        return BudgetSource(scheduler)
    return CycleSource(scheduler)


def due_records(store: StateStore, now: float, batch: int = REFILL_BATCH) -> Iterator[PageState]:
    """Yield the queued and idle records of ``store`` with ``next_due <= now``, reading
    ``batch`` at a time: in due order (``next_due``, key) through
    :meth:`~scrapy_fresh.store.base.DueCursorStore.due_after` when the store has it, else
    in :meth:`~scrapy_fresh.store.base.StateStore.iterate` order. Memory: one batch.

    Lazy: records are read as they are asked for, so what changes in the store in
    between is seen (the scheduler's filters decide what that means).
    """
    if isinstance(store, DueCursorStore):
        after: tuple[float, str] | None = None
        while True:
            page = store.due_after(now, after, batch)
            yield from page
            if len(page) < batch:
                return
            after = (page[-1].next_due, page[-1].key)
    for state in store.iterate(batch):
        if state.status in DUE_STATUSES and state.next_due <= now:
            yield state
