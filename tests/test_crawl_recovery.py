"""A crawl killed with SIGKILL mid-cycle loses no URL: the next run fetches what was in
flight, and writing behind once a second (FRESH_COMMIT_SECS = 1, the default) what the
last interval had not written."""

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


def _config(server: Any, db: Path, **settings: Any) -> dict[str, Any]:
    return {
        "settings": {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(db),
            "DOWNLOAD_DELAY": 0.25,
            **settings,
        },
        # The spider discovers the pages from the start page; a new run does not
        # yield them again: they must come back from the store.
        "start": [{"url": server.url("/"), "callback": "parse_links"}],
        "link_callback": "parse_noitem",
    }


def _kill_after(spawn: Any, config: dict[str, Any], tmp_path: Path, server: Any, n: int) -> None:
    """Start the crawl and SIGKILL it once the server has answered ``n`` requests."""
    first = spawn(config, tmp_path)
    deadline = time.monotonic() + 20
    while len(server.site.log) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    first.process.send_signal(signal.SIGKILL)
    first.process.wait()
    assert first.finish(check=False).returncode == -signal.SIGKILL


def _again(crawl: Any, config: dict[str, Any], tmp_path: Path) -> Any:
    """The next run (no delay this time: the test need not wait for it)."""
    return crawl({**config, "settings": {**config["settings"], "DOWNLOAD_DELAY": 0}}, tmp_path)


@pytest.mark.slow
def test_sigkill_mid_cycle_then_a_new_run_fetches_what_was_in_flight(
    mockserver: Any, spawn: Any, crawl: Any, tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite"
    site = mockserver.MockSite(count=PAGES, linked=("n",))
    with mockserver.MockServer(site) as server:
        config = _config(server, db, FRESH_COMMIT_SECS=0)  # a transaction per visit
        _kill_after(spawn, config, tmp_path, server, 5)
        fetched_before = [r.path for r in server.site.log]
        assert 5 <= len(fetched_before) < PAGES + 1, fetched_before

        after_kill = _records(db)
        assert len(after_kill) == PAGES + 1  # every discovered URL was recorded
        in_flight = {p for p, s in after_kill.items() if s.status is Status.IN_FLIGHT}
        visited = {p for p, s in after_kill.items() if s.last_crawl is not None}
        assert in_flight
        assert in_flight | visited == set(after_kill)

        mark = len(server.site.log)
        second = _again(crawl, config, tmp_path)
        fetched_after = [r.path for r in server.site.log[mark:]]

    assert sorted(fetched_after) == sorted(in_flight)  # exactly what the kill left
    assert second.stat("fresh/requests/new") == len(in_flight)
    final = _records(db)
    assert all(s.status is Status.IDLE and s.last_crawl is not None for s in final.values())


@pytest.mark.slow
def test_sigkill_with_commits_once_a_second_loses_no_page(
    mockserver: Any, spawn: Any, crawl: Any, tmp_path: Path
) -> None:
    """Killed between two commits: whatever the kill found committed is not fetched
    again, and every page is visited in one run or the other."""
    db = tmp_path / "s.sqlite"
    site = mockserver.MockSite(count=PAGES, linked=("n",))
    with mockserver.MockServer(site) as server:
        config = _config(server, db, FRESH_COMMIT_SECS=1.0)
        _kill_after(spawn, config, tmp_path, server, 7)
        after_kill = _records(db)
        visited = {p for p, s in after_kill.items() if s.last_crawl is not None}
        mark = len(server.site.log)
        second = _again(crawl, config, tmp_path)
        fetched_after = {r.path for r in server.site.log[mark:]}

    final = _records(db)
    assert len(final) == PAGES + 1
    assert visited.isdisjoint(fetched_after)  # nothing committed is fetched again
    assert visited | fetched_after == set(final)  # every page, in one run or the other
    assert all(s.status is Status.IDLE and s.last_crawl is not None for s in final.values())
    assert second.stat("fresh/store/regressions_refused") == 0
