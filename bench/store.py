"""Benchmark of the SQLite store: build, upsert rate, bytes per record, due() and get().

Builds an SQLite store of ``--records`` realistic records (default 10,000,000) through
the public ``put_many`` API, then measures:

* insert rate (new records) and update rate (existing records) of ``put_many``,
  one transaction per ``--batch`` records, and the insert rate of ``add_many``;
* bytes per record on disk after a checkpoint (file size / records), with the share
  of the table and each index (SQLite's ``dbstat``);
* ``due(now, 10_000)``: cold (new connection, the file dropped from the OS page cache
  with ``posix_fadvise(DONTNEED)``) and warm (repeated);
* ``get()`` latency for random keys, and ``next_due_time()`` / ``counts()``;
* the cost of :setting:`FRESH_KEEP_ITEMS` (:func:`keep_items_cost`): bytes per record on
  disk of records that keep their items against the same records without, for product
  pages (one item, a description of 300-1,500 characters) and listing pages (20 rows),
  and the ``put_many`` time as a ratio of the time without.

The records look like a crawl of ``--hosts`` hosts (Zipf-like sizes): URLs of 60-90
characters, small request JSON, validators for visited pages, a few past updates for
some, next due times spread over a month, 64-bit fingerprints. Keys are SHA-1 of the
URL (same shape and distribution as :func:`scrapy_fresh.keys.url_key`, which this
skips because URL canonicalisation would dominate the build time).

Usage::

    python bench/store.py                      # 10M records, database in bench/out/
    python bench/store.py --records 1000000 --keep
    python bench/store.py --keep-items-only           # FRESH_KEEP_ITEMS cost alone

Prints a markdown table on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import itertools
import math
import multiprocessing
import os
import platform
import random
import resource
import sqlite3
import statistics
import sys
import time
from collections import deque
from multiprocessing.pool import AsyncResult
from pathlib import Path

from scrapy_fresh.changes.compare import pack_items
from scrapy_fresh.fingerprint.itemfields import item_hashes
from scrapy_fresh.store.base import PageState, Provider, Status
from scrapy_fresh.store.sqlite import SQLiteStore

HERE = Path(__file__).resolve().parent
NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z: the "now" of the generated crawl
DAY = 86_400.0


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_WORDS = _words(
    "news sport world money tech science health travel style culture music books film "
    "games food home garden auto market shop deals review guide blog forum wiki docs "
    "city local region nation global daily weekly times post herald journal courier "
    "tribune gazette observer"
)
_SLUG = _words(
    "the a new how why what best top cheap free update report analysis market price "
    "season final record local city council school energy climate vote plan budget "
    "launch release review guide tips week day year people police court"
)
_TLDS = ("com", "com", "com", "org", "net", "de", "co.uk", "fr", "io", "es", "it", "nl")
_SUBS = ("www", "www", "www", "news", "shop", "blog", "m", "en", "de")
_CALLBACKS = ("parse", "parse_article", "parse_product", "parse_item", "parse_page")


def make_hosts(n: int, seed: int = 1) -> list[str]:
    """Return ``n`` distinct host names such as ``www.citynews42.co.uk``."""
    rng = random.Random(seed)
    hosts: list[str] = []
    seen: set[str] = set()
    while len(hosts) < n:
        host = (
            f"{rng.choice(_SUBS)}.{rng.choice(_WORDS)}{rng.choice(_WORDS)}"
            f"{rng.randrange(1000)}.{rng.choice(_TLDS)}"
        )
        if host not in seen:
            seen.add(host)
            hosts.append(host)
    return hosts


class RecordMaker:
    """Makes realistic records; record ``i`` has a unique URL, the rest is random."""

    def __init__(self, hosts: list[str], seed: int = 0) -> None:
        self.hosts = hosts
        self.rng = random.Random(seed)

    def url(self, i: int) -> tuple[str, str]:
        """Return (host, URL) of record ``i``: 60-90 characters for most hosts."""
        r = self.rng.random
        words, slugs = _WORDS, _SLUG
        host = self.hosts[int(len(self.hosts) * r() ** 3)]  # a few big hosts, a long tail
        slug = "-".join(slugs[int(r() * len(slugs))] for _ in range(2 + int(r() * 4)))
        word = words[int(r() * len(words))]
        kind = i % 4
        if kind == 0:
            tail = f"{2015 + int(r() * 11)}/{1 + int(r() * 12):02d}/{slug}-{i}.html"
        elif kind == 1:
            tail = f"{slug}/{i}"
        elif kind == 2:
            tail = f"p/{slug}?id={i}&ref={word}"
            word = ""
        else:
            tail = f"{words[int(r() * len(words))]}/{slug}-{i}/"
        return host, f"https://{host}/{word}/{tail}" if word else f"https://{host}/{tail}"

    def record(self, i: int) -> PageState:
        """Return a record for URL number ``i``."""
        r = self.rng.random
        host, url = self.url(i)
        key = hashlib.sha1(url.encode()).hexdigest()
        first_seen = NOW - r() * 90 * DAY
        request: dict[str, object] = {"callback": _CALLBACKS[int(r() * len(_CALLBACKS))]}
        if r() < 0.3:
            request["meta"] = {"depth": 1 + int(r() * 6)}
        if r() < 0.1:
            request["priority"] = int(r() * 20) - 10
        kind = r()
        if kind < 0.2:  # discovered, never fetched: due as soon as it was seen
            return PageState(
                key=key,
                url=url,
                host=host,
                status=Status.QUEUED,
                first_seen=first_seen,
                next_due=first_seen,
                request=request,
            )
        visits = 1 + int(r() * 60)
        changes = int(r() * (visits + 1))
        refresh = 3600.0 + r() * 30 * DAY
        last_crawl = NOW - r() * 10 * DAY
        smart = r() < 0.2
        past = [NOW - r() * 60 * DAY for _ in range(1 + int(r() * 5))] if smart else []
        future = (
            [(NOW + r() * 7 * DAY, round(r(), 2)) for _ in range(1 + int(r() * 3))]
            if r() < 0.02
            else []
        )
        bits = self.rng.getrandbits
        return PageState(
            key=key,
            url=url,
            host=host,
            status=Status.GONE if kind > 0.99 else Status.IDLE,
            provider=Provider.SUPER if future else Provider.SMART if smart else Provider.NORMAL,
            first_seen=first_seen,
            last_crawl=last_crawl,
            next_due=NOW + (r() * 30 - 3) * DAY,  # over a month, a tenth of them overdue
            refresh_secs=refresh,
            visits=visits,
            changes=changes,
            p_c=changes / visits,
            change_bucket=int(r() * 256),
            change_rate=changes / (NOW - first_seen + 1.0) if r() < 0.5 else None,
            errors=(0, 0, 0, 0, 1, 2)[int(r() * 6)],
            fingerprint=bits(64),
            etag=f'"{bits(64):x}-{bits(24):x}"' if r() < 0.6 else None,
            last_modified=(
                time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(last_crawl - refresh))
                if r() < 0.5
                else None
            ),
            content_length=2_000 + int(r() * 400_000),
            access_count=(0, 0, 1, 2, 5, 40)[int(r() * 6)],
            past_updates=past,
            future_updates=future,
            request=request,
        )

    def visit(self, state: PageState) -> None:
        """Change ``state`` the way a fetch would: validators, fingerprint, due time."""
        r = self.rng.random
        state.status = Status.IDLE
        state.visits += 1
        state.last_crawl = NOW
        state.next_due = NOW + 3600.0 + r() * 30 * DAY
        state.fingerprint = self.rng.getrandbits(64)
        state.etag = f'"{self.rng.getrandbits(64):x}"'


def _drop_os_cache(path: Path) -> None:
    for name in (path, Path(f"{path}-wal")):
        if name.exists():
            fd = os.open(name, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _rate(n: float, secs: float, cpu: float | None = None) -> str:
    """``n`` per second of wall time, and the CPU time of this process per item."""
    rate = f"{n / secs:,.0f}/s" if secs > 0 else "n/a"
    return rate if cpu is None else f"{rate} ({cpu / n * 1e6:,.0f} µs CPU each)"


def _size_breakdown(path: Path, records: int) -> list[tuple[str, float]]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    return [(name, size / records) for name, size in rows if size / records >= 0.5]


_worker: dict[str, object] = {}


def _init_worker(hosts: list[str], size: int, total: int) -> None:
    _worker.update(hosts=hosts, size=size, total=total)


def _make_batch(start: int) -> list[PageState]:
    """Records ``start`` to ``start + size`` (seeded by ``start``: same in every run)."""
    maker = RecordMaker(_worker["hosts"], seed=start)  # type: ignore[arg-type]
    end = min(start + _worker["size"], _worker["total"])  # type: ignore[call-overload]
    return [maker.record(i) for i in range(start, end)]


def run(args: argparse.Namespace) -> list[tuple[str, str]]:
    n = args.records
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"store-bench-{n}.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    hosts = make_hosts(args.hosts)
    maker = RecordMaker(hosts, seed=1)
    rng = random.Random(7)
    sample = set(rng.sample(range(n), min(200_000, n)))  # keys kept for updates and get()
    sample_keys: list[str] = []
    known_keys: list[str] = []  # the first records, offered again to add_many
    results: list[tuple[str, str]] = []

    # -- build: put_many of new records, one transaction per call ---------------------
    store = SQLiteStore(path, **args.options)
    put_secs = put_cpu = 0.0
    url_chars = 0
    started = time.perf_counter()
    # Records are made in a worker process while this one writes the previous batch.
    starts = iter(range(0, n, args.batch))
    with multiprocessing.get_context("fork").Pool(1, _init_worker, (hosts, args.batch, n)) as pool:
        ahead: deque[tuple[int, AsyncResult[list[PageState]]]] = deque()
        for start in itertools.islice(starts, 3):  # at most 3 batches made ahead
            ahead.append((start, pool.apply_async(_make_batch, (start,))))
        while ahead:
            start, result = ahead.popleft()
            batch = result.get()
            for following in itertools.islice(starts, 1):
                ahead.append((following, pool.apply_async(_make_batch, (following,))))
            url_chars += sum(len(s.url) for s in batch)
            sample_keys += [s.key for i, s in enumerate(batch, start) if i in sample]
            if len(known_keys) < 50_000:
                known_keys += [s.key for s in batch]
            t0, c0 = time.perf_counter(), time.process_time()
            store.put_many(batch)
            put_secs += time.perf_counter() - t0
            put_cpu += time.process_time() - c0
            done = start + len(batch)
            if done % 1_000_000 == 0 or done == n:
                _log(
                    f"{done:,} records, put_many {_rate(done, put_secs)}, "
                    f"wall {time.perf_counter() - started:,.0f} s"
                )
    build_secs = time.perf_counter() - started
    results += [
        ("records", f"{n:,} ({args.hosts:,} hosts, mean URL {url_chars / n:.0f} chars)"),
        ("build time (generate + put_many)", f"{build_secs:,.0f} s"),
        (f"put_many, new records ({args.batch:,} per call)", _rate(n, put_secs, put_cpu)),
    ]

    # -- visits: read-modify-write of existing records at random keys ------------------
    rng.shuffle(sample_keys)
    upd_secs = upd_cpu = 0.0
    for start in range(0, len(sample_keys), args.batch):
        states = list(store.get_many(sample_keys[start : start + args.batch]).values())
        for state in states:
            maker.visit(state)
        t0, c0 = time.perf_counter(), time.process_time()
        store.put_many(states)
        upd_secs += time.perf_counter() - t0
        upd_cpu += time.process_time() - c0
    results.append(
        (
            "put_many, existing records (random keys)",
            _rate(len(sample_keys), upd_secs, upd_cpu),
        )
    )

    # -- discovery: add_many of half new, half known URLs ------------------------------
    offered = [maker.record(i) for i in range(n, n + len(known_keys))]
    for state, key in zip(offered[::2], known_keys[::2], strict=False):
        state.key = key  # already in the store
    t0, c0 = time.perf_counter(), time.process_time()
    added = 0
    for start in range(0, len(offered), args.batch):
        added += len(store.add_many(offered[start : start + args.batch]))
    results.append(
        (
            "add_many, half new",
            _rate(len(offered), time.perf_counter() - t0, time.process_time() - c0),
        )
    )
    assert added == len(offered) // 2, (added, len(offered))
    total = len(store)
    t0 = time.perf_counter()
    store.close()  # checkpoints the WAL into the file and removes it
    results.append(("close (final checkpoint)", f"{time.perf_counter() - t0:,.1f} s"))
    del offered
    gc.collect()

    size = path.stat().st_size
    results.append(("bytes per record on disk", f"{size / total:,.0f} ({size / 1e9:,.2f} GB)"))
    results.extend(
        (f"  of which {name}", f"{per:,.0f}") for name, per in _size_breakdown(path, total)
    )

    # -- due(): cold, then warm ----------------------------------------------------------
    _drop_os_cache(path)
    store = SQLiteStore(path, **args.options)
    t0 = time.perf_counter()
    due = store.due(NOW, 10_000)
    cold = time.perf_counter() - t0
    assert due, "nothing is due"
    assert all(a.next_due <= b.next_due for a, b in itertools.pairwise(due))
    warm_times, warm_cpu = [], []
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        store.due(NOW, 10_000)
        warm_times.append(time.perf_counter() - t0)
        warm_cpu.append(time.process_time() - c0)
    results += [
        (f"due(now, 10_000), cold ({len(due):,} records)", f"{cold * 1000:,.0f} ms"),
        (
            "due(now, 10_000), warm (median of 5)",
            (
                f"{statistics.median(warm_times) * 1000:,.0f} ms "
                f"({statistics.median(warm_cpu) * 1000:,.0f} ms CPU)"
            ),
        ),
    ]
    t0 = time.perf_counter()
    store.next_due_time()
    store.counts()
    len(store)
    results.append(
        ("next_due_time() + counts() + len()", f"{(time.perf_counter() - t0) * 1e6:,.0f} µs")
    )

    # -- get(): random keys, first from disk (cold), then again (warm) ------------------
    keys = rng.sample(sample_keys, min(20_000, len(sample_keys)))
    for label in ("cold", "warm"):
        lat = []
        for key in keys:
            t0 = time.perf_counter()
            state = store.get(key)
            lat.append(time.perf_counter() - t0)
            assert state is not None
        lat.sort()
        median, p99 = statistics.median(lat) * 1e6, lat[int(len(lat) * 0.99)] * 1e6
        results.append(
            (f"get(), random keys, {label} (median / p99)", f"{median:,.0f} µs / {p99:,.0f} µs")
        )
    store.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results.append(("peak RSS of the benchmark process", f"{peak:,.0f} MiB"))
    if args.keep:
        _log(f"kept {path}")
    else:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return results


def _product(rng: random.Random, n: int) -> dict[str, object]:
    words = [rng.choice(_SLUG) for _ in range(rng.randint(50, 250))]
    return {
        "sku": f"SKU-{n:08d}",
        "name": " ".join(rng.choice(_SLUG) for _ in range(4)).title(),
        "price": f"{rng.uniform(1, 500):.2f}",
        "stock": rng.randint(0, 200),
        "description": " ".join(words)[:1500] + ".",
    }


def _items_page(rng: random.Random, i: int) -> list[dict[str, object]]:
    """A product page (one item with a description) or, one page in five, a listing of
    20 rows (sku, price)."""
    if i % 5:
        return [_product(rng, i)]
    return [{"sku": f"SKU-{i * 100 + k:08d}", "price": f"{rng.uniform(1, 500):.2f}"}
            for k in range(20)]  # fmt: skip


def keep_items_cost(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Bytes per record and write time of records with and without their kept items."""
    n = args.keep_items_records
    hosts = make_hosts(100)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes: dict[bool, float] = {}
    times: dict[bool, float] = {False: math.inf, True: math.inf}
    blobs: list[int] = []
    for keep in (False, True, False, True, False, True):  # best of 3 each, interleaved
        path = out / f"keep-items-{int(keep)}.sqlite"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        gen = RecordMaker(hosts, seed=3)
        rng = random.Random(4)
        records = []
        for i in range(n):
            state = gen.record(i)
            items = _items_page(rng, i)
            state.field_hashes = [item_hashes(item, None, {}) for item in items]
            if keep:
                state.kept_items = pack_items(items, [list(x) for x in items], 65536)
                assert state.kept_items is not None
                if len(blobs) < n:
                    blobs.append(len(state.kept_items))
            records.append(state)
        store = SQLiteStore(path, **args.options)
        t0 = time.perf_counter()
        for start in range(0, n, args.batch):
            store.put_many(records[start : start + args.batch])
        store.flush()
        times[keep] = min(times[keep], time.perf_counter() - t0)
        store.close()
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
        sizes[keep] = path.stat().st_size / n
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return [
        (f"FRESH_KEEP_ITEMS: bytes per record on disk, {n:,} records, items kept",
         (f"{sizes[True]:,.0f} B (without: {sizes[False]:,.0f} B, "
          f"+{sizes[True] - sizes[False]:,.0f} B)")),
        ("FRESH_KEEP_ITEMS: kept items per record, compressed (median / p90)",
         f"{statistics.median(blobs):,.0f} B / {sorted(blobs)[int(len(blobs) * 0.9)]:,.0f} B"),
        ("FRESH_KEEP_ITEMS: put_many time, ratio to the same records without",
         f"{times[True] / times[False]:.2f}x"),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000_000, help="records to build")
    parser.add_argument("--hosts", type=int, default=10_000, help="distinct hosts")
    parser.add_argument("--batch", type=int, default=10_000, help="records per put_many call")
    parser.add_argument("--out", default=str(HERE / "out"), help="directory of the database")
    parser.add_argument("--keep", action="store_true", help="keep the database file")
    parser.add_argument("--cache-size-kib", type=int, help="SQLiteStore(cache_size_kib=...)")
    parser.add_argument("--synchronous", help="SQLiteStore(synchronous=...): NORMAL, OFF, FULL")
    parser.add_argument(
        "--pragma",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="SQLiteStore(pragmas={NAME: VALUE}), repeatable",
    )
    parser.add_argument(
        "--keep-items-records", type=int, default=20_000,
        help="records of the FRESH_KEEP_ITEMS measure",
    )  # fmt: skip
    parser.add_argument(
        "--keep-items-only", action="store_true", help="measure FRESH_KEEP_ITEMS only"
    )
    args = parser.parse_args()
    args.options = {}
    if args.cache_size_kib is not None:
        args.options["cache_size_kib"] = args.cache_size_kib
    if args.synchronous is not None:
        args.options["synchronous"] = args.synchronous
    if args.pragma:
        args.options["pragmas"] = dict(p.split("=", 1) for p in args.pragma)
    results = [] if args.keep_items_only else run(args)
    results += keep_items_cost(args)
    options = ", ".join(f"{k}={v!r}" for k, v in args.options.items()) or "defaults"
    print(
        f"SQLite store benchmark: Python {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}, {platform.machine()}, {os.cpu_count()} CPUs; "
        f"SQLiteStore options: {options}\n"
    )
    print("| measure | value |\n|---|---|")
    for name, value in results:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
