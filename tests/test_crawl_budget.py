"""A cycle with more due pages than its budget fetches the highest-priority ones first."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.frontier.scoring import priority_score
from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.store.base import PageState, Status
from scrapy_fresh.store.sqlite import SQLiteStore

DAY = 86400.0


@pytest.mark.slow
def test_budget_goes_to_the_highest_priority_due_pages(
    mockserver: Any, crawl: Any, tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite"
    now = time.time()
    with mockserver.MockServer(mockserver.MockSite(count=12)) as server:
        # Twelve known pages, all due, crawled two days ago; popularity (accesses per
        # day, the weight of Xu et al.'s scores) ranks them.
        records = []
        for n in range(12):
            url = server.url(f"/n/{n}")
            records.append(
                PageState(
                    key=url_key(url),
                    url=url,
                    host=url_host(url),
                    status=Status.IDLE,
                    first_seen=now - 10 * DAY,
                    last_crawl=now - 2 * DAY,
                    next_due=now - DAY,
                    access_count=(n * 7) % 12 + 1,
                    fingerprint=1,
                    visits=3,
                    request={"url": url, "callback": "parse_noitem"},
                )
            )
        store = SQLiteStore(db)
        store.put_many(records)
        store.close()
        ranked = sorted(records, key=lambda s: priority_score(s, now), reverse=True)
        assert priority_score(ranked[3], now) > priority_score(ranked[4], now)
        result = crawl(
            {
                "settings": {
                    "ADDONS": {"scrapy_fresh.Addon": 0},
                    "FRESH_SQLITE_PATH": str(db),
                    "FRESH_CYCLE_BUDGET": 5,
                    "FRESH_NEW_URL_SHARE": 0.2,  # one of the five slots is kept for new URLs
                    "CONCURRENT_REQUESTS": 1,  # one at a time: the server sees the order
                },
                "start": [{"url": server.url("/v/0")}, {"url": server.url("/v/1")}],
            },
            tmp_path,
        )
        log = [r.path for r in server.site.log]
    refresh = [p for p in log if p.startswith("/n/")]
    expected = ["/" + s.url.split("/", 3)[3] for s in ranked[:4]]
    assert refresh == expected  # the best four, best first
    assert [p for p in log if p.startswith("/v/")] == ["/v/0"]  # the new URL share
    assert result.stat("fresh/requests/refresh") == 4
    assert result.stat("fresh/requests/new") == 1
    assert result.stat("fresh/requests/over_budget") == 1
    store = SQLiteStore(db)
    try:
        queued = store.get(url_key(server.url("/v/1")))
        left = [
            s
            for s in store.iterate()
            if s.url.split("/", 3)[3].startswith("n/")
            and s.last_crawl is not None
            and s.last_crawl < now
        ]
    finally:
        store.close()
    # Nothing is lost: the new URL over budget waits, queued, and the rest stay due.
    assert queued is not None
    assert queued.status is Status.QUEUED
    assert len(left) == 8
    assert all(s.next_due <= now for s in left)
