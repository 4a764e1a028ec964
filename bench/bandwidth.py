"""Benchmark: bytes and requests per detected true change, and true freshness, of plain
Scrapy re-crawling every page each cycle against scrapy_fresh, on the demo site.

One demo site (``scrapy_fresh.demo``, seeded, its clock stepped by hand) is crawled for
``--cycles`` cycles, ``--hours`` simulated hours apart. In each cycle the example
project's three spiders run twice, as real ``scrapy crawl`` subprocesses:

* *plain*: ``FRESH_ENABLED=False`` (the add-on installs nothing): Scrapy's own scheduler,
  every reachable page fetched in full, every cycle;
* *scrapy_fresh*: the add-on as the example project configures it (its own stores).

Both see the same pages at (within seconds) the same simulated time. The site's truth
gives, per crawler (told apart by User-Agent): requests and bytes on the wire (status
line, headers, body), *detected changes* (GETs answered 200 that brought in a truly
changed page) and the *true freshness* of the copy, time-averaged from the end of the
first cycle (both copies complete) to one interval after the last cycle
(:mod:`scrapy_fresh.demo.truth`). It also checks what a 304 costs against a full GET of
the same page.

Usage::

    python bench/bandwidth.py                 # 8 cycles, 6 simulated hours apart
    python bench/bandwidth.py --cycles 4 --hours 12

Prints a markdown table on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scrapy_fresh.demo import DemoClock, DemoSite
from scrapy_fresh.demo.driver import SPIDERS, crawl
from scrapy_fresh.demo.model import HOUR
from scrapy_fresh.demo.server import DemoServer
from scrapy_fresh.demo.truth import copy_stats

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "example_project"
AGENTS = {"plain": "bench-plain-scrapy", "fresh": "bench-scrapy-fresh"}


def run_cycles(args: argparse.Namespace, workdir: Path) -> tuple[dict[str, Any], float]:
    site = DemoSite(
        DemoClock(speed=1.0, start=args.start), seed=args.seed, crawl_delay=0.01, retry_after=1
    )
    with DemoServer(site) as server:
        window_start = 0.0
        for cycle in range(1, args.cycles + 1):
            for name, agent in AGENTS.items():
                for spider in SPIDERS:
                    settings = {"USER_AGENT": agent, "LOG_LEVEL": "WARNING"}
                    if name == "plain":
                        settings["FRESH_ENABLED"] = "False"
                    else:
                        settings["FRESH_SQLITE_PATH"] = str(workdir / f"{spider}.sqlite")
                        settings["FRESH_VISIT_LOG"] = str(workdir / "visits.jsonl")
                    result = crawl(PROJECT, spider, server.base_url, settings)
                    if result.returncode != 0:
                        sys.exit(f"{name} {spider} failed:\n{result.log[-3000:]}")
            if cycle == 1:
                window_start = site.clock.now()
            print(f"cycle {cycle}/{args.cycles} done", file=sys.stderr, flush=True)
            site.clock.advance(args.hours * HOUR)
        return site.truth(), window_start


def _304_share(requests: list[dict[str, Any]]) -> list[float]:
    """Bytes of each 304 over the bytes of the last full GET of the same page."""
    full: dict[str, int] = {}
    shares = []
    for r in requests:
        if r["method"] == "GET" and r["status"] == 200:
            full[r["path"]] = r["bytes"]
        elif r["status"] == 304 and r["path"] in full:
            shares.append(r["bytes"] / full[r["path"]])
    return shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=8)
    parser.add_argument("--hours", type=float, default=6.0, help="simulated hours per cycle")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=float, default=1_800_000_000.0)
    parser.add_argument(
        "--truth-json", type=Path, help="also write the site's truth (changes, requests) here"
    )
    args = parser.parse_args()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fresh-bench-") as tmp:
        truth, start = run_cycles(args, Path(tmp))
    if args.truth_json:
        args.truth_json.write_text(json.dumps({**truth, "window_start": start}))
    end = truth["now"]
    rows = {}
    for name, agent in AGENTS.items():
        mine = [r for r in truth["requests"] if r["user_agent"] == agent]
        stats = copy_stats(
            truth, start=start, end=end, keep=lambda r, a=agent: r["user_agent"] == a
        )
        window = [r for r in mine if r["t"] >= start]
        n_bytes = sum(r["bytes"] for r in window)
        detected = stats.detected_changes
        rows[name] = {
            "requests": len(window),
            "bytes": n_bytes,
            "detected": detected,
            "bytes_per": n_bytes / detected if detected else float("inf"),
            "requests_per": len(window) / detected if detected else float("inf"),
            "freshness": stats.freshness,
            "age_h": stats.age_secs / 3600,
            "304": sum(r["status"] == 304 for r in window),
            "shares": _304_share(mine),
        }
    plain, fresh = rows["plain"], rows["fresh"]
    print(
        f"Demo site seed {args.seed}: {len(truth['pages'])} pages; {args.cycles} cycles, "
        f"{args.hours:g} simulated hours apart; window {(end - start) / 3600:.0f} simulated "
        f"hours after the first cycle; "
        f"{sum(1 for p in truth['pages'].values() for t in p['changes'] if start < t <= end)}"
        f" true changes in it. Python {platform.python_version()}, "
        f"{time.monotonic() - began:.0f} s.\n"
    )
    print(
        "| crawler | requests | MB | 304s | detected changes | kB / detected change "
        "| requests / detected change | true freshness | mean age (h) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, label in (("plain", "plain Scrapy (re-crawl all)"), ("fresh", "scrapy_fresh")):
        r = rows[name]
        print(
            f"| {label} | {r['requests']} | {r['bytes'] / 1e6:.2f} | {r['304']} | "
            f"{r['detected']} | {r['bytes_per'] / 1e3:.1f} | {r['requests_per']:.2f} | "
            f"{r['freshness']:.3f} | {r['age_h']:.2f} |"
        )
    ratio = plain["bytes_per"] / fresh["bytes_per"]
    shares = fresh["shares"]
    print(
        f"\nBytes per detected change: scrapy_fresh spends {ratio:.1f}x fewer than plain "
        f"Scrapy (goal >= 5x); true freshness {fresh['freshness']:.3f} vs "
        f"{plain['freshness']:.3f} (goal: equal or better)."
    )
    if shares:
        print(
            f"A 304 costs {statistics.median(shares):.2%} of the page's full GET (median; "
            f"max {max(shares):.2%}; goal <= 2%) over {len(shares)} 304 answers."
        )


if __name__ == "__main__":
    main()
