"""Provider signals in a crawl: read them, check them, use them (downloader middleware).

:class:`FreshProviderMiddleware` reads update signals from every response
(``Last-Modified``, ``Cache-Control``, ``Expires``) and from sitemaps and feeds
(:mod:`scrapy_fresh.providers`), takes the spider's own (``meta["fresh_updates"]``,
``meta["fresh_schedule"]``), writes them into the URL records (past updates, announced
updates) and moves due times as Xu et al.'s slot rule says
(:mod:`scrapy_fresh.providers.apply`). After each visit it checks what the signals had
claimed against what the visit found and updates the host's trust in that kind of
signal (:mod:`scrapy_fresh.policy.trust`, :mod:`scrapy_fresh.providers.ledger`); the
signals of a demoted host are still recorded and checked, not used.

With :setting:`FRESH_PROVIDER_AUTODETECT` a page whose level nobody fixed (request meta,
spider attribute, :setting:`FRESH_PROVIDERS`) gets the level its signals support.
See :doc:`/topics/providers`.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from scrapy_fresh.config import parse_provider
from scrapy_fresh.exceptions import ConfigError, StoreError
from scrapy_fresh.frontier.revisit import Outcome
from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.policy.trust import Evidence, TrustParams, weighted_probability
from scrapy_fresh.providers.apply import (
    add_announced,
    add_past,
    consume_announced,
    detected_level,
    signal_due,
)
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
from scrapy_fresh.runtime import FreshRuntime, header
from scrapy_fresh.store.base import PageState, Provider, Status
from scrapy_fresh.validators import parse_http_date

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

__all__ = ["FUTURE_KINDS", "PAST_KINDS", "FreshProviderMiddleware", "meta_signals"]

logger = logging.getLogger(__name__)

#: Signal kinds whose claims are past updates of other pages, checked at their visits.
PAST_KINDS = ("sitemap", "feed", "push")
#: Signal kinds whose claims are announced updates.
FUTURE_KINDS = ("schedule", "changefreq", "spider")
#: URLs not in the store yet whose signals are held until their first visit.
MAX_PENDING = 100_000
#: Pages whose claim kinds of this run are remembered exactly (beyond: host's kinds).
MAX_CLAIMS = 200_000
#: Claims remembered per page in one run.
MAX_CLAIMS_PER_PAGE = 64
_JUDGED = (Outcome.CHANGED, Outcome.UNCHANGED, Outcome.NOT_MODIFIED)


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


@dataclass
class _Visit:
    """A page on its way: what its record said before, and what its response says."""

    meta: MutableMapping[str, Any]
    url: str
    prev_last_crawl: float | None
    prev_past: list[float]
    prev_future: list[tuple[float, float]]
    prev_last_modified: str | None
    own: Signals = field(default_factory=Signals)


class FreshProviderMiddleware:
    """Read, check and use content-provider update signals (downloader middleware, 535).

    Enable it above :class:`~scrapy_fresh.middlewares.FreshDownloaderMiddleware` (540) so
    that it sees each request first and each response after the conditional check; the
    add-on does.

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
        self._ledger: TrustLedger | None = None
        self._visits: dict[str, _Visit] = {}
        self._pending: OrderedDict[str, Signals] = OrderedDict()
        #: key -> claims of this run: (kind, time, probability; None for a past update).
        self._claims: OrderedDict[str, list[tuple[str, float, float | None]]] = OrderedDict()
        self._not_before: dict[str, float] = {}
        self._quiet: dict[str, QuietWindow] = {}
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
    def ledger(self) -> TrustLedger:
        if self._ledger is None:
            self._ledger = TrustLedger(self.runtime.store, self.params)
        return self._ledger

    # -- requests and responses --------------------------------------------------------

    def process_request(self, request: Request) -> None:
        meta = request.meta
        key = meta.get("fresh_key")
        if not isinstance(key, str) or meta.get("fresh_probe") or key in self._visits:
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
        self._visits[key] = _Visit(
            meta,
            state.url,
            state.last_crawl,
            list(state.past_updates),
            list(state.future_updates),
            state.last_modified,
        )

    def process_response(self, request: Request, response: Response) -> Response:
        if response.status != 200 or request.meta.get("fresh_probe"):
            return response
        now = self.runtime.clock()
        key = request.meta.get("fresh_key")
        visit = self._visits.get(key) if isinstance(key, str) else None
        headers = {
            name: header(response.headers, name)
            for name in ("last-modified", "cache-control", "expires", "date", "age")
        }
        own_url = visit.url if visit is not None else request.url
        found = header_signals(headers, own_url, now)
        self._count_skipped(found.report)
        ctype = header(response.headers, "Content-Type")
        body = response.body
        if body and looks_like_document(body, ctype):
            document = parse_document(body, response.url, now, self.limits)
            self._count_document(document.report, response.url)
            for url in (response.url, request.url, own_url):  # a redirect: one page
                document = _rename(document, url, own_url)
            found.extend(document)
        mine, others = _split(found, own_url)
        if visit is not None:
            visit.own.extend(mine)
        else:
            others.extend(mine)
        if len(others):
            self._apply_elsewhere(others, now)
        return response

    # -- signals about other pages -----------------------------------------------------

    def _apply_elsewhere(self, signals: Signals, now: float) -> None:
        """Write signals into the records they are about (or hold them for new URLs)."""
        by_key: dict[str, Signals] = {}
        for url in signals.urls():
            by_key[url_key(url)] = Signals()
        for kind_list, attr in (
            (signals.past, "past"),
            (signals.announced, "announced"),
            (signals.not_before, "not_before"),
            (signals.quiet, "quiet"),
        ):
            for signal in kind_list:
                getattr(by_key[url_key(signal.url)], attr).append(signal)
        try:
            states = self.runtime.store.get_many(by_key)
        except StoreError as exc:
            self.runtime.store_error("read records for provider signals from", exc)
            return
        changed: list[PageState] = []
        for key, own in by_key.items():
            state = states.get(key)
            if state is None:
                self._hold(key, own)
                continue
            before = (
                state.next_due,
                state.provider,
                len(state.past_updates),
                list(state.future_updates),
            )
            self._absorb(state, own, now, visited=False)
            if (
                state.next_due,
                state.provider,
                len(state.past_updates),
                state.future_updates,
            ) != before:
                changed.append(state)
        if not changed:
            return
        try:
            self.runtime.store.put_many(changed)
        except StoreError as exc:
            self.runtime.store_error("write provider signals to", exc)
            return
        self.runtime.stat("fresh/providers/records_updated", len(changed))
        self._tell_scheduler(changed)

    def _hold(self, key: str, signals: Signals) -> None:
        held = self._pending.get(key)
        if held is None:
            if len(self._pending) >= MAX_PENDING:
                self._pending.popitem(last=False)
                self.runtime.stat("fresh/providers/pending_dropped")
            self._pending[key] = held = Signals()
            self.runtime.stat("fresh/providers/pending")
        held.extend(signals)

    def _remember(self, key: str, claims: Iterable[tuple[str, float, float | None]]) -> None:
        known = self._claims.get(key)
        if known is None:
            if len(self._claims) >= MAX_CLAIMS:
                self._claims.popitem(last=False)
            self._claims[key] = known = []
        known.extend(claims)
        del known[:-MAX_CLAIMS_PER_PAGE]

    # -- after a visit -----------------------------------------------------------------

    def _on_outcome(self, state: PageState, outcome: Outcome, now: float) -> None:
        visit = self._visits.pop(state.key, None)
        pending = self._pending.pop(state.key, None)
        if outcome in (Outcome.GONE, Outcome.ERROR):
            return
        try:
            own = Signals()
            if visit is not None:
                report = ParseReport()
                own.extend(meta_signals(visit.meta, state.url, now, report))
                self._count_skipped(report)
                own.extend(visit.own)
                if self.trust_enabled and outcome in _JUDGED:
                    self._check_claims(state, outcome, visit, own, now)
            if pending is not None:
                own.extend(pending)
            before = (state.next_due, state.provider)
            consume_announced(state, now)
            self._absorb(state, own, now, visited=True)
            self.runtime.store.put(state)
        except StoreError as exc:
            self.runtime.store_error("write provider signals to", exc, state.url)
            return
        if (state.next_due, state.provider) != before:
            self._tell_scheduler([state])

    def _check_claims(
        self, state: PageState, outcome: Outcome, visit: _Visit, own: Signals, now: float
    ) -> None:
        """Trust evidence from one judged visit (see :mod:`scrapy_fresh.policy.trust`)."""
        since = visit.prev_last_crawl
        if since is None:
            return
        host = state.host
        changed = outcome is Outcome.CHANGED
        ledger = self.ledger
        remembered = self._claims.pop(state.key, None) or []
        window = [(k, t, p) for k, t, p in remembered if since < t <= now]
        explained = {t for _, t, _ in window}
        new_lm = parse_http_date(state.last_modified)
        # past updates claimed for this page since the last crawl, by kind
        past: dict[str, float] = {k: 1.0 for k, _, p in window if p is None}
        for claim in own.past:  # the page's own dates, read in this very visit
            if claim.signal != "http-lastmod" and since < claim.when <= now:
                past[claim.signal] = 1.0
        if any(since < t <= now and t != new_lm and t not in explained for t in visit.prev_past):
            for kind in ledger.kinds_in_use(host, PAST_KINDS):  # claims of an earlier run
                past.setdefault(kind, 1.0)
        # announced updates that were due by now, by kind (weight: their probability)
        future: dict[str, float] = {}
        for k, _, p in window:
            if p is not None:
                future[k] = max(p, future.get(k, 0.0))
        earlier = [p for t, p in visit.prev_future if since < t <= now and t not in explained]
        if earlier:
            for kind in ledger.kinds_in_use(host, FUTURE_KINDS):
                future.setdefault(kind, max(earlier))
        verdict = Evidence.CONFIRMED if changed else Evidence.REFUTED
        for kind, weight in sorted({**past, **future}.items()):
            self._observe(host, kind, verdict, weight)
        if changed and not past:
            for kind in ledger.kinds_in_use(host, PAST_KINDS):
                entry = ledger.get(host, kind)
                if entry is not None and entry.last_claim_at > since:
                    self._observe(host, kind, Evidence.MISSED)
        # the page's own Last-Modified
        old_lm = parse_http_date(visit.prev_last_modified)
        if outcome is not Outcome.NOT_MODIFIED and old_lm is not None and new_lm is not None:
            if new_lm > old_lm:
                self._observe(
                    host, "http-lastmod", Evidence.CONFIRMED if changed else Evidence.REFUTED
                )
            elif changed:
                self._observe(host, "http-lastmod", Evidence.MISSED)
        # a change inside a promised quiet time (max-age, Expires, ttl, skipHours/Days)
        not_before = self._not_before.pop(state.key, None)
        quiet = self._quiet.get(state.key)
        if (changed and new_lm is not None and since < new_lm) and (
            (not_before is not None and new_lm < not_before)
            or (quiet is not None and quiet.is_quiet(new_lm))
        ):
            self._observe(host, "cache", Evidence.REFUTED)

    def _observe(self, host: str, kind: str, evidence: Evidence, weight: float = 1.0) -> None:
        before, after = self.ledger.observe(host, kind, evidence, weight)
        self.runtime.stat(f"fresh/trust/{evidence.value}")
        if after and not before:
            self.runtime.stat("fresh/trust/demoted")
            logger.warning(
                "scrapy_fresh: %(kind)s signals of %(host)s are not trusted any more "
                "(trust %(score).2f below FRESH_TRUST_THRESHOLD); its pages are treated as "
                "normal until the signals prove right again.",
                {"kind": kind, "host": host, "score": self.ledger.score(host, kind)},
                extra={"spider": self.crawler.spider},
            )
        elif before and not after:
            self.runtime.stat("fresh/trust/restored")
            logger.info(
                "scrapy_fresh: %(kind)s signals of %(host)s are trusted again "
                "(trust %(score).2f).",
                {"kind": kind, "host": host, "score": self.ledger.score(host, kind)},
                extra={"spider": self.crawler.spider},
            )

    # -- writing signals into one record -----------------------------------------------

    def _absorb(self, state: PageState, signals: Signals, now: float, *, visited: bool) -> None:
        """Put ``signals`` (all about ``state``) into it; set its level and due time."""
        host = state.host
        ledger = self.ledger
        kinds = {s.signal for s in signals.past} | {s.signal for s in signals.announced}
        kinds |= {s.signal for s in signals.not_before} | {s.signal for s in signals.quiet}
        for kind in sorted(kinds):
            ledger.claimed(host, kind, now)
            self.runtime.stat(f"fresh/providers/claims/{kind}")
            if not ledger.trusted(host, kind):
                self.runtime.stat("fresh/providers/untrusted_claims")
        self._remember(
            state.key,
            [(s.signal, s.when, None) for s in signals.past if s.signal != "http-lastmod"]
            + [(a.signal, a.when, a.probability) for a in signals.announced],
        )
        # Claims of a demoted kind are remembered above (to be checked), not used.
        past = [
            s.when
            for s in signals.past
            if s.signal != "http-lastmod" and ledger.trusted(host, s.signal)
        ]
        add_past(state, past)
        announced = [
            (
                a.when,
                weighted_probability(a.probability, ledger.record(host, a.signal), self.params),
            )
            for a in signals.announced
            if ledger.trusted(host, a.signal)
        ]
        add_announced(state, announced, now)
        cache_ok = ledger.trusted(host, "cache")
        not_before: float | None = None
        if signals.not_before:
            not_before = max(n.when for n in signals.not_before)
            self._not_before[state.key] = not_before
        if signals.quiet:
            self._quiet[state.key] = signals.quiet[-1]
        used = set(ledger.kinds_in_use(host)) or {"http-lastmod"}
        past_ok = any(ledger.trusted(host, k) for k in {*PAST_KINDS, "http-lastmod"} & used) or (
            not {*PAST_KINDS, "http-lastmod"} & used
        )
        future_ok = any(ledger.trusted(host, k) for k in set(FUTURE_KINDS) & used) or (
            not set(FUTURE_KINDS) & used
        )
        fixed = self._fixed_level(state)
        if fixed is None and self.autodetect:
            level = detected_level(state, now, past_trusted=past_ok, future_trusted=future_ok)
            if level is not state.provider:
                self.runtime.stat(f"fresh/providers/level/{level.value}")
                state.provider = level
        elif fixed is not None:
            state.provider = fixed
        if state.provider is Provider.NORMAL and not (cache_ok and self.autodetect):
            return
        if state.status is Status.GONE or (not visited and state.last_crawl is None):
            return
        use_past = state.provider is not Provider.NORMAL and past_ok
        use_future = state.provider is Provider.SUPER and future_ok
        due = signal_due(
            state,
            now,
            not_before=not_before if cache_ok else None,
            quiet=self._quiet.get(state.key) if cache_ok else None,
            use_past=use_past,
            use_future=use_future,
            max_wait_secs=self.runtime.config.max_refresh_secs,
        )
        if due <= now < state.next_due:
            self.runtime.stat("fresh/providers/due_now")
        state.next_due = due

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
