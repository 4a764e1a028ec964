"""Benchmark: a re-crawl of a host that refuses every connection, plain Scrapy against
the add-on with and without pausing (:setting:`FRESH_UNREACHABLE_ATTEMPTS`).

The store holds ``--pages`` known pages (default 300), all due, of a host on 127.0.0.1
whose port is bound and never listened on: every connection is refused. The spider is
tests/realsite_runner.py's ``links`` spider starting at the host's index page, with
``CONCURRENT_REQUESTS = 32``. Three crawls, each in its own process:

* plain Scrapy (it knows the start URL only),
* the add-on with ``FRESH_UNREACHABLE_ATTEMPTS = 0`` (every due page is tried, with
  Scrapy's retries: the behaviour before pausing),
* the add-on with its defaults (the host is paused after 9 attempts without an answer).

Printed per crawl: the requests sent (``downloader/request_count``) and Scrapy's
``elapsed_time_seconds``, with each add-on crawl's time over plain Scrapy's.

Usage::

    python bench/dead_host.py
    python bench/dead_host.py --pages 3000
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the crawl runner lives in tests/

from scrapy_fresh.store.sqlite import SQLiteStore  # noqa: E402
from tests.conftest import known_record  # noqa: E402
from tests.realsite_support import run_crawl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per crawl")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fresh-bench-dead-") as tmp, socket.socket() as dead:
        work = Path(tmp)
        dead.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        base = f"http://127.0.0.1:{dead.getsockname()[1]}"
        now = time.time()
        urls = [f"{base}/p{n}.html" for n in range(args.pages)]
        results = []
        for name, fresh in (
            ("plain Scrapy", None),
            ("add-on, no pausing", {"FRESH_UNREACHABLE_ATTEMPTS": 0}),
            ("add-on, defaults", {}),
        ):
            settings: dict[str, Any] = {"CONCURRENT_REQUESTS": 32, "LOG_LEVEL": "INFO"}
            if fresh is not None:
                db = work / name.replace(" ", "-").replace(",", "") / "state.sqlite"
                db.parent.mkdir()
                with SQLiteStore(db) as store:
                    store.put_many(
                        known_record(u, last_crawl=now - 2 * 86400, next_due=now - 86400)
                        for u in urls
                    )
                settings.update(
                    {"ADDONS": {"scrapy_fresh.Addon": 0}, "FRESH_SQLITE_PATH": str(db),
                     "FRESH_VISIT_LOG": "", **fresh}
                )  # fmt: skip
            config = {"spider": "links", "start": [f"{base}/index.html"], "settings": settings}
            crawl = run_crawl(config, work / f"run-{len(results)}", timeout=args.timeout)
            if crawl.returncode != 0 or crawl.reason != "finished":
                raise RuntimeError(f"{name}: the crawl failed:\n{crawl.log[-3000:]}")
            results.append((name, crawl.stat("downloader/request_count"), crawl.stats))
        plain = float(results[0][2]["elapsed_time_seconds"])
        print(f"Re-crawl of {args.pages} known pages of a host that refuses connections")
        print("| crawl | requests | seconds | vs plain Scrapy |")
        print("|---|---:|---:|---:|")
        for name, requests, stats in results:
            seconds = float(stats["elapsed_time_seconds"])
            print(f"| {name} | {requests} | {seconds:.2f} | {seconds / plain:.1f}x |")


if __name__ == "__main__":
    main()
