"""FreshScheduler with the shared Redis frontier (FRESH_STORE = "redis"), driven directly."""

from __future__ import annotations

from typing import Any

import pytest

from scrapy_fresh.crawl.hostblocks import POLL_SECS
from scrapy_fresh.distributed.shared import PULL_BATCH
from tests.conftest import HARNESS_NOW as NOW
from tests.redis_helpers import SHARED_URL


@pytest.mark.parametrize("mode", ["cycle", "continuous"])
def test_a_full_frontier_waits_for_its_hosts_not_for_the_shared_one(
    harness: Any, known: Any, prefix: str, mode: str
) -> None:
    """A worker whose own frontier is full pulls nothing (PULL_BATCH): it must not ask
    to be woken at once for pages the shared frontier has ready, nor for a due time
    there (continuous mode), or its timer fires every few milliseconds until a host of
    its frontier may be contacted. As a continuous worker's due time did before the
    sources (only while its frontier had room)."""
    records = [
        known(f"http://a.example/{n}", last_crawl=NOW - 9000, next_due=NOW - 10)
        for n in range(PULL_BATCH + 6)
    ]
    records.append(known("http://b.example/later", last_crawl=NOW - 9000, next_due=NOW + 30))
    h = harness(
        {
            "FRESH_STORE": "redis",
            "REDIS_URL": SHARED_URL,
            "FRESH_REDIS_KEY": prefix,
            "FRESH_MODE": mode,
            "DOWNLOAD_SLOTS": {"a.example": {"delay": 100}},  # this worker's own delay
        },
        records=records,
    )
    assert len(h.drain()) == 1  # then a.example must wait 100 s
    assert len(h.scheduler.frontier) == PULL_BATCH
    h.clock[0] = NOW + 31  # b.example/later is due in the shared frontier
    h.scheduler._on_timer()  # the timer fires (no engine here: it only clears itself)
    assert h.drain() == []
    assert len(h.scheduler.frontier) == PULL_BATCH
    # Woken when a page of a.example may go (NOW + 100), or at the next read of the
    # blocked hosts (continuous mode: every POLL_SECS), not at once.
    assert h.scheduler._timer_at >= h.clock[0] + POLL_SECS


def test_a_blocked_hosts_leases_go_back_to_the_shared_frontier(
    harness: Any, known: Any, prefix: str
) -> None:
    """Pages of a host blocked while a worker holds them go back to the shared frontier
    (not parked under a lease that runs out during a long block, making their visit a
    lost one later); no worker takes them while the block lasts, one does after."""
    from scrapy_fresh.store.base import Status

    records = [
        known(f"http://a.example/{n}", last_crawl=NOW - 9000, next_due=NOW - 10) for n in range(3)
    ]
    settings = {
        "FRESH_STORE": "redis", "REDIS_URL": SHARED_URL, "FRESH_REDIS_KEY": prefix,
        "DOWNLOAD_SLOTS": {"a.example": {"delay": 100}},
    }  # fmt: skip
    h = harness(settings, records=records)
    assert len(h.drain()) == 1  # one goes out; two wait for the delay, leased here
    store = h.runtime.store
    store.block_host("a.example", NOW)
    h.clock[0] += POLL_SECS
    assert h.drain() == []
    assert h.stat("fresh/requests/blocked_host") == 2
    waiting = [s for s in store.iterate() if s.status is not Status.IN_FLIGHT]
    assert len(waiting) == 2  # given back: nobody holds them
    other = harness(settings)
    assert other.drain() == []  # blocked for every worker
    store.unblock_host("a.example")
    other.clock[0] = h.clock[0] + POLL_SECS
    assert len(other.drain()) == 1  # the other worker takes one (then the delay)
