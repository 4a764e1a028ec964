"""Politeness in real crawls: per-host delays, robots.txt Crawl-delay, hosts kept apart.

The server logs say when each request really arrived; the crawls use loopback addresses
127.0.0.1-3 so that each server is its own host (and its own Scrapy download slot).
"""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from typing import Any

import pytest

#: Timing tolerance for server log times (thread scheduling, clock granularity).
SLACK = 0.05


def _gaps(log: list[Any]) -> list[float]:
    times = sorted(r.time for r in log if r.path != "/robots.txt")
    return [b - a for a, b in itertools.pairwise(times)]


def _config(db: Path, start: list[dict[str, Any]], **settings: Any) -> dict[str, Any]:
    return {
        "settings": {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(db),
            **settings,
        },
        "start": start,
    }


@pytest.mark.slow
def test_download_delay_spaces_requests_per_host(
    mockserver: Any, crawl: Any, tmp_path: Path
) -> None:
    delay = 0.3
    with contextlib.ExitStack() as stack:
        a = stack.enter_context(mockserver.MockServer(mockserver.MockSite(count=5), "127.0.0.2"))
        b = stack.enter_context(mockserver.MockServer(mockserver.MockSite(count=5), "127.0.0.3"))
        start = [
            {"url": s.url(f"/n/{n}"), "callback": "parse_noitem"} for n in range(5) for s in (a, b)
        ]
        crawl(_config(tmp_path / "s.sqlite", start, DOWNLOAD_DELAY=delay), tmp_path)
        for server in (a, b):
            assert len(server.site.log) == 5
            assert min(_gaps(server.site.log)) >= delay - SLACK
        # The two hosts were crawled side by side, not one after the other.
        assert min(r.time for r in b.site.log) < max(r.time for r in a.site.log) - delay


@pytest.mark.slow
def test_crawl_delay_is_honoured_while_other_hosts_keep_flowing(
    mockserver: Any, crawl: Any, tmp_path: Path
) -> None:
    crawl_delay = 0.6
    with contextlib.ExitStack() as stack:
        slow = stack.enter_context(
            mockserver.MockServer(
                mockserver.MockSite(count=4, crawl_delay=crawl_delay), "127.0.0.2"
            )
        )
        fast = [
            stack.enter_context(mockserver.MockServer(mockserver.MockSite(count=6), host))
            for host in ("127.0.0.1", "127.0.0.3")
        ]
        start = [{"url": slow.url(f"/n/{n}"), "callback": "parse_noitem"} for n in range(4)]
        start += [
            {"url": s.url(f"/n/{n}"), "callback": "parse_noitem"} for s in fast for n in range(6)
        ]
        result = crawl(_config(tmp_path / "s.sqlite", start, ROBOTSTXT_OBEY=True), tmp_path)
        assert result.stat("fresh/new") == 16
        slow_log = slow.site.log
        assert [r.path for r in slow_log].count("/robots.txt") == 1
        pages = [r for r in slow_log if r.path != "/robots.txt"]
        assert len(pages) == 4
        assert min(_gaps(slow_log)) >= crawl_delay - SLACK
        second_slow_page = sorted(r.time for r in pages)[1]
        for server in fast:
            assert max(r.time for r in server.site.log) < second_slow_page
            # No Crawl-delay there: everything went at once.
            assert max(_gaps(server.site.log)) < crawl_delay / 2


@pytest.mark.slow
def test_long_runs_log_their_progress(mockserver: Any, crawl: Any, tmp_path: Path) -> None:
    site = mockserver.MockSite(count=8)
    with mockserver.MockServer(site) as server:
        result = crawl(
            {
                "settings": {
                    "ADDONS": {"scrapy_fresh.Addon": 0},
                    "FRESH_SQLITE_PATH": str(tmp_path / "s.sqlite"),
                    "FRESH_PROGRESS_SECS": 0.5,
                    "DOWNLOAD_DELAY": 0.4,
                },
                "start": [{"url": server.url(p)} for p in site.paths(("v",))],
            },
            tmp_path,
        )
    lines = [line for line in result.log.splitlines() if "scrapy_fresh progress:" in line]
    assert lines, result.log[-3000:]
    assert " of 8 pages left;" in lines[0]
    assert "not modified 0" in lines[0]
