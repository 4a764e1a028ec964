"""The per-crawl state the scrapy_fresh components share: one :class:`FreshRuntime` per crawler.

The scheduler, the downloader middleware, the spider middleware and the item pipeline
are built separately by Scrapy, at different times; they meet here. The runtime holds
the validated :class:`~scrapy_fresh.config.FreshConfig`, the store (opened on first use),
the clock, the leases of the pages handed out in this run and what each host has shown
about its validators. It is also the one place where a visit's outcome is written back:
:meth:`FreshRuntime.record_outcome` and :meth:`FreshRuntime.record_fetch` both end in
:func:`~scrapy_fresh.frontier.revisit.record_visit`, once per lease.
"""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.project import data_path

from scrapy_fresh.changes import logged_changes
from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError, StoreError
from scrapy_fresh.frontier.frontier import Stream
from scrapy_fresh.frontier.revisit import Outcome, RevisitPolicy, record_visit
from scrapy_fresh.frontier.scoring import ScoreParams
from scrapy_fresh.policy.cost import check_cost_ratio
from scrapy_fresh.policy.refresh import decay_for_half_life
from scrapy_fresh.providers.meta import declared_update
from scrapy_fresh.records import CrawlRecords
from scrapy_fresh.store.base import PageState, SiteState, StateStore, Status
from scrapy_fresh.validators import (
    Check,
    HostChecks,
    length_full_due,
    length_full_gap,
    parse_content_length,
    parse_http_date,
    usable_etag,
)
from scrapy_fresh.verdict import PageContent, Verdict, judge

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping

    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = [
    "OUTCOME_STATS",
    "FreshRuntime",
    "Lease",
    "build_store",
    "resolve_sqlite_path",
    "spider_path",
]

logger = logging.getLogger(__name__)

#: The stat each outcome increments.
OUTCOME_STATS = {
    Outcome.NEW: "fresh/new",
    Outcome.CHANGED: "fresh/changed",
    Outcome.UNCHANGED: "fresh/unchanged",
    Outcome.NOT_MODIFIED: "fresh/not_modified",
    Outcome.GONE: "fresh/gone",
    Outcome.ERROR: "fresh/errors",
    Outcome.BLOCKED: "fresh/blocked",
}

_REDIS_MISSING = (
    "FRESH_STORE ('redis') needs the redis and scrapy-redis packages ({exc}); install "
    "scrapy_fresh with its 'redis' extra, or use 'sqlite' (one machine)."
)

_RUNTIMES: weakref.WeakKeyDictionary[Crawler, FreshRuntime] = weakref.WeakKeyDictionary()


def resolve_sqlite_path(path: str) -> str:
    """Return :setting:`FRESH_SQLITE_PATH` resolved like ``HTTPCACHE_DIR``: a relative path
    lives under the project's ``.scrapy`` data directory (created if missing)."""
    target = Path(path)
    if target.is_absolute():
        return str(target)
    directory = data_path(str(target.parent), createdir=True)
    return str(Path(directory) / target.name)


def spider_path(path: str, crawler: Crawler) -> str:
    """:setting:`FRESH_SQLITE_PATH` with ``%(spider)s`` replaced by the spider's name."""
    return path % {"spider": getattr(crawler.spidercls, "name", None) or "spider"}


def build_store(config: FreshConfig, crawler: Crawler) -> StateStore:
    """Open the store :setting:`FRESH_STORE` names."""
    if config.store == "memory":
        from scrapy_fresh.store.memory import MemoryStore

        return MemoryStore()
    if config.store == "sqlite":
        from scrapy_fresh.store.sqlite import SQLiteStore

        return SQLiteStore(resolve_sqlite_path(spider_path(config.sqlite_path, crawler)))
    if config.store == "redis":
        from scrapy_fresh.distributed import OutageSafeStore
        from scrapy_fresh.frontier.redis_frontier import open_redis_store

        prefix = config.redis_key % {"spider": getattr(crawler.spidercls, "name", "spider")}
        params = score_params(config)

        def stat(name: str, count: int = 1) -> None:
            stats = getattr(crawler, "stats", None)
            if stats is not None:
                stats.inc_value(name, count)

        return OutageSafeStore(open_redis_store(crawler.settings, prefix, params), stat=stat)
    try:
        factory = load_object(config.store)
    except (ImportError, AttributeError, NameError, ValueError) as exc:
        raise ConfigError(
            f"FRESH_STORE ({config.store!r}) cannot be imported: {exc}. Expected 'sqlite', "
            "'memory' or the import path of a StateStore class."
        ) from exc
    store = build_from_crawler(factory, crawler) if isinstance(factory, type) else factory()
    if not isinstance(store, StateStore):
        raise ConfigError(
            f"FRESH_STORE ({config.store!r}) built a {type(store).__name__}, which does not "
            "implement the StateStore protocol (scrapy_fresh.store.base.StateStore)."
        )
    return store


def _check_store_choice(config: FreshConfig) -> None:
    """Fail at start-up on a store that can never be built (before anything is opened)."""
    if config.store == "redis":
        try:
            import redis  # noqa: F401
            import scrapy_redis  # noqa: F401
        except ImportError as exc:
            raise ConfigError(_REDIS_MISSING.format(exc=exc)) from exc
    if config.store not in ("memory", "sqlite", "redis"):
        try:
            load_object(config.store)
        except (ImportError, AttributeError, NameError, ValueError) as exc:
            raise ConfigError(
                f"FRESH_STORE ({config.store!r}) cannot be imported: {exc}. Expected "
                "'sqlite', 'memory' or the import path of a StateStore class."
            ) from exc


def score_params(config: FreshConfig) -> ScoreParams:
    """The scores' constants from the ``FRESH_PRIORITY_*`` settings (the rate in the
    ``gain`` score uses the refresh rule's p_c decay, :setting:`FRESH_PC_HALF_LIFE_VISITS`)."""
    return ScoreParams(
        alpha=config.priority_alpha,
        beta=config.priority_beta,
        s=config.priority_window_cycles,
        rule=config.priority_score,
        decay=_decay(config.pc_half_life_visits),
        fill=config.cycle_fill,
    )


def _decay(half_life_visits: float) -> float:
    """The factor record_visit keeps of old counts per visit, from
    :setting:`FRESH_PC_HALF_LIFE_VISITS`; 0 means no fading (plain changes / visits)."""
    return 1.0 if half_life_visits <= 0 else decay_for_half_life(half_life_visits)


def _add_counts(stored: Mapping[str, Any], delta: Mapping[str, int]) -> dict[str, int]:
    """Validator counters of a site record plus what one worker learned since it last
    handed them over (never below 0; ``lying`` stays a flag, 0 or 1)."""
    out = {k: v for k, v in stored.items() if type(v) is int}
    for name, value in delta.items():
        total = max(0, out.get(name, 0) + value)
        out[name] = min(total, 1) if name == "lying" else total
    return out


def header(headers: Any, name: str) -> str | None:
    """Return one header of a Scrapy ``Headers`` object as text, or None."""
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
        self.policy = RevisitPolicy(
            p_l=config.pc_lower,
            p_g=config.pc_upper,
            min_refresh_secs=config.min_refresh_secs,
            max_refresh_secs=config.max_refresh_secs,
            default_refresh_secs=config.default_refresh_secs,
            decay=_decay(config.pc_half_life_visits),
            error_backoff_secs=config.error_backoff_secs,
            gone_confirmations=config.gone_confirmations,
        )
        self.score_params = score_params(config)
        self._store: StateStore | None = None
        #: Page records outside a visit: new ones queued, sightings merged, leases taken.
        self.records = CrawlRecords(lambda: self.store, self.store_error)
        self.leases: dict[str, Lease] = {}
        #: While a downloaded page's visit is recorded: simhash bits between its previous
        #: and its new text (how much changed; the verdict is exact), else None. The
        #: outcome listeners (the visit log) read it.
        self.visit_magnitude: int | None = None
        #: While a downloaded page's visit is recorded: the names of the fields that
        #: changed on any of its items (empty for a page judged without items).
        self.visit_fields: list[str] = []
        #: ... and what changed on its items (:func:`~scrapy_fresh.changes.logged_changes`).
        self.visit_items: list[dict[str, Any]] = []
        #: While a visit is recorded: whether it made the page gone (it was not gone
        #: when this run leased it). The visit log, PageGone items and the webhook read it.
        self.became_gone = False
        self.records.dropped_listeners.append(lambda key: self.leases.pop(key, None))
        self.hosts: dict[str, HostChecks] = {}
        #: Redis store: each host's validator counters as last handed to the store (a
        #: visit adds the difference to the shared site record, see _commit_leased).
        self._checks_synced: dict[str, dict[str, int]] = {}
        #: SQLite and memory stores: each host's site record as last written by a visit
        #: (only visits write it, each in its own transaction): read from the store once.
        self._sites: dict[str, SiteState] = {}
        #: Pages that answered 200 to matching validators in this run.
        self.ignored_pages: set[str] = set()
        #: Pages whose ETag changed while their content did not, in this run.
        self.churn_pages: set[str] = set()
        #: Pages whose Content-Length changed while their content did not, in this run.
        self.length_churn_pages: set[str] = set()
        #: Sitemaps and feeds whose body, in this run, listed an update later than their
        #: previous visit (scrapy_fresh.provider_middleware fills it): they changed, even
        #: when their text fingerprint (digits normalised) cannot show it.
        self.listed_updates: set[str] = set()
        #: id(item) -> (item, outcome), filled by the spider middleware for the pipeline.
        self.item_outcomes: dict[int, tuple[Any, Outcome]] = {}
        self.pipeline_enabled = False
        self.visit_listeners: list[Callable[[PageState], None]] = []
        self.host_listeners: list[Callable[[str], None]] = []
        #: Called with (record, outcome, now, headers) after each visit is recorded (the
        #: visit log, provider signals); ``headers`` are a body-less answer's (a 304's,
        #: lower-case names), else empty: a downloaded page's are in its response.
        self.outcome_listeners: list[
            Callable[[PageState, Outcome, float, Mapping[str, str | None]], None]
        ] = []
        _check_store_choice(config)

    @classmethod
    def of(cls, crawler: Crawler) -> FreshRuntime:
        """Return the crawler's runtime, creating it (and validating the settings) once."""
        runtime = _RUNTIMES.get(crawler)
        if runtime is None:
            runtime = _RUNTIMES[crawler] = cls(
                crawler, FreshConfig.from_settings(crawler.settings)
            )
        return runtime

    # -- store -------------------------------------------------------------------------

    @property
    def store(self) -> StateStore:
        """The store, opened on first use."""
        if self._store is None:
            self._store = build_store(self.config, self.crawler)
            logger.info("scrapy_fresh store: %(store)r", {"store": self._store})
        return self._store

    @property
    def store_opened(self) -> bool:
        return self._store is not None

    def flush_new(self) -> bool:
        """Write the queued new records (:meth:`CrawlRecords.flush
        <scrapy_fresh.records.CrawlRecords.flush>`)."""
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
        stats.inc_value(name, count)

    def store_error(self, action: str, exc: Exception, url: str = "") -> None:
        """Log a store failure as the style guide says: warn, count, carry on."""
        self.stat("fresh/store_error")
        logger.warning(
            "scrapy_fresh store failed to %(action)s %(url)s: %(exc)s",
            {"action": action, "url": url, "exc": exc},
            extra={"spider": self.crawler.spider},
        )

    def host_checks(self, host: str) -> HostChecks:
        """What ``host`` has shown about validators, from its site record at first use."""
        checks = self.hosts.get(host)
        if checks is None:
            try:
                site = self.store.get_site(host)
            except StoreError as exc:
                self.store_error("read the site of", exc, host)
                site = None
            checks = HostChecks.from_counts(site.checks) if site is not None else HostChecks()
            self.hosts[host] = checks
            self._checks_synced[host] = checks.counts()
        return checks

    def check_plan(
        self,
        key: str,
        host: str,
        etag: str | None,
        last_modified: str | None,
        content_length: int | None,
        visits: int | None,
        *,
        count_bad: bool = False,
    ) -> tuple[Check, str | None, str | None]:
        """How the next visit of a page checks for a change (:meth:`HostChecks.plan` with
        :setting:`FRESH_CHECK` and what this run learned), and the ETag and Last-Modified
        it can send: a malformed one, or an ETag that churns, is none. Without
        :setting:`FRESH_LENGTH_PROBE` (the default) a page with neither is downloaded in
        full: its Content-Length is never the only evidence of "unchanged". With it, a
        HEAD probe that could only compare the Content-Length becomes a full download every
        :setting:`FRESH_LENGTH_PROBE_FULL_EVERY` visits (``visits`` None: not decided
        here; with 0 or 1 never a length probe), then after gaps that double while the host
        never showed a change its length hid (:func:`~scrapy_fresh.validators.length_full_due`).
        ``count_bad`` counts a stored validator
        that cannot be sent (``fresh/bad_validator``)."""
        checks = self.host_checks(host)
        if etag and not usable_etag(etag):
            if count_bad:
                self.stat("fresh/bad_validator")
            etag = None
        if etag and (key in self.churn_pages or checks.etag_untrusted):
            etag = None
        if last_modified and parse_http_date(last_modified) is None:
            if count_bad:
                self.stat("fresh/bad_validator")
            last_modified = None
        length_known = self.config.length_probe and content_length is not None
        plan = checks.plan(
            self.config.check,
            has_validators=bool(etag or last_modified),
            has_head_validators=bool(etag or last_modified or length_known),
            page_ignores=key in self.ignored_pages,
            page_length_churns=key in self.length_churn_pages,
        )
        every = self.config.length_probe_full_every if self.config.length_probe else 0
        # The first fetch was a full download (fetch 0); the next is fetch ``visits + 1``.
        full_now = every <= 1 or (
            visits is not None and length_full_due(visits + 1, every, checks.length_full_doublings)
        )
        if plan is Check.HEAD and not (etag or last_modified) and full_now:
            plan = Check.NONE  # the length alone is trusted between full downloads only
        return plan, etag, last_modified

    def check_cost(self, state: PageState) -> float:
        """What checking ``state`` costs when it finds no change, as a share of a full
        download (:func:`~scrapy_fresh.frontier.revisit.record_visit`'s ``check_cost``).

        The host's measured cost of a cheap check (bytes of its 304s and unchanged HEAD
        answers over the full pages, at least :setting:`FRESH_MIN_CHECK_COST_RATIO`) when
        the page's next visit will be such a check (:meth:`HostChecks.plan`, with what the
        record and the host have shown); 1.0 (a full download) otherwise, and before the
        host ever answered a cheap check. A page checked by its Content-Length alone is
        downloaded in full one visit in :setting:`FRESH_LENGTH_PROBE_FULL_EVERY`: the mean
        of the two.
        """
        checks = self.host_checks(state.host)
        ratio = check_cost_ratio(
            checks.check_bytes, checks.check_full_bytes, floor=self.config.min_check_cost_ratio
        )
        if ratio is None:
            return 1.0
        plan, etag, last_modified = self.check_plan(
            state.key,
            state.host,
            state.etag,
            state.last_modified,
            state.content_length,
            None,
        )
        if plan is Check.NONE:
            return 1.0
        if plan is Check.HEAD and not (etag or last_modified):
            every = length_full_gap(  # one visit in ``every`` is a full download
                state.visits + 1,
                self.config.length_probe_full_every,
                self.host_checks(state.host).length_full_doublings,
            )
            return (ratio * (every - 1) + 1.0) / every
        return ratio

    def host_answered(self, host: str) -> None:
        """Tell the listeners (the scheduler) that ``host`` answered a request."""
        for listener in list(self.host_listeners):
            listener(host)

    # -- recording visits --------------------------------------------------------------

    def _begin(self, meta: MutableMapping[str, Any]) -> tuple[Lease, PageState] | None:
        key = meta.get("fresh_key")
        if not isinstance(key, str) or "fresh_outcome" in meta:
            return None  # not ours, or already recorded (the per-request guard)
        lease = self.leases.pop(key, None)
        if lease is None:
            return None
        self.records.settle(key)
        self.flush_new()  # the links this page yielded go in before its visit
        try:
            state = self.records.lookup(key)
        except StoreError as exc:
            self.store_error("read", exc, lease.url)
            return None
        if state is None:
            return None
        return lease, state

    def _commit(
        self,
        meta: MutableMapping[str, Any],
        state: PageState,
        outcome: Outcome,
        now: float,
        headers: Mapping[str, str | None] | None = None,
    ) -> None:
        grouped = getattr(self.store, "grouped", None)  # one transaction per visit
        with grouped() if grouped is not None else contextlib.nullcontext():
            self._commit_grouped(meta, state, outcome, now, headers)

    def _commit_grouped(
        self,
        meta: MutableMapping[str, Any],
        state: PageState,
        outcome: Outcome,
        now: float,
        headers: Mapping[str, str | None] | None,
    ) -> None:
        meta["fresh_outcome"] = outcome.value
        cost = self.check_cost(state)
        checks = self.hosts.get(state.host)
        written = (
            self._commit_leased(state, outcome, now, cost, checks)
            if self.config.store == "redis"
            else None
        )
        if written is None:
            site = self._sites.get(state.host)
            if site is None:
                try:
                    site = self.store.get_site(state.host) or SiteState(state.host)
                except StoreError as exc:
                    self.store_error("read the site of", exc, state.url)
                    site = SiteState(state.host)
                self._sites[state.host] = site
            record_visit(state, outcome, now, self.policy, site, check_cost=cost)
            if checks is not None:
                site.checks = checks.counts()  # what this run learned holds in the next
            try:
                self.store.put(state)
                self.store.put_site(site)
            except StoreError as exc:
                self._sites.pop(state.host, None)  # read again: the store has the truth
                self.store_error("write", exc, state.url)
        if written is not False:
            self.stat(OUTCOME_STATS[outcome])
        self.report_regressions()
        if logger.isEnabledFor(logging.DEBUG):  # per visit: no arguments built for nothing
            logger.debug(
                "scrapy_fresh: %(url)s %(outcome)s; next visit in %(secs).0f s%(lost)s",
                {"url": state.url, "outcome": outcome.value, "secs": state.next_due - now,
                 "lost": "" if written is not False else " (not written: lease lost)"},
                extra={"spider": self.crawler.spider},
            )  # fmt: skip
        for listener in list(self.visit_listeners):  # the host answered, even so
            listener(state)
        if written is False:
            return  # another worker holds the URL: its visit is the one recorded
        was_gone = state.key in self.records.leased_gone
        self.records.leased_gone.discard(state.key)
        self.became_gone = outcome is Outcome.GONE and state.status is Status.GONE and not was_gone
        try:
            for outcome_listener in list(self.outcome_listeners):
                outcome_listener(state, outcome, now, headers or {})
        finally:
            self.became_gone = False

    def _commit_leased(
        self, state: PageState, outcome: Outcome, now: float, cost: float,
        checks: HostChecks | None,
    ) -> bool | None:  # fmt: skip
        """Redis store: write the visit under this worker's lease of the URL, in one
        atomic step with its site aggregates, the site by compare-and-set
        (:meth:`~scrapy_fresh.distributed.OutageSafeStore.commit_visit`): concurrent
        workers' visits to one host all count. The host's validator counters get what
        this worker learned since it last handed them over. Returns False if the lease
        was lost (nothing written, stat ``fresh/redis/lease_lost``), None if the store
        is not the shared Redis one."""
        from scrapy_fresh.distributed import OutageSafeStore

        store = self.store
        if not isinstance(store, OutageSafeStore):
            return None
        host = state.host
        delta: dict[str, int] = {}
        if checks is not None:
            counts = checks.counts()
            synced = self._checks_synced.get(host, {})
            delta = {k: v - synced.get(k, 0) for k, v in counts.items() if v != synced.get(k, 0)}
            self._checks_synced[host] = counts

        def apply(record: PageState, site: SiteState) -> None:
            record_visit(record, outcome, now, self.policy, site, check_cost=cost)
            if delta:
                site.checks = _add_counts(site.checks, delta)

        def lost() -> None:
            self.stat("fresh/redis/lease_lost")
            synced = self._checks_synced.setdefault(host, {})
            for name, value in delta.items():  # handed over with the next visit instead
                synced[name] = synced.get(name, 0) - value

        def retried(n: int) -> None:
            self.stat("fresh/redis/site_retries", n)

        try:
            return store.commit_visit(state, outcome, apply, lost=lost, retried=retried)
        except StoreError as exc:
            self.store_error("write", exc, state.url)
            return True

    def record_outcome(
        self,
        meta: MutableMapping[str, Any],
        outcome: Outcome,
        *,
        headers: Mapping[str, str | None] | None = None,
    ) -> PageState | None:
        """Record a visit that ended without a body to judge (not modified, gone, error).

        ``headers`` (lower-case names) of a 304 may refresh the stored validators.
        Returns the updated record, or None if there was nothing (more) to record.
        """
        begun = self._begin(meta)
        if begun is None:
            return None
        _, state = begun
        if outcome is Outcome.NOT_MODIFIED and headers:
            state.etag = headers.get("etag") or state.etag
            state.last_modified = headers.get("last-modified") or state.last_modified
        self._commit(meta, state, outcome, self.clock(), headers)
        return state

    def record_fetch(
        self,
        meta: MutableMapping[str, Any],
        fingerprint: int,
        *,
        headers: Mapping[str, str | None],
        content_length: int | None,
    ) -> Outcome | None:
        """Record a downloaded page known only by its simhash: :meth:`record_content`
        with ``PageContent(fingerprint)``; returns the outcome."""
        verdict = self.record_content(
            meta, PageContent(fingerprint), headers=headers, content_length=content_length
        )
        return None if verdict is None else verdict[0]

    def record_content(
        self,
        meta: MutableMapping[str, Any],
        content: PageContent,
        *,
        headers: Mapping[str, str | None],
        content_length: int | None,
    ) -> tuple[Outcome, Verdict] | None:
        """Record a downloaded page: new (first fetch), changed or unchanged, by
        :func:`~scrapy_fresh.verdict.judge` (item fields, content digest, or simhash).

        A sitemap or feed is also changed when it lists an update later than its previous
        visit (:attr:`listed_updates`), and so is a page whose spider declares such an
        update (``meta["fresh_updates"]``): its dates are its content.

        Also stores the response's validators and learns from them: an ETag that changed
        while the content did not is per-response noise; an ETag that stayed while the
        content changed is a lie (the host is then fetched in full from now on).
        Returns the outcome and the verdict (the changed fields of each item), or None if
        there was nothing (more) to record.
        """
        begun = self._begin(meta)
        if begun is None:
            return None
        lease, state = begun
        now = self.clock()
        old_etag = state.etag
        listed = state.key in self.listed_updates or (
            state.last_crawl is not None and declared_update(meta, state.last_crawl, now)
        )
        self.listed_updates.discard(state.key)
        verdict = judge(state, content, self.config.fingerprint_threshold_bits)
        text_changed = verdict.changed and not verdict.new
        if verdict.new:
            outcome = Outcome.NEW
        elif verdict.changed:
            outcome = Outcome.CHANGED
        elif listed:  # a sitemap or feed that lists an update we had not seen
            outcome = Outcome.CHANGED
            self.stat("fresh/changed_by_listing")
        else:
            outcome = Outcome.UNCHANGED
        etag = headers.get("etag")
        etag = etag.strip() if etag else None
        checks = self.host_checks(state.host)
        if outcome is Outcome.UNCHANGED and etag and old_etag and etag != old_etag:
            checks.etag_churn += 1
            self.churn_pages.add(state.key)
        length = parse_content_length(headers.get("content-length"))
        if outcome is Outcome.UNCHANGED and lease.length_probe:
            checks.length_churn += 1  # the length moved, the content did not
            self.length_churn_pages.add(state.key)
        elif (
            text_changed
            and not (old_etag or state.last_modified)
            and length is not None
            and length == state.content_length
        ):
            checks.length_blind += 1  # a change no length probe could have seen
        elif text_changed and etag and etag == old_etag and not checks.lying:
            checks.lying = True
            self.stat("fresh/validators_lying")
            logger.warning(
                "scrapy_fresh: %(host)s kept the ETag %(etag)s of %(url)s although its content "
                "changed; its validators are not trusted any more (full fetches).",
                {"host": state.host, "etag": etag, "url": state.url},
                extra={"spider": self.crawler.spider},
            )
        last_modified = headers.get("last-modified")
        if outcome is Outcome.CHANGED or outcome is Outcome.NEW:
            modified_at = parse_http_date(last_modified)
            if modified_at is not None and modified_at <= now:
                state.add_past_update(modified_at)
        state.fingerprint = content.simhash
        state.field_hashes = content.items or []
        state.content_hash = content.digest
        state.kept_items = content.kept
        state.etag = etag
        state.last_modified = last_modified.strip() if last_modified else None
        state.content_length = length if length is not None else content_length
        if outcome is Outcome.CHANGED and verdict.magnitude is not None:
            self.stat("fresh/changed_bits", verdict.magnitude)
        self.visit_magnitude = verdict.magnitude
        self.visit_fields = list(dict.fromkeys(n for names in verdict.item_changes for n in names))
        self.visit_items = logged_changes(
            verdict, content.kept, self.config.changes.diff_min_chars
        )
        try:
            self._commit(meta, state, outcome, now)
        finally:
            self.visit_magnitude = None
            self.visit_fields = []
            self.visit_items = []
        return outcome, verdict
