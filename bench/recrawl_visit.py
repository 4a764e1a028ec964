"""Benchmark: the add-on's own work per page of an all-304 re-crawl, in-process.

``bench/crawl.py`` times whole crawls, where Scrapy's engine, Twisted and the network
are most of each page's cost and the machine's noise hides a 5% change. This times only
what the add-on adds for one unchanged page: the scheduler handing it out
(:meth:`FreshScheduler.next_request
<scrapy_fresh.crawl.scheduler.FreshScheduler.next_request>`: its due records read and
leased in batches, its request rebuilt), the downloader middlewares' conditional check
and the 304 recorded (:class:`~scrapy_fresh.crawl.middlewares.FreshDownloaderMiddleware`,
:class:`~scrapy_fresh.crawl.provider_middleware.FreshProviderMiddleware`: the visit
committed to the SQLite store with its site and provider signals) and the visit log's
two lines (:class:`~scrapy_fresh.crawl.visitlog.VisitLog`). The add-on's components are
built from a crawler with the default settings on a real SQLite file holding
``--pages`` visited records, all due; the 304 answers carry nginx's headers (``ETag``,
``Last-Modified``, ``Date``). The loop also builds each 304 ``Response`` (as Scrapy's
downloader would) and runs the middlewares' coroutines (each ends at its first step).

Usage::

    python bench/recrawl_visit.py                 # 3,000 pages, 5 rounds
    python bench/recrawl_visit.py --profile 25    # and the 25 costliest functions
    python bench/recrawl_visit.py --without visit-log   # a part switched off
    python bench/recrawl_visit.py --callgrind     # instructions per 304 (valgrind)

Prints microseconds per page (min and median of the rounds, each on a new store) and,
with ``--profile``, a cProfile of one more round by own time (cProfile inflates small
calls: use it to find where, this table for how much).

``--callgrind`` instead counts instructions, which do not move with the machine's load:
two runs under ``valgrind --tool=callgrind`` of a store of ``2 x --pages`` due records
(default 1,000), one handing out and recording ``--pages`` of them and one all of them;
the difference over ``--pages`` is one 304's instructions, without the start-up, the
store's seeding and its close (about 4 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy import Spider  # noqa: E402
from scrapy.exceptions import NotConfigured  # noqa: E402
from scrapy.http import Response  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from scrapy_fresh.crawl.middlewares import (  # noqa: E402
    FreshDownloaderMiddleware,
    FreshReachabilityMiddleware,
    NotModified,
)
from scrapy_fresh.crawl.provider_middleware import FreshProviderMiddleware  # noqa: E402
from scrapy_fresh.crawl.runtime import FreshRuntime  # noqa: E402
from scrapy_fresh.crawl.scheduler import FreshScheduler  # noqa: E402
from scrapy_fresh.crawl.visitlog import VisitLog  # noqa: E402
from scrapy_fresh.keys import url_host, url_key  # noqa: E402
from scrapy_fresh.store.base import PageState, Status  # noqa: E402

NOW = 1_800_000_000.0
LAST_MODIFIED = "Fri, 27 Nov 2026 10:00:00 GMT"


class BenchSpider(Spider):
    name = "recrawl_visit"

    def parse(self, response: Any) -> Any:
        return []


def visited(i: int) -> PageState:
    """Page ``i`` as a first crawl leaves it on an nginx site: visited once, due now."""
    url = f"http://127.0.0.1:8000/p{i}.html"
    return PageState(
        key=url_key(url),
        url=url,
        host=url_host(url),
        status=Status.IDLE,
        first_seen=NOW - 40 * 86400,
        last_crawl=NOW - 31 * 86400,
        next_due=NOW - 10,
        visits=1,
        fingerprint=i + 1,
        etag=f'"{i:x}-1388"',
        last_modified=LAST_MODIFIED,
        content_length=5000,
        request={"url": url, "callback": "parse"},
    )


#: Parts ``--without`` switches off, by the settings that do it.
PARTS: dict[str, dict[str, Any]] = {
    "provider-signals": {"FRESH_PROVIDER_SIGNALS": False},
    "visit-log": {"FRESH_VISIT_LOG": ""},
}


def _optional(component: Any, crawler: Any) -> Any:
    """``component`` built from ``crawler``, or None when its setting turns it off."""
    try:
        return component.from_crawler(crawler)
    except NotConfigured:
        return None


class Round:
    """The add-on's components on a new store of ``pages`` due records."""

    def __init__(self, pages: int, work: Path, without: tuple[str, ...] = ()) -> None:
        crawler = get_crawler(
            BenchSpider,
            {
                "FRESH_STORE": "sqlite",
                "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
                "FRESH_VISIT_LOG": str(work / "visits.jsonl"),
                **{name: value for part in without for name, value in PARTS[part].items()},
            },
        )
        crawler.spider = BenchSpider.from_crawler(crawler)
        crawler.stats.open_spider()
        self.runtime = runtime = FreshRuntime.of(crawler)
        runtime.clock = lambda: NOW
        runtime.store.put_many(visited(i) for i in range(pages))
        runtime.store.flush()
        self.crawler = crawler
        self.scheduler = FreshScheduler.from_crawler(crawler)
        self.scheduler.open(crawler.spider)
        self.downloader = FreshDownloaderMiddleware.from_crawler(crawler)
        FreshReachabilityMiddleware.from_crawler(crawler)  # a download listener
        self.providers = _optional(FreshProviderMiddleware, crawler)
        self.log = _optional(VisitLog, crawler)
        if self.log is not None:
            self.log._opened()

    @staticmethod
    def _await(result: Any) -> None:
        """Run a middleware's coroutine: a conditional check awaits nothing (a HEAD probe
        would download), so it ends at its first step."""
        if not asyncio.iscoroutine(result):
            return
        try:
            result.send(None)
        except StopIteration:
            return
        result.close()
        raise RuntimeError("a middleware waited for a download: not a conditional check")

    def one(self) -> bool:
        """One page: handed out, checked, answered 304, recorded; False when none is left."""
        request = self.scheduler.next_request()
        if request is None:
            return False
        if self.providers is not None:
            self._await(self.providers.process_request(request))
        self._await(self.downloader.process_request(request))
        etag = request.headers.get(b"If-None-Match", b"").decode()
        headers = {"ETag": etag, "Last-Modified": LAST_MODIFIED, "Date": LAST_MODIFIED}
        response = Response(request.url, status=304, headers=headers, request=request)
        # Scrapy's response_downloaded, as the add-on's one receiver takes it: the
        # scheduler, the visit log and the unreachable-host watch (Scrapy's dispatch, which
        # plain Scrapy pays too, left out)
        self.runtime._response_downloaded(response, request)
        if self.providers is not None:
            response = self.providers.process_response(request, response)
        try:
            self.downloader.process_response(request, response)
        except NotModified:
            return True
        raise RuntimeError(f"{request.url}: the 304 was not recorded as not modified")

    def run(self) -> int:
        n = 0
        while self.one():
            n += 1
        return n

    def close(self) -> None:
        self.scheduler.close("finished")
        if self.log is not None:
            self.log._closed("finished")


def timed(pages: int, without: tuple[str, ...] = ()) -> float:
    """Microseconds per page of one round (its store built outside the clock)."""
    with tempfile.TemporaryDirectory() as tmp:
        bench = Round(pages, Path(tmp), without)
        start = time.perf_counter()
        n = bench.run()
        elapsed = time.perf_counter() - start
        recorded = bench.crawler.stats.get_value("fresh/not_modified", 0)
        bench.close()
    if n != pages or recorded != pages:
        raise RuntimeError(f"{n} pages handed out and {recorded} recorded, not {pages}")
    return elapsed / n * 1e6


def counted_pages(seeded: int, pages: int, without: tuple[str, ...]) -> None:
    """The body of one callgrind run: ``pages`` of a store of ``seeded`` due records
    handed out and recorded (the round is not closed: no flush of its last rows)."""
    with tempfile.TemporaryDirectory() as tmp:
        bench = Round(seeded, Path(tmp), without)
        for _ in range(pages):
            if not bench.one():
                raise RuntimeError(f"fewer than {pages} pages were handed out")


def instructions(pages: int, without: tuple[str, ...]) -> float:
    """Instructions per 304: a callgrind run handing out ``2 * pages`` pages less one
    handing out ``pages``, both of a store of ``2 * pages`` records, over ``pages``."""
    seeded = 2 * pages
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for n in (pages, seeded):
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/{n}.out",
                       sys.executable, __file__, "--counted-run", str(seeded), str(n),
                       *(f"--without={part}" for part in without)]  # fmt: skip
            env = {**os.environ, "PYTHONHASHSEED": "0"}
            runs.append(subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True))
        totals = []
        for run in runs:
            _, err = run.communicate()
            found = re.search(r"Collected : (\d+)", err)
            if run.returncode or found is None:
                raise RuntimeError(f"callgrind run failed: {err[-2000:]}")
            totals.append(int(found.group(1)))
    return (totals[1] - totals[0]) / pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=None, help="3,000 (1,000 with --callgrind)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", type=int, default=0, metavar="ROWS")
    parser.add_argument(
        "--without", action="append", choices=sorted(PARTS), default=[],
        help="switch a part off (repeatable): what it costs is the difference",
    )  # fmt: skip
    parser.add_argument(
        "--callgrind", action="store_true", help="count instructions per 304 instead"
    )
    parser.add_argument("--counted-run", nargs=2, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    without = tuple(args.without)
    if args.counted_run:
        counted_pages(*args.counted_run, without)
        return
    if args.callgrind:
        pages = args.pages or 1000
        per_page = instructions(pages, without)
        print(f"Instructions per 304 of an all-304 re-crawl ({pages} pages, SQLite), "
              f"without {', '.join(without) or 'nothing'}: {per_page / 1e6:.3f} M")  # fmt: skip
        return
    args.pages = args.pages or 3000
    times = [timed(args.pages, without) for _ in range(args.repeat)]
    print(f"The add-on's work per page of an all-304 re-crawl ({args.pages} pages, SQLite):")
    print("| rounds | min µs | median µs |\n|---:|---:|---:|")
    print(f"| {args.repeat} | {min(times):.1f} | {statistics.median(times):.1f} |")
    if args.profile:
        with tempfile.TemporaryDirectory() as tmp:
            bench = Round(args.pages, Path(tmp), without)
            profiler = cProfile.Profile()
            profiler.runcall(bench.run)
            bench.close()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.profile)


if __name__ == "__main__":
    main()
