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
