"""FreshScheduler and the operator's controls: blocked hosts and pages made due from
outside, driven directly with a memory store and a fake clock (tests/conftest.py)."""

from __future__ import annotations

from typing import Any

from scrapy import Request

from scrapy_fresh.crawl.hostblocks import POLL_SECS

NOW = 1_000_000.0  # the harness clock


def test_a_blocked_host_gets_no_request_not_even_for_new_urls(harness: Any, known: Any) -> None:
    records = [
        known("http://a.example/1", last_crawl=NOW - 9000, next_due=NOW - 5),
        known("http://b.example/1", last_crawl=NOW - 9000, next_due=NOW - 5),
    ]
    h = harness(records=records)  # a running crawl: both due pages are queued
    store = h.runtime.store
    store.block_host("a.example", NOW)
    h.clock[0] += POLL_SECS  # the crawl reads the blocked hosts again
    h.scheduler.enqueue_request(Request("http://a.example/new"))  # found meanwhile
    h.scheduler.enqueue_request(Request("http://b.example/new"))
    assert sorted(r.url for r in h.drain()) == ["http://b.example/1", "http://b.example/new"]
    assert h.stat("fresh/requests/blocked_host") == 2  # a's due page and its new URL
    assert h.state("http://a.example/new").visits == 0  # recorded, not fetched
    h.scheduler.enqueue_request(Request("http://a.example/newer"))  # found while blocked
    assert h.drain() == []
    assert h.stat("fresh/requests/blocked_host") == 3
    store.unblock_host("a.example")
    assert h.drain() == []  # not read yet
    h.clock[0] += POLL_SECS
    assert sorted(r.url for r in h.drain()) == [
        "http://a.example/1", "http://a.example/new", "http://a.example/newer"
    ]  # fmt: skip


def test_blocking_takes_a_running_crawls_queued_pages_back(harness: Any, known: Any) -> None:
    records = [
        known(f"http://a.example/{n}", last_crawl=NOW - 9000, next_due=NOW - 5) for n in range(3)
    ]
    h = harness({"DOWNLOAD_DELAY": 10.0}, records=records)
    first = h.scheduler.next_request()
    assert first is not None  # one goes out; the others wait for the host's delay
    h.runtime.store.block_host("a.example", NOW)
    h.clock[0] += 10.0  # the delay has passed, and the block was read meanwhile
    assert h.scheduler.next_request() is None
    assert h.stat("fresh/requests/blocked_host") == 2
    h.runtime.store.unblock_host("a.example")
    h.clock[0] += POLL_SECS
    assert h.scheduler.next_request() is not None


def test_continuous_mode_sees_a_page_made_due_from_outside(harness: Any, known: Any) -> None:
    later = known("http://a.example/later", last_crawl=NOW - 10, next_due=NOW + 86400)
    h = harness({"FRESH_MODE": "continuous"}, records=[later])
    assert h.drain() == []
    assert h.runtime.store.make_due([later.key], NOW) == [later.key]
    assert h.drain() == []  # read at the next poll, not at once
    h.clock[0] += POLL_SECS
    assert [r.url for r in h.drain()] == ["http://a.example/later"]


def test_a_blocked_hosts_pages_spend_no_cycle_budget(harness: Any, known: Any) -> None:
    records = [
        known(f"http://{host}.example/{n}", last_crawl=NOW - 9000, next_due=NOW - 5 - n)
        for host in ("a", "b")
        for n in range(4)
    ]
    h = harness(
        {"FRESH_CYCLE_BUDGET": 4, "FRESH_NEW_URL_SHARE": 0.0},
        records=records,
        blocked=["a.example"],
    )
    urls = sorted(r.url for r in h.drain())
    assert urls == [f"http://b.example/{n}" for n in range(4)]  # the budget went to b
    assert h.stat("fresh/requests/blocked_host") == 0


def _no_answer(h: Any, host: str, times: int) -> None:
    from twisted.internet.error import ConnectionRefusedError

    for _ in range(times):
        h.runtime.host_unanswered(host, ConnectionRefusedError())  # type: ignore[no-untyped-call]


def test_a_host_that_gives_no_answer_is_paused_then_tried_again(harness: Any, known: Any) -> None:
    records = [
        known(f"http://{host}.example/{n}", last_crawl=NOW - 9000, next_due=NOW - 5)
        for host in ("a", "b")
        for n in range(3)
    ]
    h = harness({"FRESH_MODE": "continuous", "FRESH_ERROR_BACKOFF_SECS": 60.0}, records=records)
    _no_answer(h, "a.example", 8)
    h.runtime.reachability.answered("a.example")  # an answer: the count starts again
    _no_answer(h, "a.example", 8)
    assert h.stat("fresh/hosts_unreachable") == 0
    _no_answer(h, "a.example", 1)  # nine in a row
    assert h.stat("fresh/hosts_unreachable") == 1
    assert sorted(r.url for r in h.drain()) == [f"http://b.example/{n}" for n in range(3)]
    assert h.stat("fresh/requests/blocked_host") == 3
    assert h.state("http://a.example/0").visits == 0  # waiting, not visited
    h.clock[0] += 59.0
    assert h.drain() == []
    h.clock[0] += 1.0 + POLL_SECS  # the pause is over: tried again
    assert sorted(r.url for r in h.drain()) == [f"http://a.example/{n}" for n in range(3)]


def test_a_second_pause_of_a_host_lasts_twice_as_long(harness: Any) -> None:
    h = harness({"FRESH_ERROR_BACKOFF_SECS": 60.0})
    _no_answer(h, "a.example", 9)
    _no_answer(h, "a.example", 9)
    assert h.runtime.reachability.pauses["a.example"] == 2
    assert h.scheduler.blocked_hosts() == {"a.example"}
    assert h.scheduler._blocks.paused["a.example"] == NOW + 120.0


def test_with_the_setting_at_0_no_host_is_paused(harness: Any) -> None:
    h = harness({"FRESH_UNREACHABLE_ATTEMPTS": 0})
    _no_answer(h, "a.example", 50)
    assert h.stat("fresh/hosts_unreachable") == 0
    assert not h.scheduler.blocked_hosts()


def test_a_request_waiting_in_line_is_held_back_when_its_host_is_blocked(
    harness: Any, known: Any
) -> None:
    """A request a timer handed to the engine waits in line (``engine.crawl``) until the
    engine takes it: blocked or paused meanwhile, its host gets nothing."""
    page = known("http://a.example/1", last_crawl=NOW - 9000, next_due=NOW - 5)
    h = harness(records=[page])
    request = h.scheduler._pop(NOW)
    assert request is not None
    h.scheduler._handoffs[id(request)] = request
    assert h.scheduler.enqueue_request(request)  # the timer's hand-off: first in line
    assert h.stat("fresh/requests/refresh") == 1
    _no_answer(h, "a.example", 9)
    assert h.scheduler.next_request() is None
    assert h.stat("fresh/requests/blocked_host") == 1
    assert h.stat("fresh/requests/refresh") == 0  # not sent: not counted


class _Engine:
    """The two engine calls the scheduler's timer makes (one edge case: a full engine)."""

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self.full = True

    def needs_backout(self) -> bool:
        return self.full

    def crawl(self, request: Any) -> None:
        self.scheduler.enqueue_request(request)


def test_a_timer_hands_nothing_to_an_engine_that_is_full(harness: Any, known: Any) -> None:
    """While the engine backs out (its downloader full), a timer leaves the page in the
    frontier: the engine asks for it once it has room, so nothing waits in line."""
    page = known("http://a.example/1", last_crawl=NOW - 9000, next_due=NOW - 5)
    h = harness(records=[page])
    engine = _Engine(h.scheduler)
    h.crawler.engine = engine
    h.scheduler._on_timer()
    assert not h.scheduler._ready
    assert h.stat("fresh/requests/refresh") == 0
    engine.full = False
    h.scheduler._on_timer()
    assert [r.url for r in h.scheduler._ready] == ["http://a.example/1"]
    assert h.stat("fresh/requests/refresh") == 1
