"""The per-crawl state the scrapy_fresh components share: one :class:`FreshRuntime` per crawler.

The scheduler, the downloader middleware, the spider middleware and the item pipeline
are built separately by Scrapy, at different times; they meet here. The runtime is the
wiring: the validated :class:`~scrapy_fresh.config.FreshConfig`, the store (opened on
first use), the clock, the leases of the pages handed out in this run and the listeners.
Its two jobs are components of their own: :attr:`FreshRuntime.checks`
(:mod:`scrapy_fresh.crawl.checks`, what hosts showed about their validators) and
:attr:`FreshRuntime.visits` (:mod:`scrapy_fresh.crawl.visits`, the one place where a
visit's outcome is written back, once per lease).
"""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.http.headers import Headers
from scrapy.statscollectors import MemoryStatsCollector, StatsCollector

from scrapy_fresh.config import FreshConfig, revisit_policy, score_params
from scrapy_fresh.crawl.checks import CheckLearning
from scrapy_fresh.crawl.documents import KnownDocuments
from scrapy_fresh.crawl.reachability import Reachability
from scrapy_fresh.crawl.records import CrawlRecords
from scrapy_fresh.crawl.schemes import ContentSchemes, FieldSchemes
from scrapy_fresh.crawl.stores import check_store_choice, open_store
from scrapy_fresh.crawl.visits import VisitRecorder
from scrapy_fresh.frontier.frontier import Stream
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import LeasedVisitStore, PageState, StateStore

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["FreshRuntime", "Lease", "header", "header_items"]

logger = logging.getLogger(__name__)

_RUNTIMES: weakref.WeakKeyDictionary[Crawler, FreshRuntime] = weakref.WeakKeyDictionary()


#: Header names as a Scrapy ``Headers`` object keys them (``Headers.normkey``).
_HEADER_KEYS: dict[str, bytes] = {}


def header_items(headers: Any) -> Iterable[tuple[Any, Any]]:
    """``(name, values)`` of a Scrapy ``Headers`` object (or any mapping), as its
    ``items()`` gives them: ``Headers`` keeps them so in its dict (``items()`` would
    look each one up again by its normalised name)."""
    return dict.items(headers) if type(headers) is Headers else headers.items()


#: Scrapy's own stats collectors, whose ``inc_value`` adds to their ``_stats`` dict.
_PLAIN_COLLECTORS = (StatsCollector, MemoryStatsCollector)


def incrementer(stats: Any) -> Callable[[str, int], None]:
    """``stats.inc_value``; for Scrapy's own collectors (exactly those classes), the same
    addition made on their dict directly: since Scrapy 2.13 every attribute access of a
    collector, its own methods' included, runs a deprecation shim (a failed lookup and an
    f-string each), several per page for the add-on's counters. The dict is read from
    the instance at each call (``set_stats`` may replace it)."""
    inc_value: Callable[[str, int], None] = stats.inc_value
    if type(stats) not in _PLAIN_COLLECTORS:  # any other collector: its own inc_value
        return inc_value
    attrs = object.__getattribute__(stats, "__dict__")
    if not isinstance(attrs.get("_stats"), dict):  # a Scrapy that keeps them elsewhere
        return inc_value

    def inc(name: str, count: int) -> None:
        values = attrs["_stats"]
        values[name] = values.setdefault(name, 0) + count

    return inc


def header(headers: Any, name: str) -> str | None:
    """Return one header of a Scrapy ``Headers`` object as text, or None.

    The last value, as ``Headers.get`` returns it; read from the dict ``Headers`` keeps
    under normalised names, without its per-call normalising of the name and default.
    """
    if type(headers) is Headers:
        key = _HEADER_KEYS.get(name)
        if key is None:
            key = _HEADER_KEYS[name] = headers.normkey(name)
        values = dict.get(headers, key)
        value = values[-1] if values else None
    else:
        value = headers.get(name)
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


@dataclass(eq=False)
class Lease:
    """A page handed to this run: waiting in the frontier, or being downloaded.

    Its record is in flight in the store from the moment it is leased until its visit
    is recorded (or the run ends and releases it).
    """

    key: str
    host: str
    stream: Stream
    score: float
    visited: bool
    etag: str | None = None
    last_modified: str | None = None
    content_length: int | None = None
    #: The live request to send (a spider's own, or a retry/redirect); None: rebuild it.
    request: Request | None = None
    #: URL of the request last handed out for this lease (retries and redirects follow it).
    url: str = ""
    handed: bool = False
    sent_etag: str | None = None
    sent_ims: str | None = None
    #: Judged visits of the page so far (the record's ``visits``).
    visits: int = 0
    #: The GET follows a HEAD probe that could compare the Content-Length alone.
    length_probe: bool = False
    #: The record as read when the page was leased (or to rebuild its request): the
    #: request is rebuilt from it and the visit's provider signals take it (its visit
    #: fields are exact: only this lease's visit writes them); None once used.
    state: PageState | None = None

    @classmethod
    def of(
        cls, state: PageState, stream: Stream, score: float, request: Request | None = None
    ) -> Lease:
        return cls(
            state.key,
            state.host,
            stream,
            score,
            state.last_crawl is not None,
            state.etag,
            state.last_modified,
            state.content_length,
            request,
            state.url,
            visits=state.visits,
        )


class FreshRuntime:
    """State shared by the components of one crawl; get it with :meth:`of`.

    :param crawler: the crawler.
    :param config: the validated settings.
    """

    def __init__(self, crawler: Crawler, config: FreshConfig) -> None:
        self.crawler = crawler
        self.config = config
        #: Returns the current Unix time; tests replace it.
        self.clock: Callable[[], float] = time.time
        self.policy = revisit_policy(config)
        self.score_params = score_params(config)
        self._store: StateStore | None = None
        self._stats: Any = None
        self._inc_value: Callable[[str, int], None] = lambda name, count: None
        #: The store when it writes visits under a lease (Redis), else None.
        self.leased_store: LeasedVisitStore | None = None
        #: Page records outside a visit: new ones queued, sightings merged, leases taken.
        self.records = CrawlRecords(lambda: self.store, self.store_error)
        #: The pages known to be the spider's sitemaps: checked every run.
        self.documents = KnownDocuments(lambda: self.store, self.store_error)
        #: The content rules of each digest scheme tag: a page digested by rules that
        #: changed since its last visit is digested again by the old ones.
        self.schemes = ContentSchemes(lambda: self.store, self.store_error)
        self.field_schemes = FieldSchemes(lambda: self.store, self.store_error)
        self.leases: dict[str, Lease] = {}
        self.records.dropped_listeners.append(lambda key: self.leases.pop(key, None))
        #: id(item) -> (item, outcome), filled by the spider middleware for the pipeline.
        self.item_outcomes: dict[int, tuple[Any, Outcome]] = {}
        self.pipeline_enabled = False
        self.visit_listeners: list[Callable[[PageState], None]] = []
        self.host_listeners: list[Callable[[str], None]] = []
        #: Hosts that gave no answer, attempt after attempt
        #: (:mod:`scrapy_fresh.crawl.reachability`); the listeners (the scheduler) get
        #: ``(host, pause_secs, exc)`` when one is to be paused.
        self.reachability = Reachability(
            config.unreachable_attempts, config.error_backoff_secs, config.max_refresh_secs
        )
        self.unreachable_listeners: list[Callable[[str, float, Exception], None]] = []
        #: Called with (record, outcome, now, headers) after each visit is recorded (the
        #: visit log, provider signals); ``headers`` are a body-less answer's (a 304's,
        #: lower-case names), else empty: a downloaded page's are in its response.
        self.outcome_listeners: list[
            Callable[[PageState, Outcome, float, Mapping[str, str | None]], None]
        ] = []
        #: Called with (record, outcome, now, headers) after the refresh rule has recorded
        #: a visit and before the record is written (the provider signals: one record
        #: write per visit). Not on a store that writes visits under a lease (Redis): the
        #: outcome listeners apply what they change there, after the visit's commit.
        self.visit_amenders: list[
            Callable[[PageState, Outcome, float, Mapping[str, str | None]], None]
        ] = []
        #: Called with (response, request) for each response a download handler gave
        #: (Scrapy's ``response_downloaded``): the scheduler, the visit log, the watch on
        #: unreachable hosts. One receiver calls them all (:meth:`_response_downloaded`):
        #: Scrapy's signal dispatch is paid per receiver.
        self.download_listeners: list[Callable[[Response, Request], None]] = []
        crawler.signals.connect(self._response_downloaded, signal=signals.response_downloaded)
        #: What this crawl learns about hosts' validators (:mod:`scrapy_fresh.crawl.checks`).
        self.checks = CheckLearning(self)
        #: Writes each visit (:mod:`scrapy_fresh.crawl.visits`).
        self.visits = VisitRecorder(self)
        check_store_choice(config)

    @classmethod
    def of(cls, crawler: Crawler) -> FreshRuntime:
        """Return the crawler's runtime, creating it (and validating the settings) once."""
        runtime = _RUNTIMES.get(crawler)
        if runtime is None:
            runtime = _RUNTIMES[crawler] = cls(
                crawler, FreshConfig.from_settings(crawler.settings)
            )
        return runtime

    def notify(self, listeners: Iterable[Callable[..., Any]], *args: Any) -> None:
        """Call each of ``listeners`` (as they are now) with ``args``. One that raises is
        logged, as Scrapy logs a failing signal handler, and the others still run: a
        fault in one component never costs what another records (the visit log's line
        of a visit the store kept, the page's items)."""
        for listener in list(listeners):
            try:
                listener(*args)
            except Exception:  # noqa: PERF203  # one failing listener never stops the others
                logger.exception(
                    "scrapy_fresh: error caught in listener %(listener)r",
                    {"listener": listener},
                    extra={"spider": self.crawler.spider},
                )

    def _response_downloaded(self, response: Response, request: Request) -> None:
        """Scrapy's ``response_downloaded``, to each of :attr:`download_listeners`."""
        self.notify(self.download_listeners, response, request)

    # -- store -------------------------------------------------------------------------

    @property
    def store(self) -> StateStore:
        """The store, opened on first use."""
        if self._store is None:
            store = self._store = open_store(self.config, self.crawler)
            self.leased_store = store if isinstance(store, LeasedVisitStore) else None
            logger.info("scrapy_fresh store: %(store)r", {"store": store})
        return self._store

    @property
    def store_opened(self) -> bool:
        return self._store is not None

    @property
    def store_if_open(self) -> StateStore | None:
        """The store if it was opened, else None (nothing to group or flush)."""
        return self._store

    def flush_new(self) -> bool:
        """Write the queued new records (:meth:`CrawlRecords.flush
        <scrapy_fresh.crawl.records.CrawlRecords.flush>`)."""
        return self.records.flush()

    def close_store(self) -> None:
        if self._store is not None:
            self.flush_new()
            try:
                self._store.flush()
            finally:
                self._store.close()
                self.report_regressions(always=True)

    def report_regressions(self, *, always: bool = False) -> None:
        """Set ``fresh/store/regressions_refused`` from the store's counter (writes it
        refused because they would move a record back; 0 in a correct crawl)."""
        refused = getattr(self._store, "regressions_refused", 0)
        if not (refused or always):
            return
        try:
            stats = self.crawler.stats
        except RuntimeError:
            return
        stats.set_value("fresh/store/regressions_refused", refused)

    # -- small helpers -----------------------------------------------------------------

    def stat(self, name: str, count: int = 1) -> None:
        if not count:
            return
        try:
            stats = self.crawler.stats
        except RuntimeError:  # not crawling (yet)
            return
        if stats is not self._stats:  # the incrementer is made once per stats object
            self._stats, self._inc_value = stats, incrementer(stats)
        self._inc_value(name, count)

    def store_error(self, action: str, exc: Exception, url: str = "") -> None:
        """Log a store failure as the style guide says: warn, count, carry on."""
        self.stat("fresh/store_error")
        logger.warning(
            "scrapy_fresh store failed to %(action)s %(url)s: %(exc)s",
            {"action": action, "url": url, "exc": exc},
            extra={"spider": self.crawler.spider},
        )

    def host_answered(self, host: str) -> None:
        """Tell the listeners (the scheduler) that ``host`` answered a request."""
        self.notify(self.host_listeners, host)

    def host_unanswered(self, host: str, exc: Exception) -> None:
        """A download attempt at ``host`` got no answer: pause the host (tell the
        listeners) if that makes :setting:`FRESH_UNREACHABLE_ATTEMPTS` in a row."""
        pause = self.reachability.failed(host)
        if pause is None:
            return
        self.notify(self.unreachable_listeners, host, pause, exc)
