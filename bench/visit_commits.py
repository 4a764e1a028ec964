"""Benchmark: the SQLite store's work per visit, a transaction per visit against writing
behind once a second (:setting:`FRESH_COMMIT_SECS`).

Each simulated visit makes the store calls a first crawl's visit makes, in one
``grouped()`` write as :class:`~scrapy_fresh.crawl.visits.VisitRecorder` does: the new
record of a link its page yielded (``add_many``), its own record read (``get``) and
written back visited (``put``), its site (``put_site``). The same visits run against a
store that commits each visit (``commit_secs=0``, ``FRESH_COMMIT_SECS = 0``) and one that
writes behind, once a second (the default), interleaved ``--repeat`` times on fresh
files; the table gives microseconds per visit (wall clock, and user and system CPU) and
each figure's ratio to the per-visit commit of the same round, the median round shown.

``--writer`` also runs, during each store's visits, another process that writes a meta
record to the same file every 0.1 s (what ``scrapy-fresh block`` or the notify server
do while a crawl runs) and prints how long its writes waited for the lock. Writing
behind, the store holds the write lock only while it writes a second's rows.

A commit appends to the WAL and takes and drops locks: system calls, which an
instruction count (callgrind) does not see but a crawl's clock does.

Usage::

    python bench/visit_commits.py                  # 3,000 visits, 5 rounds
    python bench/visit_commits.py --visits 20000 --repeat 3
    python bench/visit_commits.py --visits 20000 --repeat 1 --writer
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy_fresh.exceptions import StoreError  # noqa: E402
from scrapy_fresh.keys import url_key  # noqa: E402
from scrapy_fresh.store.base import PageState, SiteState  # noqa: E402
from scrapy_fresh.store.sqlite import SQLiteStore  # noqa: E402

#: The crawl's batch when it commits by time (scrapy_fresh.crawl.stores).
BATCH = 10_000


def writer(path: Path, stop: Any, out: Any) -> None:
    """Another process: a meta record written every 0.1 s; each write's wait, or None
    for a write that failed (the lock not had within the 5 s timeout)."""
    waits: list[float | None] = []
    while not stop.is_set():
        start = time.perf_counter()
        try:
            with SQLiteStore(path, timeout=5.0) as store:
                store.put_meta("bench", str(len(waits)), {"at": time.time()})
            waits.append(time.perf_counter() - start)
        except StoreError:
            waits.append(None)
        time.sleep(0.1)
    out.put(waits)


def visits(path: Path, count: int, commit_secs: float) -> tuple[float, float, float]:
    """Wall, user and system seconds per visit of ``count`` visits."""
    store = SQLiteStore(path, batch_size=BATCH if commit_secs else 1, commit_secs=commit_secs)
    site = SiteState("shop.test")
    urls = [f"http://shop.test/item-{i}.html" for i in range(count + 1)]
    records = [
        PageState(url_key(u), u, host="shop.test", first_seen=1.0, next_due=1.0) for u in urls
    ]
    store.add_many(records[:1])
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    for i in range(count):
        with store.grouped():
            store.add_many([records[i + 1]])
            state = store.get(records[i].key)
            assert state is not None
            state.visits += 1
            state.last_crawl = state.next_due = 100.0 + i
            state.fingerprint, state.etag = 12345, '"5e1-abc"'
            store.put(state)
            site.visits += 1
            store.put_site(site)
    store.close()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (
        wall / count,
        (after.ru_utime - before.ru_utime) / count,
        (after.ru_stime - before.ru_stime) / count,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--visits", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--writer", action="store_true", help="also time another writer")
    args = parser.parse_args()
    if args.writer:
        with tempfile.TemporaryDirectory(prefix="fresh-bench-commits-") as tmp:
            for name, secs in (("each visit", 0.0), ("written behind, once a second", 1.0)):
                path = Path(tmp) / f"{secs}.sqlite"
                SQLiteStore(path).close()
                stop, out = multiprocessing.Event(), multiprocessing.Queue()
                child = multiprocessing.Process(target=writer, args=(path, stop, out))
                child.start()
                time.sleep(0.5)  # the writer's first write is not timed against the visits
                start = time.perf_counter()
                visits(path, args.visits, secs)
                seconds = time.perf_counter() - start
                stop.set()
                waits = out.get()
                child.join()
                done = sorted(w for w in waits if w is not None)
                print(
                    f"another writer beside a commit {name} ({seconds:.1f} s of visits): "
                    f"{len(done)} writes, {len(waits) - len(done)} failed; wait median "
                    f"{statistics.median(done) * 1e3 if done else 0:.0f} ms, "
                    f"max {max(done, default=0) * 1e3:.0f} ms"
                )
        return
    with tempfile.TemporaryDirectory(prefix="fresh-bench-commits-") as tmp:
        rounds = [
            {
                "each visit": visits(Path(tmp) / f"each{k}.sqlite", args.visits, 0.0),
                "written behind": visits(Path(tmp) / f"second{k}.sqlite", args.visits, 1.0),
            }
            for k in range(args.repeat)
        ]
    ratios = [r["each visit"][0] / r["written behind"][0] for r in rounds]
    median = rounds[ratios.index(statistics.median_low(ratios))]
    print(
        f"SQLite store work per visit, {args.visits} visits, {args.repeat} rounds; "
        f"per-visit commit / written behind per round: " + ", ".join(f"{x:.2f}x" for x in ratios)
    )
    print("| commit | wall us/visit | user us | system us | wall vs each visit |")
    print("|---|---:|---:|---:|---:|")
    base = median["each visit"][0]
    for name, (wall, user, system) in median.items():
        print(
            f"| {name} | {wall * 1e6:.0f} | {user * 1e6:.0f} | {system * 1e6:.0f} "
            f"| {base / wall:.2f}x |"
        )


if __name__ == "__main__":
    main()
