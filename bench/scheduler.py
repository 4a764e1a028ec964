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
* **fresh** -- ``scrapy_fresh.crawl.scheduler.FreshScheduler`` with ``FRESH_STORE="sqlite"``
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

``--cycle`` measures something else: what opening a cycle costs over a big store.
A SQLite store of ``--records`` visited records (default 10,000 and 100,000) over
``--hosts`` hosts, four in five of them due, is opened in cycle mode by FreshScheduler
as it is (due records read in batches, or one pass keeping the budget's best) and by
``AllInMemoryScheduler`` below, the former code (every due record, and with the fill
every record, read into memory at open). Each run gets its own copy of the store and
its own child process. Three cases: no budget; ``FRESH_CYCLE_BUDGET`` 1,000 with
:setting:`FRESH_CYCLE_FILL` (every record is a candidate); and the whole cycle without
a budget (open, then every due page handed out and its visit recorded as not modified,
16 at a time, as a downloader would). Reported: the seconds (timed run) and the peak
Python heap (``tracemalloc``, a separate run), old / new as ratios. The engine is not
running, so the schedulers' wake-up timers are switched off (the loop asks them
directly).

Usage::

    python bench/scheduler.py                     # 200,000 requests over 100 hosts
    python bench/scheduler.py --requests 20000 --hosts 10
    python bench/scheduler.py --cycle             # stores of 10,000 and 100,000 records
    python bench/scheduler.py --cycle --records 50000

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

    from scrapy_fresh.crawl.scheduler import FreshScheduler

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


# -- cycle mode over a big store (--cycle) ------------------------------------------------

CYCLE_BUDGET = 1000
CYCLE_CASES = ("open", "open-budget", "cycle")


def _all_in_memory_class() -> type[Any]:
    """FreshScheduler with the former cycle loading: every due record (with the fill,
    every record) read into memory at open, verbatim."""
    import math

    from scrapy_fresh.crawl.scheduler import FreshScheduler
    from scrapy_fresh.crawl.sources import BudgetSource
    from scrapy_fresh.frontier.scoring import priority_score

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.budget_oracle import rank_for_budget  # the former rule, all in memory

    class AllInMemorySource(BudgetSource):
        def open(self, now: float, cut: float) -> int:
            self.cut = cut
            store = self.runtime.store
            total = len(store)
            due = store.due(cut, total) if total else []
            if cut > now:
                due = [
                    s for s in due if s.next_due <= now or self.scheduler.may_take_early(s, now)
                ]
            params = self.runtime.score_params
            scored = [(priority_score(s, now, params), i, s) for i, s in enumerate(due)]
            scored.sort(key=lambda t: (-t[0], t[1]))
            new = [(score, s) for score, _, s in scored if s.last_crawl is None]
            old = [(score, s) for score, _, s in scored if s.last_crawl is not None]
            budget = self.config.cycle_budget
            if budget:
                reserve = round(budget * self.config.new_url_share)
                waiting = []
                if params.fill:
                    waiting = [
                        s
                        for s in store.due(math.inf, len(store))
                        if s.next_due > cut and s.last_crawl is not None and not s.errors
                    ]
                old = rank_for_budget([s for _, s in old], waiting, now, budget - reserve, params)
                take_old = min(len(old), budget - reserve)
                take_new = min(len(new), budget - take_old)
                self.spare = old[take_old:]
                self.budget_left = budget - take_old - take_new
                old, new = old[:take_old], new[:take_new]
            self.scheduler.admit(old + new, now)
            return len(old) + len(new)

        def may_admit(self, state: Any) -> bool:
            return super().may_admit(state) if self.config.cycle_budget else True

        def top_up(self, now: float) -> bool:
            return super().top_up(now) if self.config.cycle_budget else False

    class AllInMemoryScheduler(FreshScheduler):
        def _make_source(self) -> Any:
            return AllInMemorySource(self)

    return AllInMemoryScheduler


def build_cycle_store(path: Path, records: int, hosts: int) -> None:
    """Visited records, four in five due (in the last day), the rest in one to two days."""
    import random

    from scrapy_fresh.keys import url_host, url_key
    from scrapy_fresh.store.base import PageState, Status
    from scrapy_fresh.store.sqlite import SQLiteStore

    rng = random.Random(1)
    now = time.time()
    store = SQLiteStore(path)
    batch: list[PageState] = []
    for i in range(records):
        u = url(i, hosts)
        due = i % 5 != 0
        batch.append(
            PageState(
                key=url_key(u),
                url=u,
                host=url_host(u),
                status=Status.IDLE,
                first_seen=now - 30 * 86400,
                last_crawl=now - 2 * 86400,
                next_due=now - rng.random() * 86400 if due else now + (1 + rng.random()) * 86400,
                visits=5,
                p_c=rng.random(),
                access_count=rng.randrange(4),
                etag=f'"{i:x}"',
                request={"url": u, "callback": "parse"},
            )
        )
        if len(batch) == 5000:
            store.put_many(batch)
            batch.clear()
    store.put_many(batch)
    store.close()


def measure_cycle(impl: str, case: str, path: str, trace: bool) -> dict[str, Any]:
    from scrapy.utils.test import get_crawler

    from scrapy_fresh.crawl.runtime import FreshRuntime
    from scrapy_fresh.crawl.scheduler import FreshScheduler
    from scrapy_fresh.outcome import Outcome

    spidercls = _spider_class()
    settings = {
        "LOG_LEVEL": "WARNING",
        "FRESH_STORE": "sqlite",
        "FRESH_SQLITE_PATH": path,
        "FRESH_MODE": "cycle",
        "FRESH_CYCLE_BUDGET": CYCLE_BUDGET if case == "open-budget" else 0,
        "FRESH_NEW_URL_SHARE": 0.0,
        "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": False,
    }
    crawler = get_crawler(spidercls, settings)
    crawler.spider = spidercls.from_crawler(crawler)
    crawler.stats.open_spider()
    runtime = FreshRuntime.of(crawler)
    records = len(runtime.store)  # opened before the measurement
    cls = FreshScheduler if impl == "new" else _all_in_memory_class()
    scheduler = cls.from_crawler(crawler)
    scheduler._arm_timer = lambda now: None  # no engine to wake: the loop below asks
    gc.collect()
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    scheduler.open(crawler.spider)
    t1 = time.perf_counter()
    leased = len(runtime.leases)
    handed = 0
    if case == "cycle":
        downloading: list[Any] = []
        while scheduler.has_pending_requests() or downloading:
            request = scheduler.next_request()
            if request is not None:
                downloading.append(request)
                handed += 1
            if downloading and (len(downloading) == 16 or request is None):
                runtime.visits.record_outcome(downloading.pop(0).meta, Outcome.NOT_MODIFIED)
    t2 = time.perf_counter()
    peak = tracemalloc.get_traced_memory()[1] if trace else 0
    if trace:
        tracemalloc.stop()
    scheduler.close("finished")
    return {
        "impl": impl,
        "case": case,
        "records": records,
        "leased_at_open": leased,
        "handed": handed,
        "open_s": t1 - t0,
        "total_s": t2 - t0,
        "peak": peak,
    }


def run_cycle_child(impl: str, case: str, store: Path, trace: bool) -> dict[str, Any]:
    import shutil

    with tempfile.TemporaryDirectory(prefix="cycle-bench-") as tmp:
        copy = Path(tmp) / "store.sqlite"
        shutil.copy(store, copy)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        cmd = [sys.executable, __file__, "--cycle-child", impl, case, str(copy)]
        cmd += ["--trace"] if trace else []
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{impl} {case} child failed:\n{proc.stdout}\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main_cycle(sizes: list[int], hosts: int) -> int:
    print(f"Machine: {machine_info()}")
    print(
        f"Cycle mode over SQLite stores of visited records on {hosts} hosts, 4 in 5 due; "
        f"budget case: FRESH_CYCLE_BUDGET={CYCLE_BUDGET} with the fill.\n"
    )
    print(
        "| records | case | old s | new s | old/new time | old peak MB | new peak MB "
        "| old/new peak | leased at open old / new |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="cycle-store-") as tmp:
            store = Path(tmp) / "store.sqlite"
            build_cycle_store(store, n, hosts)
            for case in CYCLE_CASES:
                row = {}
                for impl in ("old", "new"):
                    timed = run_cycle_child(impl, case, store, trace=False)
                    traced = run_cycle_child(impl, case, store, trace=True)
                    if case == "cycle" and timed["handed"] != n - n // 5:
                        raise SystemExit(f"{impl}: handed {timed['handed']} of {n - n // 5}")
                    timed["peak"] = traced["peak"]
                    row[impl] = timed
                key = "open_s" if case != "cycle" else "total_s"
                old, new = row["old"], row["new"]
                print(
                    f"| {n:,} | {case} | {old[key]:.2f} | {new[key]:.2f} "
                    f"| {old[key] / new[key]:.2f}x | {old['peak'] / 1e6:.1f} "
                    f"| {new['peak'] / 1e6:.1f} | {old['peak'] / new['peak']:.1f}x "
                    f"| {old['leased_at_open']:,} / {new['leased_at_open']:,} |"
                )
    return 0


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
    parser.add_argument(
        "--cycle", action="store_true", help="measure opening a cycle over a big store instead"
    )
    parser.add_argument(
        "--records",
        type=int,
        action="append",
        help="--cycle: store size, repeatable (10000 and 100000)",
    )
    parser.add_argument("--child", choices=sorted(BUILDERS), help=argparse.SUPPRESS)
    parser.add_argument("--cycle-child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cycle_child:
        impl, case, path = args.cycle_child
        print(json.dumps(measure_cycle(impl, case, path, args.trace)))
        return 0
    if args.cycle:
        return main_cycle(args.records or [10_000, 100_000], args.hosts)
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
