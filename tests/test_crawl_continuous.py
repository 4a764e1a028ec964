"""Continuous mode: the spider stays open and fetches pages as they come due.

Real time is the point here, so these tests wait for it (a few seconds).
"""

from __future__ import annotations

import itertools
import signal
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.conftest import wait_for


@pytest.mark.slow
def test_due_page_is_fetched_again_on_time_and_ctrl_c_saves_state(
    mockserver: Any, spawn: Any, tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite"
    with mockserver.MockServer(mockserver.MockSite(count=1)) as server:
        url = server.url("/n/0")
        crawl = spawn(
            {
                "settings": {
                    "ADDONS": {"scrapy_fresh.Addon": 0},
                    "FRESH_SQLITE_PATH": str(db),
                    "FRESH_MODE": "continuous",
                    "FRESH_MIN_REFRESH_SECS": 1,
                    "FRESH_DEFAULT_REFRESH_SECS": 2,
                    "FRESH_MAX_REFRESH_SECS": 2,
                },
                # The spider yields the page once; the scheduler brings it back when due.
                "start": [{"url": url, "callback": "parse_noitem"}],
            },
            tmp_path,
        )
        try:
            fetched = wait_for(lambda: len(server.site.log) >= 3, timeout=20)
        finally:
            crawl.process.send_signal(signal.SIGINT)  # Ctrl-C
        result = crawl.finish(timeout=30)
        assert fetched, result.log[-3000:]
        times = [r.time for r in server.site.log]
        # Each visit makes the page due 2 s later; it must go out within 1 s of that.
        for previous, following in itertools.pairwise(times):
            assert 2.0 - 0.05 <= following - previous <= 3.0
        assert result.reason == "shutdown"
        assert result.stat("fresh/requests/new") == 1
        assert result.stat("fresh/requests/refresh") >= 2
    store = SQLiteStore(db)
    try:
        (state,) = list(store.iterate())
        assert store.counts()[Status.IN_FLIGHT] == 0
    finally:
        store.close()
    assert state.url == url
    assert state.visits >= 2
    assert state.last_crawl == pytest.approx(times[-1], abs=1.0)
