"""Real crawls of several worker processes sharing one Redis (FRESH_STORE = "redis").

Eight local sites (hosts 127.0.0.2-9) of 252 pages each, 2,016 pages in all, crawled
by three ``scrapy crawl`` processes (tests/crawl_runner.py). The sites' own request
logs are the proof: which page was fetched, when, and how many times.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
import redis

from scrapy_fresh.crawl.visits import OUTCOME_STATS
from scrapy_fresh.distributed.frontier import RedisFrontier
from scrapy_fresh.distributed.shared import PULL_BATCH
from scrapy_fresh.distributed.store import RedisStore
from scrapy_fresh.store.base import Status
from tests.redis_helpers import (
    SHARED_URL,
    OwnServer,
    delete_prefix,
    shared_client,
    unique_prefix,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from types import ModuleType

PAGES_PER_FAMILY = 42  # x 6 families x 8 sites = 2,016 pages
FAMILIES = ("v", "i", "n", "c", "w", "r")
DELAY = 0.05
WORKERS = 3


@pytest.fixture
def prefix() -> Iterator[str]:
    client = shared_client()
    p = unique_prefix("crawl")
    yield p
    delete_prefix(client, p)
    client.close()


@pytest.fixture
def sites(mockserver: ModuleType) -> Iterator[list[Any]]:
    with contextlib.ExitStack() as stack:
        servers = []
        for k in range(8):
            site = mockserver.MockSite(count=PAGES_PER_FAMILY, paragraphs=2, seed=k,
                                       linked=FAMILIES)  # fmt: skip
            servers.append(stack.enter_context(mockserver.MockServer(site, f"127.0.0.{k + 2}")))
        yield servers


def settings(prefix: str, url: str = SHARED_URL, lease: float = 60.0) -> dict[str, Any]:
    return {
        "ADDONS": {"scrapy_fresh.Addon": 0},
        "FRESH_STORE": "redis",
        "REDIS_URL": url,
        "FRESH_REDIS_KEY": prefix,
        "FRESH_REDIS_LEASE_SECS": lease,
        "FRESH_CHECK": "conditional",
        "FRESH_VISIT_LOG": "",
        "DOWNLOAD_DELAY": DELAY,
        "CONCURRENT_REQUESTS": 8,
        "DOWNLOAD_TIMEOUT": 10,
        "LOG_LEVEL": "INFO",
    }


def start_workers(spawn: Callable[..., Any], servers: list[Any], config: dict[str, Any],
                  workdir: Path, offset: float = 0.0) -> list[Any]:  # fmt: skip
    start = [{"url": s.url("/"), "callback": "parse_links"} for s in servers]
    return [
        spawn({"settings": config, "start": start, "clock_offset": offset}, workdir / f"w{w}")
        for w in range(WORKERS)
    ]


def gets(servers: list[Any], since: list[int]) -> list[list[Any]]:
    """The GETs each site logged after position ``since[i]`` of its log."""
    out = []
    for server, first in zip(servers, since, strict=True):
        with server.site.lock:
            out.append([r for r in server.site.log[first:] if r.method == "GET"])
    return out


def expected_paths(server: Any) -> set[str]:
    return {"/", *server.site.paths(FAMILIES)}


def check_polite(requests: list[Any]) -> None:
    """DOWNLOAD_DELAY holds per host across the workers: one request at a time, the next
    one at least a delay after the previous answer (times are the server's answers).

    Without the shared per-host state three workers would each keep the delay on their
    own: about three requests per delay.
    """
    times = sorted(r.time for r in requests)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= DELAY * 0.9, sorted(gaps)[:5]


def test_three_workers_two_cycles(
    sites: list[Any], spawn: Callable[..., Any], tmp_path: Path, prefix: str
) -> None:
    config = settings(prefix)
    for cycle, offset in enumerate((0.0, 2 * 86400.0)):  # the second cycle: two days later
        since = [len(s.site.log) for s in sites]
        workers = start_workers(spawn, sites, config, tmp_path / f"cycle{cycle}", offset)
        results = [w.finish(timeout=300) for w in workers]
        for server, logged in zip(sites, gets(sites, since), strict=True):
            counts = Counter(r.path for r in logged)
            assert set(counts) == expected_paths(server)  # every due page was fetched
            assert set(counts.values()) == {1}, counts.most_common(3)  # exactly once
            check_polite(logged)
        fetched = [r.stat("fresh/requests/new") + r.stat("fresh/requests/refresh")
                   for r in results]  # fmt: skip
        assert sum(fetched) == len(sites) * (len(FAMILIES) * PAGES_PER_FAMILY + 1)
        assert all(fetched), fetched  # the work was shared
    store = RedisStore(redis.Redis.from_url(SHARED_URL), prefix)
    counts = store.counts()
    assert counts[Status.IDLE] == len(sites) * (len(FAMILIES) * PAGES_PER_FAMILY + 1)
    assert counts[Status.IN_FLIGHT] == counts[Status.QUEUED] == 0


def test_killed_worker_leases_come_back(
    sites: list[Any], spawn: Callable[..., Any], tmp_path: Path, prefix: str
) -> None:
    lease = 4.0
    workers = start_workers(spawn, sites, settings(prefix, lease=lease), tmp_path)
    deadline = time.monotonic() + 120
    while sum(len(s.site.log) for s in sites) < 400 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(workers[0].process.pid, signal.SIGKILL)
    workers[0].process.communicate()  # closes its pipes
    killed_at = time.time()
    for worker in workers[1:]:
        worker.finish(timeout=300)
    store = RedisStore(redis.Redis.from_url(SHARED_URL), prefix)
    counts = store.counts()
    assert counts[Status.IN_FLIGHT] == counts[Status.QUEUED] == 0  # nothing lost
    twice = 0
    for server, logged in zip(sites, gets(sites, [0] * len(sites)), strict=True):
        by_path: dict[str, list[float]] = {}
        for r in logged:
            by_path.setdefault(r.path, []).append(r.time)
        assert set(by_path) == expected_paths(server)
        for times in by_path.values():
            if len(times) > 1:  # fetched again only once the dead worker's lease ran out
                twice += 1
                assert len(times) == 2
                assert times[1] >= killed_at - 1.0
                assert times[1] - times[0] >= lease * 0.9
    assert counts[Status.IDLE] == len(sites) * (len(FAMILIES) * PAGES_PER_FAMILY + 1)
    assert twice <= PULL_BATCH + 8  # at most what the dead worker held


def test_redis_restart_mid_crawl(
    sites: list[Any], spawn: Callable[..., Any], tmp_path: Path
) -> None:
    data = tmp_path / "redis"
    data.mkdir()
    server = OwnServer(data, "--appendonly", "yes", "--appendfsync", "always")
    server.start()
    url = f"redis://127.0.0.1:{server.port}/0"
    try:
        workers = start_workers(spawn, sites, settings("restart", url, lease=10.0), tmp_path)
        deadline = time.monotonic() + 120
        while sum(len(s.site.log) for s in sites) < 500 and time.monotonic() < deadline:
            time.sleep(0.05)
        server.stop()  # SIGTERM: Redis writes its append-only file and exits
        time.sleep(2.0)
        server.start()
        results = [w.finish(timeout=300) for w in workers]
        where = f"Redis at 127.0.0.1:{server.port}"  # the log names the server
        assert any(f"{where} is unreachable" in r.log for r in results)
        assert any(f"{where} answers again" in r.log for r in results)
        store = RedisStore(redis.Redis.from_url(url), "restart")
        counts = store.counts()
        assert counts[Status.IN_FLIGHT] == counts[Status.QUEUED] == 0
        assert counts[Status.IDLE] == len(sites) * (len(FAMILIES) * PAGES_PER_FAMILY + 1)
        for srv, logged in zip(sites, gets(sites, [0] * len(sites)), strict=True):
            assert {r.path for r in logged} == expected_paths(srv)
        assert all(s.last_crawl is not None for s in store.iterate())  # every visit written
    finally:
        server.stop()


# -- two workers on one host: every visit counted once -------------------------------------

JUDGED = ("fresh/changed", "fresh/unchanged", "fresh/not_modified")


def test_two_workers_on_one_host_count_every_visit_once(
    mockserver: ModuleType, spawn: Callable[..., Any], tmp_path: Path, prefix: str
) -> None:
    """Two ``scrapy crawl`` processes, one host, no download delay: their visits to the
    host's pages are written at the same moments. Every page is fetched once per cycle
    and its record counts that visit once; the host's site record adds up every judged
    visit of both workers (visits, changes, the 304s among its validator counters) --
    written by compare-and-set, none is lost to the other worker's write."""
    site = mockserver.MockSite(count=40, paragraphs=2, seed=11, linked=FAMILIES)
    config = {**settings(prefix), "DOWNLOAD_DELAY": 0}
    client = redis.Redis.from_url(SHARED_URL)
    store = RedisStore(client, prefix)
    pages = len(FAMILIES) * 40 + 1
    with mockserver.MockServer(site, "127.0.0.1") as server:
        start = [{"url": server.url("/"), "callback": "parse_links"}]
        host = f"127.0.0.1:{server.port}"
        results = []
        for cycle, offset in enumerate((0.0, 2 * 86400.0)):  # the second: two days later
            if cycle == 1:
                for n in range(0, 40, 3):  # real changes, seen by the second cycle
                    site.change(f"/n/{n}")
                    site.change(f"/v/{n}")
            since = len(site.log)
            workers = [
                spawn(
                    {"settings": config, "start": start, "clock_offset": offset},
                    tmp_path / f"cycle{cycle}-w{w}",
                )
                for w in range(2)
            ]
            done = [w.finish(timeout=300) for w in workers]
            results.append(done)
            with site.lock:
                logged = [r for r in site.log[since:] if r.method == "GET"]
            counts = Counter(r.path for r in logged)
            assert set(counts) == expected_paths(server)
            assert set(counts.values()) == {1}, counts.most_common(3)  # once per cycle
            assert all(r.stat("fresh/new") + sum(r.stat(s) for s in JUDGED) for r in done)
            assert sum(r.stat("fresh/redis/lease_lost") for r in done) == 0
        first, second = results
        assert sum(r.stat("fresh/new") for r in first) == pages
        judged = {s: sum(r.stat(s) for r in second) for s in JUDGED}
        assert sum(judged.values()) == pages  # every page judged once in the second cycle
        assert judged["fresh/changed"] >= 2 * len(range(0, 40, 3))
        assert judged["fresh/not_modified"] > 0
        records = list(store.iterate())
        assert len(records) == pages
        assert all(s.visits == 1 and s.status is Status.IDLE for s in records)
        assert sum(s.changes for s in records) == judged["fresh/changed"]
        record = store.get_site(host)
        assert record is not None
        assert (record.visits, record.changes) == (pages, judged["fresh/changed"])
        assert record.checks["not_modified"] == judged["fresh/not_modified"]
        outcomes = RedisFrontier(store).outcomes()
        for outcome, stat in OUTCOME_STATS.items():
            assert outcomes[outcome] == sum(r.stat(stat) for r in first + second), outcome
    retries = [r.stat("fresh/redis/site_retries") for r in results[1]]
    print("site retries per worker, second cycle:", retries)
