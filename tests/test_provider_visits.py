"""The provider signals' work after each visit skips what has nothing to learn from: a
visit with no meta signal, a 304 whose headers hold no Last-Modified, Cache-Control or
Expires, a page with no claim to judge and no update on record, a host whose trust
nobody touched (``FreshProviderMiddleware._after_visit``, ``SignalTracker.after_visit``).

These tests pin what must still happen on the edges of those shortcuts: each would fail
if a shortcut skipped a signal, a stat, a judgment or a trust record it must not.
``bench/provider_visit.py`` times the shortcuts and checks, on its rows, that the
records, stats and trust records are those of the code before them.
"""

from __future__ import annotations

from collections import Counter
from email.utils import formatdate
from typing import Any

import pytest

from scrapy_fresh.crawl.provider_middleware import FreshProviderMiddleware
from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.providers.http import has_header_signals, header_signals
from scrapy_fresh.providers.ledger import (
    QUIET_NAMESPACE,
    TRUST_NAMESPACE,
    QuietClaim,
    TrustLedger,
    iter_trust,
)
from scrapy_fresh.providers.meta import has_meta_signals
from scrapy_fresh.providers.signals import NotBefore, PastUpdate, Signals
from scrapy_fresh.providers.tracker import SignalTracker
from scrapy_fresh.store.base import PageState, Provider, SiteState, Status
from scrapy_fresh.store.memory import MemoryStore

URL = "http://a.example/page"
HOST = url_host(URL)
KEY = url_key(URL)
REFRESH = 3600.0
NOW = 1_000_000.0  # the harness clock (tests/conftest.py)
DAY = 86400.0
LAST_CRAWL = NOW - 2 * REFRESH


def http_date(t: float) -> str:
    return formatdate(t, usegmt=True)


ETAG_ONLY = {"etag": '"v1"', "date": http_date(NOW)}


# -- a 304 through the middleware (the visit amenders) -------------------------------------


@pytest.fixture
def not_modified(harness: Any, known: Any) -> Any:
    """``not_modified(headers, meta=..., trust=..., quiet=...)``: a page last crawled two
    refresh times ago answers a 304 with ``headers``; returns the harness and the
    middleware. ``trust``: ``{kind: value}`` trust records of its host in the store;
    ``quiet``: a quiet claim kept for it by an earlier run."""

    def visit(
        headers: dict[str, str | None],
        *,
        meta: dict[str, Any] | None = None,
        trust: dict[str, dict[str, Any]] | None = None,
        quiet: QuietClaim | None = None,
        **fields: Any,
    ) -> tuple[Any, FreshProviderMiddleware]:
        stored = {(TRUST_NAMESPACE, f"{kind}/{HOST}"): v for kind, v in (trust or {}).items()}
        if quiet is not None:
            stored[(QUIET_NAMESPACE, KEY)] = quiet.to_meta()
        record = known(
            URL, last_crawl=LAST_CRAWL, next_due=NOW - 10, refresh_secs=REFRESH, **fields
        )
        h = harness(records=[record], meta=stored)
        mw = FreshProviderMiddleware.from_crawler(h.crawler)
        (request,) = h.drain()
        request.meta.update(meta or {})
        mw.process_request(request)
        state = h.runtime.visits.record_outcome(
            request.meta, Outcome.NOT_MODIFIED, headers={**ETAG_ONLY, **headers}
        )
        assert state is not None
        return h, mw

    return visit


def provider_stats(h: Any) -> dict[str, int]:
    return {
        k: v
        for k, v in h.crawler.stats.get_stats().items()
        if k.startswith(("fresh/providers/", "fresh/trust/"))
    }


def test_a_304_without_signals_claims_nothing_and_keeps_its_own_due_time(not_modified):
    h, _ = not_modified({})
    assert provider_stats(h) == {}
    assert list(iter_trust(h.runtime.store)) == []
    state = h.state(URL)
    assert state.provider is Provider.NORMAL
    assert state.next_due == pytest.approx(NOW + state.refresh_secs)


def test_a_304_with_only_a_max_age_makes_a_quiet_claim(not_modified):
    h, _ = not_modified({"cache-control": "public, max-age=86400"})
    assert h.stat("fresh/providers/claims/cache") == 1
    assert h.stat("fresh/providers/quiet/claims") == 1
    kept = h.runtime.store.get_meta(QUIET_NAMESPACE, KEY)
    assert kept is not None
    assert QuietClaim.from_meta(kept).until == NOW + DAY
    assert [(t.host, t.kind) for t in iter_trust(h.runtime.store)] == [(HOST, "cache")]


def test_a_304_with_only_an_expires_makes_a_quiet_claim(not_modified):
    h, _ = not_modified({"expires": http_date(NOW + DAY)})  # measured against its Date
    assert h.stat("fresh/providers/claims/cache") == 1
    kept = h.runtime.store.get_meta(QUIET_NAMESPACE, KEY)
    assert kept is not None
    assert QuietClaim.from_meta(kept).until == NOW + DAY


@pytest.mark.parametrize(
    ("headers", "skipped"),
    [
        ({"last-modified": "yesterday"}, "bad_date"),
        ({"last-modified": http_date(NOW + DAY)}, "future_date"),
        ({"cache-control": "max-age=soon"}, "bad_number"),
        ({"expires": "0"}, "bad_date"),
    ],
)
def test_the_bad_values_of_a_304_are_counted(not_modified, headers, skipped):
    h, _ = not_modified(headers)
    assert h.stat(f"fresh/providers/skipped/{skipped}") == 1


def test_a_304_last_modified_is_noted_as_its_hosts_kind(not_modified):
    h, _ = not_modified({"last-modified": http_date(NOW - DAY)})
    assert h.stat("fresh/providers/claims/http-lastmod") == 1
    assert [(t.host, t.kind) for t in iter_trust(h.runtime.store)] == [(HOST, "http-lastmod")]


def test_a_304_of_a_demoted_last_modified_is_an_untrusted_claim(not_modified):
    h, _ = not_modified(
        {"last-modified": http_date(NOW - DAY)},
        trust={"http-lastmod": {"demoted": True, "refuted": 9.0, "observations": 9}},
    )
    assert h.stat("fresh/providers/untrusted_claims") == 1


@pytest.mark.parametrize(
    ("meta", "skipped"),
    [
        ({"fresh_updates": "last week"}, 1),
        ({"fresh_schedule": [[NOW + DAY, 2.0]]}, 1),
        ({"fresh_updates": []}, 0),
        ({"fresh_updates": None, "fresh_schedule": None}, 0),
    ],
)
def test_the_spiders_meta_signals_of_a_304_are_read(not_modified, meta, skipped):
    h, _ = not_modified({}, meta=meta)
    assert h.stat("fresh/providers/skipped/bad_meta") == skipped
    assert provider_stats(h) == ({"fresh/providers/skipped/bad_meta": 1} if skipped else {})


def test_a_304_for_a_page_the_spider_says_changed_refutes_the_spider(not_modified):
    h, _ = not_modified({}, meta={"fresh_updates": [NOW - REFRESH]})
    assert h.stat("fresh/providers/claims/spider") == 1
    assert h.stat("fresh/trust/refuted") == 1
    assert h.state(URL).past_updates == [NOW - REFRESH]  # kept: one claim, not a verdict


def test_a_bare_304_keeps_the_quiet_claim_of_the_copy_it_validated(not_modified):
    """No Cache-Control in the 304: the claim an earlier run kept is judged (kept) and
    freshened from now (RFC 9111, Section 4.3.4)."""
    claim = QuietClaim(claimed_at=LAST_CRAWL, own_due=LAST_CRAWL + REFRESH, until=LAST_CRAWL + DAY)
    h, _ = not_modified({}, trust={"cache": {"confirmed": 3.0}}, quiet=claim)
    assert h.stat("fresh/trust/quiet/kept") == 1
    assert h.stat("fresh/providers/claims/cache") == 1
    kept = h.runtime.store.get_meta(QUIET_NAMESPACE, KEY)
    assert kept is not None
    assert (QuietClaim.from_meta(kept).claimed_at, QuietClaim.from_meta(kept).until) == (
        NOW,
        NOW + DAY,
    )
    state = h.state(URL)
    assert state.next_due > NOW + state.refresh_secs  # deferred by the share it earned


def test_a_304_for_a_sitemap_claimed_page_refutes_the_sitemap(harness, known):
    record = known(URL, last_crawl=LAST_CRAWL, next_due=NOW - 10, refresh_secs=REFRESH)
    h = harness(records=[record])
    mw = FreshProviderMiddleware.from_crawler(h.crawler)
    mw.tracker.apply(Signals(past=[PastUpdate(URL, NOW - REFRESH, "sitemap")]), NOW - 60)
    (request,) = h.drain()
    mw.process_request(request)
    h.runtime.visits.record_outcome(request.meta, Outcome.NOT_MODIFIED, headers=ETAG_ONLY)
    assert h.stat("fresh/providers/claims/sitemap") == 1
    assert h.stat("fresh/trust/refuted") == 1
    entry = mw.ledger.get(HOST, "sitemap")
    assert entry is not None
    assert entry.record.observations == 1
    assert entry.record.refuted > 0.0


# -- the tracker alone ---------------------------------------------------------------------


def crawled(url: str = URL, at: float = 0.0, **fields: Any) -> PageState:
    state = PageState(url_key(url), url, host=url_host(url), status=Status.QUEUED, **fields)
    record_visit(state, Outcome.NEW, at, RevisitPolicy(), SiteState(url_host(url)))
    return state


def counting(store: MemoryStore, **kwargs: Any) -> tuple[SignalTracker, Counter[str]]:
    counts: Counter[str] = Counter()

    def stat(name: str, count: int = 1) -> None:
        counts[name] += count

    return SignalTracker(store, stat=stat, **kwargs), counts


def revisit(
    tracker: SignalTracker, state: PageState, at: float, outcome: Outcome, **kwargs: Any
) -> bool:
    tracker.before_visit(state)
    record_visit(state, outcome, at, RevisitPolicy(), SiteState(state.host))
    return tracker.after_visit(state, outcome, at, **kwargs)


def test_a_change_nobody_claimed_is_a_miss_for_a_host_that_sends_sitemaps():
    store = MemoryStore()
    state = crawled()
    tracker, counts = counting(store)
    tracker.ledger.claimed(HOST, "sitemap", 100.0)  # after the page's last crawl
    revisit(tracker, state, DAY, Outcome.CHANGED)
    assert counts["fresh/trust/missed"] == 1
    assert tracker.ledger.record(HOST, "sitemap").refuted > 0.0


def test_an_update_on_record_from_an_earlier_run_is_judged_by_a_304():
    """A sitemap read in an earlier run said the page changed after its last crawl: the
    claim is not remembered in this run, the update on record is judged all the same."""
    store = MemoryStore()
    earlier, _ = counting(store)
    state = crawled()
    store.put(state)
    earlier.apply(Signals(past=[PastUpdate(URL, 3600.0, "sitemap")]), 7200.0)
    tracker, counts = counting(store)  # a new run
    state = store.get(state.key)
    assert state is not None
    assert state.past_updates == [3600.0]
    revisit(tracker, state, DAY, Outcome.NOT_MODIFIED)
    assert counts["fresh/trust/refuted"] == 1


@pytest.mark.parametrize("demoted", [False, True])
def test_a_smart_pages_level_follows_its_hosts_trust_though_the_visit_brings_nothing(
    demoted,
):
    """A page with an update on record is smart while its host's dates are trusted and
    normal once they are demoted: its level is worked out from trust at every visit."""
    store = MemoryStore()
    store.put_meta(TRUST_NAMESPACE, f"http-lastmod/{HOST}", {"demoted": demoted})
    tracker, counts = counting(store)
    state = crawled(past_updates=[-3600.0], provider=Provider.SMART)
    assert revisit(tracker, state, DAY, Outcome.NOT_MODIFIED) is demoted
    assert state.provider is (Provider.NORMAL if demoted else Provider.SMART)
    assert counts["fresh/providers/level/normal"] == int(demoted)


def test_a_fixed_level_is_set_though_the_visit_brings_nothing():
    tracker, _ = counting(MemoryStore(), fixed_level=lambda state: Provider.SUPER)
    state = crawled()
    assert revisit(tracker, state, DAY, Outcome.NOT_MODIFIED)
    assert state.provider is Provider.SUPER


def test_an_announced_update_that_came_due_is_consumed_and_the_level_detected():
    tracker, counts = counting(MemoryStore())
    state = crawled(future_updates=[(3600.0, 0.9)], provider=Provider.SUPER)
    assert revisit(tracker, state, DAY, Outcome.NOT_MODIFIED)
    assert state.future_updates == []
    assert state.provider is Provider.NORMAL
    assert counts["fresh/providers/level/normal"] == 1


def test_the_tracker_does_not_change_the_signals_it_is_given():
    """A 304 that freshens a kept quiet claim joins its own signals into a new bundle:
    the caller's (and an answer's, add_own) are left as they were."""
    store = MemoryStore()
    tracker, counts = counting(store)
    state = crawled()
    tracker.before_visit(state)
    answer = Signals(not_before=[NotBefore(URL, 7 * DAY, "cache")])
    tracker.add_own(state.key, answer)
    record_visit(state, Outcome.UNCHANGED, 60.0, RevisitPolicy(), SiteState(HOST))
    tracker.after_visit(state, Outcome.UNCHANGED, 60.0)
    assert counts["fresh/providers/quiet/claims"] == 1
    spider = Signals(past=[PastUpdate(URL, 0.0, "spider")])
    before = (list(spider.past), list(spider.not_before), list(answer.not_before))
    revisit(tracker, state, DAY, Outcome.NOT_MODIFIED, signals=spider)
    assert counts["fresh/trust/quiet/kept"] == 1
    assert counts["fresh/providers/quiet/claims"] == 2  # freshened from now
    assert (spider.past, spider.not_before, answer.not_before) == before


# -- what the shortcuts test ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "read"),
    [
        ({}, False),
        ({"etag": '"x"', "date": "Thu, 01 Jan 1970 00:00:00 GMT", "age": "5"}, False),
        ({"last-modified": "", "cache-control": None, "expires": ""}, False),
        ({"last-modified": "Thu, 01 Jan 1970 00:01:40 GMT"}, True),
        ({"last-modified": "garbage"}, True),
        ({"cache-control": "no-store"}, True),
        ({"cache-control": "max-age=x"}, True),
        ({"expires": "0"}, True),
        ({"expires": "Thu, 01 Jan 1970 01:00:00 GMT"}, True),
    ],
)
def test_headers_without_signal_headers_give_no_signals_and_skip_nothing(headers, read):
    assert has_header_signals(headers) is read
    found = header_signals(headers, URL, 1000.0)
    if not read:
        assert len(found) == 0
        assert not found.report.skipped


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({}, False),
        ({"fresh_updates": None}, False),
        ({"fresh_updates": 0}, True),
        ({"fresh_updates": []}, True),
        ({"fresh_schedule": ""}, True),
    ],
)
def test_meta_signals_are_read_whenever_a_key_is_set(meta, expected):
    assert has_meta_signals(meta) is expected


def test_the_kinds_a_host_uses_follow_its_trust_records():
    store = MemoryStore()
    ledger = TrustLedger(store)
    assert ledger.kinds_in_use(HOST) == []
    ledger.claimed(HOST, "sitemap", 10.0)
    assert ledger.kinds_in_use(HOST) == ["sitemap"]
    assert ledger.kinds_in_use(HOST, ("feed", "sitemap")) == ["sitemap"]
    other = TrustLedger(store)  # another worker
    other.claimed(HOST, "feed", 20.0)
    assert ledger.kinds_in_use(HOST) == ["sitemap"]  # cached, as its records are
    ledger.forget_cache()
    assert ledger.kinds_in_use(HOST) == ["sitemap", "feed"]
    ledger.observe_quiet(HOST, 1.0, changed=False)
    assert ledger.kinds_in_use(HOST) == ["sitemap", "feed", "cache"]
