"""FreshScheduler driven directly, with a memory store and a fake clock (no crawl)."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, Spider, signals
from scrapy.utils.test import get_crawler

from scrapy_fresh.crawl.scheduler import FreshScheduler
from scrapy_fresh.frontier.scoring import priority_score
from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import Provider, Status

NOW = 1_000_000.0  # the harness clock (tests/conftest.py)


class PlainSpider(Spider):
    name = "plain"

    def parse(self, response: Any) -> Any:
        return []

    def parse_page(self, response: Any) -> Any:
        return []


class SuperSpider(PlainSpider):
    name = "super"
    fresh_provider = "super"


def test_new_known_not_due_and_due_urls(harness: Any, known: Any) -> None:
    due = known("http://a.example/due", last_crawl=NOW - 90000, next_due=NOW - 10)
    later = known("http://a.example/later", last_crawl=NOW - 10, next_due=NOW + 3600)
    h = harness(records=[due, later])
    spider = h.crawler.spider
    # The due record was loaded when the spider opened: its request is rebuilt.
    assert h.scheduler.has_pending_requests()
    dropped: list[Request] = []

    def on_dropped(request: Request, spider: Spider) -> None:
        dropped.append(request)

    h.crawler.signals.connect(on_dropped, signal=signals.request_dropped)
    assert h.scheduler.enqueue_request(Request("http://a.example/new", callback=spider.parse))
    # A known URL that is not due is refused at once: enqueue_request tells the truth
    # (the engine sends request_dropped for it, as for any refused request).
    later_request = Request("http://a.example/later")
    assert not h.scheduler.enqueue_request(later_request)
    requests = {r.url: r for r in h.drain()}
    assert h.stat("fresh/requests/skipped_not_due") == 1
    assert dropped == []
    assert set(requests) == {"http://a.example/due", "http://a.example/new"}
    rebuilt = requests["http://a.example/due"]
    assert rebuilt.callback == spider.parse_page
    assert rebuilt.meta["fresh_key"] == due.key
    assert rebuilt.meta["fresh_stream"] == "refresh"
    assert requests["http://a.example/new"].meta["fresh_stream"] == "new"
    assert h.stat("fresh/requests/refresh") == 1
    assert h.stat("fresh/requests/new") == 1
    # Both are leased (in flight) until their visits are recorded.
    assert h.runtime.store.counts()[Status.IN_FLIGHT] == 2
    # Yielding a URL that is being downloaded does not fetch it twice.
    assert not h.scheduler.enqueue_request(Request("http://a.example/new"))
    for request in requests.values():
        h.record(request)
    assert h.runtime.store.counts()[Status.IN_FLIGHT] == 0
    assert not h.scheduler.has_pending_requests()


def test_the_spiders_request_replaces_the_rebuilt_one(harness: Any, known: Any) -> None:
    due = known("http://a.example/due", last_crawl=NOW - 90000, next_due=NOW - 10)
    h = harness(records=[due])
    mine = Request("http://a.example/due", callback=h.crawler.spider.parse, priority=3)
    assert h.scheduler.enqueue_request(mine)
    assert h.drain() == [mine]
    assert h.state("http://a.example/due").request["callback"] == "parse"


def test_provider_precedence(harness: Any) -> None:
    settings = {"FRESH_PROVIDERS": {"a.example": "smart"}}
    plain = harness(settings)
    plain.scheduler.enqueue_request(Request("http://a.example/1"))
    plain.scheduler.enqueue_request(Request("http://b.example/1"))
    plain.scheduler.enqueue_request(
        Request("http://b.example/2", meta={"fresh_provider": "super"})
    )
    assert plain.state("http://a.example/1").provider is Provider.SMART
    assert plain.state("http://b.example/1").provider is Provider.NORMAL
    assert plain.state("http://b.example/2").provider is Provider.SUPER

    spider = harness(settings, spider=SuperSpider)
    spider.scheduler.enqueue_request(Request("http://a.example/1"))
    spider.scheduler.enqueue_request(
        Request("http://a.example/2", meta={"fresh_provider": "normal"})
    )
    assert spider.state("http://a.example/1").provider is Provider.SUPER  # attr > setting
    assert spider.state("http://a.example/2").provider is Provider.NORMAL  # meta > attr


def test_bad_meta_provider_drops_that_request_with_a_clear_error(
    harness: Any, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness()
    assert not h.scheduler.enqueue_request(
        Request("http://a.example/x", meta={"fresh_provider": "mega"})
    )
    assert h.stat("fresh/requests/bad_meta") == 1
    assert "meta['fresh_provider'] ('mega')" in caplog.text
    assert h.scheduler.enqueue_request(Request("http://a.example/y"))


def test_bad_spider_provider_fails_on_open() -> None:
    class Bad(PlainSpider):
        fresh_provider = "sometimes"

    crawler = get_crawler(Bad, {"FRESH_STORE": "memory"})
    crawler.spider = Bad.from_crawler(crawler)
    scheduler = FreshScheduler.from_crawler(crawler)
    with pytest.raises(ValueError, match=r"Bad.fresh_provider \('sometimes'\)"):
        scheduler.open(crawler.spider)


def test_bypass_requests_are_fifo_and_dupefiltered(harness: Any) -> None:
    h = harness()
    off = {"fresh_enabled": False}
    assert h.scheduler.enqueue_request(Request("http://a.example/1", meta=off))
    assert not h.scheduler.enqueue_request(Request("http://a.example/1", meta=off))
    assert [r.url for r in h.drain()] == ["http://a.example/1"]
    assert len(h.runtime.store) == 0
    assert h.stat("fresh/requests/bypassed") == 1


def test_dont_filter_requests_are_judged_and_fetched_even_when_not_due(
    harness: Any, known: Any
) -> None:
    """Start requests (``dont_filter=True`` since Scrapy 2.13) get the conditional check
    and a verdict, not a full unjudged download; a duplicate still goes out, unjudged."""
    later = known("http://a.example/start", last_crawl=NOW - 10, next_due=NOW + 3600)
    h = harness(records=[later])
    start = Request("http://a.example/start", dont_filter=True)
    assert h.scheduler.enqueue_request(start)
    again = Request("http://a.example/start", dont_filter=True)
    assert h.scheduler.enqueue_request(again)
    sent = h.drain()
    assert [r.url for r in sent] == ["http://a.example/start"] * 2
    judged = [r for r in sent if "fresh_key" in r.meta]
    assert judged == [start]
    assert start.meta["fresh_stream"] == "refresh"
    assert h.stat("fresh/requests/bypassed") == 1


def test_a_start_url_already_sent_as_due_is_not_fetched_again(harness: Any, known: Any) -> None:
    """A due start URL is rebuilt from its record and handed out before Scrapy reads the
    spider's start requests: the spider's ``dont_filter`` request is then a duplicate."""
    due = known("http://a.example/start", last_crawl=NOW - 90000, next_due=NOW - 10)
    h = harness(records=[due])
    (rebuilt,) = h.drain()
    assert rebuilt.meta["fresh_key"] == due.key
    assert not h.scheduler.enqueue_request(Request("http://a.example/start", dont_filter=True))
    h.record(rebuilt)
    assert not h.scheduler.enqueue_request(Request("http://a.example/start", dont_filter=True))
    assert h.drain() == []
    assert h.stat("fresh/requests/skipped_in_flight") == 1  # while it downloads
    assert h.stat("fresh/requests/duplicate") == 1  # after its visit
    assert h.stat("fresh/requests/bypassed") == 0


def test_retry_continues_the_visit_and_copied_meta_does_not(harness: Any) -> None:
    h = harness()
    h.scheduler.enqueue_request(Request("http://a.example/p"))
    (first,) = h.drain()
    retry = first.replace(dont_filter=True)
    assert h.scheduler.enqueue_request(retry)
    assert h.drain() == [retry]
    assert h.stat("fresh/requests/continued") == 1
    assert h.stat("fresh/requests/new") == 1
    # A callback that copies response.meta into a request for another URL.
    other = Request("http://a.example/q", meta=dict(first.meta))
    assert h.scheduler.enqueue_request(other)
    (handed,) = h.drain()
    assert handed.meta["fresh_key"] == url_key("http://a.example/q")


def test_politeness_between_hosts(harness: Any) -> None:
    h = harness({"DOWNLOAD_SLOTS": {"slow.example": {"delay": 2.0}}})
    for n in range(3):
        h.scheduler.enqueue_request(Request(f"http://slow.example/{n}"))
        h.scheduler.enqueue_request(Request(f"http://fast.example/{n}"))
    seen = []
    for _ in range(30):
        request = h.scheduler.next_request()
        if request is None:
            h.clock[0] += 0.5
            continue
        seen.append((h.clock[0] - NOW, url_host(request.url)))
    slow_times = [t for t, host in seen if host == "slow.example"]
    assert slow_times == [0.0, 2.0, 4.0]
    assert [t for t, host in seen if host == "fast.example"] == [0.0] * 3


def test_crawl_delay_gate_holds_a_new_host_until_robots_txt(harness: Any) -> None:
    h = harness({"ROBOTSTXT_OBEY": True})
    for n in range(3):
        h.scheduler.enqueue_request(Request(f"http://a.example/{n}"))
    first = h.scheduler.next_request()
    assert first is not None
    assert h.scheduler.next_request() is None  # the others wait for robots.txt
    assert h.scheduler.has_pending_requests()

    class Parser:
        def crawl_delay(self, user_agent: str) -> float:
            return 5.0

    h.scheduler._robots_parsed(Parser(), first)
    assert h.scheduler.next_request() is None  # Crawl-delay counts from the first request
    h.clock[0] += 5.0
    assert h.scheduler.next_request() is not None
    assert h.scheduler.next_request() is None


def test_retry_after_backs_the_host_off(harness: Any) -> None:
    from scrapy.http import Response

    h = harness()
    for n in range(2):
        h.scheduler.enqueue_request(Request(f"http://a.example/{n}"))
    first = h.scheduler.next_request()
    assert first is not None
    response = Response(first.url, status=503, headers={"Retry-After": "30"})
    h.scheduler._response_downloaded(response, first)
    assert h.scheduler.next_request() is None
    h.clock[0] += 30.0
    assert h.scheduler.next_request() is not None
    assert h.stat("fresh/backoffs") == 1


def test_budget_takes_the_highest_priority_due_records(harness: Any, known: Any) -> None:
    records = [
        known(f"http://a.example/{n}", last_crawl=NOW - 86400, next_due=NOW - 1, access_count=n)
        for n in range(10)
    ]
    h = harness({"FRESH_CYCLE_BUDGET": 5, "FRESH_NEW_URL_SHARE": 0.2}, records=records)
    scores = {r.url: priority_score(r, NOW) for r in records}
    best = sorted(scores, key=scores.get, reverse=True)[:4]  # one of 5 kept for new URLs
    requests = h.drain()
    assert sorted(r.url for r in requests) == sorted(best)
    # The reserved share goes to a new URL; the next new URL is over budget but recorded.
    assert h.scheduler.enqueue_request(Request("http://a.example/new1"))
    assert not h.scheduler.enqueue_request(Request("http://a.example/new2"))
    assert h.stat("fresh/requests/over_budget") == 1
    assert h.state("http://a.example/new2").status is Status.QUEUED
    assert [r.url for r in h.drain()] == ["http://a.example/new1"]


def test_unused_new_url_share_goes_to_the_next_best_records(harness: Any, known: Any) -> None:
    records = [
        known(f"http://a.example/{n}", last_crawl=NOW - 86400, next_due=NOW - 1, access_count=n)
        for n in range(10)
    ]
    h = harness({"FRESH_CYCLE_BUDGET": 5, "FRESH_NEW_URL_SHARE": 0.4}, records=records)
    first = h.drain()
    assert len(first) == 3
    assert not h.scheduler.has_pending_requests()  # nothing more while visits are in flight
    for request in first:
        h.record(request)
    assert h.scheduler.has_pending_requests()  # drained: the spare budget is used
    second = h.drain()
    assert len(second) == 2
    best = sorted(records, key=lambda r: priority_score(r, NOW), reverse=True)
    assert {r.url for r in first + second} == {r.url for r in best[:5]}
    for request in second:
        h.record(request)
    assert not h.scheduler.has_pending_requests()


def test_budget_left_by_due_records_goes_to_the_best_records_not_due(
    harness: Any, known: Any
) -> None:
    def record(n: int, p_c: float, next_due: float) -> Any:
        state = known(
            f"http://a.example/{n}", last_crawl=NOW - 86400, next_due=next_due, visits=20, p_c=p_c
        )
        state.first_seen = NOW - 30 * 86400
        return state

    due = record(0, 0.5, NOW - 1)
    waiting = [record(n, 0.05 * n, NOW + 3600 * n) for n in range(1, 6)]
    erring = record(9, 0.9, NOW + 60)
    erring.errors = 2  # in back-off: never taken early
    records = [due, *waiting, erring]
    h = harness({"FRESH_CYCLE_BUDGET": 4, "FRESH_NEW_URL_SHARE": 0.0}, records=records)
    urls = {r.url for r in h.drain()}
    best = sorted(waiting, key=lambda r: priority_score(r, NOW), reverse=True)[:3]
    assert urls == {due.url} | {r.url for r in best}
    assert best[0].url == "http://a.example/5"  # highest p_c: most likely changed


def test_no_fill_keeps_the_budget_to_due_records(harness: Any, known: Any) -> None:
    due = known("http://a.example/due", last_crawl=NOW - 86400, next_due=NOW - 1)
    later = known("http://a.example/later", last_crawl=NOW - 86400, next_due=NOW + 60)
    h = harness({"FRESH_CYCLE_BUDGET": 4, "FRESH_CYCLE_FILL": False}, records=[due, later])
    assert [r.url for r in h.drain()] == [due.url]


def test_a_binding_budget_ranks_due_and_waiting_records_by_gain(harness: Any, known: Any) -> None:
    # Two due records that change at every visit (each fetch buys little: they will be
    # stale again soon) and one not due yet that changes now and then: with room for
    # one, the not-due record's fetch is worth most.
    def record(name: str, p_c: float, next_due: float) -> Any:
        state = known(
            f"http://a.example/{name}",
            last_crawl=NOW - 86400,
            next_due=next_due,
            visits=30,
            p_c=p_c,
        )
        state.first_seen = NOW - 30 * 86400
        return state

    busy = [record("busy1", 1.0, NOW - 10), record("busy2", 1.0, NOW - 5)]
    calm = record("calm", 0.5, NOW + 7 * 86400)
    h = harness({"FRESH_CYCLE_BUDGET": 1, "FRESH_NEW_URL_SHARE": 0.0}, records=[*busy, calm])
    assert [r.url for r in h.drain()] == [calm.url]
    xu = harness(
        {"FRESH_CYCLE_BUDGET": 1, "FRESH_NEW_URL_SHARE": 0.0, "FRESH_PRIORITY_SCORE": "xu"},
        records=[
            record("b1", 1.0, NOW - 10),
            record("b2", 1.0, NOW - 5),
            record("c", 0.5, NOW + 7 * 86400),
        ],
    )
    assert [r.url for r in xu.drain()] != ["http://a.example/c"]


def test_leases_of_an_interrupted_run_are_released_on_open(harness: Any, known: Any) -> None:
    stuck = known("http://a.example/stuck", last_crawl=NOW - 90000, next_due=NOW - 5)
    stuck.status = Status.IN_FLIGHT
    stuck.in_flight_since = NOW - 60
    h = harness(records=[stuck])
    assert [r.url for r in h.drain()] == ["http://a.example/stuck"]


def test_close_releases_what_was_not_visited(harness: Any, tmp_path: Any) -> None:
    from scrapy_fresh.store.sqlite import SQLiteStore

    path = tmp_path / "s.sqlite"
    h = harness({"FRESH_STORE": "sqlite", "FRESH_SQLITE_PATH": str(path)})
    h.scheduler.enqueue_request(Request("http://a.example/1"))
    h.scheduler.enqueue_request(Request("http://a.example/2"))
    (one, _two) = h.drain()
    h.record(one, Outcome.CHANGED)
    h.scheduler.close("shutdown")
    store = SQLiteStore(path)
    try:
        counts = store.counts()
    finally:
        store.close()
    assert counts[Status.IN_FLIGHT] == 0
    assert counts[Status.QUEUED] == 1
    assert counts[Status.IDLE] == 1


def test_disabled_scheduler_is_a_plain_fifo(harness: Any) -> None:
    h = harness({"FRESH_ENABLED": False})
    assert h.scheduler.enqueue_request(Request("http://a.example/1"))
    assert not h.scheduler.enqueue_request(Request("http://a.example/1"))
    assert [r.url for r in h.drain()] == ["http://a.example/1"]
    assert not h.runtime.store_opened


def test_discovered_sitemaps_wait_while_the_provider_middleware_is_off(harness, known):
    from scrapy_fresh.keys import url_key

    sitemap = known("http://a.example/sitemap.xml", last_crawl=0.0, next_due=1.0)
    sitemap.request = {"url": sitemap.url, "meta": {"fresh_sitemap": 1}}
    page = known("http://a.example/page", last_crawl=0.0, next_due=1.0)
    h = harness({"FRESH_PROVIDER_SIGNALS": False}, records=[sitemap, page])
    assert [r.url for r in h.drain()] == [page.url]  # not handed to the spider's parse
    state = h.runtime.records.lookup(url_key(sitemap.url))
    assert state is not None
    assert state.status.value == "idle"
    assert state.next_due > h.clock[0]  # blocked: looked at again later
    assert h.stat("fresh/blocked") == 1


def test_cycle_lookahead_takes_records_due_soon_but_not_before_an_announced_update(harness, known):
    now = 1_000_000.0  # the harness clock
    soon = known("http://a.example/soon", last_crawl=now - 86400, next_due=now + 2 * 3600)
    later = known("http://a.example/later", last_crawl=now - 86400, next_due=now + 4 * 3600)
    waits = known("http://a.example/waits", last_crawl=now - 86400, next_due=now + 3600)
    waits.future_updates = [(now + 1800, 1.0)]  # due at the slot after an announced update
    h = harness({"FRESH_CYCLE_LOOKAHEAD_SECS": 3 * 3600}, records=[soon, later, waits])
    assert h.clock[0] == now
    assert [r.url for r in h.drain()] == [soon.url]


def test_cycle_lookahead_is_half_the_measured_time_between_runs(harness, known):
    from scrapy_fresh.crawl.sources import RUN_CADENCE

    now = 1_000_000.0
    records = [
        known("http://a.example/in", last_crawl=now - 86400, next_due=now + 2 * 3600),
        known("http://a.example/out", last_crawl=now - 86400, next_due=now + 4 * 3600),
    ]
    # The first run of a store knows no period: no lookahead; it notes its start.
    first = harness(records=records)
    assert first.drain() == []
    assert first.runtime.store.get_meta(*RUN_CADENCE) == {"period": None, "started_at": now}
    # Runs 6 hours apart: the next one looks 3 hours ahead.
    previous = {"period": 6 * 3600, "started_at": now - 6 * 3600}
    second = harness(records=records, meta={RUN_CADENCE: previous})
    assert [r.url for r in second.drain()] == ["http://a.example/in"]
    run = second.runtime.store.get_meta(*RUN_CADENCE)
    assert run is not None
    assert run["period"] == pytest.approx(6 * 3600)
    assert run["started_at"] == now
    assert list(second.runtime.store.sites()) == []  # not a site record


def test_one_signal_receiver_calls_every_download_listener(
    harness: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Scrapy's ``response_downloaded``, sent as the downloader sends it, reaches the
    scheduler (a Retry-After backs the host off) and the watch on unreachable hosts
    through the runtime's one receiver; a listener that raises is logged and the others
    still run."""
    from pydispatch import dispatcher
    from scrapy.http import Response

    from scrapy_fresh.crawl.middlewares import FreshReachabilityMiddleware

    h = harness({"FRESH_UNREACHABLE_ATTEMPTS": 2})
    FreshReachabilityMiddleware.from_crawler(h.crawler)
    receivers = dispatcher.getReceivers(h.crawler.signals.sender, signals.response_downloaded)
    assert len(receivers) == 1  # the runtime's, whatever the number of listeners

    def broken(response: Any, request: Any) -> None:
        raise ValueError("a broken listener")

    h.runtime.download_listeners.insert(0, broken)
    for n in range(2):
        h.scheduler.enqueue_request(Request(f"http://a.example/{n}"))
    first = h.scheduler.next_request()
    assert first is not None
    assert h.runtime.reachability.failed("a.example") is None  # one attempt unanswered
    response = Response(first.url, status=503, headers={"Retry-After": "30"})
    h.crawler.signals.send_catch_log(
        signal=signals.response_downloaded, response=response, request=first, spider=None
    )
    assert h.stat("fresh/backoffs") == 1  # the scheduler heard it after the broken one
    assert h.runtime.reachability.failed("a.example") is None  # the count started again
    assert h.scheduler.next_request() is None
    assert "a broken listener" in caplog.text


def test_request_left_downloader_is_heard_once_a_host_waits(harness: Any) -> None:
    """With ROBOTSTXT_OBEY, a host's first request goes out alone; a download error of it
    (``request_left_downloader``, sent as the downloader sends it) hands out the others.
    Scrapy's dispatch of that signal to the scheduler, paid for every request, is paid
    only from the first host that waits so (never without ROBOTSTXT_OBEY)."""
    from pydispatch import dispatcher

    def listening() -> int:
        sender = h.crawler.signals.sender
        return len(list(dispatcher.getReceivers(sender, signals.request_left_downloader)))

    h = harness()  # no robots.txt: no host ever waits, the signal is never heard
    h.scheduler.enqueue_request(Request("http://a.example/0"))
    assert len(h.drain()) == 1
    assert listening() == 0
    h = harness({"ROBOTSTXT_OBEY": True})

    for url in ("http://a.example/0", "http://a.example/1", "http://b.example/0"):
        h.scheduler.enqueue_request(Request(url))
    assert listening() == 0
    first, second = h.drain()
    assert {url_host(first.url), url_host(second.url)} == {"a.example", "b.example"}
    assert listening() == 1  # two hosts wait, one receiver
    a_first = first if url_host(first.url) == "a.example" else second
    h.crawler.signals.send_catch_log(
        signal=signals.request_left_downloader, request=a_first, spider=None
    )
    assert [r.url for r in h.drain()] == ["http://a.example/1"]  # released
    h.runtime.host_answered("b.example")
    assert listening() == 1  # connected once, for the rest of the crawl


def test_a_failing_listener_never_stops_the_others(
    harness: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Each visit's listeners (the scheduler's refill, the visit log, PageGone items,
    the webhook) run even when one before them raises: it is logged, the visit stays
    recorded and the others hear it."""
    h = harness()
    heard: list[str] = []

    def broken(*args: Any) -> None:
        raise RuntimeError("a broken listener")

    h.runtime.visit_listeners.insert(0, broken)
    h.runtime.outcome_listeners[:0] = [broken, lambda state, *_: heard.append(state.url)]
    h.runtime.host_listeners.insert(0, broken)
    h.scheduler.enqueue_request(Request("http://a.example/0"))
    (request,) = h.drain()
    h.record(request, Outcome.NEW)
    h.runtime.host_answered("a.example")
    assert heard == ["http://a.example/0"]
    assert h.state("http://a.example/0").last_crawl == h.clock[0]  # recorded
    assert h.stat("fresh/new") == 1
    caught = [r for r in caplog.records if "error caught in listener" in r.getMessage()]
    assert len(caught) == 3
