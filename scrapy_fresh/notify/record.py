"""Pushed change notifications: "these URLs changed" -> due now, as smart pages.

Xu et al. (seed ``xu-content-provider-friendly-crawler``, Section 3.3) define the smart
provider as one that "sends a signal every time it has been updated". A notification
records the update time as a past update of the page (the input of
:math:`S_{past}^{known}`, eq. 4) and makes the page due now ("for the past update, the
current available crawling slot", Section 4.1); the next crawl fetches it with the
priority eq. 4 gives it. A page nobody fixed a level for becomes smart (as
:setting:`FRESH_PROVIDER_AUTODETECT` does in a crawl); a URL the store does not know is
added as a new one (status queued, due now).

:func:`record_updates` does the same for updates that each carry their own time (the
entries of a feed pushed by a WebSub hub): a page is made due only when its update is
later than its last crawl. Used by ``scrapy-fresh notify`` and
``scrapy-fresh notify-server`` (:mod:`scrapy_fresh.notify.server`). No Scrapy here; the clock is read only when
``now`` is not given.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.providers.apply import add_past
from scrapy_fresh.providers.ledger import TrustLedger
from scrapy_fresh.store.base import PageState, Provider, StateStore, Status
from scrapy_fresh.urls import MAX_URL_LENGTH, URLRefused, accept_url

__all__ = ["MAX_URL_LENGTH", "NotifyResult", "check_url", "record_changes", "record_updates"]

#: An update time later than now by more than this is refused.
FUTURE_TOLERANCE_SECS = 3600.0


@dataclass
class NotifyResult:
    """What :func:`record_changes` did, URL by URL."""

    #: Known URLs made due now.
    updated: list[str] = field(default_factory=list)
    #: URLs the store did not know, added as new records (due now).
    added: list[str] = field(default_factory=list)
    #: URL -> why it was not recorded.
    rejected: dict[str, str] = field(default_factory=dict)
    #: Known URLs whose update their last crawl already saw: the time is recorded, the
    #: page is not made due (:func:`record_updates` only).
    seen: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> int:
        """URLs made due (updated or added)."""
        return len(self.updated) + len(self.added)


def check_url(url: object) -> str | None:
    """Return why ``url`` cannot be notified, or None if it can (see
    :func:`~scrapy_fresh.urls.fetch_url`: the URL is judged as Scrapy will fetch it).

    >>> check_url("https://example.com/a") is None
    True
    >>> check_url("ftp://example.com/a")
    'not an absolute http(s) URL'
    """
    fetched = _accept(url)
    return str(fetched) if isinstance(fetched, URLRefused) else None


def _accept(url: object) -> str | URLRefused:
    """``url`` as Scrapy will fetch it, or why it is refused."""
    try:
        return accept_url(url)
    except URLRefused as exc:
        return exc


def _fixed(state: PageState) -> bool:
    meta = state.request.get("meta") or {}
    return meta.get("fresh_provider") is not None


def record_changes(
    store: StateStore,
    urls: Iterable[str],
    when: float | None = None,
    *,
    now: float | None = None,
    autodetect: bool = True,
    add_unknown: bool = True,
) -> NotifyResult:
    """Record that ``urls`` changed at ``when`` (default: now) and make them due now.

    :param store: the crawl's store.
    :param urls: absolute http(s) URLs; bad ones are rejected one by one (the reason is
        in :attr:`NotifyResult.rejected`), the others are recorded.
    :param when: Unix time of the change; not later than ``now`` (plus an hour of clock
        skew): a future change is an announcement, not a notification.
    :param now: the current Unix time (default: the clock).
    :param autodetect: raise pages of level normal (not fixed by their request meta) to
        smart.
    :param add_unknown: add URLs the store does not know as new records.

    >>> from scrapy_fresh.store.memory import MemoryStore
    >>> store = MemoryStore()
    >>> r = record_changes(store, ["https://example.com/a", "mailto:x"], 90.0, now=100.0)
    >>> r.added, r.rejected
    (['https://example.com/a'], {'mailto:x': 'not an absolute http(s) URL'})
    >>> state = store.get(url_key("https://example.com/a"))
    >>> state.provider.value, state.past_updates, state.next_due
    ('smart', [90.0], 100.0)
    """
    current = time.time() if now is None else float(now)
    at = current if when is None else float(when)
    if not math.isfinite(at) or at > current + FUTURE_TOLERANCE_SECS:
        raise ValueError(
            f"when ({when!r}) must be a time not later than now ({current!r}); an update "
            "in the future is an announcement (meta['fresh_schedule']), not a notification."
        )
    result = NotifyResult()
    updates: dict[str, float] = {}
    for url in urls:
        fetched = _accept(url)
        if isinstance(fetched, URLRefused):
            result.rejected[str(url)] = str(fetched)
        else:
            updates.setdefault(fetched, at)
    return _record(store, updates, current, result, autodetect, add_unknown, always_due=True)


def record_updates(
    store: StateStore,
    updates: Iterable[tuple[str, float]],
    *,
    now: float | None = None,
    autodetect: bool = True,
    add_unknown: bool = True,
) -> NotifyResult:
    """Record pushed past updates that each carry their own time (the entries of a feed a
    WebSub hub delivered, :mod:`scrapy_fresh.notify.server`).

    Each time becomes a past update of its URL (the latest one per URL counts); a page
    updated after its last crawl (or never crawled) becomes due now, as
    :func:`record_changes` makes it; one whose update its last crawl already saw only
    gains the time in its history (:attr:`NotifyResult.seen`). A URL with a time later
    than ``now`` (plus an hour of clock skew) or not a number is rejected.

    >>> from scrapy_fresh.store.memory import MemoryStore
    >>> store = MemoryStore()
    >>> store.add_many([PageState(url_key("https://e.test/old"), "https://e.test/old",
    ...                           host="e.test", last_crawl=50.0, next_due=500.0)])
    ['...']
    >>> r = record_updates(store, [("https://e.test/old", 40.0), ("https://e.test/new", 90.0),
    ...                            ("https://e.test/later", 9e9)], now=100.0)
    >>> r.seen, r.added, list(r.rejected)
    (['https://e.test/old'], ['https://e.test/new'], ['https://e.test/later'])
    >>> old = store.get(url_key("https://e.test/old"))
    >>> old.past_updates, old.next_due
    ([40.0], 500.0)
    """
    current = time.time() if now is None else float(now)
    result = NotifyResult()
    latest: dict[str, float] = {}
    for raw, when in updates:
        url = _accept(raw)
        if isinstance(url, URLRefused):
            result.rejected[str(raw)] = str(url)
        elif not _past_time(when, current):
            result.rejected[url] = "its update time is not a past time"
        elif when > latest.get(url, -math.inf):
            latest[url] = float(when)
    return _record(store, latest, current, result, autodetect, add_unknown, always_due=False)


def _past_time(when: object, current: float) -> bool:
    """Whether ``when`` is a number no later than ``current`` (plus clock skew)."""
    if isinstance(when, bool) or not isinstance(when, (int, float)):
        return False
    return math.isfinite(when) and when <= current + FUTURE_TOLERANCE_SECS


def _record(
    store: StateStore,
    updates: dict[str, float],
    current: float,
    result: NotifyResult,
    autodetect: bool,
    add_unknown: bool,
    *,
    always_due: bool,
) -> NotifyResult:
    """Write ``updates`` (URL -> update time, URLs already checked) into ``store``."""
    by_key: dict[str, tuple[str, float]] = {}
    for url, at in updates.items():
        by_key.setdefault(url_key(url), (url, at))
    if not by_key:
        return result
    existing = store.get_many(by_key)
    writes: list[PageState] = []
    new: list[PageState] = []
    hosts: set[str] = set()
    for key, (url, at) in by_key.items():
        state = existing.get(key)
        if state is None:
            if not add_unknown:
                result.rejected[url] = "not in the store"
                continue
            host = url_host(url)
            state = PageState(
                key=key,
                url=url,
                host=host,
                status=Status.QUEUED,
                provider=Provider.SMART if autodetect else Provider.NORMAL,
                first_seen=current,
                next_due=current,
                request={"url": url},
            )
            add_past(state, [at])
            new.append(state)
            hosts.add(host)
            result.added.append(url)
            continue
        add_past(state, [at])
        if autodetect and state.provider is Provider.NORMAL and not _fixed(state):
            state.provider = Provider.SMART
        hosts.add(state.host)
        writes.append(state)
        if not always_due and state.last_crawl is not None and at <= state.last_crawl:
            result.seen.append(url)  # its last crawl already saw this update
            continue
        if state.status is Status.GONE:
            state.status = Status.QUEUED if state.last_crawl is None else Status.IDLE
            state.errors = 0
        state.next_due = min(state.next_due, current)
        result.updated.append(url)
    if writes:
        store.put_many(writes)
    if new:
        added = set(store.add_many(new))
        raced = {state.url: by_key[state.key][1] for state in new if state.key not in added}
        if raced:  # added meanwhile by a crawl: update those records instead
            result.added = [url for url in result.added if url not in raced]
            again = _record(
                store, raced, current, NotifyResult(), autodetect, False, always_due=always_due
            )
            result.updated.extend(again.updated)
            result.seen.extend(again.seen)
            result.rejected.update(again.rejected)
    ledger = TrustLedger(store)
    for host in sorted(hosts):
        ledger.claimed(host, "push", current)
    return result
