"""Benchmark: enqueue + dequeue throughput of FreshScheduler against Scrapy's scheduler.

Workload (the same for both schedulers): ``--requests`` fresh GET requests (default
200,000) spread round-robin over ``--hosts`` hosts (default 100), with URLs like
``http://host{i % H}.example/page/{i}?ref=listing&lang=en&sort=recent`` (about 70
characters). Every request is built inside the timed loop and passed to
``enqueue_request()`` (the benchmark keeps no reference to it), then ``next_request()``
is called until the scheduler is empty. Throughput is ``requests / (enqueue seconds +
dequeue seconds)``.

Schedulers:

* **scrapy** -- ``scrapy.core.scheduler.Scheduler`` with its defaults
  (``DownloaderAwarePriorityQueue`` over memory queues, ``RFPDupeFilter``, no
  ``JOBDIR``), built with ``Scheduler.from_crawler()`` on a crawler from
  ``scrapy.utils.test.get_crawler`` and opened with a spider. The queue reads the
  downloader's slots to pick the least busy one, so the crawler gets a stand-in engine
  whose downloader has Scrapy's own ``Downloader.get_slot_key()`` (the host) and an
  empty ``slots`` dict (nothing is downloading), like Scrapy's own scheduler tests.
* **fresh** -- ``scrapy_fresh.scheduler.FreshScheduler`` with ``FRESH_STORE="sqlite"``
  (a new file under a temporary directory), cycle mode, no cycle budget,
  ``DOWNLOAD_DELAY=0`` and ``ROBOTSTXT_OBEY=False``. (With ``ROBOTSTXT_OBEY=True``
  the scheduler sends one request per new host and parks the others until that host's
  robots.txt is parsed or it answers -- a politeness rule that needs a downloader; with
  no downloader the drain would stop after one request per host.) Dequeued requests are
  leased (in flight) and are not recorded: no responses arrive in this benchmark.

Each scheduler runs in its own child process (a fresh interpreter), so that the memory
of one does not hide in the other's resident set. Memory per queued request is
measured after the enqueue loop and before the first dequeue, two ways:

* ``tracemalloc`` -- Python heap growth over the enqueue loop, divided by the requests
  queued (a separate, untimed run of the same workload with tracemalloc on, capped at
  ``--trace-requests``, default 20,000, because tracing slows the SQLite path about
  tenfold; the per-request figure is flat in the request count). It does not see
  SQLite's own page cache, which lives in C allocations;
* ``RSS`` -- growth of the process's resident set over the enqueue loop (in the timed
  run; includes SQLite's page cache, fragmentation and freed-but-kept memory).

The goal (the issue): FreshScheduler at least 1.0x Scrapy's default scheduler.

Usage::

    python bench/scheduler.py                     # 200,000 requests over 100 hosts
    python bench/scheduler.py --requests 20000 --hosts 10

Prints machine info, a markdown table and a PASS/MISS line on stdout.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy import Spider

ROOT = Path(__file__).resolve().parent.parent
GOAL_RATIO = 1.0


def url(i: int, hosts: int) -> str:
    return f"http://host{i % hosts}.example/page/{i}?ref=listing&lang=en&sort=recent"


def rss_bytes() -> int:
    """Current resident set size of this process (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


# -- building the schedulers ------------------------------------------------------------


def _spider_class() -> type[Spider]:
    from scrapy import Spider

    class BenchSpider(Spider):
        name = "bench"

        def parse(self, response: Any) -> Any:
            return []

    return BenchSpider


class _Downloader:
    """What DownloaderAwarePriorityQueue reads from the downloader: slot keys and slots."""

    DOWNLOAD_SLOT = "download_slot"

    def __init__(self) -> None:
        from scrapy.core.downloader import Downloader

        self.slots: dict[str, Any] = {}  # no download active
        self.ip_concurrency = False
        self._get_slot_key = Downloader.get_slot_key

    def get_slot_key(self, request: Any) -> str:
        # Scrapy's own Downloader.get_slot_key(): the request's hostname.
        return self._get_slot_key(self, request)  # type: ignore[arg-type]


class _Engine:
    def __init__(self) -> None:
        self.downloader = _Downloader()


def build_scrapy(tmp: str) -> tuple[Any, Any]:
    from scrapy.core.scheduler import Scheduler
    from scrapy.utils.test import get_crawler

    spidercls = _spider_class()
    crawler = get_crawler(spidercls, {"LOG_LEVEL": "WARNING"})
    crawler.spider = spidercls.from_crawler(crawler)
    crawler.stats.open_spider()
    crawler.engine = _Engine()  # type: ignore[assignment]
    scheduler = Scheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    return scheduler, crawler


def build_fresh(tmp: str) -> tuple[Any, Any]:
    from scrapy.utils.test import get_crawler

    from scrapy_fresh.scheduler import FreshScheduler

    spidercls = _spider_class()
    settings = {
        "LOG_LEVEL": "WARNING",
        "FRESH_STORE": "sqlite",
        "FRESH_SQLITE_PATH": str(Path(tmp) / "bench.sqlite"),
        "FRESH_MODE": "cycle",
        "FRESH_CYCLE_BUDGET": 0,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": False,
    }
    crawler = get_crawler(spidercls, settings)
    crawler.spider = spidercls.from_crawler(crawler)
    crawler.stats.open_spider()
    scheduler = FreshScheduler.from_crawler(crawler)
    scheduler.open(crawler.spider)
    return scheduler, crawler


BUILDERS = {"scrapy": build_scrapy, "fresh": build_fresh}


# -- one measurement (child process) ----------------------------------------------------


def measure(kind: str, requests: int, hosts: int, trace: bool) -> dict[str, Any]:
    from scrapy import Request

    urls = [url(i, hosts) for i in range(requests)]  # strings only: built before timing
    with tempfile.TemporaryDirectory(prefix="sched-bench-") as tmp:
        scheduler, _crawler = BUILDERS[kind](tmp)
        gc.collect()
        if trace:
            tracemalloc.start()
        heap0 = tracemalloc.get_traced_memory()[0] if trace else 0
        rss0 = rss_bytes()
        enqueue = scheduler.enqueue_request
        t0 = time.perf_counter()
        accepted = 0
        for u in urls:
            accepted += bool(enqueue(Request(u)))
        t1 = time.perf_counter()
        rss1 = rss_bytes()
        heap1 = tracemalloc.get_traced_memory()[0] if trace else 0
        if trace:
            tracemalloc.stop()
        dequeue = scheduler.next_request
        t2 = time.perf_counter()
        out = 0
        hosts_seen: set[str] = set()
        while (request := dequeue()) is not None:
            out += 1
            if out <= hosts:
                hosts_seen.add(request.url.split("/")[2])
        t3 = time.perf_counter()
        pending = scheduler.has_pending_requests()
        scheduler.close("finished")
    return {
        "kind": kind,
        "requests": requests,
        "accepted": accepted,
        "dequeued": out,
        "pending_after": pending,
        "first_hosts_distinct": len(hosts_seen),
        "enqueue_s": t1 - t0,
        "dequeue_s": t3 - t2,
        "rss_delta": rss1 - rss0,
        "heap_delta": heap1 - heap0,
    }


def run_child(kind: str, requests: int, hosts: int, trace: bool) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    cmd = [
        sys.executable,
        __file__,
        "--child",
        kind,
        "--requests",
        str(requests),
        "--hosts",
        str(hosts),
    ] + (["--trace"] if trace else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} child failed:\n{proc.stdout}\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# -- report -----------------------------------------------------------------------------


def machine_info() -> str:
    import scrapy

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import sqlite3

    return (
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"Scrapy {scrapy.__version__}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} CPUs"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200_000, help="requests (200000)")
    parser.add_argument("--hosts", type=int, default=100, help="hosts (100)")
    parser.add_argument(
        "--trace-requests",
        type=int,
        default=20_000,
        help="requests in the tracemalloc run (at most --requests; 20000)",
    )
    parser.add_argument("--child", choices=sorted(BUILDERS), help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.requests < 1 or args.hosts < 1:
        parser.error("--requests and --hosts must be at least 1")
    if args.child:
        print(json.dumps(measure(args.child, args.requests, args.hosts, args.trace)))
        return 0

    n, h = args.requests, args.hosts
    tn = max(1, min(n, args.trace_requests))
    rows: dict[str, dict[str, Any]] = {}
    for kind in ("scrapy", "fresh"):
        timed = run_child(kind, n, h, trace=False)
        traced = run_child(kind, tn, h, trace=True)
        if timed["accepted"] != n or timed["dequeued"] != n:
            raise SystemExit(
                f"{kind}: accepted {timed['accepted']}, dequeued "
                f"{timed['dequeued']} of {n} requests"
            )
        timed["heap_per_req"] = traced["heap_delta"] / tn
        rows[kind] = timed

    print(f"Machine: {machine_info()}")
    print(
        f"Workload: {n:,} fresh GET requests over {h} hosts, enqueued then drained "
        f"(tracemalloc run: {tn:,} requests).\n"
    )
    print(
        "| scheduler | enqueue req/s | dequeue req/s | enqueue+dequeue req/s "
        "| heap B/queued req (tracemalloc) | RSS B/queued req |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    names = {
        "scrapy": "Scrapy default (DownloaderAwarePriorityQueue, memory)",
        "fresh": "FreshScheduler (SQLite store)",
    }
    rate: dict[str, float] = {}
    for kind, r in rows.items():
        rate[kind] = n / (r["enqueue_s"] + r["dequeue_s"])
        print(
            f"| {names[kind]} | {n / r['enqueue_s']:,.0f} | {n / r['dequeue_s']:,.0f} "
            f"| {rate[kind]:,.0f} | {r['heap_per_req']:,.0f} | {r['rss_delta'] / n:,.0f} |"
        )
    ratio = rate["fresh"] / rate["scrapy"]
    verdict = "PASS" if ratio >= GOAL_RATIO else "MISS"
    print(
        f"\nFreshScheduler / Scrapy enqueue+dequeue throughput: {ratio:.2f}x "
        f"(goal >= {GOAL_RATIO:.1f}x): {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
