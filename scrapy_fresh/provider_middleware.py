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
See :doc:`/topics/providers`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from scrapy_fresh.config import parse_provider
from scrapy_fresh.exceptions import ConfigError, StoreError
from scrapy_fresh.frontier.revisit import Outcome
from scrapy_fresh.keys import url_host
from scrapy_fresh.policy.trust import TrustParams
from scrapy_fresh.providers.dates import parse_w3c
from scrapy_fresh.providers.document import looks_like_document, parse_document
from scrapy_fresh.providers.http import header_signals
from scrapy_fresh.providers.ledger import TrustLedger
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
from scrapy_fresh.runtime import FreshRuntime, header
from scrapy_fresh.store.base import PageState, Provider

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["FUTURE_KINDS", "PAST_KINDS", "FreshProviderMiddleware", "meta_signals"]

logger = logging.getLogger(__name__)


def _meta_time(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if math.isfinite(number) and abs(number) < 1e11 else None
    if isinstance(value, str):
        return parse_w3c(value)
    return None


def meta_signals(meta: Mapping[str, Any], url: str, now: float, report: ParseReport) -> Signals:
    """Signals a spider put in ``meta["fresh_updates"]`` and ``meta["fresh_schedule"]``.

    Times are Unix seconds or W3C date strings; each bad entry is skipped and counted
    in ``report`` (``bad_meta``), the others are kept.

    >>> r = ParseReport()
    >>> s = meta_signals({"fresh_updates": [100, "bad"], "fresh_schedule": [[200, 0.5],
    ...                   [300, 7]]}, "http://a/", 150.0, r)
    >>> [p.when for p in s.past], [(a.when, a.probability) for a in s.announced], r.skipped
    ([100.0], [(200.0, 0.5)], Counter({'bad_meta': 2}))
    """
    signals = Signals(report=report)
    updates = meta.get("fresh_updates")
    if updates is not None:
        if isinstance(updates, (str, bytes)) or not isinstance(updates, Iterable):
            updates = [updates]
        for raw in updates:
            when = _meta_time(raw)
            if when is None or when > now + 3600:
                report.skip("bad_meta")
            else:
                signals.past.append(PastUpdate(url, when, "spider"))
    schedule = meta.get("fresh_schedule")
    if schedule is not None:
        if isinstance(schedule, (str, bytes)) or not isinstance(schedule, Iterable):
            schedule = [schedule]
        for entry in schedule:
            try:
                raw_t, raw_p = entry
            except (TypeError, ValueError):
                report.skip("bad_meta")
                continue
            when = _meta_time(raw_t)
            prob = _meta_time(raw_p)
            if when is None or prob is None or not 0.0 <= prob <= 1.0:
                report.skip("bad_meta")
            elif when > now:
                signals.announced.append(AnnouncedUpdate(url, when, prob, "spider"))
    return signals


class FreshProviderMiddleware:
    """Read, check and use content-provider update signals (downloader middleware, 535).

    Enable it above :class:`~scrapy_fresh.middlewares.FreshDownloaderMiddleware` (540) so
    that it sees each request first and each response after the conditional check; the
    add-on does. The checking and applying is
    :class:`~scrapy_fresh.providers.tracker.SignalTracker`'s (shared with the simulator);
    this class reads responses and meta, and reports.

    Settings: :setting:`FRESH_PROVIDER_SIGNALS`, :setting:`FRESH_PROVIDER_AUTODETECT`,
    :setting:`FRESH_PROVIDER_MAX_BYTES`, :setting:`FRESH_PROVIDER_MAX_INFLATED_BYTES`,
    :setting:`FRESH_PROVIDER_MAX_ENTRIES`, :setting:`FRESH_TRUST`,
    :setting:`FRESH_TRUST_THRESHOLD`, :setting:`FRESH_TRUST_RECOVER`.
    Meta keys: :reqmeta:`fresh_updates`, :reqmeta:`fresh_schedule`.
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
        self.params = TrustParams(threshold=config.trust_threshold, recover=config.trust_recover)
        self._tracker: SignalTracker | None = None
        #: key -> (request meta, record URL) of a visit under way.
        self._visits: dict[str, tuple[MutableMapping[str, Any], str]] = {}
        runtime.outcome_listeners.append(self._on_outcome)

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
                params=self.params,
                autodetect=self.autodetect,
                trust=self.trust_enabled,
                max_wait_secs=self.runtime.config.max_refresh_secs,
                fixed_level=self._fixed_level,
                stat=self.runtime.stat,
                on_trust_change=self._log_trust_change,
            )
        return self._tracker

    @property
    def ledger(self) -> TrustLedger:
        return self.tracker.ledger

    # -- requests and responses --------------------------------------------------------

    def process_request(self, request: Request) -> None:
        meta = request.meta
        key = meta.get("fresh_key")
        if not isinstance(key, str) or meta.get("fresh_probe") or self.tracker.visiting(key):
            return
        if key not in self.runtime.leases:
            return
        try:
            state = self.runtime.get_state(key)
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
        if body and looks_like_document(body, ctype):
            document = parse_document(body, response.url, now, self.limits)
            self._count_document(document.report, response.url)
            for url in (response.url, request.url, own_url):  # a redirect: one page
                document = _rename(document, url, own_url)
            if visit is not None and isinstance(key, str):
                self._note_listed_updates(key, document, now)
            found.extend(document)
        mine, others = _split(found, own_url)
        if not (isinstance(key, str) and self.tracker.add_own(key, mine)):
            others.extend(mine)
        if len(others):
            self._apply_elsewhere(others, now)
        return response

    def _note_listed_updates(self, key: str, document: Signals, now: float) -> None:
        """Tell the runtime when this sitemap or feed lists an update later than its own
        previous visit: the document changed since, whatever its text fingerprint (which
        makes every digit 0, so a changed date alone never shows) says."""
        try:
            state = self.runtime.get_state(key)
        except StoreError as exc:
            self.runtime.store_error("read", exc)
            return
        since = state.last_crawl if state is not None else None
        if since is not None and any(since < update.when <= now for update in document.past):
            self.runtime.listed_updates.add(key)

    def _apply_elsewhere(self, signals: Signals, now: float) -> None:
        """Write signals into the records they are about (or hold them for new URLs)."""
        try:
            changed = self.tracker.apply(signals, now)
        except StoreError as exc:
            self.runtime.store_error("apply provider signals to", exc)
            return
        self._tell_scheduler(changed)

    # -- after a visit -----------------------------------------------------------------

    def _on_outcome(self, state: PageState, outcome: Outcome, now: float) -> None:
        visit = self._visits.pop(state.key, None)
        own: Signals | None = None
        if visit is not None and outcome not in (Outcome.GONE, Outcome.ERROR):
            report = ParseReport()
            own = meta_signals(visit[0], state.url, now, report)
            self._count_skipped(report)
        try:
            moved = self.tracker.after_visit(state, outcome, now, own)
            if outcome in (Outcome.GONE, Outcome.ERROR):
                return
            self.runtime.store.put(state)
        except StoreError as exc:
            self.runtime.store_error("write provider signals to", exc, state.url)
            return
        if moved:
            self._tell_scheduler([state])

    def _log_trust_change(self, host: str, kind: str, demoted: bool, score: float) -> None:
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
            for listener in list(self.runtime.visit_listeners):
                listener(state)

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
    mine, others = Signals(), Signals()
    for attr in ("past", "announced", "not_before", "quiet"):
        for signal in getattr(signals, attr):
            getattr(mine if signal.url == url else others, attr).append(signal)
    return mine, others


def host_of(url: str) -> str:
    """The politeness host of ``url`` (re-exported for the notification glue)."""
    return url_host(url)
