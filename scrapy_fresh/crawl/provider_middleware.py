"""Provider signals in a crawl: read them, check them, use them (downloader middleware).

:class:`FreshProviderMiddleware` reads update signals from every response
(``Last-Modified``, ``Cache-Control``, ``Expires``) and from sitemaps and feeds
(:mod:`scrapy_fresh.providers`), takes the spider's own (``meta["fresh_updates"]``,
``meta["fresh_schedule"]``), and hands them to :class:`~scrapy_fresh.providers.tracker.SignalTracker`, which writes
them into the URL records (past updates, announced updates), moves due times as Xu et
al.'s slot rule says (:mod:`scrapy_fresh.providers.apply`), and after each visit checks
what the signals had claimed against what the visit found and updates the host's trust
in that kind of signal (:mod:`scrapy_fresh.policy.trust`,
:mod:`scrapy_fresh.providers.ledger`); the signals of a demoted host are still recorded
and checked, not used. The simulator drives the same tracker.

With :setting:`FRESH_PROVIDER_AUTODETECT` a page whose level nobody fixed (request meta,
spider attribute, :setting:`FRESH_PROVIDERS`) gets the level its signals support.

With :setting:`FRESH_PROVIDER_SITEMAPS` it also finds sitemaps itself: the ``Sitemap:``
lines of each host's robots.txt (the one Scrapy fetches for ``ROBOTSTXT_OBEY``, or, with
:setting:`FRESH_PROVIDER_FETCH_ROBOTS`, one it requests itself) and the children of
every sitemap index read (:mod:`scrapy_fresh.providers.discovery` decides which). They
are requested through the scheduler like any page (politeness, robots.txt, stats), kept
as records so that the refresh rule decides when they are read again, marked with
:reqmeta:`fresh_sitemap` (or :reqmeta:`fresh_robots`) and given a callback that yields
nothing. The sitemaps found are requested only when the spider is idle, and only those
it did not request itself: a spider's own sitemap or feed request (SitemapSpider
following an index) is never taken over, its document is read from the spider's own
response. See :doc:`/topics/providers`.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured

from scrapy_fresh.config import parse_provider
from scrapy_fresh.crawl.requestinfo import fetches_robots
from scrapy_fresh.crawl.runtime import FreshRuntime, header
from scrapy_fresh.exceptions import ConfigError, StoreError
from scrapy_fresh.keys import url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.policy.trust import TrustParams
from scrapy_fresh.providers.discovery import ROBOTS_MAX_BYTES, DiscoveryLimits, SitemapDiscovery
from scrapy_fresh.providers.document import looks_like_document, parse_document
from scrapy_fresh.providers.http import has_header_signals, header_signals
from scrapy_fresh.providers.ledger import QUIET_KIND, TrustLedger
from scrapy_fresh.providers.meta import has_meta_signals, meta_signals
from scrapy_fresh.providers.safexml import Limits
from scrapy_fresh.providers.signals import (
    AnnouncedUpdate,
    NotBefore,
    ParseReport,
    PastUpdate,
    QuietWindow,
    Signals,
)
from scrapy_fresh.providers.tracker import FUTURE_KINDS, PAST_KINDS, SignalTracker
from scrapy_fresh.store.base import PageState, Provider

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.python.failure import Failure
    from typing_extensions import Self

__all__ = [
    "FUTURE_KINDS",
    "PAST_KINDS",
    "FreshProviderMiddleware",
    "meta_signals",
    "no_items",
]

logger = logging.getLogger(__name__)

#: Document outcomes after which nothing of a discovered sitemap could be used: it is
#: read again no sooner than FRESH_MAX_REFRESH_SECS.
REFUSED_OUTCOMES = frozenset({"too_large", "entities_refused", "not_xml", "unknown_document"})
#: URLs of a sitemap kept to judge, at the end of the run that first read it, whether
#: it speaks of any page of the crawl (an even sample of its entries).
UNUSED_SAMPLE = 5000


def no_items(response: Response) -> list[Any]:
    """Callback of the sitemaps and robots.txt files scrapy_fresh requests itself: their
    signals were read by :class:`FreshProviderMiddleware`; they yield no item."""
    return []


def _discovered(meta: Mapping[str, Any]) -> bool:
    """Whether a request (or a record's stored request meta) is one discovery made."""
    return "fresh_sitemap" in meta or bool(meta.get("fresh_robots"))


def _depth(meta: Mapping[str, Any]) -> int:
    """The sitemap depth a request carries (0 for a sitemap the spider fetched)."""
    value = meta.get("fresh_sitemap")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0


def _over_maxsize(message: str) -> bool:
    """Whether a download failed because the answer was over ``download_maxsize`` (the
    words of Scrapy's download handler and of HttpCompressionMiddleware)."""
    text = message.lower()
    return "download max size" in text or "download_maxsize" in text


class _Records:
    """The store as the tracker's page records, noting how many of the URLs a document
    spoke about this crawl knows (stored, queued or leased in this run)."""

    def __init__(self, runtime: FreshRuntime) -> None:
        self.runtime = runtime
        self.known = 0

    def get_many(self, keys: Iterable[str]) -> dict[str, PageState]:
        wanted = list(keys)
        runtime = self.runtime
        found = runtime.store.get_many(wanted)
        self.known = len(found) + sum(
            1
            for key in wanted
            if key not in found and (key in runtime.leases or key in runtime.records.pending)
        )
        return found

    def put_many(self, states: Iterable[PageState]) -> None:
        self.runtime.store.put_many(states)


class FreshProviderMiddleware:
    """Read, check and use content-provider update signals (downloader middleware, 535).

    Enable it above :class:`~scrapy_fresh.crawl.middlewares.FreshDownloaderMiddleware` (540) so
    that it sees each request first and each response after the conditional check; the
    add-on does. The checking and applying is
    :class:`~scrapy_fresh.providers.tracker.SignalTracker`'s (shared with the simulator);
    this class reads responses and meta, and reports.

    Settings: :setting:`FRESH_PROVIDER_SIGNALS`, :setting:`FRESH_PROVIDER_AUTODETECT`,
    :setting:`FRESH_PROVIDER_MAX_BYTES`, :setting:`FRESH_PROVIDER_MAX_INFLATED_BYTES`,
    :setting:`FRESH_PROVIDER_MAX_ENTRIES`, :setting:`FRESH_PROVIDER_SITEMAPS`,
    :setting:`FRESH_PROVIDER_FETCH_ROBOTS`, :setting:`FRESH_PROVIDER_MAX_SITEMAPS`,
    :setting:`FRESH_PROVIDER_MAX_SITEMAP_DEPTH`, :setting:`FRESH_TRUST`,
    :setting:`FRESH_TRUST_THRESHOLD`, :setting:`FRESH_TRUST_RECOVER`,
    :setting:`FRESH_TRUST_QUIET_EVIDENCE`.
    Meta keys: :reqmeta:`fresh_updates`, :reqmeta:`fresh_schedule`,
    :reqmeta:`fresh_sitemap`, :reqmeta:`fresh_robots`.
    Stats: ``fresh/providers/*`` and ``fresh/trust/*`` (:doc:`/reference/stats`).
    """

    def __init__(self, crawler: Crawler, runtime: FreshRuntime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        config = runtime.config
        self.autodetect = config.provider_autodetect
        self.trust_enabled = config.trust
        self.limits = Limits(
            max_compressed_bytes=config.provider_max_bytes,
            max_decompressed_bytes=config.provider_max_inflated_bytes,
            max_entries=config.provider_max_entries,
        )
        self.params = TrustParams(
            threshold=config.trust_threshold,
            recover=config.trust_recover,
            quiet_evidence=config.trust_quiet_evidence,
        )
        self._tracker: SignalTracker | None = None
        self._records = _Records(runtime)
        #: key -> (request meta, record URL) of a visit under way.
        self._visits: dict[str, tuple[MutableMapping[str, Any], str]] = {}
        runtime.visit_amenders.append(self._amend)
        runtime.outcome_listeners.append(self._on_outcome)
        #: Keys whose visit :meth:`_amend` applied signals to before the record's write.
        self._amended: set[str] = set()
        # -- sitemap discovery
        self.sitemaps = config.provider_sitemaps
        self.fetch_robots = (
            self.sitemaps
            and config.provider_fetch_robots
            and not crawler.settings.getbool("ROBOTSTXT_OBEY")
        )
        self.discovery = SitemapDiscovery(
            DiscoveryLimits(
                max_depth=config.provider_max_sitemap_depth,
                max_per_host=config.provider_max_sitemaps,
            )
        )
        #: When the discovery bookkeeping started: continuous mode starts it afresh every
        #: FRESH_DEFAULT_REFRESH_SECS, so that its per-run limits hold per day, not forever.
        self._discovery_since = runtime.clock()
        maxsize = max(config.provider_max_bytes, config.provider_max_inflated_bytes)
        scrapy_maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        #: download_maxsize of the documents discovery requests (Scrapy stops there).
        self.download_maxsize = min(maxsize, scrapy_maxsize) if scrapy_maxsize > 0 else maxsize
        #: Keys of discovered documents read again no sooner than FRESH_MAX_REFRESH_SECS.
        self._postponed: set[str] = set()
        #: Discovered sitemaps first read in this run that spoke of no page the crawl knew
        #: then -> a sample of their URLs' keys, judged again when the run is idle.
        self._unjudged: dict[str, list[str]] = {}
        #: Sitemaps found (robots.txt lines, index children), requested at the next idle.
        self._held: list[tuple[str, int]] = []
        crawler.signals.connect(self._spider_idle, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = FreshRuntime.of(crawler)
        if not runtime.config.enabled:
            raise NotConfigured("FRESH_ENABLED is False.")
        if not runtime.config.provider_signals:
            raise NotConfigured("FRESH_PROVIDER_SIGNALS is False.")
        return cls(crawler, runtime)

    @property
    def tracker(self) -> SignalTracker:
        """The tracker, built on the store at first use (the store opens lazily)."""
        if self._tracker is None:
            self._tracker = SignalTracker(
                self.runtime.store,
                records=self._records,
                params=self.params,
                autodetect=self.autodetect,
                trust=self.trust_enabled,
                max_wait_secs=self.runtime.config.max_refresh_secs,
                fixed_level=self._fixed_level,
                stat=self.runtime.stat,
                on_trust_change=self._log_trust_change,
                rules=self.runtime.policy.rules,
            )
        return self._tracker

    @property
    def ledger(self) -> TrustLedger:
        return self.tracker.ledger

    # -- requests and responses --------------------------------------------------------

    def process_request(self, request: Request) -> None:
        meta = request.meta
        if _discovered(meta):
            self._prepare_discovered(request)
        elif self.fetch_robots and not meta.get("fresh_probe") and not fetches_robots(request):
            robots = self._fresh_discovery().first_visit(request.url)
            if robots is not None:
                self._request([(robots, 0)], robots=True)
        key = meta.get("fresh_key")
        if not isinstance(key, str) or meta.get("fresh_probe") or self.tracker.visiting(key):
            return
        lease = self.runtime.leases.get(key)
        if lease is None:
            return
        state, lease.state = lease.state, None  # the record read to rebuild the request
        if state is None:
            try:
                state = self.runtime.records.lookup(key)
            except StoreError as exc:
                self.runtime.store_error("read", exc, request.url)
                return
        if state is None:
            return
        self.tracker.before_visit(state)
        self._visits[key] = (meta, state.url)

    def process_response(self, request: Request, response: Response) -> Response:
        if response.status != 200 or request.meta.get("fresh_probe"):
            return response
        robots = fetches_robots(request)
        if robots and self.sitemaps:
            self._read_robots(response)
        if robots and not request.meta.get("fresh_robots"):
            return response  # Scrapy's own robots.txt request: not a page of the crawl
        now = self.runtime.clock()
        key = request.meta.get("fresh_key")
        visit = self._visits.get(key) if isinstance(key, str) else None
        own_url = visit[1] if visit is not None else request.url
        headers = {
            name: header(response.headers, name)
            for name in ("last-modified", "cache-control", "expires", "date", "age")
        }
        found = header_signals(headers, own_url, now)
        self._count_skipped(found.report)
        ctype = header(response.headers, "Content-Type")
        body = response.body
        discovered = "fresh_sitemap" in request.meta and isinstance(key, str)
        document: Signals | None = None
        if body and looks_like_document(body, ctype):
            document = parse_document(body, response.url, now, self.limits)
            self._count_document(document.report, response.url)
            for url in (response.url, request.url, own_url):  # a redirect: one page
                document = _rename(document, url, own_url)
            if visit is not None and isinstance(key, str):
                self._note_listed_updates(key, document, now)
                if not discovered:  # the spider's own sitemap: checked every run
                    self.runtime.documents.add(key, document.report.kind)
            found.extend(document)
        mine, others = _split(found, own_url)
        if not (isinstance(key, str) and self.tracker.add_own(key, mine)):
            others.extend(mine)
        self._records.known = 0
        applied = self._apply_elsewhere(others, now) if len(others) else True
        if document is not None and document.report.kind == "sitemapindex" and self.sitemaps:
            self._follow_index(request, document, own_url)
        if discovered:
            assert isinstance(key, str)
            self._judge_discovered(key, request, document, applied=applied)
        return response

    def _note_listed_updates(self, key: str, document: Signals, now: float) -> None:
        """Tell the runtime when this sitemap or feed lists an update later than its own
        previous visit: the document changed since, whatever its text fingerprint (which
        makes every digit 0, so a changed date alone never shows) says."""
        try:
            state = self.runtime.records.lookup(key)
        except StoreError as exc:
            self.runtime.store_error("read", exc)
            return
        since = state.last_crawl if state is not None else None
        if since is not None and any(since < update.when <= now for update in document.past):
            self.runtime.visits.listed_updates.add(key)

    def _apply_elsewhere(self, signals: Signals, now: float) -> bool:
        """Write signals into the records they are about (or hold them for new URLs);
        False if the store failed."""
        try:
            changed = self.tracker.apply(signals, now)
        except StoreError as exc:
            self.runtime.store_error("apply provider signals to", exc)
            return False
        self._tell_scheduler(changed)
        return True

    # -- sitemap discovery -------------------------------------------------------------

    def _fresh_discovery(self) -> SitemapDiscovery:
        """The run's discovery bookkeeping (restarted daily in continuous mode)."""
        config = self.runtime.config
        now = self.runtime.clock()
        if config.mode == "continuous" and now - self._discovery_since > (
            config.default_refresh_secs
        ):
            self.discovery = SitemapDiscovery(self.discovery.limits)
            self._discovery_since = now
        return self.discovery

    def _prepare_discovered(self, request: Request) -> None:
        """A sitemap or robots.txt discovery asked for (now or in an earlier run)."""
        if not self.sitemaps:
            self.runtime.stat("fresh/providers/sitemaps/disabled")
            raise IgnoreRequest(
                f"FRESH_PROVIDER_SITEMAPS is False: {request.url} was found by sitemap "
                "discovery and is not read."
            )
        if request.callback is None:
            request.callback = no_items
        if request.errback is None:
            request.errback = self._discovery_failed
        request.meta.setdefault("download_maxsize", self.download_maxsize)

    def _read_robots(self, response: Response) -> None:
        """Follow the ``Sitemap:`` lines of a robots.txt (its first ROBOTS_MAX_BYTES)."""
        text = response.body[:ROBOTS_MAX_BYTES].decode("utf-8", "replace")
        discovery = self._fresh_discovery()
        before = Counter(discovery.skipped)
        found = discovery.from_robots(text, response.url)
        self._count_discovery(before, response.url)
        self._held.extend(found)

    def _follow_index(self, request: Request, document: Signals, url: str) -> None:
        """Follow the child sitemaps of a sitemap index, newest ``<lastmod>`` first."""
        children = set(document.sitemaps)
        lastmods: dict[str, float] = {}
        for update in document.past:
            if update.url in children:
                lastmods[update.url] = max(update.when, lastmods.get(update.url, update.when))
        discovery = self._fresh_discovery()
        before = Counter(discovery.skipped)
        found = discovery.from_index(_depth(request.meta), document.sitemaps, lastmods)
        self._count_discovery(before, url)
        self._held.extend(found)

    def _request(self, found: list[tuple[str, int]], *, robots: bool = False) -> None:
        """Send discovered documents through the scheduler (known ones only when due)."""
        if not found:
            return
        try:
            engine = self.crawler.engine
        except RuntimeError:
            engine = None
        if engine is None:
            return
        runtime = self.runtime
        now = runtime.clock()
        kind = "robots" if robots else "sitemaps"
        for url, depth in found:
            key = url_key(url)
            if key in runtime.leases or key in runtime.records.pending:
                continue  # already on its way in this run (the spider's, or ours)
            try:
                state = runtime.records.lookup(key)
            except StoreError as exc:
                runtime.store_error("read", exc, url)
                continue
            if state is not None and not _discovered(state.request.get("meta") or {}):
                runtime.stat("fresh/providers/sitemaps/skipped/spider_owned")
                continue  # the spider requests it itself, with its own callback
            if state is not None and state.next_due > now:
                runtime.stat("fresh/providers/sitemaps/not_due")
                continue
            meta: dict[str, Any] = {"fresh_robots": True} if robots else {"fresh_sitemap": depth}
            request = Request(url, callback=no_items, errback=self._discovery_failed, meta=meta)
            try:
                engine.crawl(request)
            except RuntimeError:  # the spider is closing
                return
            runtime.stat(f"fresh/providers/{kind}/requested")

    def _judge_discovered(
        self, key: str, request: Request, document: Signals | None, *, applied: bool
    ) -> None:
        """Postpone a discovered sitemap that gave nothing usable (see :meth:`_on_outcome`):
        a refused document, or a sitemap read before that speaks of no page of this crawl."""
        if document is None or document.report.outcome in REFUSED_OUTCOMES:
            self._postponed.add(key)
            self.runtime.stat("fresh/providers/sitemaps/refused")
            if document is None:
                logger.warning(
                    "scrapy_fresh: %(url)s, found by sitemap discovery, is not a sitemap; it "
                    "is read again no sooner than FRESH_MAX_REFRESH_SECS.",
                    {"url": request.url},
                    extra={"spider": self.crawler.spider},
                )
            return
        lease = self.runtime.leases.get(key)
        if not applied or document.report.kind != "sitemap" or self._records.known:
            return
        if lease is not None and lease.visited:
            self._postponed.add(key)
            self._log_unused(request.url)
            return
        # First read: the pages it lists may be found later in this run; judge at idle.
        urls = sorted(document.urls())
        step = max(1, math.ceil(len(urls) / UNUSED_SAMPLE))
        self._unjudged[key] = [url_key(url) for url in urls[::step]]

    def _spider_idle(self) -> None:
        """The run's work is done: postpone the sitemaps first read in it that still
        speak of no page the crawl knows, then request the sitemaps found since the
        last idle that the spider did not request itself."""
        unjudged, self._unjudged = self._unjudged, {}
        held, self._held = self._held, []
        try:
            self._judge_unused(unjudged)
        finally:
            self._request(held)

    def _judge_unused(self, unjudged: dict[str, list[str]]) -> None:
        for key, sample in unjudged.items():
            try:
                self._records.get_many(sample)
            except StoreError as exc:
                self.runtime.store_error("read", exc)
                return
            if self._records.known:
                continue
            state = self._postpone_stored(key)
            self._log_unused(state.url if state is not None else key)

    def _log_unused(self, url: str) -> None:
        self.runtime.stat("fresh/providers/sitemaps/unused")
        logger.info(
            "scrapy_fresh: the sitemap %(url)s lists no page of this crawl; it is read "
            "again no sooner than FRESH_MAX_REFRESH_SECS.",
            {"url": url},
            extra={"spider": self.crawler.spider},
        )

    def _discovery_failed(self, failure: Failure) -> None:
        """Errback of discovery's requests: count and log; record the visit as an error
        if nothing did (an answer refused after its download, e.g. over
        ``download_maxsize`` once decompressed). A document over the size limit is read
        again no sooner than FRESH_MAX_REFRESH_SECS."""
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        message = failure.getErrorMessage()
        runtime = self.runtime
        runtime.stat("fresh/providers/sitemaps/failed")
        too_large = _over_maxsize(message)
        if request is not None:
            runtime.visits.record_outcome(request.meta, Outcome.ERROR)
            key = request.meta.get("fresh_key")
            if too_large and isinstance(key, str):
                runtime.stat("fresh/providers/sitemaps/refused")
                self._postpone_stored(key)
        logger.log(
            logging.WARNING if too_large else logging.INFO,
            "scrapy_fresh: %(url)s, found by sitemap discovery, could not be read: %(error)s",
            {"url": url, "error": message},
            extra={"spider": self.crawler.spider},
        )

    def _postpone_stored(self, key: str) -> PageState | None:
        """Make a stored record due no sooner than FRESH_MAX_REFRESH_SECS from now."""
        runtime = self.runtime
        runtime.flush_new()  # a queued new record is written by add_many, never put
        try:
            state = runtime.store.get(key)
            if state is None:
                return None
            state.next_due = max(state.next_due, runtime.clock() + runtime.config.max_refresh_secs)
            runtime.store.put(state)
        except StoreError as exc:
            runtime.store_error("postpone", exc, key)
            return None
        return state

    def _count_discovery(self, before: Counter[str], url: str) -> None:
        """Count (and log once per document) the sitemaps discovery left."""
        left = self.discovery.skipped - before
        for reason, count in left.items():
            self.runtime.stat(f"fresh/providers/sitemaps/skipped/{reason}", count)
        notable = {r: n for r, n in left.items() if r != "repeated"}
        if notable:
            logger.info(
                "scrapy_fresh: sitemap discovery did not follow %(what)s listed in %(url)s "
                "(FRESH_PROVIDER_MAX_SITEMAPS, FRESH_PROVIDER_MAX_SITEMAP_DEPTH, same site "
                "only).",
                {"what": ", ".join(f"{n} ({r})" for r, n in sorted(notable.items())), "url": url},
                extra={"spider": self.crawler.spider},
            )

    # -- after a visit -----------------------------------------------------------------

    def _amend(
        self,
        state: PageState,
        outcome: Outcome,
        now: float,
        headers: Mapping[str, str | None],
    ) -> None:
        """Apply the visit's provider signals to ``state`` before the visit writes it (one
        write per visit; SQLite and memory stores)."""
        self._amended.add(state.key)
        try:
            self._after_visit(state, outcome, now, headers)
        except StoreError as exc:
            self.runtime.store_error("write provider signals to", exc, state.url)

    def _on_outcome(
        self,
        state: PageState,
        outcome: Outcome,
        now: float,
        headers: Mapping[str, str | None],
    ) -> None:
        """After a visit's commit: apply its provider signals unless :meth:`_amend` did
        (a store that writes visits under a lease, Redis), and write them."""
        if state.key in self._amended:
            self._amended.discard(state.key)
            return  # written with the visit; the visit listeners saw the due time
        try:
            before = _snapshot(state)  # the visit wrote the record as it is now
            moved = self._after_visit(state, outcome, now, headers)
            if outcome in (Outcome.GONE, Outcome.ERROR):
                return
            if _snapshot(state) != before:
                self.runtime.store.put(state)
        except StoreError as exc:
            self.runtime.store_error("write provider signals to", exc, state.url)
            return
        if moved:
            self._tell_scheduler([state])

    def _after_visit(
        self,
        state: PageState,
        outcome: Outcome,
        now: float,
        headers: Mapping[str, str | None],
    ) -> bool:
        """The tracker's judging and signals after a visit (the record is not written);
        returns whether its due time or level moved."""
        visit = self._visits.pop(state.key, None)
        postpone = state.key in self._postponed
        self._postponed.discard(state.key)
        own: Signals | None = None
        if visit is not None and outcome not in (Outcome.GONE, Outcome.ERROR):
            own = self._visit_signals(visit[0], state.url, now, headers)
        moved = self.tracker.after_visit(state, outcome, now, own)
        if outcome in (Outcome.GONE, Outcome.ERROR):
            return moved
        if postpone:
            state.next_due = max(state.next_due, now + self.runtime.config.max_refresh_secs)
            moved = True
        return moved

    def _visit_signals(
        self, meta: Mapping[str, Any], url: str, now: float, headers: Mapping[str, str | None]
    ) -> Signals | None:
        """The signals of a visit's request meta, then those of a 304's headers (its own
        lifetime: the conditional check took the answer); None when neither holds any
        :func:`meta_signals` or :func:`header_signals` would read, which would find and
        skip nothing (the tracker takes None for no signals)."""
        own: Signals | None = None
        if has_meta_signals(meta):
            report = ParseReport()
            own = meta_signals(meta, url, now, report)
            self._count_skipped(report)
        if headers and has_header_signals(headers):
            answer = header_signals(headers, url, now)
            self._count_skipped(answer.report)
            if own is None:
                return answer
            own.extend(answer)
        return own

    def _log_trust_change(self, host: str, kind: str, demoted: bool, score: float) -> None:
        if kind == QUIET_KIND:
            self._log_quiet_trust_change(host, demoted, score)
            return
        if demoted:
            logger.warning(
                "scrapy_fresh: %(kind)s signals of %(host)s are not trusted any more "
                "(trust %(score).2f below FRESH_TRUST_THRESHOLD); its pages are treated as "
                "normal until the signals prove right again.",
                {"kind": kind, "host": host, "score": score},
                extra={"spider": self.crawler.spider},
            )
        else:
            logger.info(
                "scrapy_fresh: %(kind)s signals of %(host)s are trusted again "
                "(trust %(score).2f).",
                {"kind": kind, "host": host, "score": score},
                extra={"spider": self.crawler.spider},
            )

    def _log_quiet_trust_change(self, host: str, demoted: bool, score: float) -> None:
        if demoted:
            logger.warning(
                "scrapy_fresh: quiet claims of %(host)s (max-age, Expires, ttl, "
                "skipHours/skipDays) are not trusted any more: its pages changed inside "
                "the times it said they would not (trust %(score).2f below "
                "FRESH_TRUST_THRESHOLD); they are fetched at their own refresh times "
                "until the claims prove right again.",
                {"host": host, "score": score},
                extra={"spider": self.crawler.spider},
            )
        else:
            logger.info(
                "scrapy_fresh: quiet claims of %(host)s are trusted again (trust "
                "%(score).2f); they may defer its pages again as far as they have earned.",
                {"host": host, "score": score},
                extra={"spider": self.crawler.spider},
            )

    def _fixed_level(self, state: PageState) -> Provider | None:
        """The level a spider or the settings fixed for ``state``, or None."""
        meta = state.request.get("meta") or {}
        try:
            if meta.get("fresh_provider") is not None:
                return parse_provider(meta["fresh_provider"], "meta['fresh_provider']")
            attr = getattr(self.crawler.spider, "fresh_provider", None)
            if attr is not None:
                return parse_provider(attr, "fresh_provider")
        except ConfigError:
            return None
        return self.runtime.config.provider_for_host(state.host)

    # -- reporting ---------------------------------------------------------------------

    def _tell_scheduler(self, states: Iterable[PageState]) -> None:
        """Tell the visit listeners (the scheduler's continuous-mode refill) that these
        records' due times moved."""
        for state in states:
            self.runtime.notify(self.runtime.visit_listeners, state)

    def _count_skipped(self, report: ParseReport) -> None:
        for reason, count in report.skipped.items():
            self.runtime.stat(f"fresh/providers/skipped/{reason}", count)

    def _count_document(self, report: ParseReport, url: str) -> None:
        self.runtime.stat(f"fresh/providers/documents/{report.kind or 'unknown'}")
        self._count_skipped(report)
        if report.outcome == "ok":
            return
        self.runtime.stat(f"fresh/providers/outcome/{report.outcome}")
        level = logging.INFO if report.outcome == "truncated" else logging.WARNING
        logger.log(
            level,
            "scrapy_fresh: %(outcome)s provider document %(url)s: %(error)s",
            {"outcome": report.outcome, "url": url, "error": report.error},
            extra={"spider": self.crawler.spider},
        )


def _snapshot(state: PageState) -> dict[str, Any]:
    """The fields of ``state``, its lists and dicts copied: equal snapshots, equal records
    (the tracker assigns fields and mutates their lists, never their items)."""
    return {
        name: value.copy() if isinstance(value, (list, dict)) else value
        for name, value in state.__dict__.items()
    }


def _rename(signals: Signals, old: str, new: str) -> Signals:
    """Signals about ``old`` (a URL the page answered under) become about ``new``."""
    if old == new:
        return signals
    renamed = Signals(report=signals.report, sitemaps=list(signals.sitemaps))
    renamed.past = [
        PastUpdate(new if s.url == old else s.url, s.when, s.signal) for s in signals.past
    ]
    renamed.announced = [
        AnnouncedUpdate(new if s.url == old else s.url, s.when, s.probability, s.signal)
        for s in signals.announced
    ]
    renamed.not_before = [
        NotBefore(new if s.url == old else s.url, s.when, s.signal) for s in signals.not_before
    ]
    renamed.quiet = [
        QuietWindow(new if s.url == old else s.url, s.hours, s.days, s.signal)
        for s in signals.quiet
    ]
    return renamed


def _split(signals: Signals, url: str) -> tuple[Signals, Signals]:
    """``signals`` about ``url`` and about other URLs, without child sitemaps (new
    objects but for the common case, all about ``url`` and no sitemap: a page's own
    headers, returned as they are)."""
    said = (signals.past, signals.announced, signals.not_before, signals.quiet)
    if not signals.sitemaps and all(signal.url == url for kind in said for signal in kind):
        return signals, Signals()
    mine, others = Signals(), Signals()
    for attr in ("past", "announced", "not_before", "quiet"):
        for signal in getattr(signals, attr):
            getattr(mine if signal.url == url else others, attr).append(signal)
    return mine, others
