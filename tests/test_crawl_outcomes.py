"""Every visit ends in exactly one recorded outcome, whatever the answer; no URL is dropped."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore

OUTCOMES = ("new", "changed", "unchanged", "not_modified", "gone", "errors")


@pytest.mark.slow
def test_gone_errors_and_timeouts_are_recorded_once_and_kept(
    mockserver: Any, crawl: Any, tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite"
    site = mockserver.MockSite(count=2, slow_secs=2.0)
    paths = ["/v/0", "/gone/0", "/gone/1", "/err/0", "/err/1", "/nothing-here"]
    with mockserver.MockServer(site) as server:
        started = time.time()
        result = crawl(
            {
                "settings": {
                    "ADDONS": {"scrapy_fresh.Addon": 0},
                    "FRESH_SQLITE_PATH": str(db),
                    "FRESH_GONE_CONFIRMATIONS": 1,
                    "FRESH_ERROR_BACKOFF_SECS": 600,
                    "DOWNLOAD_TIMEOUT": 0.5,
                    "RETRY_TIMES": 1,
                },
                "start": [{"url": server.url(p)} for p in paths],
            },
            tmp_path,
            check=False,
        )  # timeouts are logged with their tracebacks
        log = [(r.path, r.status) for r in site.log]
    assert result.returncode == 0, result.log[-3000:]
    assert result.stat("fresh/requests/new") == len(paths)
    assert sum(result.stat(f"fresh/{o}") for o in OUTCOMES) == len(paths)
    assert result.stat("fresh/new") == 1
    assert result.stat("fresh/gone") == 3  # 404, 410 and the unknown path
    assert result.stat("fresh/errors") == 2  # the 500 and the timeout, after their retry
    assert result.stat("fresh/requests/continued") == 2  # the retries continue their visits
    assert log.count(("/err/0", 500)) == 2
    store = SQLiteStore(db)
    try:
        records = {"/" + s.url.split("/", 3)[3]: s for s in store.iterate()}
    finally:
        store.close()
    assert set(records) == set(paths)  # nothing dropped
    assert records["/gone/0"].status is Status.GONE
    for path in ("/err/0", "/err/1"):
        assert records[path].status is Status.IDLE
        assert records[path].errors == 1
        assert records[path].next_due == pytest.approx(started + 600, abs=30)


@pytest.mark.slow
def test_robots_blocked_pages_are_kept_and_not_modified_skips_errbacks(
    mockserver: Any, crawl: Any, tmp_path: Path
) -> None:
    db = tmp_path / "s.sqlite"
    site = mockserver.MockSite(count=2)
    settings = {
        "ADDONS": {"scrapy_fresh.Addon": 0},
        "FRESH_SQLITE_PATH": str(db),
        "FRESH_MAX_REFRESH_SECS": 7 * 86400,
        "ROBOTSTXT_OBEY": True,
    }
    with mockserver.MockServer(site) as server:
        start = [
            {"url": server.url("/v/0"), "errback": "on_error"},
            {"url": server.url("/v/1"), "errback": "on_error",
             "meta": {"fresh_errback_not_modified": True}},
            {"url": server.url("/private/0"), "errback": "on_error"},
        ]  # fmt: skip
        first = crawl({"settings": settings, "start": start}, tmp_path)
        later = crawl({"settings": settings, "start": start, "clock_offset": 3 * 86400}, tmp_path)
        fetched = [(r.method, r.path, r.status) for r in site.log]
    # The disallowed page is never fetched; it is recorded as blocked, not as an error.
    assert not any(path.startswith("/private/") for _, path, _ in fetched)
    assert first.stat("fresh/blocked") == 1
    assert first.stat("fresh/errors") == 0
    assert first.errbacks == [[server.url("/private/0"), "IgnoreRequest"]]
    store = SQLiteStore(db)
    try:
        records = {"/" + s.url.split("/", 3)[3]: s for s in store.iterate()}
    finally:
        store.close()
    blocked = records["/private/0"]
    assert (blocked.status, blocked.errors, blocked.visits) == (Status.IDLE, 0, 0)
    # Looked at again only after FRESH_MAX_REFRESH_SECS, so not in the run 3 days later.
    assert blocked.next_due - blocked.first_seen == pytest.approx(7 * 86400, abs=60)
    assert later.stat("fresh/blocked") == 0
    # Both /v pages answered 304 in the later run; only the one that asked for it had
    # its errback called with NotModified.
    assert later.stat("fresh/not_modified") == 2
    assert later.errbacks == [[server.url("/v/1"), "NotModified"]]
