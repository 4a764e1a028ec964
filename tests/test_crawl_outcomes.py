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
