"""One owner of a record's visit fields: sightings never overwrite a committed visit.

The cases a link-dense real site produced (issue 14): a page re-discovered after its
visit, with fragments and other request data; a URL enqueued twice before its first
copy is handed out. Run on the real scheduler and runtime, on every local store.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request

from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import Status

STORES = ["memory", "sqlite"]


@pytest.fixture(params=STORES)
def store_settings(request: pytest.FixtureRequest, tmp_path: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {"FRESH_STORE": request.param}
    if request.param == "sqlite":
        settings["FRESH_SQLITE_PATH"] = str(tmp_path / "fresh.sqlite")
    return settings


def fetched(h: Any, request: Request, fingerprint: int, etag: str = '"e1"') -> Outcome | None:
    """Record a downloaded page as the spider middleware does."""
    return h.runtime.visits.record_fetch(
        request.meta, fingerprint, headers={"etag": etag}, content_length=100
    )


def test_a_page_seen_again_after_its_visit_keeps_the_visit(
    harness: Any, store_settings: dict[str, Any]
) -> None:
    h = harness(store_settings)
    spider = h.crawler.spider
    assert h.scheduler.enqueue_request(Request("http://d.example/1", callback=spider.parse))
    (one,) = h.drain()
    assert fetched(h, one, 11) is Outcome.NEW
    # /d/2 links /d/1, /d/1#a and /d/1#b after /d/1 was visited.
    for url in ("http://d.example/1", "http://d.example/1#a", "http://d.example/1#b"):
        r = Request(url, callback=spider.parse_page, headers={"Referer": "http://d.example/2"})
        assert not h.scheduler.enqueue_request(r)
    assert h.drain() == []
    h.runtime.flush_new()
    state = h.state("http://d.example/1")
    assert state.status is Status.IDLE
    assert (state.fingerprint, state.etag, state.last_crawl) == (11, '"e1"', h.clock[0])
    assert h.runtime.store.regressions_refused == 0
    assert h.stat("fresh/requests/duplicate") == 3


def test_a_url_enqueued_twice_before_it_goes_out_is_fetched_once(
    harness: Any, store_settings: dict[str, Any]
) -> None:
    h = harness(store_settings)
    spider = h.crawler.spider
    first = Request("http://d.example/x", callback=spider.parse, cb_kwargs={"n": 1})
    second = Request("http://d.example/x", callback=spider.parse_page, meta={"other": 2})
    assert h.scheduler.enqueue_request(first)
    assert not h.scheduler.enqueue_request(second)  # a duplicate, as the dupefilter says
    assert h.drain() == [first]
    assert fetched(h, first, 5) is Outcome.NEW
    state = h.state("http://d.example/x")
    assert state.last_crawl == h.clock[0]
    assert state.request["cb_kwargs"] == {"n": 1}


def test_a_due_page_seen_again_while_waiting_keeps_one_request(
    harness: Any, known: Any, store_settings: dict[str, Any]
) -> None:
    now = 1_000_000.0
    due = known("http://d.example/due", last_crawl=now - 90_000, next_due=now - 10)
    h = harness(store_settings, records=[due])
    mine = Request("http://d.example/due", callback=h.crawler.spider.parse)
    again = Request("http://d.example/due#frag", callback=h.crawler.spider.parse)
    assert h.scheduler.enqueue_request(mine)  # replaces the rebuilt request
    assert not h.scheduler.enqueue_request(again)
    assert h.drain() == [mine]
    h.clock[0] += 5
    assert fetched(h, mine, 0xFFFF_FFFF) is Outcome.CHANGED
    state = h.state("http://d.example/due")
    assert (state.visits, state.last_crawl, state.fingerprint) == (1, now + 5, 0xFFFF_FFFF)
    assert state.request["callback"] == "parse"


def test_sightings_during_the_visit_do_not_touch_its_fields(
    harness: Any, store_settings: dict[str, Any]
) -> None:
    """Re-discovery while the page downloads, then after, in every order."""
    h = harness(store_settings)
    spider = h.crawler.spider
    assert h.scheduler.enqueue_request(Request("http://d.example/p", callback=spider.parse))
    (req,) = h.drain()
    assert not h.scheduler.enqueue_request(Request("http://d.example/p#x"))  # in flight
    assert fetched(h, req, 1) is Outcome.NEW
    h.clock[0] += 1
    for n in range(3):
        h.scheduler.enqueue_request(Request(f"http://d.example/p#{n}", meta={"n": n}))
        h.scheduler.enqueue_request(Request(f"http://d.example/q{n}"))
    h.drain()
    h.runtime.flush_new()
    state = h.state("http://d.example/p")
    assert (state.status, state.fingerprint) == (Status.IDLE, 1)
    assert state.last_crawl == h.clock[0] - 1
    assert h.runtime.store.regressions_refused == 0


def test_the_stat_counts_what_the_store_refused(harness: Any, known: Any) -> None:
    now = 1_000_000.0
    h = harness(records=[known("http://d.example/v", last_crawl=now - 10, next_due=now + 99)])
    stale = h.state("http://d.example/v")
    stale.last_crawl = now - 20  # an older state, as a copy read before a visit has it
    h.runtime.store.put(stale)
    assert h.state("http://d.example/v").last_crawl == now - 10
    h.scheduler.close("finished")
    assert h.stat("fresh/store/regressions_refused") == 1


def test_a_shared_frontier_hands_out_new_links_at_once(harness: Any, prefix: str) -> None:
    """FRESH_STORE = "redis": a link found by a visit is pulled at the next ask, not
    after a poll interval (the engine asks again only on its 5 s heartbeat)."""
    from tests.redis_helpers import SHARED_URL

    h = harness({"FRESH_STORE": "redis", "REDIS_URL": SHARED_URL, "FRESH_REDIS_KEY": prefix})
    assert not h.scheduler.enqueue_request(Request("http://s.example/a"))
    (a,) = h.drain()
    assert fetched(h, a, 1) is Outcome.NEW
    assert not h.scheduler.enqueue_request(Request("http://s.example/b"))
    assert [r.url for r in h.drain()] == ["http://s.example/b"]
    assert h.stat("fresh/requests/shared") == 2


EDITED_AT = "Fri, 27 Nov 2026 05:00:00 GMT"
NGINX_ETAG = f'"{1795755600:x}-1a2b"'  # nginx: the modification second and the length, hex


@pytest.mark.parametrize(
    ("etag", "sent", "kept"),
    [
        (NGINX_ETAG, EDITED_AT, (None, None)),
        ("W/" + NGINX_ETAG, EDITED_AT, (None, None)),
        ('"sha-4f2a9c"', EDITED_AT, ('"sha-4f2a9c"', None)),  # a hash of the content
        (NGINX_ETAG, "Fri, 27 Nov 2026 04:59:59 GMT", (None, None)),  # the file's clock ahead
        (NGINX_ETAG, "Fri, 27 Nov 2026 05:00:01 GMT", (NGINX_ETAG, EDITED_AT)),
    ],
)
def test_validators_sent_in_the_second_of_the_last_edit_are_not_kept(
    harness: Any,
    store_settings: dict[str, Any],
    etag: str,
    sent: str,
    kept: tuple[str | None, str | None],
) -> None:
    """nginx's Last-Modified and ETag are made of the file's modification second (and
    length): a copy sent in that second cannot be told from an edit later in the same
    second, which a conditional request would then get as a 304. RFC 9110, Section
    8.8.2.2: such a Last-Modified is weak. An ETag made of that second goes too; a hash
    of the content stays. Without validators the next visit downloads the page."""
    h = harness(store_settings)
    spider = h.crawler.spider
    assert h.scheduler.enqueue_request(Request("http://d.example/p", callback=spider.parse))
    (page,) = h.drain()
    headers = {"etag": etag, "last-modified": EDITED_AT, "date": sent}
    outcome = h.runtime.visits.record_fetch(page.meta, 11, headers=headers, content_length=100)
    assert outcome is Outcome.NEW
    state = h.state("http://d.example/p")
    assert (state.etag, state.last_modified) == kept
    assert h.stat("fresh/validators_same_second") == (0 if kept[1] else 1)
