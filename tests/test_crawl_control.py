"""The operator's controls on real crawls: schedule rules in continuous mode on the test
clock, and ``scrapy-fresh due/forget/block/unblock`` run as subprocesses against a real
SQLite store and a real Redis store, while a crawl runs against local servers and while
none runs. The servers' own request logs are the proof."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.conftest import wait_for
from tests.redis_helpers import SHARED_URL, delete_prefix, shared_client, unique_prefix

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``scrapy-fresh ARGS`` in a subprocess (outside any Scrapy project)."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy_fresh.commands", *args],
        capture_output=True, text=True, cwd=cwd, timeout=60, check=False,
    )  # fmt: skip


def utc(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc).timestamp()


@pytest.fixture
def two_sites(mockserver: ModuleType) -> Iterator[list[Any]]:
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(
                mockserver.MockServer(mockserver.MockSite(count=3, paragraphs=2, seed=k), ip)
            )
            for k, ip in enumerate(("127.0.0.2", "127.0.0.3"))
        ]


# -- schedule rules -------------------------------------------------------------------------


@pytest.mark.slow
def test_schedule_rules_are_kept_to_the_second_in_continuous_mode(
    mockserver: ModuleType, spawn: Any, tmp_path: Path
) -> None:
    """A page every 3 s, only in 06:00:00-06:00:07 UTC of the crawl's (shifted) clock:
    visited at start (a new URL), then at 06:00:00 sharp, 06:00:03, 06:00:06, and not
    again; its record is then due at the next day's opening, exactly."""
    db = tmp_path / "s.sqlite"
    start = utc("2030-01-07T05:59:54")
    opens = utc("2030-01-07T06:00:00")
    with mockserver.MockServer(mockserver.MockSite(count=1)) as server:
        url = server.url("/n/0")
        host = url_host(url)
        rule = {"host": host.split(":")[0], "every": 3, "window": "06:00-06:00:07", "tz": "UTC"}
        offset = start - time.time()
        crawl = spawn(
            {
                "settings": {
                    "ADDONS": {"scrapy_fresh.Addon": 0},
                    "FRESH_SQLITE_PATH": str(db),
                    "FRESH_MODE": "continuous",
                    "FRESH_SCHEDULE_RULES": [rule],
                },
                "start": [{"url": url, "callback": "parse_noitem"}],
                "clock_offset": offset,
            },
            tmp_path,
        )
        try:
            # until 06:00:12 on the crawl's clock: 5 s after the window closed
            time.sleep(max(0.0, opens + 12 - (time.time() + offset)))
        finally:
            crawl.process.send_signal(signal.SIGINT)
        result = crawl.finish(timeout=30)
        times = [r.time + offset for r in server.site.log]  # on the crawl's clock
    assert len(times) == 4, (times, result.log[-3000:])
    assert times[0] < opens  # the first fetch of a new URL is not held back
    for due, fetched in zip([opens, opens + 3, opens + 6], times[1:], strict=True):
        assert due <= fetched < due + 0.5, (due, fetched)  # never early, on time
    for previous, following in itertools.pairwise(times[1:]):
        assert 3.0 <= following - previous < 3.5
    with SQLiteStore(db) as store:
        (state,) = list(store.iterate())
    assert state.next_due == opens + 86400  # exactly the next day's opening


# -- the commands against a running crawl (SQLite) -------------------------------------------


@pytest.mark.slow
def test_commands_steer_a_running_crawl_on_sqlite(
    two_sites: list[Any], spawn: Any, tmp_path: Path
) -> None:
    a, b = two_sites
    db = tmp_path / "s.sqlite"
    a_url, b_url, b_slow = a.url("/n/0"), b.url("/n/0"), b.url("/n/1")
    a_host = url_host(a_url)
    crawl = spawn(
        {
            "settings": {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_SQLITE_PATH": str(db),
                "FRESH_MODE": "continuous",
                "FRESH_MIN_REFRESH_SECS": 1,
                "FRESH_DEFAULT_REFRESH_SECS": 1,
                "FRESH_MAX_REFRESH_SECS": 1,
                # b's second page only once a day: only `due` brings it back
                "FRESH_SCHEDULE_RULES": [{"match": "/n/1$", "min": "1d"}],
            },
            "start": [{"url": u, "callback": "parse_noitem"} for u in (a_url, b_url, b_slow)],
        },
        tmp_path,
    )
    try:
        assert wait_for(lambda: len(a.site.requests_for("/n/0")) >= 2, 20)
        assert len(b.site.requests_for("/n/1")) == 1
        blocked = cli("block", "--host", a_host, "--sqlite-path", str(db), cwd=tmp_path)
        assert blocked.returncode == 0, blocked.stderr
        assert f"blocked   {a_host} (1 pages known)" in blocked.stdout
        blocked_at = time.time()
        b_before = len(b.site.requests_for("/n/0"))
        time.sleep(4.0)
        late = [r.time for r in a.site.log if r.time > blocked_at + 1.5]
        assert late == []  # read within a second; one request on its way may still land
        assert len(b.site.requests_for("/n/0")) >= b_before + 2  # b goes on

        made = cli("due", b_slow, "--sqlite-path", str(db), cwd=tmp_path)
        assert made.returncode == 0, made.stderr
        assert made.stdout.splitlines()[0] == f"due now   {b_slow}"
        made_at = time.time()
        assert wait_for(lambda: len(b.site.requests_for("/n/1")) == 2, 5)
        assert b.site.requests_for("/n/1")[-1].time - made_at < 2.5

        status = cli("status", "--sqlite-path", str(db), "--json", cwd=tmp_path)
        assert f'"{a_host}"' in status.stdout.split('"blocked"')[1]

        unblocked = cli("unblock", "--host", a_host, "--sqlite-path", str(db), cwd=tmp_path)
        assert unblocked.stdout.splitlines()[0] == f"unblocked {a_host}"
        unblocked_at = time.time()
        assert wait_for(lambda: a.site.log[-1].time > unblocked_at, 5)
    finally:
        crawl.process.send_signal(signal.SIGINT)
    result = crawl.finish(timeout=30)
    # the shared frontier hands a blocked host's pages to no worker: none may have been
    # parked here (fresh/requests/blocked_host counts only those), but the block was seen
    assert f"{a_host} is blocked; its pages wait until it is unblocked" in result.log

    # and while no crawl runs
    with SQLiteStore(db) as store:  # what was learned about b_url goes with it
        store.put_meta("quiet", url_key(b_url), {"claimed_at": 1.0, "own_due": 2.0})
        store.put_meta("gone", url_key(b_url), {"last_seen": 1.0})
        store.put_meta("gone", url_key(a_url), {"last_seen": 1.0})
    forgot = cli("forget", "--host", url_host(b_url), "--sqlite-path", str(db), cwd=tmp_path)
    assert forgot.returncode == 0, forgot.stderr
    assert sorted(forgot.stdout.splitlines()[:2]) == [f"forgot    {b_url}", f"forgot    {b_slow}"]
    with SQLiteStore(db) as store:
        assert [s.url for s in store.iterate()] == [a_url]
        assert store.blocked_hosts() == {}
        assert list(store.meta("quiet")) == []
        assert [k for k, _ in store.meta("gone")] == [url_key(a_url)]
    missing = cli("due", "--match", "nothing-matches", "--sqlite-path", str(db), cwd=tmp_path)
    assert missing.returncode == 1
    bad = cli("due", "--match", "(", "--sqlite-path", str(db), cwd=tmp_path)
    assert bad.returncode == 2
    assert "--match '(' is not a regular expression" in bad.stderr


# -- Redis --------------------------------------------------------------------------------


@pytest.fixture
def prefix() -> Iterator[str]:
    client = shared_client()
    p = unique_prefix("control")
    yield p
    delete_prefix(client, p)
    client.close()


@pytest.mark.slow
def test_commands_on_a_redis_store_with_a_crawl_running(
    two_sites: list[Any], spawn: Any, tmp_path: Path, prefix: str
) -> None:
    a, b = two_sites
    a_url, b_url = a.url("/n/0"), b.url("/n/0")
    a_host = url_host(a_url)
    store_args = ("--redis-key", prefix, "-s", f"REDIS_URL={SHARED_URL}")
    crawl = spawn(
        {
            "settings": {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_STORE": "redis",
                "REDIS_URL": SHARED_URL,
                "FRESH_REDIS_KEY": prefix,
                "FRESH_MODE": "continuous",
                "FRESH_VISIT_LOG": "",
                "FRESH_MIN_REFRESH_SECS": 1,
                "FRESH_DEFAULT_REFRESH_SECS": 1,
                "FRESH_MAX_REFRESH_SECS": 1,
            },
            "start": [{"url": u, "callback": "parse_noitem"} for u in (a_url, b_url)],
        },
        tmp_path,
    )
    try:
        assert wait_for(lambda: len(a.site.log) >= 2 and len(b.site.log) >= 2, 20)
        blocked = cli("block", "--host", a_host, *store_args, cwd=tmp_path)
        assert blocked.returncode == 0, blocked.stderr
        assert blocked.stdout.splitlines()[0] == f"blocked   {a_host} (1 pages known)"
        assert f"{prefix} (127.0.0.1:6379, redis)" in blocked.stdout
        blocked_at = time.time()
        b_before = len(b.site.log)
        time.sleep(4.0)
        assert [r.time for r in a.site.log if r.time > blocked_at + 1.5] == []
        assert len(b.site.log) >= b_before + 2
        listed = cli("block", *store_args, cwd=tmp_path)
        assert listed.stdout.startswith(f"blocked   {a_host} since ")
        unblocked = cli("unblock", "--host", a_host, *store_args, cwd=tmp_path)
        assert unblocked.stdout.splitlines()[0] == f"unblocked {a_host}"
        unblocked_at = time.time()
        assert wait_for(lambda: a.site.log[-1].time > unblocked_at, 8)
    finally:
        crawl.process.send_signal(signal.SIGINT)
    result = crawl.finish(timeout=30)
    # the shared frontier hands a blocked host's pages to no worker: none may have been
    # parked here (fresh/requests/blocked_host counts only those), but the block was seen
    assert f"{a_host} is blocked; its pages wait until it is unblocked" in result.log

    # no crawl running: make a page due, then forget it
    import redis

    from scrapy_fresh.distributed.store import RedisStore

    store = RedisStore(redis.Redis.from_url(SHARED_URL), prefix)
    try:
        for url in (a_url, b_url):  # both due in a day (a 1 s refresh made them due again)
            record = store.get(url_key(url))
            assert record is not None
            assert record.status is Status.IDLE
            record.next_due = time.time() + 86400
            store.put(record)
        before = store.get(url_key(b_url))
        assert before is not None
        assert store.count_due(time.time()) == 0
        made = cli("due", b_url, a_url, *store_args, cwd=tmp_path)
        assert made.returncode == 0, made.stderr
        lines = made.stdout.splitlines()
        assert f"due now   {b_url}" in lines
        assert lines[-1] == f"2 of 2 pages made due in {prefix} (127.0.0.1:6379, redis)"
        after = store.get(url_key(b_url))
        assert after is not None
        assert after.next_due < before.next_due
        assert (after.visits, after.last_crawl) == (before.visits, before.last_crawl)
        assert store.count_due(time.time()) == 2
        forgot = cli("forget", "--match", "127\\.0\\.0\\.3", *store_args, cwd=tmp_path)
        assert forgot.stdout.splitlines() == [
            f"forgot    {b_url}", f"1 pages forgotten in {prefix} (127.0.0.1:6379, redis)"
        ]  # fmt: skip
        assert store.get(url_key(b_url)) is None
        assert len(store) == 1
    finally:
        store.close()
