"""Every page plain Scrapy reaches is reached, and a cycle run ends when plain Scrapy's
would (issue 14): refused hosts, long Retry-After back-offs, HTTPCACHE_ENABLED, and
Scrapy's own sitemap and feed spiders.

Real crawls in subprocesses (tests/crawl_runner.py) against servers on 127.0.0.1.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request

from scrapy_fresh.store.base import Status

#: A DOWNLOAD_TIMEOUT no run of these tests should come near: only a run that waits for
#: a download timeout (or a long back-off) crosses it.
LONG_SECS = 60.0
#: A Retry-After of 10**23 seconds (written out: delta-seconds are digits only).
FOR_EVER = str(10**23)


def _fresh(db: Path, **settings: Any) -> dict[str, Any]:
    return {"ADDONS": {"scrapy_fresh.Addon": 0}, "FRESH_SQLITE_PATH": str(db), **settings}


def _elapsed(result: Any) -> float:
    return float(result.stats["elapsed_time_seconds"])


@pytest.mark.slow
def test_a_host_refusing_connections_fails_as_fast_as_in_plain_scrapy(
    crawl: Any, tmp_path: Path
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = closed.getsockname()[1]
        start = [
            {"url": f"http://127.0.0.1:{port}/p/{n}", "errback": "on_error"} for n in range(3)
        ]
        settings = {"ROBOTSTXT_OBEY": True, "DOWNLOAD_TIMEOUT": LONG_SECS}
        # check=False: Scrapy logs the robots.txt download error with its traceback.
        plain = crawl({"settings": settings, "start": start}, tmp_path / "plain", check=False)
        fresh = crawl(
            {"settings": _fresh(tmp_path / "s.sqlite", **settings), "start": start},
            tmp_path / "fresh",
            timeout=3 * LONG_SECS,
            check=False,
        )
    assert (plain.returncode, fresh.returncode) == (0, 0), fresh.log[-3000:]
    assert (plain.reason, fresh.reason) == ("finished", "finished")
    # Before the fix the robots gate kept the retries parked for DOWNLOAD_TIMEOUT + 5 s.
    assert _elapsed(fresh) < LONG_SECS
    assert sorted(fresh.errbacks) == sorted(plain.errbacks)
    assert len(fresh.errbacks) == 3
    for name in ("retry/count", "downloader/exception_count", "robotstxt/request_count"):
        assert fresh.stat(name) == plain.stat(name), name
    assert fresh.stat("fresh/errors") == 3


# -- Retry-After longer than a cycle run waits -------------------------------------------


def test_a_long_retry_after_defers_the_host_in_cycle_mode(harness: Any) -> None:
    from scrapy.http import Response

    h = harness()
    for n in range(3):
        h.scheduler.enqueue_request(Request(f"http://a.example/{n}"))
    h.scheduler.enqueue_request(Request("http://b.example/0"))
    first = h.scheduler.next_request()
    assert first is not None
    assert first.url.startswith("http://a.example/")
    response = Response(first.url, status=503, headers={"Retry-After": FOR_EVER})
    h.scheduler._response_downloaded(response, first)
    assert first.meta["dont_retry"] is True  # the 503 is the visit's answer
    assert [r.url for r in h.drain()] == ["http://b.example/0"]
    assert h.stat("fresh/requests/deferred_backoff") == 2
    assert h.stat("fresh/backoffs") == 0
    # Found later: recorded for the next run, and refused (enqueue_request tells the truth).
    assert not h.scheduler.enqueue_request(Request("http://a.example/9"))
    assert h.stat("fresh/requests/deferred_backoff") == 3
    assert not h.drain()
    assert not h.scheduler.has_pending_requests()  # the run may end
    for n in (1, 2):  # leased by this run until it closes (which releases them)...
        assert h.state(f"http://a.example/{n}").status is Status.IN_FLIGHT
    h.runtime.flush_new()
    assert h.state("http://a.example/9").status is Status.QUEUED
    h.runtime.store.release_in_flight()
    for n in (1, 2, 9):  # ...then due for the next run, not lost
        state = h.state(f"http://a.example/{n}")
        assert state.status is Status.QUEUED, n
        assert state.next_due <= h.clock[0]


def test_retry_after_waits_add_up_to_the_cycle_limit(harness: Any) -> None:
    from scrapy.http import Response

    h = harness({"FRESH_CYCLE_MAX_WAIT_SECS": 100})
    for n in range(4):
        h.scheduler.enqueue_request(Request(f"http://a.example/{n}"))
    for expected in (0, 1):
        request = h.scheduler.next_request()
        assert request is not None
        response = Response(request.url, status=503, headers={"Retry-After": "60"})
        h.scheduler._response_downloaded(response, request)
        assert h.stat("fresh/requests/deferred_backoff") == expected * 2
        h.clock[0] += 60.0
    assert h.stat("fresh/backoffs") == 1  # the first wait; the second would pass 100 s
    assert not h.scheduler.has_pending_requests()


def test_continuous_mode_waits_for_a_long_retry_after_capped(harness: Any) -> None:
    from scrapy.http import Response

    from scrapy_fresh.crawl.scheduler import MAX_RETRY_AFTER_SECS

    h = harness({"FRESH_MODE": "continuous"})
    for n in range(2):
        h.scheduler.enqueue_request(Request(f"http://a.example/{n}"))
    first = h.scheduler.next_request()
    assert first is not None
    response = Response(first.url, status=503, headers={"Retry-After": FOR_EVER})
    h.scheduler._response_downloaded(response, first)
    assert "dont_retry" not in first.meta
    assert h.stat("fresh/requests/deferred_backoff") == 0
    assert h.scheduler.next_request() is None
    assert h.scheduler.has_pending_requests()
    h.clock[0] += MAX_RETRY_AFTER_SECS
    assert h.scheduler.next_request() is not None


def _busy_start(a: Any, b: Any) -> list[dict[str, Any]]:
    """A page of ``a`` that asks to wait for ever, four more of ``a``, three of ``b``."""
    start = [{"url": a.url("/busy/0"), "errback": "on_error"}]
    start += [{"url": a.url(f"/v/{n}")} for n in range(4)]
    return start + [{"url": b.url(f"/v/{n}")} for n in range(3)]


@pytest.mark.slow
def test_a_cycle_run_ends_when_a_host_asks_to_wait_for_ever(
    mockserver: Any, crawl: Any, tmp_path: Path, records_by_path: Any
) -> None:
    db = tmp_path / "s.sqlite"
    busy = mockserver.MockSite(count=4, retry_after=FOR_EVER)
    with (
        mockserver.MockServer(busy, "127.0.0.2") as a,
        mockserver.MockServer(mockserver.MockSite(count=3), "127.0.0.3") as b,
    ):
        start = _busy_start(a, b)
        # One page per second on the busy host: its 503 comes before its next page goes.
        settings = _fresh(db, DOWNLOAD_SLOTS={"127.0.0.2": {"delay": 1.0}})
        first = crawl({"settings": settings, "start": start}, tmp_path / "c1", timeout=120)
        assert _elapsed(first) < LONG_SECS  # it used to wait MAX_RETRY_AFTER_SECS
        assert [r.path for r in busy.log] == ["/busy/0"]  # not retried, nothing else sent
        assert first.errbacks == [[a.url("/busy/0"), "HttpError"]]
        assert sorted(i["url"] for i in first.items) == [b.url(f"/v/{n}") for n in range(3)]
        assert first.stat("fresh/requests/deferred_backoff") == 4
        assert first.stat("fresh/errors") == 1
        records = records_by_path(db, {f"127.0.0.2:{a.port}"})
        for n in range(4):  # still due, for the next run
            assert records[f"/v/{n}"].status is Status.QUEUED
            assert records[f"/v/{n}"].last_crawl is None
        # The next run fetches them (the busy page waits out its error back-off).
        second = crawl({"settings": settings, "start": []}, tmp_path / "c2", timeout=120)
    assert sorted(i["url"] for i in second.items) == [a.url(f"/v/{n}") for n in range(4)]
    assert [r.path for r in busy.log].count("/busy/0") == 1


@pytest.mark.slow
def test_with_redis_a_host_that_asks_to_wait_for_ever_holds_no_worker(
    mockserver: Any, crawl: Any, tmp_path: Path
) -> None:
    """FRESH_STORE = "redis", cycle mode: the worker that gets the Retry-After defers the
    host as with the other stores, and shares the back-off; no worker waits for it (the
    shared frontier does not keep a cycle run open for a host farther away than
    FRESH_CYCLE_MAX_WAIT_SECS). The host's pages stay due in Redis, for a later run."""
    import redis

    from scrapy_fresh.distributed.store import RedisStore
    from tests.redis_helpers import SHARED_URL, delete_prefix, shared_client, unique_prefix

    prefix = unique_prefix("wait-for-ever")
    client = shared_client()
    busy = mockserver.MockSite(count=4, retry_after=FOR_EVER)
    try:
        with (
            mockserver.MockServer(busy, "127.0.0.2") as a,
            mockserver.MockServer(mockserver.MockSite(count=3), "127.0.0.3") as b,
        ):
            start = _busy_start(a, b)
            settings = {
                "ADDONS": {"scrapy_fresh.Addon": 0}, "FRESH_STORE": "redis",
                "REDIS_URL": SHARED_URL, "FRESH_REDIS_KEY": prefix,
                "DOWNLOAD_SLOTS": {"127.0.0.2": {"delay": 1.0}},
            }  # fmt: skip
            first = crawl({"settings": settings, "start": start}, tmp_path / "w1", timeout=120)
            assert _elapsed(first) < LONG_SECS, first.log[-3000:]  # not the hour asked
            assert [r.path for r in busy.log] == ["/busy/0"]
            assert sorted(i["url"] for i in first.items) == [b.url(f"/v/{n}") for n in range(3)]
            assert first.stat("fresh/requests/deferred_backoff") >= 1
            second = crawl({"settings": settings, "start": []}, tmp_path / "w2", timeout=120)
            assert _elapsed(second) < LONG_SECS, second.log[-3000:]
            assert [r.path for r in busy.log] == ["/busy/0"]  # the back-off holds for it too
            store = RedisStore(redis.Redis.from_url(SHARED_URL), prefix)
            waiting = {s.url: s for s in store.iterate() if s.host == f"127.0.0.2:{a.port}"}
    finally:
        delete_prefix(client, prefix)
        client.close()
    for n in range(4):  # still due, for a run after the back-off
        record = waiting[a.url(f"/v/{n}")]
        assert record.status is Status.QUEUED
        assert record.last_crawl is None


@pytest.mark.slow
def test_with_redis_a_deferred_host_stays_deferred_after_its_back_off(
    mockserver: Any, crawl: Any, tmp_path: Path
) -> None:
    """The back-off a worker shares ends while its run goes on (Retry-After: 3 against
    FRESH_CYCLE_MAX_WAIT_SECS = 1): the host's pages, due again in Redis, are not taken
    by that worker in this run (it would only hand them back, again and again, and never
    end), and the run ends when the other host is done."""
    import time

    import redis

    from scrapy_fresh.distributed.store import RedisStore
    from tests.conftest import known_record
    from tests.redis_helpers import SHARED_URL, delete_prefix, shared_client, unique_prefix

    prefix = unique_prefix("deferred-ends")
    client = shared_client()
    busy = mockserver.MockSite(count=4, retry_after="3")
    slow = mockserver.MockSite(count=8, slow_secs=3.0)
    try:
        with (
            mockserver.MockServer(busy, "127.0.0.2") as a,
            mockserver.MockServer(slow, "127.0.0.3") as b,
        ):
            now = time.time()
            RedisStore(redis.Redis.from_url(SHARED_URL), prefix).put_many(
                known_record(a.url(f"/v/{n}"), last_crawl=now - 86400, next_due=now + 6, visits=2)
                for n in range(4)
            )  # due once the back-off is over, while the slow host keeps the run going
            start = [{"url": a.url("/busy/0"), "errback": "on_error"}]
            start += [{"url": b.url(f"/err/{n}"), "errback": "on_error"} for n in (1, 3, 5)]
            settings = {
                "ADDONS": {"scrapy_fresh.Addon": 0}, "FRESH_STORE": "redis",
                "REDIS_URL": SHARED_URL, "FRESH_REDIS_KEY": prefix,
                "FRESH_CYCLE_MAX_WAIT_SECS": 1, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
                "RETRY_ENABLED": False, "FRESH_VISIT_LOG": "",
            }  # fmt: skip
            result = crawl({"settings": settings, "start": start}, tmp_path / "w1", timeout=60)
            store = RedisStore(redis.Redis.from_url(SHARED_URL), prefix)
            left = [store.get(known_record(a.url(f"/v/{n}"), last_crawl=0, next_due=0).key)
                    for n in range(4)]  # fmt: skip
    finally:
        delete_prefix(client, prefix)
        client.close()
    assert result.reason == "finished"
    assert [r.path for r in busy.log] == ["/busy/0"]
    assert len(slow.log) == 3
    for record in left:  # not visited, not left in flight: due for the next run
        assert record is not None
        assert record.status is Status.IDLE
        assert record.visits == 2


# -- HTTPCACHE_ENABLED -------------------------------------------------------------------


@pytest.mark.slow
def test_with_httpcache_a_changed_page_is_seen_changed(
    mockserver: Any, crawl: Any, tmp_path: Path
) -> None:
    site = mockserver.MockSite(count=2)
    with mockserver.MockServer(site) as server:
        start = [{"url": server.url(p)} for p in ("/v/0", "/v/1", "/n/0", "/n/1")]
        start.append({"url": server.url("/n/2"), "meta": {"fresh_enabled": False}})
        settings = _fresh(
            tmp_path / "s.sqlite", HTTPCACHE_ENABLED=True, HTTPCACHE_DIR=str(tmp_path / "cache")
        )
        first = crawl({"settings": settings, "start": start}, tmp_path / "c1")
        assert first.stat("fresh/new") == 4
        for _ in range(4):  # half the text: far past FRESH_FINGERPRINT_THRESHOLD_BITS
            site.change("/v/0")
            site.change("/n/0")
        second = crawl(
            {"settings": settings, "start": start, "clock_offset": 2 * 86400.0}, tmp_path / "c2"
        )
    assert second.stat("fresh/changed") == 2  # the cache served them all unchanged before
    assert second.stat("fresh/not_modified") == 1  # /v/1 (a 304)
    assert second.stat("fresh/unchanged") == 1  # /n/1: no validators, downloaded in full
    texts = {i["url"]: i["text"] for i in second.items}
    for path in ("/v/0", "/n/0"):
        assert texts[server.url(path)] == " ".join(site.pages[path].paragraphs)
    # The cache still serves what scrapy_fresh does not manage.
    assert second.stat("httpcache/hit") == 1
    assert [r.path for r in site.log].count("/n/2") == 1


# -- Scrapy's own sitemap and feed spiders, with the add-on's defaults -----------------


def _urls(result: Any) -> list[str]:
    return sorted(i["url"] for i in result.items)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spider", "document"), [("sitemap", "/sitemap_index.xml"), ("xmlfeed", "/feed.xml")]
)
def test_scrapys_sitemap_and_feed_spiders_scrape_what_plain_scrapy_does(
    crawl: Any, tmp_path: Path, spider: str, document: str
) -> None:
    from tests.provider_server import NewsServer, NewsSite

    site = NewsSite(count=4)
    with NewsServer(site) as server:
        urls = [server.url(document)]
        config = {"spider": spider, "sitemap_urls": urls, "feed_urls": urls}
        plain = crawl({**config, "settings": {}}, tmp_path / "plain")
        articles = [server.url(f"/a/{n}") for n in range(4)]
        assert _urls(plain) == articles
        settings = _fresh(tmp_path / "s.sqlite")
        first = crawl({**config, "settings": settings}, tmp_path / "c1")
        assert _urls(first) == articles  # the SitemapSpider scraped nothing before
        site.change("/a/1")
        second = crawl(
            {**config, "settings": settings, "clock_offset": 2 * 86400.0}, tmp_path / "c2"
        )
    assert _urls(second) == articles
    changed = {i["url"]: i["fresh_changed"] for i in second.items}
    assert changed == {url: url == server.url("/a/1") for url in articles}
