"""Cycle mode holds a bounded number of records, whatever the size of the store.

Without a budget the due records are leased a batch at a time as the frontier drains;
with :setting:`FRESH_CYCLE_BUDGET` one pass over the store keeps only the best ones.
The budget's choice must be the one the whole set in memory gives (the reference below
is the scheduler's former all-in-memory selection, kept verbatim).
"""

from __future__ import annotations

import gc
import math
import random
import shutil
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request

from scrapy_fresh.crawl.sources import (
    CYCLE_LOW_LEASES,
    CYCLE_MAX_LEASES,
    REFILL_BATCH,
    due_records,
)
from scrapy_fresh.frontier.scoring import ScoreParams, priority_score
from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.base import DueCursorStore, PageState, Status
from scrapy_fresh.store.memory import MemoryStore
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.budget_oracle import rank_for_budget

NOW = 1_000_000.0  # the harness clock (tests/conftest.py)
DAY = 86400.0
HOUR = 3600.0


def record(url: str, rng: random.Random, *, now: float = NOW) -> PageState:
    """A record with fields drawn from small sets, so that many scores tie."""
    crawled = rng.random() < 0.85
    state = PageState(
        key=url_key(url),
        url=url,
        host=url_host(url),
        status=Status.IDLE if crawled else Status.QUEUED,
        first_seen=now - rng.choice((10, 30)) * DAY,
        last_crawl=now - rng.choice((1, 2, 5)) * DAY if crawled else None,
        next_due=now + rng.choice((-3 * DAY, -DAY, -60.0, 0.0, HOUR, 5 * HOUR, 3 * DAY)),
        visits=rng.choice((1, 10)) if crawled else 0,
        p_c=rng.choice((0.0, 0.5, 1.0)) if crawled else 0.0,
        access_count=rng.choice((0, 1, 5)),
        errors=1 if rng.random() < 0.05 else 0,
        request={"url": url, "callback": "parse_page", "priority": rng.choice((0, 0, 1))},
    )
    if rng.random() < 0.1:
        state.future_updates = [(now + rng.choice((0.5, 2.0)) * HOUR, 1.0)]
    if rng.random() < 0.02:
        state.status = Status.GONE
    return state


def records(n: int, seed: int) -> list[PageState]:
    rng = random.Random(seed)
    return [record(f"http://h{i % 13}.example/p/{i}", rng) for i in range(n)]


def reference_choice(
    store: MemoryStore,
    now: float,
    lookahead: float,
    budget: int,
    new_share: float,
    params: ScoreParams,
) -> tuple[list[str], list[str], int]:
    """The former FreshScheduler._load_cycle and _budget_order, every record in memory.

    Returns the keys leased (in order), the spare keys (in order) and the budget left.
    """
    due_by = now + lookahead

    def may_take_early(s: PageState) -> bool:
        if s.last_crawl is not None and s.last_crawl >= now:
            return False
        return not any(now < t <= s.next_due for t, _ in s.future_updates)

    total = len(store)
    due = store.due(due_by, total) if total else []
    if lookahead:
        due = [s for s in due if s.next_due <= now or may_take_early(s)]
    scored = [(priority_score(s, now, params), i, s) for i, s in enumerate(due)]
    scored.sort(key=lambda t: (-t[0], t[1]))
    new = [(score, s) for score, _, s in scored if s.last_crawl is None]
    old_due = [s for score, _, s in scored if s.last_crawl is not None]
    reserve = round(budget * new_share)
    waiting: list[PageState] = []
    if params.fill:
        waiting = [
            s
            for s in store.due(math.inf, len(store))
            if s.next_due > due_by and s.last_crawl is not None and not s.errors
        ]
    old = rank_for_budget(old_due, waiting, now, budget - reserve, params)
    take_old = min(len(old), budget - reserve)
    take_new = min(len(new), budget - take_old)
    spare = old[take_old:]
    left = budget - take_old - take_new
    taken = old[:take_old] + new[:take_new]
    return [s.key for _, s in taken], [s.key for _, s in spare], left


# -- the store's due cursor -----------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
def cursor_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "s.sqlite")
    yield store
    store.close()


def test_due_after_pages_through_the_due_records_in_due_order(cursor_store: Any) -> None:
    store = cursor_store
    states = records(700, seed=3)
    store.put_many(states)
    # Leased and released again: the memory store's heap then holds twin entries.
    store.mark_in_flight([s.key for s in states[:50]], NOW)
    store.release_in_flight()
    assert isinstance(store, DueCursorStore)
    expected = [s.key for s in store.due(NOW + HOUR, len(states))]
    assert len(expected) > 300
    got: list[str] = []
    after = None
    while True:
        page = store.due_after(NOW + HOUR, after, 64)
        got += [s.key for s in page]
        if len(page) < 64:
            break
        after = (page[-1].next_due, page[-1].key)
    assert got == expected
    assert [s.key for s in due_records(store, NOW + HOUR, batch=7)] == expected
    assert store.due_after(NOW, None, 0) == []
    with pytest.raises(ValueError, match="limit"):
        store.due_after(NOW, None, -1)


def test_due_records_without_a_cursor_reads_every_record_once() -> None:
    class Plain:
        """A store with iterate() but no due_after()."""

        def __init__(self, inner: MemoryStore) -> None:
            self.inner = inner

        def iterate(self, batch_size: int = 1000) -> Any:
            return self.inner.iterate(batch_size)

    inner = MemoryStore()
    states = records(500, seed=4)
    inner.put_many(states)
    got = list(due_records(Plain(inner), NOW, batch=10))  # type: ignore[arg-type]
    assert sorted(s.key for s in got) == sorted(s.key for s in inner.due(NOW, 10_000))


# -- the budget's choice --------------------------------------------------------------


@pytest.mark.parametrize(
    ("budget", "share", "fill", "lookahead", "rule"),
    [
        (1, 0.0, True, 0.0, "gain"),
        (40, 0.2, True, 0.0, "gain"),
        (40, 0.2, True, 3 * HOUR, "gain"),
        (400, 0.1, True, 3 * HOUR, "gain"),
        (400, 0.1, False, 3 * HOUR, "gain"),
        (1500, 0.3, True, 0.0, "gain"),  # the due re-crawls fit: the waiting fill the rest
        (2600, 0.0, True, 6 * HOUR, "gain"),
        (5000, 0.2, True, 0.0, "gain"),  # more than the store
        (300, 0.5, True, 3 * HOUR, "xu"),
        (300, 1.0, True, 0.0, "gain"),  # everything for new URLs
    ],
)
def test_budget_choice_is_the_all_in_memory_one(
    harness: Any, budget: int, share: float, fill: bool, lookahead: float, rule: str
) -> None:
    states = records(3000, seed=budget + int(share * 10) + int(lookahead))
    settings = {
        "FRESH_CYCLE_BUDGET": budget,
        "FRESH_NEW_URL_SHARE": share,
        "FRESH_CYCLE_FILL": fill,
        "FRESH_CYCLE_LOOKAHEAD_SECS": lookahead,
        "FRESH_PRIORITY_SCORE": rule,
    }
    reference = MemoryStore()
    reference.put_many(states)
    h = harness(settings, records=states)
    leased, spare, left = reference_choice(
        reference, NOW, lookahead, budget, share, h.runtime.score_params
    )
    assert list(h.runtime.leases) == leased
    assert h.scheduler.source.budget_left == left
    kept = [s.key for _, s in h.scheduler.source.spare]
    assert kept == spare[: len(kept)]
    # Only what the budget left could ever take is kept (the old list held every
    # candidate the budget did not take: up to the whole store with the fill).
    assert len(kept) == min(left, len(spare))
    assert len(kept) <= budget


def test_spare_records_go_out_in_the_same_order_when_new_urls_leave_budget(
    harness: Any, known: Any
) -> None:
    states = [
        known(f"http://a.example/{n}", last_crawl=NOW - DAY, next_due=NOW - 1, access_count=n % 4)
        for n in range(60)
    ]
    h = harness({"FRESH_CYCLE_BUDGET": 20, "FRESH_NEW_URL_SHARE": 0.5}, records=states)
    reference = MemoryStore()
    reference.put_many(states)
    leased, spare, left = reference_choice(reference, NOW, 0.0, 20, 0.5, h.runtime.score_params)
    first = h.drain()
    assert len(first) == 10
    assert {r.meta["fresh_key"] for r in first} == set(leased)
    for request in first:
        h.record(request)
    second = h.drain()  # no new URL came: the spare re-crawls use their share
    assert left == 10
    assert {r.meta["fresh_key"] for r in second} == set(spare[:10])


# -- no budget: batches as the frontier drains ----------------------------------------


def test_every_due_record_goes_out_once_and_few_are_held_at_a_time(
    harness: Any, known: Any
) -> None:
    n_due = 2 * REFILL_BATCH + 500
    due = [
        known(
            f"http://h{n % 7}.example/d/{n}",
            last_crawl=NOW - 2 * DAY,
            next_due=NOW - DAY + n,  # n < DAY: all due, in this order
            access_count=n % 5,
        )
        for n in range(n_due)
    ]
    early = [
        known(f"http://h{n % 7}.example/e/{n}", last_crawl=NOW - DAY, next_due=NOW + HOUR)
        for n in range(300)
    ]
    later = [
        known(f"http://h{n % 7}.example/l/{n}", last_crawl=NOW - DAY, next_due=NOW + 9 * HOUR)
        for n in range(300)
    ]
    h = harness({"FRESH_CYCLE_LOOKAHEAD_SECS": 3 * HOUR}, records=due + early + later)
    held = [len(h.runtime.leases)]
    assert held[0] == REFILL_BATCH  # the old code leased all 2,800 at open
    fetched: list[str] = []
    erring = {s.key for s in due[:50]}
    downloading: list[Request] = []
    # A downloader that takes 16 requests at a time: a visit is recorded for the
    # oldest of them before the next one goes out.
    while h.scheduler.has_pending_requests():
        request = h.scheduler.next_request()
        if request is not None:
            downloading.append(request)
            fetched.append(request.meta["fresh_key"])
        if len(downloading) == 16 or (request is None and downloading):
            done = downloading.pop(0)
            key = done.meta["fresh_key"]
            # Some visits fail: retried after a back-off that ends within the
            # lookahead, ahead of where the reads have got to, they must not be read
            # again in this run.
            h.record(done, Outcome.ERROR if key in erring else Outcome.NOT_MODIFIED)
        elif request is None:
            pytest.fail("pending requests, but none handed out")
        held.append(len(h.runtime.leases))
    # The most overdue records come first: the second batch is loaded once fewer than
    # CYCLE_LOW_LEASES of the first are left.
    assert set(fetched[: REFILL_BATCH - CYCLE_LOW_LEASES]) <= {s.key for s in due[:REFILL_BATCH]}
    expected = {s.key for s in due + early}
    assert len(fetched) == len(set(fetched))  # each once
    assert set(fetched) == expected
    assert max(held) < CYCLE_LOW_LEASES + REFILL_BATCH
    back = h.state(due[0].url)
    assert back.errors == 1
    assert NOW < back.next_due <= NOW + 3 * HOUR  # due again within the lookahead: skipped


def test_a_due_record_the_spider_asks_for_before_its_batch_is_fetched_once(
    harness: Any, known: Any
) -> None:
    due = [
        known(f"http://a.example/{n}", last_crawl=NOW - 2 * DAY, next_due=NOW - DAY + n)
        for n in range(REFILL_BATCH + 10)
    ]
    h = harness(records=due)
    last = due[-1]
    assert last.key not in h.runtime.leases  # in the second batch
    assert h.scheduler.enqueue_request(Request(last.url))
    fetched: list[str] = []
    while h.scheduler.has_pending_requests():
        for request in h.drain():
            fetched.append(request.meta["fresh_key"])
            h.record(request)
    assert len(fetched) == len(due)
    assert set(fetched) == {s.key for s in due}


def test_records_held_while_draining_stay_bounded_with_slow_hosts(
    harness: Any, known: Any
) -> None:
    # Two hosts with a delay: nothing is ready most of the time, so more batches are
    # loaded while fewer than CYCLE_MAX_LEASES pages are leased, and no more.
    due = [
        known(f"http://h{n % 2}.example/{n}", last_crawl=NOW - 2 * DAY, next_due=NOW - DAY + n)
        for n in range(CYCLE_MAX_LEASES + 2 * REFILL_BATCH)
    ]
    h = harness({"DOWNLOAD_DELAY": 1.0}, records=due)
    assert len(h.runtime.leases) == REFILL_BATCH
    out = h.drain()
    assert len(out) == 2
    assert len(h.runtime.leases) == CYCLE_MAX_LEASES
    assert h.scheduler.has_pending_requests()


# -- memory, measured ------------------------------------------------------------------

N_BIG = 50_000


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory, known: Any) -> Path:
    """A SQLite store of 50,000 visited records, 40,000 of them due."""
    path = tmp_path_factory.mktemp("big") / "big.sqlite"
    rng = random.Random(7)
    now = time.time()
    store = SQLiteStore(path)
    batch: list[PageState] = []
    for i in range(N_BIG):
        batch.append(
            known(
                f"http://host{i % 50}.example/page/{i}?ref=listing",
                first_seen=now - 30 * DAY,
                last_crawl=now - 2 * DAY,
                next_due=now - rng.random() * DAY if i % 5 else now + rng.random() * DAY,
                visits=5,
                p_c=rng.random(),
                access_count=rng.randrange(4),
                etag=f'"{i:x}"',
                fingerprint=None,
                callback="parse",
            )
        )
        if len(batch) == 5000:
            store.put_many(batch)
            batch.clear()
    store.close()
    return path


def _open_peak(path: Path, settings: dict[str, Any]) -> tuple[int, int]:
    """Peak traced bytes while a FreshScheduler opens on a copy of ``path``; and leases."""
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from scrapy_fresh.crawl.runtime import FreshRuntime
    from scrapy_fresh.crawl.scheduler import FreshScheduler

    class S(Spider):
        name = "s"

        def parse(self, response: Any) -> Any:
            return []

    copy = path.with_name(f"copy-{time.monotonic_ns()}.sqlite")
    shutil.copy(path, copy)
    crawler = get_crawler(S, {"FRESH_STORE": "sqlite", "FRESH_SQLITE_PATH": str(copy), **settings})
    crawler.spider = S.from_crawler(crawler)
    crawler.stats.open_spider()
    runtime = FreshRuntime.of(crawler)
    runtime.store  # opened before the measurement  # noqa: B018
    scheduler = FreshScheduler.from_crawler(crawler)
    gc.collect()
    tracemalloc.start()
    try:
        scheduler.open(crawler.spider)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    leases = len(runtime.leases)
    scheduler.close("finished")
    return peak, leases


def _bytes_per_record(path: Path) -> float:
    """Traced bytes of 5,000 records read from the store and kept."""
    store = SQLiteStore(path)
    try:
        store.due(0.0, 1)
        gc.collect()
        tracemalloc.start()
        held = store.due(math.inf, 5000)
        size, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert len(held) == 5000
    finally:
        store.close()
    return size / 5000


@pytest.mark.parametrize(
    "settings",
    [
        {},  # no budget: 40,000 due
        {"FRESH_CYCLE_BUDGET": 500, "FRESH_NEW_URL_SHARE": 0.0},  # the fill: all 50,000
        {"FRESH_CYCLE_BUDGET": 500, "FRESH_NEW_URL_SHARE": 0.0, "FRESH_CYCLE_FILL": False},
    ],
    ids=["no-budget", "budget-fill", "budget"],
)
def test_opening_a_cycle_over_50k_records_holds_a_bounded_share(
    big_store: Path, settings: dict[str, Any]
) -> None:
    per_record = _bytes_per_record(big_store)
    peak, leases = _open_peak(big_store, settings)
    assert leases == (REFILL_BATCH if not settings else 500)
    # Holding every record read would take N_BIG * per_record bytes (the old code held
    # all 40,000 due ones, or all 50,000 with the fill): the peak is a small share.
    all_in_memory = N_BIG * per_record
    print(f"peak {peak:,} B = {peak / all_in_memory:.3f} of {all_in_memory:,.0f} B")
    assert peak < 0.15 * all_in_memory, (peak, all_in_memory)


# -- a real crawl ----------------------------------------------------------------------


def _crawl_store(
    path: Path, server: Any, n_due: int, n_waiting: int, known: Any
) -> list[PageState]:
    """Visited records of ``/n/<i>``: the first ``n_due`` due, the next ``n_waiting``
    due in two days. Scores differ only by popularity (and tie often), so the budget's
    choice does not depend on the moment the crawl opens."""
    now = time.time()
    states = [
        known(
            server.url(f"/n/{i}"),
            first_seen=now - 10 * DAY,
            last_crawl=now - 2 * DAY,
            next_due=now - DAY + (i % 97) if i < n_due else now + 2 * DAY + i,
            visits=3,
            p_c=0.5,
            access_count=(i * 7) % 5,
            callback="parse_noitem",
        )
        for i in range(n_due + n_waiting)
    ]
    store = SQLiteStore(path)
    store.put_many(states)
    store.close()
    return states


N_CRAWL_DUE = REFILL_BATCH + 300


@pytest.mark.slow
@pytest.mark.parametrize("budget", [0, REFILL_BATCH + 100])
def test_a_cycle_with_more_due_pages_than_a_batch_fetches_each_once(
    mockserver: Any, crawl: Any, tmp_path: Path, budget: int, known: Any
) -> None:
    db = tmp_path / "s.sqlite"
    with mockserver.MockServer(
        mockserver.MockSite(count=N_CRAWL_DUE + 200, paragraphs=1)
    ) as server:
        states = _crawl_store(db, server, N_CRAWL_DUE, 200, known)
        if budget:
            reference = MemoryStore()
            reference.put_many(states)
            expected, _, _ = reference_choice(
                reference, time.time(), 0.0, budget, 0.0, ScoreParams()
            )
            assert len(expected) == budget
        else:
            expected = [s.key for s in states[:N_CRAWL_DUE]]
        result = crawl(
            {
                "settings": {
                    "ADDONS": {"scrapy_fresh.Addon": 0},
                    "FRESH_SQLITE_PATH": str(db),
                    "FRESH_CYCLE_BUDGET": budget,
                    "FRESH_NEW_URL_SHARE": 0.0,
                    "CONCURRENT_REQUESTS": 32,
                    "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
                    "LOG_LEVEL": "INFO",
                },
                "start": [],
            },
            tmp_path,
            timeout=240.0,
        )
        paths = [r.path for r in server.site.log if r.path.startswith("/n/")]
    by_path = {"/" + s.url.split("/", 3)[3]: s.key for s in states}
    assert len(paths) == len(set(paths))  # each page once
    assert sorted(by_path[p] for p in paths) == sorted(expected)
    assert result.stat("fresh/requests/refresh") == len(expected)
    loaded = budget or REFILL_BATCH  # the old code loaded all 1,300 due pages at once
    assert f"{loaded} due pages loaded" in result.log


def test_a_store_failure_between_batches_leaves_the_rest_due(harness: Any, known: Any) -> None:
    from scrapy_fresh.exceptions import StoreError

    due = [
        known(f"http://a.example/{n}", last_crawl=NOW - 2 * DAY, next_due=NOW - DAY + n)
        for n in range(REFILL_BATCH + 10)
    ]
    h = harness(records=due)
    store = h.runtime.store

    def broken(now: float, after: Any, limit: int) -> list[PageState]:
        raise StoreError("disk gone")

    store.due_after = broken
    fetched = 0
    while h.scheduler.has_pending_requests():
        for request in h.drain():
            fetched += 1
            h.record(request)
    assert fetched == REFILL_BATCH
    assert h.stat("fresh/store_error") == 1
    assert len(store.due(NOW, 100)) == 10  # fetched by the next run
