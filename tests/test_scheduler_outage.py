"""A shared-Redis worker through a Redis outage: FreshScheduler (FRESH_STORE = "redis")
on a redis-server of the test's own, stopped while the run goes on. The scheduler's
timers and the outage back-off run on the harness's clock (a hand-driven reactor), so
the counts below are exact, whatever the machine's speed."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest
import redis
from scrapy import Request

from scrapy_fresh.crawl import scheduler as scheduler_module
from scrapy_fresh.crawl.hostblocks import POLL_SECS
from scrapy_fresh.crawl.scheduler import TIMER_SLACK_SECS
from scrapy_fresh.distributed import shared as distributed
from scrapy_fresh.distributed.shared import FIRST_BACKOFF_SECS, MAX_BACKOFF_SECS
from scrapy_fresh.distributed.store import RedisStore
from scrapy_fresh.keys import url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import Status
from tests.conftest import HARNESS_NOW as NOW
from tests.redis_helpers import OwnServer

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from tests.conftest import Harness

#: How long Redis is away (seconds on the harness's clock).
OUTAGE_SECS = 12.0


@dataclass
class _Call:
    at: float
    func: Callable[[], object]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class _Reactor:
    """The scheduler's ``call_later`` on the harness's clock, fired by :func:`_run`."""

    clock: list[float]
    calls: list[_Call] = field(default_factory=list)

    def call_later(self, delay: float, func: Callable[[], object]) -> _Call:
        call = _Call(self.clock[0] + delay, func)
        self.calls.append(call)
        return call

    def next_call(self) -> _Call | None:
        self.calls = [c for c in self.calls if not c.cancelled]
        return min(self.calls, key=lambda c: c.at, default=None)


@dataclass
class _Engine:
    """What the timer needs of the engine: room (``needs_backout``), and ``crawl()``
    that hands the request back."""

    scheduler: Any

    def crawl(self, request: Request) -> None:
        assert self.scheduler.enqueue_request(request)

    def needs_backout(self) -> bool:
        return False  # room for the timer's request


@dataclass
class _Counts:
    fired: int = 0  # timer firings
    pulls: int = 0  # SharedFrontier.pull calls
    pops: int = 0  # pops sent to Redis
    replays: int = 0  # kept writes sent to Redis from a pull

    def snapshot(self) -> tuple[int, int, int, int]:
        return (self.fired, self.pulls, self.pops, self.replays)


@pytest.fixture
def own(tmp_path: Path) -> Iterator[OwnServer]:
    server = OwnServer(tmp_path, "--appendonly", "yes", "--appendfsync", "always")
    server.start()
    yield server
    server.stop()


def _worker(
    harness: Any, known: Any, own: OwnServer, monkeypatch: pytest.MonkeyPatch, mode: str
) -> tuple[Harness, _Reactor, _Counts]:
    """A worker with three pages due now (hosts a, b, c) and, in continuous mode, two
    that come due 2 s later (d, e); its timers and back-off on the harness's clock."""
    reactor = _Reactor([NOW])
    monkeypatch.setattr(scheduler_module, "call_later", reactor.call_later)
    monkeypatch.setattr(distributed, "time", SimpleNamespace(monotonic=lambda: reactor.clock[0]))
    records = [known(f"http://{h}.example/p", last_crawl=NOW - 9000, next_due=NOW - 10)
               for h in "abc"]  # fmt: skip
    if mode == "continuous":
        records += [known(f"http://{h}.example/p", last_crawl=NOW - 9000, next_due=NOW + 2)
                    for h in "de"]  # fmt: skip
    h = harness(
        {"FRESH_STORE": "redis", "REDIS_URL": f"redis://127.0.0.1:{own.port}/0",
         "FRESH_REDIS_KEY": "w", "FRESH_MODE": mode},
        records=records,
    )  # fmt: skip
    reactor.clock = h.clock  # the same time (NOW) until now
    h.crawler.engine = _Engine(h.scheduler)
    counts = _Counts()
    shared = h.scheduler.source.shared
    store = shared.store

    def count(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            if name != "replays" or store.pending:
                setattr(counts, name, getattr(counts, name) + 1)
            return func(*args, **kwargs)

        return counted

    monkeypatch.setattr(shared, "pull", count("pulls", shared.pull))
    monkeypatch.setattr(shared.frontier, "pop", count("pops", shared.frontier.pop))
    monkeypatch.setattr(store, "replay", count("replays", store.replay))
    return h, reactor, counts


#: url -> (when the scheduler handed it out, the request)
Sent = dict[str, tuple[float, Request]]


def _run(h: Harness, reactor: _Reactor, counts: _Counts, until: float, sent: Sent) -> None:
    """Fire the timers due by ``until`` in order, taking what the scheduler hands out
    as the engine would, and leave the clock at ``until``."""
    while True:
        for request in h.drain():
            sent.setdefault(request.url, (h.clock[0], request))
        call = reactor.next_call()
        if call is None or call.at > until:
            break
        reactor.calls.remove(call)
        h.clock[0] = max(h.clock[0], call.at)
        counts.fired += 1
        call.func()
    h.clock[0] = until


def _tries(secs: float) -> int:
    """How many tries the outage back-off makes in ``secs`` (and one at the start)."""
    n, t = 1, FIRST_BACKOFF_SECS
    while t <= secs:
        n += 1
        t += min(MAX_BACKOFF_SECS, FIRST_BACKOFF_SECS * 2 ** (n - 1))
    return n


@pytest.mark.parametrize("kept", [True, False], ids=["writes-kept", "no-writes"])
@pytest.mark.parametrize("mode", ["continuous", "cycle"])
def test_a_worker_waits_out_a_redis_outage_at_the_back_off_pace(
    harness: Any, known: Any, own: OwnServer, monkeypatch: pytest.MonkeyPatch, mode: str,
    kept: bool,
) -> None:  # fmt: skip
    """Redis stops for 12 s while a worker has a page downloading and (in continuous
    mode) pages come due in the shared frontier; with ``kept``, the worker also records
    a visit and finds a link meanwhile (writes kept in memory). Its timer must not fire
    every few milliseconds for the whole outage: it wakes at the back-off's pace (and, in
    continuous mode, for its reads of the blocked hosts every POLL_SECS), and sends Redis
    no more pulls than the back-off allows. Once Redis is back it takes the pages due
    meanwhile (and its discovery) within the back-off's wait then, and every visit is
    written: nothing lost."""
    h, reactor, counts = _worker(harness, known, own, monkeypatch, mode)
    try:
        _outage(h, reactor, counts, own, mode=mode, kept=kept)
    finally:
        if own.process is None:  # failed during the outage: close on a running server
            own.start()
        h.scheduler.close("finished")


def _outage(
    h: Harness, reactor: _Reactor, counts: _Counts, own: OwnServer, *, mode: str, kept: bool
) -> None:
    sent: Sent = {}
    _run(h, reactor, counts, NOW, sent)
    first = [f"http://{x}.example/p" for x in "abc"]
    assert sorted(sent) == first
    for url in first[:2]:
        h.record(sent[url][1], Outcome.UNCHANGED)
    _run(h, reactor, counts, NOW + 1, sent)

    own.stop()  # -- the outage ---------------------------------------------------------
    down = h.clock[0]
    before = counts.snapshot()
    visited_c = down + 0.5 if kept else down + OUTAGE_SECS + MAX_BACKOFF_SECS + 1
    if kept:
        h.clock[0] = down + 0.2
        h.scheduler.enqueue_request(Request("http://f.example/new"))  # a link found
        assert h.stat("fresh/requests/shared") == 1  # to the shared frontier (kept for now)
        h.clock[0] = visited_c
        h.record(sent[first[2]][1], Outcome.CHANGED)  # kept in memory
        h.scheduler._arm_timer(h.clock[0])
    _run(h, reactor, counts, down + OUTAGE_SECS, sent)
    fired, pulls, pops, replays = (a - b for a, b in zip(counts.snapshot(), before, strict=True))
    assert h.scheduler.has_pending_requests()  # the run stays open (cycle mode too)
    tries = _tries(OUTAGE_SECS)
    polls = int(OUTAGE_SECS / POLL_SECS) + 1 if mode == "continuous" else 0
    shared = h.scheduler.source.shared
    wait = shared.backoff_wait()  # when the worker tries Redis next
    print(f"{mode}, kept={kept}: {OUTAGE_SECS:g} s outage: {fired} timer firings, "
          f"{pulls} pulls, {pops} pops and {replays} replays sent to Redis "
          f"(back-off tries: {tries}); next try in {wait:g} s")  # fmt: skip
    assert pops + replays <= tries + 1
    assert fired <= tries + polls + 2
    assert pulls <= 2 * fired + 3  # the timer's and the engine's, and around the link
    assert 0 < wait <= MAX_BACKOFF_SECS

    own.start()  # -- Redis is back -----------------------------------------------------
    back = h.clock[0]
    _run(h, reactor, counts, back + MAX_BACKOFF_SECS + 1, sent)
    later = ["http://f.example/new"] if kept else []
    if mode == "continuous":
        later += [f"http://{x}.example/p" for x in "de"]
    assert sorted(set(sent) - set(first)) == sorted(later)
    for url in later:  # at the back-off's next try (and the timer's slack)
        assert sent[url][0] <= back + wait + 2 * TIMER_SLACK_SECS, (url, sent[url][0] - back)
    if not kept:
        h.record(sent[first[2]][1], Outcome.CHANGED)
    for url in later:
        h.record(sent[url][1], Outcome.UNCHANGED)
    h.scheduler.close("finished")
    client = redis.Redis(host="127.0.0.1", port=own.port)
    try:
        store = RedisStore(client, "w")
        for url in first + later:
            state = store.get(url_key(url))
            assert state is not None, url
            assert state.status is Status.IDLE, url
            assert (state.last_crawl or 0) > NOW - 9000, url  # visited in this run
        c = store.get(url_key(first[2]))
        assert c is not None
        assert c.last_crawl == visited_c  # the visit made during the outage (or after)
    finally:
        client.close()
