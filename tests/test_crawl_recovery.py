"""A crawl killed with SIGKILL mid-cycle loses no URL: the next run fetches what was in flight."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.store.base import PageState, Status
from scrapy_fresh.store.sqlite import SQLiteStore

PAGES = 12


def _records(db: Path) -> dict[str, PageState]:
    store = SQLiteStore(db)
    try:
        return {"/" + s.url.split("/", 3)[3]: s for s in store.iterate()}
    finally:
        store.close()


@pytest.mark.slow
def test_sigkill_mid_cycle_then_a_new_run_fetches_what_was_in_flight(
    mockserver: Any, spawn: Any, crawl: Any, tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite"
    site = mockserver.MockSite(count=PAGES, linked=("n",))
    with mockserver.MockServer(site) as server:
        config = {
            "settings": {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_SQLITE_PATH": str(db),
                "DOWNLOAD_DELAY": 0.25,
            },
            # The spider discovers the pages from the start page; a new run does not
            # yield them again: they must come back from the store.
            "start": [{"url": server.url("/"), "callback": "parse_links"}],
            "link_callback": "parse_noitem",
        }
        first = spawn(config, tmp_path)
        deadline = time.monotonic() + 20
        while len(server.site.log) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        first.process.send_signal(signal.SIGKILL)
        first.process.wait()
        killed = first.finish(check=False)
        assert killed.returncode == -signal.SIGKILL
        fetched_before = [r.path for r in server.site.log]
        assert 5 <= len(fetched_before) < PAGES + 1, fetched_before

        after_kill = _records(db)
        assert len(after_kill) == PAGES + 1  # every discovered URL was recorded
        in_flight = {p for p, s in after_kill.items() if s.status is Status.IN_FLIGHT}
        visited = {p for p, s in after_kill.items() if s.last_crawl is not None}
        assert in_flight
        assert in_flight | visited == set(after_kill)

        mark = len(server.site.log)
        # No delay this time: the test need not wait for it.
        second = crawl(
            {**config, "settings": {**config["settings"], "DOWNLOAD_DELAY": 0}}, tmp_path
        )
        fetched_after = [r.path for r in server.site.log[mark:]]

    assert sorted(fetched_after) == sorted(in_flight)  # exactly what the kill left
    assert second.stat("fresh/requests/new") == len(in_flight)
    final = _records(db)
    assert all(s.status is Status.IDLE and s.last_crawl is not None for s in final.values())
