"""FreshScheduler: Scrapy's scheduler replaced by the store and the frontier.

The scheduler decides what is fetched and when; it does no policy maths itself. Due
records come from the store (:meth:`~scrapy_fresh.store.base.StateStore.due`), are
ranked with :func:`~scrapy_fresh.frontier.scoring.priority_score` and handed out by the
:class:`~scrapy_fresh.frontier.Frontier` (per-host politeness, new/refresh mix). Visit
outcomes are written by the middlewares through :class:`~scrapy_fresh.crawl.runtime.FreshRuntime`.
See :doc:`/topics/scheduler`.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.asyncio import call_later
from scrapy.utils.misc import build_from_crawler, load_object

from scrapy_fresh.config import parse_provider
from scrapy_fresh.crawl.commits import CommitTimer
from scrapy_fresh.crawl.hostblocks import HostBlocks
from scrapy_fresh.crawl.records import Sighting
from scrapy_fresh.crawl.requestinfo import is_robots_request, rebuild_request, request_info
from scrapy_fresh.crawl.runtime import FreshRuntime, Lease, header
from scrapy_fresh.crawl.sources import DueSource, source_for
from scrapy_fresh.exceptions import ConfigError, StoreError
from scrapy_fresh.frontier import Frontier, Politeness, Stream
from scrapy_fresh.frontier.planner import may_take_early
from scrapy_fresh.frontier.scoring import priority_score
from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import DUE_STATUSES, PageState, Provider, Status
from scrapy_fresh.validators import parse_retry_after

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.dupefilters import BaseDupeFilter
    from scrapy.http import Response
    from scrapy.utils.asyncio import CallLaterResult
    from typing_extensions import Self


__all__ = ["FreshScheduler"]

logger = logging.getLogger(__name__)

#: Score of a request that continues a visit (retry, redirect, GET after a HEAD probe):
#: it goes before every other page of its host.
CONTINUATION_SCORE = 1e300
#: Longest ``Retry-After`` honoured, in seconds.
MAX_RETRY_AFTER_SECS = 3600.0
#: Timers fire this long after the time they wait for (clock granularity).
TIMER_SLACK_SECS = 0.005


@dataclass
class _Gate:
    """A host whose robots.txt is not known yet: one request out, the others parked."""

    since: float
    deadline: float
    waiting: bool = True
    parked: list[str] = field(default_factory=list)
    #: Its robots.txt request got an answer: robots_parsed opens the gate, not the
    #: request leaving the downloader.
    robots_answered: set[int] = field(default_factory=set)
    #: Cycle mode: the host asked for a back-off longer than the run may wait; its pages
    #: stay parked and are released to the next run when this one closes.
    deferred: bool = False


def _tells_more(request: Request, force: bool) -> bool:
    """Whether a duplicate of a rebuilt request may say what its record should keep: a
    start URL (``dont_filter``) or a request naming scrapy_fresh meta keys (per-request
    rules). Other duplicates (links to the page) are dropped unread, as they must be
    on link-dense pages."""
    return force or any(name.startswith("fresh_") for name in request.meta)


class FreshScheduler(BaseScheduler):
    """Hand out due and new pages from the store, politely and best-first.

    Settings: every ``FRESH_*`` setting (:doc:`/reference/settings`), plus Scrapy's
    ``DOWNLOAD_DELAY``, ``DOWNLOAD_SLOTS`` delays, ``ROBOTSTXT_OBEY`` (robots.txt
    ``Crawl-delay``) and ``DUPEFILTER_CLASS`` (used only for requests that bypass
    freshness).

    Stats: ``fresh/requests/new``, ``fresh/requests/refresh``,
    ``fresh/requests/skipped_not_due``, ``fresh/requests/skipped_in_flight``,
    ``fresh/requests/over_budget``, ``fresh/requests/bypassed``,
    ``fresh/requests/continued``, ``fresh/requests/bad_meta``, ``fresh/backoffs``,
    ``fresh/store_error`` (see :doc:`/reference/stats`).

    :param crawler: the crawler.
    :param runtime: the crawl's shared state (store, clock, leases).
    :param dupefilter: filter for requests that bypass freshness (``fresh_enabled=False``).
    """

    def __init__(
        self, crawler: Crawler, runtime: FreshRuntime, *, dupefilter: BaseDupeFilter | None = None
    ) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.config = runtime.config
        settings = crawler.settings
        self.politeness = Politeness(default_delay=max(0.0, settings.getfloat("DOWNLOAD_DELAY")))
        self.frontier = Frontier(self.politeness, new_share=self.config.new_url_share)
        self.dupefilter = dupefilter
        self._slot_settings: dict[str, Any] = settings.getdict("DOWNLOAD_SLOTS")
        self._robots = settings.getbool("ROBOTSTXT_OBEY")
        self._user_agent = str(
            settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or "*"
        )
        self._gate_secs = settings.getfloat("DOWNLOAD_TIMEOUT", 180.0) + 5.0
        self._ready: deque[Request] = deque()
        self._fifo: deque[Request] = deque()
        self._handoffs: dict[int, Request] = {}
        self._gates: dict[str, _Gate] = {}
        #: Whether request_left_downloader is connected (:meth:`_close_gate`).
        self._hears_departures = False
        #: Hosts whose pages wait for the next run (a long Retry-After, see _defer).
        self._deferred: set[str] = set()
        #: Cycle mode: seconds of Retry-After back-off each host made this run wait.
        self._waited: dict[str, float] = {}
        self._max_wait = self.config.cycle_max_wait_secs
        self._hosts_seen: set[str] = set()
        #: Keys handed out in this run with a request rebuilt from their record: a
        #: spider's ``dont_filter`` request for one (a start URL) is a duplicate of it.
        self._rebuilt: set[str] = set()
        #: Rebuilt keys whose spider request this run kept in the record (_keep_sighting).
        self._sighted: set[str] = set()
        #: Cycle mode: records due this long after now are taken too (see _due_by).
        self._lookahead = 0.0
        #: When this run opened.
        self.opened_at = math.inf
        self._timer: CallLaterResult | None = None
        self._timer_at = math.inf
        #: Commits the store's writes every FRESH_COMMIT_SECS.
        self._commits = CommitTimer(self.runtime)
        self._spider_provider: Provider | None = None
        self._opened = False
        self._closed = False
        #: Where this run's due records come from (:mod:`scrapy_fresh.crawl.sources`),
        #: chosen at open by the mode and the store.
        self.source: DueSource = DueSource(self)
        #: Hosts blocked by ``scrapy-fresh block`` (read at open) and, per host, the
        #: leases parked until it is unblocked.
        self._blocks = HostBlocks(lambda: self.runtime.store.blocked_hosts())
        self._blocked: dict[str, list[str]] = {}
        #: How many leases are parked in :attr:`_blocked` (not in play).
        self._parked_blocked = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = FreshRuntime.of(crawler)
        dupefilter = build_from_crawler(load_object(crawler.settings["DUPEFILTER_CLASS"]), crawler)
        return cls(crawler, runtime, dupefilter=dupefilter)

    @property
    def _now(self) -> float:
        return self.runtime.clock()

    # -- opening and closing -----------------------------------------------------------

    def open(self, spider: Spider) -> None:
        if self.dupefilter is not None:
            self.dupefilter.open()
        if not self.config.enabled:
            logger.info(
                "FRESH_ENABLED is False: FreshScheduler hands requests out in FIFO order.",
                extra={"spider": spider},
            )
            return
        spider = self.crawler.spider or spider
        attr = getattr(spider, "fresh_provider", None)
        if attr is not None:
            self._spider_provider = parse_provider(attr, f"{type(spider).__name__}.fresh_provider")
        store = self.runtime.store
        now = self._now
        self.source = self._make_source()
        released = self.source.release_stale()
        self._opened = True
        self.runtime.visit_listeners.append(self._on_visit)
        self.runtime.records.known_listeners.append(self._resolve_known)
        self.runtime.host_listeners.append(self._release)
        self.runtime.unreachable_listeners.append(self._pause_host)
        self.runtime.download_listeners.append(self._response_downloaded)
        signals_ = self.crawler.signals
        signals_.connect(self._spider_idle, signal=signals.spider_idle)
        signals_.connect(self._robots_parsed, signal=signals.robots_parsed)
        self.opened_at = now
        self._commits.start()
        self._blocks.poll(now)
        self._lookahead = self.source.lookahead(now)
        loaded = self.source.open(now, self._due_by(now))
        logger.info(
            "scrapy_fresh %(mode)s mode: %(loaded)d due pages loaded from %(records)d records "
            "(%(released)d released from an interrupted run)%(more)s",
            {
                "mode": self.config.mode,
                "loaded": loaded,
                "records": len(store),
                "released": released,
                "more": "; more are loaded as these go out" if self.source.loading() else "",
            },
            extra={"spider": spider},
        )
        self._arm_timer(now)

    def _make_source(self) -> DueSource:
        """The due-record source of this run (:func:`~scrapy_fresh.crawl.sources.source_for`)."""
        return source_for(self, self.crawler.settings)

    def _due_by(self, now: float) -> float:
        """Records due up to this time are due in this run (cycle mode: a lookahead)."""
        return now + self._lookahead

    def _is_due(self, state: PageState, now: float) -> bool:
        """Whether a known record may be fetched now: due (within the lookahead, unless
        this run fetched it already) and not in flight."""
        if state.status not in DUE_STATUSES:
            return False
        if state.next_due <= now:
            return True
        if state.next_due > self._due_by(now):
            return False
        return self.may_take_early(state, now)

    def may_take_early(self, state: PageState, now: float) -> bool:
        """A record due within the lookahead is taken now unless this run fetched it
        already, or its due time waits for an announced update still to come (fetched
        before it, the copy would be stale at once: Xu et al.'s slot rule), or the
        schedule rules do not allow it yet (:meth:`rules_allow`)."""
        return may_take_early(state, now, self.opened_at) and self.rules_allow(state, now)

    def rules_allow(self, state: PageState, now: float) -> bool:
        """Whether :setting:`FRESH_SCHEDULE_RULES` allow fetching ``state`` at ``now``,
        before its due time (``min``, windows, days)."""
        rules = self.runtime.policy.rules
        return not rules or rules.allows(state.url, state.host, state.last_crawl, now)

    def close(self, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._opened:
            self.runtime.flush_new()  # queued new records first: then released with the rest
            try:
                released = self.source.close()
            except StoreError as exc:
                self.runtime.store_error("release the leases in", exc)
                released = 0
            if released:
                logger.info(
                    "scrapy_fresh: %(n)d pages not visited in this run stay due.",
                    {"n": released},
                    extra={"spider": self.crawler.spider},
                )
            self._commits.stop()
            self.runtime.close_store()
        if self.dupefilter is not None:
            self.dupefilter.close(reason)

    # -- the BaseScheduler contract ----------------------------------------------------

    def has_pending_requests(self) -> bool:
        if self._ready or self._fifo or len(self.frontier) or self._parked():
            return True
        return self._top_up(self._now) or self.source.loading()

    def enqueue_request(self, request: Request) -> bool:
        if self._handoffs.pop(id(request), None) is request:
            self._ready.append(request)  # handed out by a timer: the engine takes it next
            return True
        if not self.config.enabled:
            return self._enqueue_plain(request)
        meta = request.meta
        key = meta.get("fresh_key")
        if key is not None:
            lease = self.runtime.leases.get(key)
            if (
                lease is not None
                and lease.handed
                and "fresh_outcome" not in meta
                and (request.url == lease.url or lease.url in (meta.get("redirect_urls") or ()))
            ):
                return self._continue(lease, request)
            for name in ("fresh_key", "fresh_stream", "fresh_outcome", "fresh_probed"):
                meta.pop(name, None)  # copied from another response's meta: not ours
        if not meta.get("fresh_enabled", True):
            return self._enqueue_plain(request)
        return self._enqueue_managed(request, force=request.dont_filter)

    def next_request(self) -> Request | None:
        while self._ready:
            request = self._ready.popleft()
            if not self._held_back(request):
                return request
        if self._fifo:
            return self._fifo.popleft()
        if not self._opened:
            return None
        return self._pop(self._now)

    # -- enqueueing --------------------------------------------------------------------

    def _enqueue_plain(self, request: Request) -> bool:
        if (
            not request.dont_filter
            and self.dupefilter is not None
            and self.dupefilter.request_seen(request)
        ):
            self.dupefilter.log(request, self.crawler.spider)  # type: ignore[arg-type]
            return False
        self._fifo.append(request)
        self.runtime.stat("fresh/requests/bypassed")
        return True

    def _continue(self, lease: Lease, request: Request) -> bool:
        """Take the retry or redirect of a leased request. A redirect to a URL this run
        has leased, fetched or judged already is dropped, as Scrapy's dupefilter drops
        it (unless ``dont_filter``): the source page is then recorded ``blocked``
        (looked at again in FRESH_MAX_REFRESH_SECS; its target is crawled on its own).
        A redirect to another URL makes that URL seen in this run."""
        if request.url != lease.url and not request.dont_filter:
            target = url_key(request.url, request.method, request.body)
            if target != lease.key:
                records = self.runtime.records
                if (
                    target in self.runtime.leases
                    or target in records.settled
                    or target in records.pending
                ):
                    self.runtime.stat("fresh/requests/duplicate_redirect")
                    self.runtime.visits.record_outcome({"fresh_key": lease.key}, Outcome.BLOCKED)
                    return False
                records.settle(target)
        lease.request = request
        lease.score = CONTINUATION_SCORE
        self.runtime.stat("fresh/requests/continued")
        self._push(lease, self._now, url_host(request.url))  # a redirect may change host
        return True

    def _provider(
        self, meta: Mapping[str, Any], host: str, current: Provider = Provider.NORMAL
    ) -> Provider:
        """meta['fresh_provider'] > the spider's ``fresh_provider`` > FRESH_PROVIDERS > normal.

        With FRESH_PROVIDER_AUTODETECT, "normal" is instead ``current``: the level the
        record's own signals earned (scrapy_fresh.crawl.provider_middleware keeps it).
        """
        value = meta.get("fresh_provider")
        if value is not None:
            return parse_provider(value, "meta['fresh_provider']")
        if self._spider_provider is not None:
            return self._spider_provider
        fixed = self.config.provider_for_host(host)
        if fixed is not None:
            return fixed
        return current if self.config.provider_autodetect else Provider.NORMAL

    def _sighting(self, request: Request, host: str) -> Sighting:
        """What ``request`` says about its page's record (:class:`Sighting`)."""
        spider = self.crawler.spider
        meta = request.meta
        return Sighting(
            info=lambda url: request_info(request, spider, url),
            provider=lambda current: self._provider(meta, host, current),
            accesses=_accesses(meta),
        )

    def _enqueue_managed(self, request: Request, *, force: bool = False) -> bool:
        """Take a spider's request for a page: lease it if due (or new), else drop it.

        One request per URL and run, as Scrapy's dupefilter keeps it: a URL leased,
        fetched or judged not due in this run is a duplicate. ``force`` (a request with
        ``dont_filter``): a known page is fetched even when not due, still with its
        conditional check and a verdict; a duplicate of a spider's own request goes out
        unjudged, one of a request this run rebuilt from the record (a start URL that was
        due) is dropped: plain Scrapy would have fetched the page once.
        """
        runtime = self.runtime
        records = runtime.records
        now = self._now
        key = url_key(request.url, request.method, request.body)
        lease = runtime.leases.get(key)
        rebuilt_waiting = lease is not None and not lease.handed and lease.request is None
        if not rebuilt_waiting and (
            lease is not None or key in records.settled or key in records.pending
        ):  # a duplicate (the common case on link-dense pages): decided before any parsing
            if force and key not in self._rebuilt:
                return self._enqueue_plain(request)
            if key in self._rebuilt and key not in self._sighted and _tells_more(request, force):
                self._keep_sighting(request, key, lease)
            runtime.stat(
                "fresh/requests/skipped_in_flight"
                if lease is not None and lease.handed
                else "fresh/requests/duplicate"
            )
            return False
        host = url_host(request.url)
        try:
            provider = self._provider(request.meta, host)
        except ConfigError as exc:
            runtime.stat("fresh/requests/bad_meta")
            logger.error(
                "Dropped %(request)s: %(error)s",
                {"request": request, "error": exc},
                extra={"spider": self.crawler.spider},
            )
            return False
        seen = self._sighting(request, host)
        if rebuilt_waiting and lease is not None:
            # Due, waiting in the frontier, to be rebuilt from its record: the spider's
            # own request goes instead.
            lease.request = request
            state = lease.state if lease.state is not None else self._lookup(key, request.url)
            if state is not None:
                records.merge(state, seen)  # the lease's copy gets the sighting too
            return True
        if not self.source.leases_new:  # the shared frontier hands every page out
            records.add(self._new_record(request, key, host, seen, provider, now))
            records.settle(key)
            runtime.stat("fresh/requests/shared")
            return False
        gate = self._gates.get(host)
        if gate is not None and gate.deferred:  # not fetched in this run (see _defer)
            state = self._lookup(key, request.url)
            if state is None:
                records.add(self._new_record(request, key, host, seen, provider, now))
            else:
                records.merge(state, seen)
            records.settle(key)
            runtime.stat("fresh/requests/deferred_backoff")
            return False
        state = self._lookup(key, request.url)
        if state is None:
            return self._add_new(
                request, self._new_record(request, key, host, seen, provider, now), now
            )
        records.merge(state, seen)
        due = self._is_due(state, now)
        if not (force or due) and key in runtime.documents:
            # A sitemap the spider reads: how it learns what changed. Checked
            # every run (a 304 when unchanged), else a run would see no change at all.
            force = True
            runtime.stat("fresh/requests/document_check")
        if force or (due and self._may_admit(state)):
            if not records.take([state], now):
                return self._enqueue_plain(request)
            stream = Stream.NEW if state.last_crawl is None else Stream.REFRESH
            self.lease(
                state, stream, priority_score(state, now, runtime.score_params), now, request
            )
            return True
        records.settle(key)
        runtime.stat("fresh/requests/over_budget" if due else "fresh/requests/skipped_not_due")
        return False

    def _keep_sighting(self, request: Request, key: str, lease: Lease | None) -> None:
        """The spider's own request for a page whose request this run rebuilt from its
        record and sent first (a start URL, or a request with ``fresh_*`` meta keys):
        the page is not fetched twice, but what the request says now (its meta,
        callback, ``cb_kwargs``: new per-request content rules, say) goes into the
        record, and into the copy its visit will write, for the next runs. Once per
        page and run."""
        self._sighted.add(key)
        state = lease.state if lease is not None else None
        if state is None:
            state = self._lookup(key, request.url)
        if state is not None:
            self.runtime.records.merge(state, self._sighting(request, url_host(request.url)))

    def _lookup(self, key: str, url: str) -> PageState | None:
        """The record of ``key`` (None on a store failure: taken as new, nothing lost)."""
        try:
            return self.runtime.records.lookup(key)
        except StoreError as exc:
            self.runtime.store_error("read", exc, url)
            return None

    def _new_record(
        self,
        request: Request,
        key: str,
        host: str,
        seen: Sighting,
        provider: Provider,
        now: float,
    ) -> PageState:
        config = self.config
        return PageState(
            key=key,
            url=request.url,
            host=host,
            status=Status.QUEUED,
            provider=provider,
            first_seen=now,
            next_due=now,
            refresh_secs=config.default_refresh_secs,
            p_l=config.pc_lower,
            p_g=config.pc_upper,
            access_count=seen.accesses or 0,
            request=seen.info_for(request.url),
        )

    def _add_new(self, request: Request, state: PageState, now: float) -> bool:
        """Queue the new record of ``request`` and lease it (within the budget)."""
        records = self.runtime.records
        key = state.key
        admit = self._may_admit(state)
        records.add(state)  # queued first: taking it is then a change in memory alone
        if not admit:
            records.settle(key)
            self.runtime.stat("fresh/requests/over_budget")
            return False
        records.take([state], now)
        self.lease(
            state, Stream.NEW, priority_score(state, now, self.runtime.score_params), now, request
        )
        if records.pending.get(key) is state:  # not written yet: nothing else has it
            # Its visit fields (none yet) are exact for the visit's provider signals,
            # unless the store turns out to know the URL when it is written (_relabel).
            self.runtime.leases[key].state = state
        return True

    def _resolve_known(self, records: list[PageState]) -> None:
        """Sort out queued new records whose URL the store had by the time they were
        written (another worker, or a writer outside the scheduler, added it first).

        The store's record gets the queued record's discovery fields (request data,
        provider, popularity), never its visit fields. A lease taken for it as a new
        URL is kept if the record is due (and within the budget), else dropped
        (``request_dropped`` is sent, as Scrapy does for a request its scheduler refuses).
        """
        runtime = self.runtime
        book = runtime.records
        try:
            stored = runtime.store.get_many(r.key for r in records)
        except StoreError as exc:
            runtime.store_error("read known records from", exc)
            return  # their requests go out as new ones: nothing is lost
        now = self._now
        for record in records:
            state = stored.get(record.key)
            if state is None:
                continue
            book.merge(state, self._queued_sighting(record))
            lease = runtime.leases.get(record.key)
            if lease is None or lease.handed:
                continue
            self.source.unadmit()  # the unit taken for it as a new URL
            due = self._is_due(state, now)
            if due and self._may_admit(state) and book.take([state], now):
                self._relabel(lease, state, now)
                continue
            book.settle(record.key)
            runtime.leases.pop(record.key, None)
            self.frontier.discard(record.key)
            runtime.stat("fresh/requests/over_budget" if due else "fresh/requests/skipped_not_due")
            if lease.request is not None:
                self.crawler.signals.send_catch_log(
                    signals.request_dropped, request=lease.request, spider=self.crawler.spider
                )

    def _queued_sighting(self, record: PageState) -> Sighting:
        """The sighting a queued new record was made from."""
        meta = record.request.get("meta") or {}

        def provider(current: Provider) -> Provider:
            try:
                return self._provider(meta, record.host, current)
            except ConfigError:
                return current

        return Sighting(
            info=lambda _url: record.request,
            provider=provider,
            accesses=record.access_count or None,
        )

    def _relabel(self, lease: Lease, state: PageState, now: float) -> None:
        """Give a lease taken for a new URL what its known record says."""
        lease.state = None  # the queued new record is not what the store has
        lease.stream = Stream.NEW if state.last_crawl is None else Stream.REFRESH
        lease.score = priority_score(state, now, self.runtime.score_params)
        lease.visited = state.last_crawl is not None
        lease.etag, lease.last_modified = state.etag, state.last_modified
        lease.content_length, lease.visits = state.content_length, state.visits
        if self.frontier.discard(lease.key):
            self.frontier.push(lease.key, lease.host, lease.score, lease.stream, now)

    def _may_admit(self, state: PageState) -> bool:
        """Whether a record the spider found is leased now (the source decides: a
        cycle budget, or the shared frontier that hands out every page)."""
        return self.source.may_admit(state)

    # -- loading due records (the source asks) -----------------------------------------

    def _top_up(self, now: float) -> bool:
        """No page may go out now: let the source load more (then wake the engine, which
        may not ask soon when this is called from has_pending_requests())."""
        if not self.source.top_up(now):
            return False
        self._arm_timer(now)
        return True

    def idle(self) -> bool:
        return not (self.leases_in_play() or self._ready or self._fifo)

    def leases_in_play(self) -> int:
        """Leases queued or downloading: not those parked while their host is blocked or
        paused (they may wait past the run's end, and are given back then)."""
        return max(0, len(self.runtime.leases) - self._parked_blocked)

    def flush_new(self) -> None:
        """Write the queued new records; the source is told (a shared frontier is then
        asked at once: they are due now)."""
        if not self.runtime.records.pending:
            return
        self.runtime.flush_new()
        self.source.new_flushed()

    # -- blocked hosts -----------------------------------------------------------------

    def _follow_store(self, now: float) -> None:
        """Every :data:`~scrapy_fresh.crawl.hostblocks.POLL_SECS`: read the blocked hosts (take
        a newly blocked host's pages out of the frontier, hand an unblocked host's
        parked pages out again) and, in continuous mode, the earliest due time (a page
        made due from outside, by ``scrapy-fresh due``, goes out within that time)."""
        changed = self._blocks.poll(now)
        if changed is None:
            return
        self.source.follow_store(now)
        blocked, unblocked = changed
        for host in blocked:
            self._park_host(host)
            logger.info(
                "scrapy_fresh: %(host)s is blocked; its pages wait until it is unblocked",
                {"host": host},
                extra={"spider": self.crawler.spider},
            )
        for host in unblocked:
            parked = self._blocked.pop(host, [])
            self._parked_blocked -= len(parked)
            parked, wait = self.source.resume(parked), parked
            if len(parked) < len(wait):  # kept back (the cycle budget): given back at close
                left = wait[len(parked) :]
                self._blocked[host] = left
                self._parked_blocked += len(left)
            logger.info(
                "scrapy_fresh: %(host)s is %(what)s; %(n)d pages go out again",
                {"host": host, "n": len(parked),
                 "what": "tried again" if host in self.runtime.reachability.pauses
                 else "unblocked"},
                extra={"spider": self.crawler.spider},
            )  # fmt: skip
            for key in parked:
                lease = self.runtime.leases.get(key)
                if lease is not None:
                    self._push(lease, now, host)

    def blocked_hosts(self) -> frozenset[str] | set[str]:
        """Hosts blocked by ``scrapy-fresh block`` (as last read), paused because they
        stopped answering (:mod:`scrapy_fresh.crawl.reachability`) or deferred to the next
        run (a long ``Retry-After``): their pages are not taken in this run."""
        return self._blocks.hosts | self._deferred if self._deferred else self._blocks.hosts

    def _park_host(self, host: str) -> None:
        """Take the pages of a host that is blocked or paused now out of the frontier."""
        keys = [k for k, lease in self.runtime.leases.items() if lease.host == host]
        self._park_blocked(host, [k for k in keys if self.frontier.discard(k)])

    def _pause_host(self, host: str, secs: float, exc: Exception) -> None:
        """A host stopped answering (:mod:`scrapy_fresh.crawl.reachability`): hold its
        pages back for ``secs``; they stay due, untouched. The other workers of a shared
        frontier (Redis) leave the host alone for as long."""
        now = self._now
        self.source.host_back_off(host, now + secs)
        if not self._blocks.pause(host, now + secs):
            return
        self.runtime.stat("fresh/hosts_unreachable")
        self._park_host(host)
        logger.warning(
            "scrapy_fresh: %(host)s did not answer %(n)d attempts in a row (%(exc)s); its "
            "other pages wait %(secs).0f s%(run)s (FRESH_UNREACHABLE_ATTEMPTS)",
            {"host": host, "n": self.config.unreachable_attempts, "exc": exc, "secs": secs,
             "run": "" if self.source.stays_open else ", until the next run if this one ends first"},
            extra={"spider": self.crawler.spider},
        )  # fmt: skip
        self._arm_timer(now)

    def _held_back(self, request: Request) -> bool:
        """A request a timer handed out (it waits in line for the engine) whose host was
        blocked or paused meanwhile: park its lease with it instead of sending it."""
        key = request.meta.get("fresh_key")
        lease = self.runtime.leases.get(key) if isinstance(key, str) else None
        if lease is None or lease.host not in self._blocks:
            return False
        lease.request = request
        if lease.handed:  # not sent after all: counted when it goes out
            lease.handed = False
            self.runtime.stat(f"fresh/requests/{lease.stream.value}", -1)
        self._park_blocked(lease.host, [lease.key])
        return True

    def _park_blocked(self, host: str, keys: list[str]) -> None:
        if keys:
            self.runtime.stat("fresh/requests/blocked_host", len(keys))
            kept = self.source.hold_back(keys)
            if kept:
                self._blocked.setdefault(host, []).extend(kept)
                self._parked_blocked += len(kept)

    def admit(self, scored: Iterable[tuple[float, PageState]], now: float) -> None:
        scored = list(scored)
        if not scored:
            return
        records = self.runtime.records
        moved: list[tuple[PageState, Provider]] = []
        for _, state in scored:
            meta = state.request.get("meta") or {}
            try:
                provider = self._provider(meta, state.host, state.provider)
            except ConfigError:
                provider = state.provider
            if provider is not state.provider:
                moved.append((state, provider))
        if moved:
            records.set_provider(moved)
        if not records.take([state for _, state in scored], now):
            return
        for score, state in scored:
            stream = Stream.NEW if state.last_crawl is None else Stream.REFRESH
            self.lease(state, stream, score, now)
            # Read for this lease and marked in flight: the request is rebuilt from it
            # and the provider signals take it (no second read of the store).
            self.runtime.leases[state.key].state = state

    def lease(
        self,
        state: PageState,
        stream: Stream,
        score: float,
        now: float,
        request: Request | None = None,
    ) -> None:
        lease = Lease.of(state, stream, score, request)
        self.runtime.leases[state.key] = lease
        self._push(lease, now)

    # -- handing out -------------------------------------------------------------------

    def _push(self, lease: Lease, now: float, host: str | None = None) -> None:
        host = host or lease.host
        if host in self._blocks:
            self._park_blocked(host, [lease.key])
            return
        if host not in self._hosts_seen:
            self._hosts_seen.add(host)
            url = lease.request.url if lease.request is not None else lease.url
            hostname = urlsplit(url).hostname or ""
            delay = (self._slot_settings.get(hostname) or {}).get("delay")
            if delay is not None:
                self.politeness.set_delay(host, float(delay))
        gate = self._gates.get(host)
        if gate is not None and gate.waiting:
            if gate.deferred:  # parked for the next run, or handed back (see _defer)
                self.runtime.stat("fresh/requests/deferred_backoff")
                gate.parked.extend(self.source.hold_back([lease.key]))
            else:
                gate.parked.append(lease.key)
            return
        self.frontier.push(lease.key, host, lease.score, lease.stream, now)

    def _parked(self) -> int:
        return sum(len(g.parked) for g in self._gates.values() if g.waiting and not g.deferred)

    def _pop(self, now: float) -> Request | None:
        leases = self.runtime.leases
        self.flush_new()  # known URLs among them are sorted out first
        self.source.before_pop(now)
        self._follow_store(now)
        while True:
            popped = self.frontier.pop(now)
            if popped is None:
                if self._top_up(now):
                    continue
                self._arm_timer(now)
                return None
            lease = leases.get(popped.key)
            if lease is None:
                continue
            if popped.host in self._blocks:
                self._park_blocked(popped.host, [popped.key])
                continue
            gate = self._gates.get(popped.host)
            if gate is not None and gate.waiting:
                gate.parked.append(lease.key)  # its robots.txt (Crawl-delay) is not known yet
                continue
            request = lease.request
            if request is None:
                request = self._rebuild(lease)
                if request is None:
                    continue
                self._rebuilt.add(lease.key)
            lease.request = None
            if self._robots and gate is None:
                self._close_gate(popped.host, now)
            request.meta["fresh_key"] = lease.key
            request.meta["fresh_stream"] = lease.stream.value
            if not lease.handed:
                lease.handed = True
                self.runtime.stat(f"fresh/requests/{lease.stream.value}")
            lease.url = request.url
            return request

    def _rebuild(self, lease: Lease) -> Request | None:
        # The record as admitted (:meth:`admit`), else read now.
        state = lease.state if lease.state is not None else self._lookup(lease.key, lease.url)
        if state is None:
            self.runtime.leases.pop(lease.key, None)
            return None
        meta = state.request.get("meta") or {}
        discovered = "fresh_sitemap" in meta or bool(meta.get("fresh_robots"))
        if discovered and not self.config.provider_signals:
            # A sitemap (or robots.txt) the provider middleware found and reads: without
            # it the spider's own callback would get it. Looked at again later.
            self.runtime.visits.record_outcome({"fresh_key": lease.key}, Outcome.BLOCKED)
            return None
        spider = self.crawler.spider
        assert spider is not None
        lease.state = state  # the provider signals take it from the lease
        try:
            return rebuild_request(state.request, state.url, spider)
        except Exception:
            logger.exception(
                "scrapy_fresh cannot rebuild the request of %(url)s",
                {"url": state.url},
                extra={"spider": spider},
            )
            self.runtime.leases.pop(lease.key, None)
            return None

    # -- waking the engine -------------------------------------------------------------

    def _arm_timer(self, now: float) -> None:
        """Make sure something wakes the engine when the next page may go out."""
        if self._closed or not self._opened:
            return
        targets: list[float] = []
        ready = self.frontier.next_ready_time()
        if ready is not None:
            targets.append(ready)
        wake = self.source.wake_time()
        if wake is not None:
            targets.append(wake)
        targets.extend(g.deadline for g in self._gates.values() if g.waiting and not g.deferred)
        if self._blocked or self.source.stays_open:  # an unblock, a page made due from outside
            targets.append(self._blocks.next_poll)
        if not targets:
            return
        at = max(min(targets), now)
        if self._timer is not None and self._timer_at <= at + 1e-3:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = call_later(at - now + TIMER_SLACK_SECS, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = math.inf
        try:
            engine = self.crawler.engine
        except RuntimeError:  # not crawling (unit tests drive the scheduler directly)
            engine = None
        if self._closed or engine is None or self.crawler.spider is None:
            return
        now = self._now
        for host, gate in list(self._gates.items()):
            if gate.waiting and gate.deadline <= now:
                self._release(host)
        self.source.on_timer(now)
        if engine.needs_backout():
            # Full (or closing): it asks for the next request (next_request) as soon as
            # a download or a callback ends; a page popped now would only wait in line.
            return
        request = self._pop(now)
        if request is None:
            return
        # Wake the engine through its public path: engine.crawl() enqueues the request
        # (enqueue_request() recognises it and keeps it first in line) and schedules the
        # engine's next loop at once instead of at its 5 s heartbeat.
        self._handoffs[id(request)] = request
        try:
            engine.crawl(request)
        except RuntimeError:
            logger.debug(
                "scrapy_fresh: the spider closed before %(request)s went out", {"request": request}
            )
        if self._handoffs.pop(id(request), None) is not None:
            logger.debug(
                "scrapy_fresh: %(request)s was dropped by a request_scheduled handler",
                {"request": request},
            )
        self._arm_timer(now)

    # -- signals and runtime events ----------------------------------------------------

    def _on_visit(self, state: PageState) -> None:
        now = self._now
        if self.source.on_visit(state, now):
            self._arm_timer(now)

    def _close_gate(self, host: str, now: float) -> None:
        """Hand out one request of ``host`` and park the others until its robots.txt is
        parsed or it answers (:meth:`_release`). Scrapy's ``request_left_downloader`` is
        listened to from the first such gate on (``ROBOTSTXT_OBEY``), not before: its
        dispatch to one more receiver costs every request of the crawl. (Never
        disconnected: a receiver removed while the signal is sent makes Scrapy skip the
        next one, another component's.)"""
        self._gates[host] = _Gate(since=now, deadline=now + self._gate_secs)
        if not self._hears_departures:
            self._hears_departures = True
            self.crawler.signals.connect(
                self._request_left_downloader, signal=signals.request_left_downloader
            )

    def _release(self, host: str, *, robots: bool = False) -> None:
        """``host`` answered (or its robots.txt was parsed): hand out its parked pages.

        After robots.txt the first request is only now on its way, so the host's delay
        counts from now; after an answer it counts from when the first request went out.
        """
        gate = self._gates.get(host)
        if gate is None or not gate.waiting or gate.deferred:
            return
        gate.waiting = False
        now = self._now
        delay = self.politeness.delay(host)
        if delay:
            self.politeness.back_off(host, (now if robots else gate.since) + delay)
        leases = self.runtime.leases
        for key in gate.parked:
            lease = leases.get(key)
            if lease is not None:
                self.frontier.push(key, host, lease.score, lease.stream, now)
        gate.parked.clear()
        self._arm_timer(now)

    def _spider_idle(self) -> None:
        if self.source.stays_open and not self._closed:
            raise DontCloseSpider("scrapy_fresh continuous mode: waiting for the next due page")

    def _robots_parsed(self, robotparser: Any, request: Request) -> None:
        host = url_host(request.url)
        try:
            delay = robotparser.crawl_delay(self._user_agent)
        except (AttributeError, NotImplementedError, TypeError, ValueError):  # odd parsers
            delay = None
        if delay:
            self.politeness.set_delay(host, float(delay))
            self.source.host_delay(host, float(delay))
            logger.info(
                "scrapy_fresh: robots.txt of %(host)s asks for a Crawl-delay of %(delay)s s",
                {"host": host, "delay": delay},
                extra={"spider": self.crawler.spider},
            )
        if host not in self._gates:  # robots.txt came first: nothing to release later
            self._gates[host] = _Gate(since=self._now, deadline=0.0, waiting=False)
        self._release(host, robots=True)

    def _request_left_downloader(self, request: Request) -> None:
        """A request of a gated host left the downloader: an answer opened the gate
        already (:meth:`_release` from the conditional check), a robots.txt answer opens
        it when parsed; a download error (refused connection, timeout, DNS) opens it now,
        so that the host's other pages and the retries fail as fast as in plain Scrapy."""
        host = url_host(request.url)
        gate = self._gates.get(host)
        if gate is None or not gate.waiting:
            return
        if not is_robots_request(request):
            self._release(host)
        elif id(request) in gate.robots_answered:
            gate.robots_answered.discard(id(request))
        else:  # robots.txt could not be downloaded: Scrapy goes on without it
            self._release(host, robots=True)

    def _response_downloaded(self, response: Response, request: Request) -> None:
        if is_robots_request(request):
            gate = self._gates.get(url_host(request.url))
            if gate is not None and gate.waiting:
                gate.robots_answered.add(id(request))
        if response.status not in (429, 503):
            return
        now = self._now
        secs = parse_retry_after(header(response.headers, "Retry-After"), now)
        if secs is None:
            return
        host = url_host(request.url)
        wait = min(secs, MAX_RETRY_AFTER_SECS)
        if self.source.defers_backoff:
            waited = self._waited.get(host, 0.0) + wait
            if waited > self._max_wait:
                self._defer(host, request, secs)
                return
            self._waited[host] = waited
        self.politeness.back_off(host, now + wait)
        self.source.host_back_off(host, now + wait)
        self.runtime.stat("fresh/backoffs")
        logger.info(
            "scrapy_fresh: %(host)s answered %(status)d with Retry-After %(secs).0f s; "
            "backing off",
            {"host": host, "status": response.status, "secs": secs},
            extra={"spider": self.crawler.spider},
        )

    def _defer(self, host: str, request: Request, secs: float) -> None:
        """Cycle mode: ``host`` asked for a back-off that would make this run wait longer
        than :setting:`FRESH_CYCLE_MAX_WAIT_SECS` in all. Its answer is final (not
        retried: the visit is recorded as an error, as after the last retry); its other
        pages, queued now or later in the run, are parked and stay due for the next run
        (released when the run closes), so the run ends when the other hosts are done."""
        request.meta["dont_retry"] = True
        gate = self._gates.get(host)
        if gate is None:
            gate = self._gates[host] = _Gate(since=self._now, deadline=math.inf)
        elif gate.deferred:
            return
        gate.waiting = gate.deferred = True
        self._deferred.add(host)  # not taken again in this run, even once the back-off ends
        # A shared frontier (Redis) keeps the other workers off the host as long, and
        # takes its pages back for them (or the next run): none is parked here.
        self.source.host_back_off(host, self._now + min(secs, MAX_RETRY_AFTER_SECS))
        keys = [
            key
            for key, lease in list(self.runtime.leases.items())
            if lease.host == host and self.frontier.discard(key)
        ]
        gate.parked.extend(self.source.hold_back(keys))
        self.runtime.stat("fresh/requests/deferred_backoff", len(keys))
        logger.warning(
            "scrapy_fresh: %(host)s answered %(url)s with Retry-After %(secs).0f s, longer "
            "than this run may wait (FRESH_CYCLE_MAX_WAIT_SECS = %(max).0f s); its pages "
            "not fetched yet stay due for the next run.",
            {"host": host, "url": request.url, "secs": secs, "max": self._max_wait},
            extra={"spider": self.crawler.spider},
        )


def _accesses(meta: Mapping[str, Any]) -> int | None:
    value = meta.get("fresh_accesses")
    if value is None or isinstance(value, bool):
        return None
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return None
