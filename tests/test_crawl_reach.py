"""Every page plain Scrapy reaches is reached, and a cycle run ends when plain Scrapy's
would (issue 14): refused hosts, long Retry-After back-offs, HTTPCACHE_ENABLED, and
Scrapy's own sitemap and feed spiders.

Real crawls in subprocesses (tests/crawl_runner.py) against servers on 127.0.0.1.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

#: A DOWNLOAD_TIMEOUT no run of these tests should come near: only a run that waits for
#: a download timeout (or a long back-off) crosses it.
LONG_SECS = 60.0


def _fresh(db: Path, **settings: Any) -> dict[str, Any]:
    return {"ADDONS": {"scrapy_fresh.Addon": 0}, "FRESH_SQLITE_PATH": str(db), **settings}


def _elapsed(result: Any) -> float:
    return float(result.stats["elapsed_time_seconds"])


@pytest.mark.slow
def test_a_host_refusing_connections_fails_as_fast_as_in_plain_scrapy(
    crawl: Any, tmp_path: Path
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = closed.getsockname()[1]
        start = [
            {"url": f"http://127.0.0.1:{port}/p/{n}", "errback": "on_error"} for n in range(3)
        ]
        settings = {"ROBOTSTXT_OBEY": True, "DOWNLOAD_TIMEOUT": LONG_SECS}
        # check=False: Scrapy logs the robots.txt download error with its traceback.
        plain = crawl({"settings": settings, "start": start}, tmp_path / "plain", check=False)
        fresh = crawl(
            {"settings": _fresh(tmp_path / "s.sqlite", **settings), "start": start},
            tmp_path / "fresh",
            timeout=3 * LONG_SECS,
            check=False,
        )
    assert (plain.returncode, fresh.returncode) == (0, 0), fresh.log[-3000:]
    assert (plain.reason, fresh.reason) == ("finished", "finished")
    # Before the fix the robots gate kept the retries parked for DOWNLOAD_TIMEOUT + 5 s.
    assert _elapsed(fresh) < LONG_SECS
    assert sorted(fresh.errbacks) == sorted(plain.errbacks)
    assert len(fresh.errbacks) == 3
    for name in ("retry/count", "downloader/exception_count", "robotstxt/request_count"):
        assert fresh.stat(name) == plain.stat(name), name
    assert fresh.stat("fresh/errors") == 3
