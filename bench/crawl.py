"""Benchmark: end-to-end crawl throughput on nginx, plain Scrapy against the add-on.

Issue 14, part 5. One run measures both crawlers on the same machine, site and server,
so the ratios compare like with like:

* the site: ``--pages`` generated pages (default 3,000) of about ``--kb`` kB of text
  (default 5) with ``--links`` links each (default 6), plus an index; written to a
  temporary directory and served by a real nginx on 127.0.0.1 (its own ETag,
  Last-Modified and 304s; tests/nginx_support.py starts it);
* the spider: tests/realsite_runner.py's ``links`` spider, a plain ``scrapy.Spider``
  that yields an item per page and a Request for every ``.html`` link (fragments
  stripped), ``CONCURRENT_REQUESTS = --concurrency`` (default 32), Scrapy's other
  defaults (``CONCURRENT_REQUESTS_PER_DOMAIN`` 8 unless ``--per-domain``), LOG_LEVEL INFO;
* the crawls, each in its own process: plain Scrapy's first crawl, the add-on's first
  crawl (``ADDONS = {"scrapy_fresh.Addon": 0}``, SQLite store, visit log on, all other
  settings at their defaults), plain Scrapy's full re-crawl, and the add-on's re-crawl
  "a month later" (every page due; nothing changed, so nginx answers 304 to each).

Throughput is pages (nginx's 200 and 304 answers) per second of the crawl: Scrapy's
``elapsed_time_seconds`` stat, from the spider's opening to its close (store closing
included; interpreter start-up and imports not). ``--repeat N`` runs the sequence N
times on fresh stores and keeps each crawl's best. The table gives pages/s and the
add-on's ratio to plain Scrapy's figure of the same run. Goals (issue 14): first crawl
>= 0.95x, re-crawl of unchanged pages >= 3x.

``--profile FILE`` then runs the add-on's first crawl once more under cProfile (on a
fresh store), writes the profile to FILE and prints the costliest functions.

Usage::

    python bench/crawl.py                        # 3,000 pages, 5 kB, 6 links, 32 requests
    python bench/crawl.py --pages 500 --repeat 3
    python bench/crawl.py --profile /tmp/fresh-first-crawl.prof
"""

from __future__ import annotations

import argparse
import os
import platform
import pstats
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the nginx launcher and the spider live in tests/

from tests.nginx_support import Logged, Nginx, find_nginx, make_linked_site  # noqa: E402
from tests.realsite_support import RealCrawl, run_crawl  # noqa: E402

MONTH = 31 * 86400.0


@dataclass
class Measured:
    name: str
    crawl: RealCrawl
    log: list[Logged]

    @property
    def pages(self) -> int:
        """Pages nginx answered (200 or 304): a 304 the add-on turns into "not modified"
        never reaches Scrapy's response count."""
        return sum(1 for r in self.log if r.status in (200, 304) and r.path.endswith(".html"))

    @property
    def seconds(self) -> float:
        return float(self.crawl.stats.get("elapsed_time_seconds", 0.0))

    @property
    def rate(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    def statuses(self) -> Counter[int]:
        return Counter(r.status for r in self.log)

    def megabytes(self) -> float:
        return sum(r.body_bytes for r in self.log) / 1e6


def settings(args: argparse.Namespace, work: Path | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "CONCURRENT_REQUESTS": args.concurrency,
        "LOG_LEVEL": "INFO",
    }
    if args.per_domain:
        out["CONCURRENT_REQUESTS_PER_DOMAIN"] = args.per_domain
    if work is not None:
        out.update(
            {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
                "FRESH_VISIT_LOG": str(work / "visits.jsonl"),
            }
        )
    return out


def one_run(args: argparse.Namespace, server: Nginx, work: Path) -> dict[str, Measured]:
    spider = {"spider": "links", "start": [server.url("/index.html")]}
    store = work / "fresh"
    out = {}
    for name, config in (
        ("plain first", {**spider, "settings": settings(args, None)}),
        ("fresh first", {**spider, "settings": settings(args, store)}),
        ("plain again", {**spider, "settings": settings(args, None)}),
        (
            "fresh again",
            {**spider, "settings": settings(args, store), "clock_offset": MONTH},
        ),
    ):
        server.new_requests()
        crawl = run_crawl(config, work / name.replace(" ", "-"), timeout=args.timeout)
        crawl.check()
        out[name] = Measured(name, crawl, server.new_requests())
        print(
            f"  {name}: {out[name].pages} pages in {out[name].seconds:.1f} s "
            f"({out[name].rate:.1f} pages/s)",
            flush=True,
        )
    return out


def best(runs: list[dict[str, Measured]]) -> dict[str, Measured]:
    return {name: max((r[name] for r in runs), key=lambda m: m.rate) for name in runs[0]}


def table(results: dict[str, Measured]) -> str:
    plain_first = results["plain first"].rate
    plain_again = results["plain again"].rate
    rows = [
        "| crawl | crawler | pages | 200 | 304 | MB | seconds | pages/s | vs plain Scrapy |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, label, crawler, base in (
        ("plain first", "first crawl", "plain Scrapy", plain_first),
        ("fresh first", "first crawl", "scrapy_fresh", plain_first),
        ("plain again", "re-crawl (nothing changed)", "plain Scrapy", plain_again),
        ("fresh again", "re-crawl (nothing changed)", "scrapy_fresh (all due)", plain_again),
    ):
        m = results[name]
        statuses = m.statuses()
        rows.append(
            f"| {label} | {crawler} | {m.pages} | {statuses[200]} | {statuses[304]} | "
            f"{m.megabytes():.1f} | {m.seconds:.1f} | {m.rate:.1f} | "
            f"{m.rate / base if base else 0:.2f}x |"
        )
    return "\n".join(rows)


def profile(args: argparse.Namespace, server: Nginx, work: Path, out: Path) -> None:
    """The add-on's first crawl on a fresh store, under cProfile in the crawl process."""
    import json

    config = {
        "spider": "links",
        "start": [server.url("/index.html")],
        "settings": settings(args, work / "profiled"),
        "output": str(work / "profiled.json"),
    }
    config_path = work / "profiled-config.json"
    config_path.write_text(json.dumps(config))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    runner = ROOT / "tests" / "realsite_runner.py"
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), str(runner), str(config_path)],
        check=True,
        env=env,
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=args.timeout * 3,
    )
    stats = pstats.Stats(str(out))
    total = max(getattr(stats, "total_tt", 0.0), 1e-9)
    print(f"\nProfile of the add-on's first crawl ({total:.1f} s of CPU in the profiled process)")
    print(f"written to {out}; top functions by own time:")
    stats.sort_stats("tottime").print_stats(args.top)
    print("Top functions by cumulative time:")
    stats.sort_stats("cumulative").print_stats(args.top)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--links", type=int, default=6)
    parser.add_argument("--kb", type=float, default=5.0, help="kB of text per page")
    parser.add_argument("--concurrency", type=int, default=32, help="CONCURRENT_REQUESTS")
    parser.add_argument(
        "--per-domain", type=int, default=0, help="CONCURRENT_REQUESTS_PER_DOMAIN (0: Scrapy's)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs; each crawl's best kept")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per crawl")
    parser.add_argument("--profile", type=Path, help="also profile the add-on's first crawl")
    parser.add_argument("--top", type=int, default=25, help="profile rows shown")
    args = parser.parse_args()
    if find_nginx() is None:  # make bench goes on with the other benchmarks
        print("bench/crawl.py skipped: it needs nginx (apt-get install nginx-light)")
        return
    print(
        f"Crawl benchmark: {args.pages} pages of {args.kb:g} kB, {args.links} links each, "
        f"CONCURRENT_REQUESTS={args.concurrency}; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory(prefix="fresh-bench-crawl-") as tmp:
        work = Path(tmp)
        make_linked_site(work / "site", args.pages, args.links, int(args.kb * 1000))
        with Nginx(work / "site", work / "nginx") as server:
            runs = []
            for k in range(args.repeat):
                print(f"run {k + 1}/{args.repeat}", flush=True)
                runs.append(one_run(args, server, work / f"run{k}"))
            print()
            print(table(best(runs)))
            if args.profile is not None:
                profile(args, server, work, args.profile.resolve())


if __name__ == "__main__":
    main()
