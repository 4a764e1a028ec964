"""A host that stops answering is paused, not asked for every page it has due.

A re-crawl asks a host for each of its due pages, where plain Scrapy running the same
spider stops at the start URL. With the host down (connections refused), that used to
cost Scrapy's retries for every page: 3 requests and two logged tracebacks per page, so
a store with 3,000 pages of a dead host held a cycle run for minutes. After
FRESH_UNREACHABLE_ATTEMPTS attempts in a row get no answer, the host's other pages are held
back, untouched and still due (:mod:`scrapy_fresh.crawl.reachability`).

Real crawls (tests/crawl_runner.py) against a port on 127.0.0.1 nobody listens on.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.conftest import known_record

PAGES = 60
#: CONCURRENT_REQUESTS of the test crawls: at most this many pages are out when the
#: host is paused (each tried 1 + RETRY_TIMES = 3 times).
IN_FLIGHT = 8
ATTEMPTS = 3


def known_pages(db: Path, port: int) -> list[str]:
    """A store from an earlier run: PAGES pages of the host, all due now."""
    now = time.time()
    urls = [f"http://127.0.0.1:{port}/p/{n}" for n in range(PAGES)]
    with SQLiteStore(db) as store:
        store.put_many(
            known_record(url, last_crawl=now - 2 * 86400, next_due=now - 86400, visits=4)
            for url in urls
        )
    return urls


def recrawl(crawl: Any, tmp_path: Path, port: int, name: str, **settings: Any) -> Any:
    start = [{"url": f"http://127.0.0.1:{port}/p/0"}]
    config = {
        "settings": {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(tmp_path / "state.sqlite"),
            "CONCURRENT_REQUESTS": IN_FLIGHT,
            "FRESH_VISIT_LOG": "",
            **settings,
        },
        "start": start,
    }
    # check=False: Scrapy logs each download error with its traceback.
    result = crawl(config, tmp_path / name, timeout=300, check=False)
    assert (result.returncode, result.reason) == (0, "finished"), result.log[-3000:]
    return result


@pytest.mark.slow
def test_a_dead_host_is_paused_and_its_pages_stay_due(
    crawl: Any, tmp_path: Path, closed_port: int
) -> None:
    urls = known_pages(tmp_path / "state.sqlite", closed_port)
    result = recrawl(crawl, tmp_path, closed_port, "paused")
    assert result.stat("fresh/hosts_unreachable") == 1
    tried = result.stat("downloader/request_count")
    assert tried <= 9 + 2 * IN_FLIGHT, tried  # not 3 per page: 180
    assert "did not answer 9 attempts in a row" in result.log
    with SQLiteStore(tmp_path / "state.sqlite") as store:
        records = [store.get(s.key) for s in store.iterate()]
    assert len(records) == PAGES
    failed = [r for r in records if r is not None and r.errors]
    waiting = [r for r in records if r is not None and not r.errors]
    assert len(failed) <= IN_FLIGHT
    assert len(failed) + len(waiting) == PAGES
    for record in waiting:  # untouched: due, visits as they were, not left in flight
        assert record.status is Status.IDLE
        assert record.visits == 4
        assert record.next_due < time.time()
    assert sorted(r.url for r in records if r is not None) == sorted(urls)


@pytest.mark.slow
def test_with_pausing_off_every_page_is_tried(
    crawl: Any, tmp_path: Path, closed_port: int
) -> None:
    """What the pause saves: every page of the dead host tried, with Scrapy's retries."""
    known_pages(tmp_path / "state.sqlite", closed_port)
    result = recrawl(crawl, tmp_path, closed_port, "off", FRESH_UNREACHABLE_ATTEMPTS=0)
    assert result.stat("fresh/hosts_unreachable") == 0
    assert result.stat("downloader/request_count") == ATTEMPTS * PAGES
    assert result.stat("fresh/errors") == PAGES


def test_the_setting_is_checked_at_start_up() -> None:
    from scrapy.settings import Settings

    from scrapy_fresh.config import FreshConfig
    from scrapy_fresh.exceptions import ConfigError

    config = FreshConfig.from_settings(Settings({"FRESH_UNREACHABLE_ATTEMPTS": 5}))
    assert config.unreachable_attempts == 5
    for bad in (-1, 2.5, "many"):
        with pytest.raises(ConfigError, match="FRESH_UNREACHABLE_ATTEMPTS"):
            FreshConfig.from_settings(Settings({"FRESH_UNREACHABLE_ATTEMPTS": bad}))


@pytest.mark.slow
def test_a_dead_host_paused_by_one_redis_worker_is_left_alone_by_the_next(
    crawl: Any, tmp_path: Path, closed_port: int
) -> None:
    """FRESH_STORE = "redis": the pause is shared. A worker that pauses a dead host
    tells the shared frontier, so another worker (here: the next one, started while the
    pause holds) takes none of its pages instead of trying the host all over again
    (FRESH_UNREACHABLE_ATTEMPTS more timeouts per worker). The pages stay due."""
    import redis

    from scrapy_fresh.distributed.store import RedisStore
    from tests.redis_helpers import SHARED_URL, delete_prefix, shared_client, unique_prefix

    prefix = unique_prefix("paused")
    client = shared_client()
    now = time.time()
    store = RedisStore(redis.Redis.from_url(SHARED_URL), prefix)
    urls = [f"http://127.0.0.1:{closed_port}/p/{n}" for n in range(PAGES)]
    store.put_many(
        known_record(url, last_crawl=now - 2 * 86400, next_due=now - 86400, visits=4)
        for url in urls
    )
    redis_settings = {"FRESH_STORE": "redis", "REDIS_URL": SHARED_URL, "FRESH_REDIS_KEY": prefix}
    try:
        first = recrawl(crawl, tmp_path, closed_port, "w1", **redis_settings)
        second = recrawl(crawl, tmp_path, closed_port, "w2", **redis_settings)
        records = [store.get(s.key) for s in store.iterate()]
    finally:
        delete_prefix(client, prefix)
        client.close()
    assert first.stat("fresh/hosts_unreachable") == 1
    assert first.stat("downloader/request_count") <= 9 + 2 * IN_FLIGHT
    assert second.stat("downloader/request_count") == 0, second.log[-3000:]
    assert second.stat("fresh/hosts_unreachable") == 0
    assert len(records) == PAGES
    assert all(r is not None and r.visits == 4 for r in records)  # untouched, still due
    assert all(r is not None and r.next_due < time.time() for r in records if not r.errors)
