"""Paused hosts (FRESH_UNREACHABLE_ATTEMPTS) under adversarial real crawls: Redis in
cycle and continuous mode, a live host beside a dead one, nginx stopped mid-crawl and
back, robots.txt, FRESH_CYCLE_BUDGET, thousands of dead pages, HEAD checks.

Written by an adversarial review of commit fd537d8; four of them failed there:

* a Redis cycle run with a paused host did not end until the pause was over, and spun
  on Redis meanwhile (the shared frontier's next host time counted the paused host);
* the same spin in continuous mode (about 3,000 Redis commands/s against 26 idle);
* with FRESH_CYCLE_BUDGET the parked pages kept their budget and counted as in play, so
  the spare re-crawls never went out;
* more than CYCLE_MAX_LEASES (4,000) parked pages stopped the cycle source loading while
  it still counted as loading: the run hung and the live host was never fetched.

A run that hangs fails on its subprocess timeout; no test asserts a duration.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from scrapy_fresh.distributed.store import RedisStore
from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore
from tests import nginx_support
from tests.conftest import known_record, wait_for
from tests.redis_helpers import (
    SHARED_URL,
    OwnServer,
    delete_prefix,
    shared_client,
    unique_prefix,
)

PAGES = 30


def fresh_settings(**extra: Any) -> dict[str, Any]:
    """The add-on, no visit log, 8 requests at a time, and ``extra`` (the store...)."""
    return {
        "ADDONS": {"scrapy_fresh.Addon": 0},
        "FRESH_VISIT_LOG": "",
        "CONCURRENT_REQUESTS": 8,
        "DOWNLOAD_TIMEOUT": 5,
        **extra,
    }


def overdue(urls: list[str], now: float, days: float = 1.0, **fields: Any) -> list[Any]:
    """Records of pages visited 4 times, the last ``days`` + 1 days ago, due ``days`` ago."""
    return [
        known_record(
            u, last_crawl=now - (days + 1) * 86400, next_due=now - days * 86400, visits=4,
            callback="parse_item", **fields,
        )
        for u in urls
    ]  # fmt: skip


@pytest.fixture
def rprefix() -> Iterator[str]:
    client = shared_client()
    p = unique_prefix("pause")
    yield p
    delete_prefix(client, p)
    client.close()


def dead_urls(port: int, n: int = PAGES) -> list[str]:
    return [f"http://127.0.0.1:{port}/p/{k}" for k in range(n)]


def test_redis_cycle_run_with_a_dead_host_ends_and_keeps_its_pages(
    spawn: Any, tmp_path: Path, closed_port: int, rprefix: str
) -> None:
    """FRESH_STORE="redis", cycle mode, one host that refuses every connection: the
    host is paused after 9 attempts and, as the docs say, its other pages wait for the
    next run: the run ends (it does not wait out the 300 s pause), and every record is
    left idle and due, none in flight."""
    now = time.time()
    urls = dead_urls(closed_port)
    store = RedisStore(redis.Redis.from_url(SHARED_URL), rprefix)
    store.put_many(overdue(urls, now))
    config = {
        "settings": fresh_settings(
            FRESH_STORE="redis", REDIS_URL=SHARED_URL, FRESH_REDIS_KEY=rprefix
        ),
        "start": [],
    }
    crawl = spawn(config, tmp_path / "run")
    try:
        result = crawl.finish(timeout=25, check=False)
    except subprocess.TimeoutExpired:
        crawl.process.kill()
        out, err = crawl.process.communicate()
        (tmp_path / "log.txt").write_text(out + err)
        counts = store.counts()
        pytest.fail(
            f"the cycle run did not end within 25 s (counts {counts}); log tail:\n"
            + (out + err)[-3000:]
        )
    assert (result.returncode, result.reason) == (0, "finished"), result.log[-3000:]
    assert result.stat("fresh/hosts_unreachable") == 1
    counts = store.counts()
    assert counts[Status.IN_FLIGHT] == 0, counts
    records = list(store.iterate())
    assert len(records) == PAGES


# -- SQLite, cycle mode: one live host, one dead host ----------------------------------


@contextmanager
def serve_on(mockserver: Any, port: int, site: Any, host: str = "127.0.0.1") -> Iterator[Any]:
    """A MockSite on a given port (the "dead" host coming back)."""
    import threading

    httpd = mockserver._Server((host, port), site)
    thread = threading.Thread(
        target=httpd.serve_forever, daemon=True, kwargs={"poll_interval": 0.05}
    )
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def seed_sqlite(db: Path, urls: list[str], now: float) -> None:
    with SQLiteStore(db) as store:
        store.put_many(overdue(urls, now))


def sqlite_records(db: Path) -> dict[str, Any]:
    with SQLiteStore(db) as store:
        return {s.url: store.get(s.key) for s in store.iterate()}


def test_live_and_dead_host_then_dead_host_back(
    mockserver: Any, crawl: Any, tmp_path: Path, closed_port: int
) -> None:
    db = tmp_path / "state.sqlite"
    now = time.time()
    site = mockserver.MockSite(count=20, paragraphs=1, seed=3)
    with mockserver.MockServer(site, "127.0.0.2") as live:
        live_urls = [live.url(p) for p in site.paths(("n", "v"))]
        dead = [f"http://127.0.0.1:{closed_port}{p}" for p in site.paths(("n", "v"))]
        seed_sqlite(db, live_urls + dead, now)
        config = {
            "settings": fresh_settings(FRESH_SQLITE_PATH=str(db)),
            "start": [],
        }
        first = crawl(config, tmp_path / "run1", timeout=60, check=False)
        assert (first.returncode, first.reason) == (0, "finished"), first.log[-3000:]
        assert first.stat("fresh/hosts_unreachable") == 1
        got = {r.path for r in site.log if r.method == "GET"}
        assert got == set(site.paths(("n", "v")))  # the live host fully crawled
        records = sqlite_records(db)
        assert len(records) == len(live_urls) + len(dead)
        assert all(r.status is Status.IDLE for r in records.values())
        waiting = [u for u in dead if not records[u].errors]
        errored = [u for u in dead if records[u].errors]
        assert len(errored) <= 8
        for u in waiting:
            assert records[u].visits == 4
            assert records[u].next_due < time.time()
    # the dead host is back: the next run fetches every page it has waiting
    back = mockserver.MockSite(count=20, paragraphs=1, seed=3)
    with serve_on(mockserver, closed_port, back):
        second = crawl(config, tmp_path / "run2", timeout=60, check=False)
    assert (second.returncode, second.reason) == (0, "finished"), second.log[-3000:]
    fetched = {f"http://127.0.0.1:{closed_port}{r.path}" for r in back.log if r.method == "GET"}
    assert set(waiting) <= fetched, sorted(set(waiting) - fetched)[:5]
    assert second.stat("fresh/hosts_unreachable") == 0


# -- nginx stopped mid-crawl (a first crawl of a site), then back ------------------------


@pytest.mark.parametrize("LINKS", [4, 20])
def test_nginx_stopped_mid_crawl_then_back(
    spawn: Any, crawl: Any, tmp_path: Path, LINKS: int
) -> None:
    reason = nginx_support.nginx_missing_reason()
    if reason:
        pytest.skip(reason)
    pages = nginx_support.make_dense_site(tmp_path / "site", pages=200, links=LINKS)
    db = tmp_path / "state.sqlite"
    server = nginx_support.Nginx(tmp_path / "site", tmp_path / "nginx")
    server.start()
    try:
        config: dict[str, Any] = {
            "settings": fresh_settings(FRESH_SQLITE_PATH=str(db), DOWNLOAD_DELAY=0.02),
            "start": [{"url": server.url("/index.html"), "callback": "parse_links"}],
            "link_callback": "parse_links",
        }
        first = spawn(config, tmp_path / "run1")
        deadline = time.monotonic() + 20
        while len(server.requests()) < 60 and time.monotonic() < deadline:
            time.sleep(0.02)
        server.stop()
        stopped_after = len(server.requests())
        r1 = first.finish(timeout=40, check=False)
        assert (r1.returncode, r1.reason) == (0, "finished"), r1.log[-3000:]
        assert r1.stat("fresh/hosts_unreachable") == 1, r1.log[-3000:]
        assert stopped_after < len(pages)
        records = sqlite_records(db)
        assert all(r.status is not Status.IN_FLIGHT for r in records.values())
        errored = {u for u, r in records.items() if r.errors}
        assert len(errored) <= 8, len(errored)
        server.start(port=server.port)
        # past the error back-off (300 s): the pages that failed are due again too
        config = {**config, "clock_offset": 700.0}
        fetched_before = {
            x.path for x in server.requests() if x.method == "GET" and x.status == 200
        }
        r2 = crawl(config, tmp_path / "run2", timeout=60, check=False)
        assert (r2.returncode, r2.reason) == (0, "finished"), r2.log[-3000:]
        fetched = {x.path for x in server.requests() if x.method == "GET" and x.status == 200}
        missing = set(pages) - fetched
        assert not missing, (
            len(missing),
            sorted(missing)[:10],
            len(fetched_before),
            r2.log[-2000:],
        )
    finally:
        server.stop()


# -- ROBOTSTXT_OBEY with a dead host -------------------------------------------------------


@pytest.mark.parametrize("live", [False, True])
def test_robots_obey_with_a_dead_host(
    mockserver: Any, crawl: Any, tmp_path: Path, closed_port: int, live: bool
) -> None:
    db = tmp_path / "state.sqlite"
    now = time.time()
    site = mockserver.MockSite(count=20, paragraphs=1, seed=3)
    with mockserver.MockServer(site, "127.0.0.2") as server:
        live_urls = [server.url(p) for p in site.paths(("n", "v"))] if live else []
        dead = [f"http://127.0.0.1:{closed_port}/p/{k}" for k in range(60)]
        seed_sqlite(db, live_urls + dead, now)
        config = {
            "settings": fresh_settings(FRESH_SQLITE_PATH=str(db), ROBOTSTXT_OBEY=True),
            "start": [],
        }
        result = crawl(config, tmp_path / "run", timeout=60, check=False)
    assert (result.returncode, result.reason) == (0, "finished"), result.log[-3000:]
    assert result.stat("fresh/hosts_unreachable") == 1, result.log[-3000:]
    tried = result.stat("downloader/request_count") - len(live_urls)
    assert tried <= 9 + 2 * 8 + 3, tried  # + robots.txt tries
    if live:
        assert {r.path for r in site.log if r.method == "GET" and r.path != "/robots.txt"} == set(
            site.paths(("n", "v"))
        )
    records = sqlite_records(db)
    assert all(r.status is Status.IDLE for r in records.values())
    assert sum(1 for u in dead if records[u].errors) <= 8
    assert all(records[u].next_due < time.time() for u in dead if not records[u].errors)


# -- continuous mode: the pause ends, the pages go out again -------------------------------


def test_continuous_pause_ends_and_pages_go_out_again(
    mockserver: Any, spawn: Any, tmp_path: Path, closed_port: int
) -> None:
    db = tmp_path / "state.sqlite"
    now = time.time()
    dead = [f"http://127.0.0.1:{closed_port}/n/{k}" for k in range(20)]
    seed_sqlite(db, dead, now)
    config = {
        "settings": fresh_settings(
            FRESH_SQLITE_PATH=str(db), FRESH_MODE="continuous", FRESH_ERROR_BACKOFF_SECS=2
        ),
        "start": [],
    }
    proc = spawn(config, tmp_path / "run")
    site = mockserver.MockSite(count=20, paragraphs=1, seed=3)
    try:
        time.sleep(3.0)  # paused (2 s), tried again, paused again (4 s)
        with serve_on(mockserver, closed_port, site):
            ok = wait_for(
                lambda: (
                    {r.path for r in site.log if r.method == "GET"}
                    >= {f"/n/{k}" for k in range(20)}
                ),
                timeout=15,
            )
            proc.process.send_signal(signal.SIGINT)
            result = proc.finish(timeout=30, check=False)
    finally:
        if proc.process.poll() is None:
            proc.process.kill()
    got = {r.path for r in site.log if r.method == "GET"}
    assert ok, (sorted({f"/n/{k}" for k in range(20)} - got), result.log[-3000:])
    assert result.stat("fresh/hosts_unreachable") >= 1
    records = sqlite_records(db)
    assert all(r.status is not Status.IN_FLIGHT for r in records.values())


# -- Redis, continuous mode: what a worker does while a host is paused ---------------------


def test_redis_continuous_worker_idles_while_a_host_is_paused_then_resumes(
    mockserver: Any, spawn: Any, tmp_path: Path, closed_port: int
) -> None:
    """While the only host with due pages is paused, a continuous-mode worker has
    nothing to do: it should poll Redis at the blocked-hosts poll pace (about once a
    second), not spin. When the pause ends and the host answers, its pages go out."""
    (tmp_path / "redis").mkdir()
    server = OwnServer(tmp_path / "redis")
    server.start()
    url = f"redis://127.0.0.1:{server.port}/0"
    client = redis.Redis.from_url(url)
    try:
        now = time.time()
        dead = [f"http://127.0.0.1:{closed_port}/n/{k}" for k in range(20)]
        RedisStore(client, "pause").put_many(overdue(dead, now))
        config = {
            "settings": fresh_settings(
                FRESH_STORE="redis",
                REDIS_URL=url,
                FRESH_REDIS_KEY="pause",
                FRESH_MODE="continuous",
                FRESH_ERROR_BACKOFF_SECS=6,
            ),
            "start": [],
        }
        proc = spawn(config, tmp_path / "run")
        site = mockserver.MockSite(count=20, paragraphs=1, seed=3)
        try:
            assert wait_for(lambda: _paused(client), 15)
            time.sleep(1.0)
            before = client.info("stats")["total_commands_processed"]
            time.sleep(2.0)
            rate = (client.info("stats")["total_commands_processed"] - before) / 2.0
            with serve_on(mockserver, closed_port, site):
                ok = wait_for(
                    lambda: (
                        {r.path for r in site.log if r.method == "GET"}
                        >= {f"/n/{k}" for k in range(20)}
                    ),
                    timeout=15,
                )
                proc.process.send_signal(signal.SIGINT)
                result = proc.finish(timeout=30, check=False)
        finally:
            if proc.process.poll() is None:
                proc.process.kill()
                proc.process.wait()
        got = {r.path for r in site.log if r.method == "GET"}
        assert ok, (sorted({f"/n/{k}" for k in range(20)} - got), result.log[-3000:])
        assert result.stat("fresh/hosts_unreachable") >= 1
        assert rate < 100, f"{rate:.0f} Redis commands/s while the only host was paused"
    finally:
        client.close()
        server.stop()


def _paused(client: Any) -> bool:
    """The worker paused the host: every record is back in the shared frontier, none
    in flight, after at least one download attempt (a record was given back)."""
    counts = RedisStore(client, "pause").counts()
    return counts[Status.IN_FLIGHT] == 0 and client.get("pause:leaseno") is not None


# -- FRESH_CYCLE_BUDGET: a paused host's parked pages and the budget ------------------------


def _budget_run(mockserver: Any, crawl: Any, workdir: Path, attempts: int) -> tuple[int, Any]:
    """Cycle run with FRESH_CYCLE_BUDGET 40 over a store of 30 long-overdue pages of a
    dead host and 40 due pages of a live one; return how many live pages were fetched."""
    workdir.mkdir(parents=True)
    db = workdir / "state.sqlite"
    now = time.time()
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        site = mockserver.MockSite(count=20, paragraphs=1, seed=3)
        with mockserver.MockServer(site, "127.0.0.2") as live:
            with SQLiteStore(db) as store:
                store.put_many(
                    overdue([f"http://127.0.0.1:{port}/n/{k}" for k in range(30)], now, 10)
                )
            seed_sqlite(db, [live.url(p) for p in site.paths(("n", "v"))], now)
            config = {
                "settings": fresh_settings(
                    FRESH_SQLITE_PATH=str(db),
                    FRESH_CYCLE_BUDGET=40,
                    FRESH_UNREACHABLE_ATTEMPTS=attempts,
                ),
                "start": [],
            }
            result = crawl(config, workdir / "run", timeout=60, check=False)
            assert (result.returncode, result.reason) == (0, "finished"), result.log[-3000:]
            fetched = len({r.path for r in site.log if r.method == "GET"})
    return fetched, result


def test_budget_a_paused_host_does_not_starve_the_live_host(
    mockserver: Any, crawl: Any, tmp_path: Path
) -> None:
    """The budget plan takes the dead host's 30 pages and 2 of the live host's (8 units
    kept for new URLs; the next re-crawls are spare, handed out when the run is idle).
    With the pause off, the dead pages fail and the spare goes out: 10 live pages. With
    the pause on, the dead host's parked leases keep the run from ever being idle
    (FreshScheduler.idle() counts them) and keep their budget unfetched: the spare
    never goes out and the live host gets fewer pages than without the pause.
    (An operator-blocked host is left out of the plan at open for this reason:
    BudgetSource.open, "their pages would spend budget unfetched".)"""
    off, _ = _budget_run(mockserver, crawl, tmp_path / "off", attempts=0)
    on, result = _budget_run(mockserver, crawl, tmp_path / "on", attempts=9)
    assert result.stat("fresh/hosts_unreachable") == 1
    assert on >= off, (
        f"live pages fetched: {on} with the pause, {off} without; "
        f"{result.stat('fresh/requests/blocked_host')} dead-host pages parked"
    )


# -- cycle mode: more parked pages than the lease cap ---------------------------------------


def test_cycle_run_with_thousands_of_dead_pages_ends_and_fetches_the_live_host(
    mockserver: Any, spawn: Any, tmp_path: Path, closed_port: int
) -> None:
    """A store with 4,100 due pages of a dead host (the docs' example has 3,000), more
    overdue than the 20 pages of a live host. The cycle source loads due records in
    batches of 1,000 while fewer than CYCLE_MAX_LEASES (4,000) are leased; the paused
    host's parked pages stay leased, so loading stops at 4,000 with the live host's
    records never read, yet the source still counts as loading
    (has_pending_requests() is True): the run neither fetches the live host nor ends
    until the 300 s pause is over."""
    db = tmp_path / "state.sqlite"
    now = time.time()
    site = mockserver.MockSite(count=10, paragraphs=1, seed=3)
    with mockserver.MockServer(site, "127.0.0.2") as live:
        with SQLiteStore(db) as store:
            store.put_many(
                known_record(
                    f"http://127.0.0.1:{closed_port}/n/{k}",
                    last_crawl=now - 20 * 86400,
                    next_due=now - 10 * 86400 + k,
                    visits=4,
                    callback="parse_item",
                )
                for k in range(4100)
            )
        live_urls = [live.url(p) for p in site.paths(("n", "v"))]
        seed_sqlite(db, live_urls, now)
        config = {
            "settings": fresh_settings(FRESH_SQLITE_PATH=str(db), FRESH_CYCLE_LOOKAHEAD_SECS=0),
            "start": [],
        }
        proc = spawn(config, tmp_path / "run")
        try:
            result = proc.finish(timeout=25, check=False)
        except subprocess.TimeoutExpired:
            proc.process.kill()
            out, err = proc.process.communicate()
            got = len({r.path for r in site.log if r.method == "GET"})
            pytest.fail(
                f"the run did not end in 25 s; {got} of {len(live_urls)} live pages "
                f"fetched; log tail:\n{(out + err)[-1500:]}"
            )
    assert (result.returncode, result.reason) == (0, "finished"), result.log[-3000:]
    assert {r.path for r in site.log if r.method == "GET"} == set(site.paths(("n", "v")))


# -- HEAD probes (FRESH_CHECK="head") at a dead host ----------------------------------------


def test_head_probes_at_a_dead_host(
    mockserver: Any, crawl: Any, tmp_path: Path, closed_port: int
) -> None:
    db = tmp_path / "state.sqlite"
    now = time.time()
    dead = [f"http://127.0.0.1:{closed_port}/v/{k}" for k in range(60)]
    with SQLiteStore(db) as store:
        store.put_many(
            overdue(dead, now, etag='"abc"', last_modified="Wed, 21 Oct 2015 07:28:00 GMT")
        )
    config = {
        "settings": fresh_settings(FRESH_SQLITE_PATH=str(db), FRESH_CHECK="head"),
        "start": [],
    }
    result = crawl(config, tmp_path / "run", timeout=60, check=False)
    assert (result.returncode, result.reason) == (0, "finished"), result.log[-3000:]
    assert result.stat("fresh/hosts_unreachable") == 1, result.log[-3000:]
    assert result.stat("downloader/request_count") <= 9 + 4 * 8, result.stats
    records = sqlite_records(db)
    assert all(r.status is Status.IDLE for r in records.values())
    untouched = [r for r in records.values() if not r.errors]
    assert len(untouched) >= 60 - 8
    assert all(r.visits == 4 and r.etag == '"abc"' for r in untouched)
