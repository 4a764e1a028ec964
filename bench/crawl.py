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
* the crawls, each in its own process: plain Scrapy's first crawl, the same crawl with
  the least a change-tracking add-on could do (bench/least_addon.py: fingerprint each
  page's items and record the page and its links in SQLite, in batches), the add-on's first
  crawl (``ADDONS = {"scrapy_fresh.Addon": 0}``, SQLite store, visit log on, all other
  settings at their defaults), plain Scrapy's full re-crawl, the add-on's re-crawl
  "a month later" (every page due; nothing changed, so nginx answers 304 to each), and
  Scrapy alone re-checking the same pages: a GET with the validators the add-on stored
  for each page, each 304 dropped by a downloader middleware at the add-on's position
  (540), nothing judged or recorded (tests/realsite_runner.py's ``checks`` spider,
  which schedules them all at once, so the downloader is as full as in the add-on's
  re-crawl).
  That last crawl is the floor of any re-crawl through Scrapy's downloader: plain
  Scrapy's full re-crawl over it is the highest re-crawl ratio an add-on that cost
  nothing could reach, and the add-on's re-crawl minus it is what the add-on costs.

Throughput is pages (nginx's 200 and 304 answers) per second of the crawl: Scrapy's
``elapsed_time_seconds`` stat, from the spider's opening to its close (store closing
included; interpreter start-up and imports not). ``--repeat N`` runs the sequence N
times on fresh stores; the table shows the run with the median first-crawl ratio
(a run's four crawls go back to back, so its ratios share the machine's load of the
moment). The table gives pages/s and the add-on's ratio to plain Scrapy's figure of the
same run, the seconds each crawl spent in Python's garbage collector and the TCP
connections Twisted opened (tests/realsite_runner.py's ``measure``), and the CPU
seconds of each crawl process (start-up included), the system (kernel) seconds among
them, with plain Scrapy's over the add-on's: on a machine shared with other work the CPU
ratio moves less than the wall-clock one. Goals (issue 14): first crawl
>= 0.95x, re-crawl of unchanged pages >= 3x.

``--profile FILE`` then runs the add-on's first crawl once more under cProfile (on a
fresh store), writes the profile to FILE and prints the costliest functions; then the
same for its all-due re-crawl of that store (to FILE with the suffix ``.again.prof``).

``--callgrind`` then counts the instructions of each crawl of a run under ``valgrind
--tool=callgrind`` (on fresh stores; slow: use ``--pages 600``), and of the add-on's two
crawls with provider signals and the visit log off (the features a throughput goal
could be bought with), on the site and on a site of one page: the difference is the
count per page without the start-up (imports, opening the store), which the clock's
``elapsed_time_seconds`` leaves out too. Instruction counts do not move with the
machine's load the way seconds do: it prints them, plain Scrapy's per-page count over
each crawl's (the throughput ratio if time followed the instructions) and the most the
add-on may cost per page for each goal.

Usage::

    python bench/crawl.py                        # 3,000 pages, 5 kB, 6 links, 32 requests
    python bench/crawl.py --pages 500 --repeat 3
    python bench/crawl.py --profile /tmp/fresh-first-crawl.prof
    python bench/crawl.py --pages 600 --callgrind
"""

from __future__ import annotations

import argparse
import os
import platform
import pstats
import resource
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
    cpu: float  # user + system seconds of the crawl process (start-up included)
    system: float = 0.0  # of which system (kernel) seconds: callgrind counts none of it

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


def crawl_configs(
    args: argparse.Namespace, server: Nginx, work: Path, store: Path
) -> dict[str, dict[str, Any]]:
    """The crawls of one run, in order, by name (the add-on's store is ``store``; the
    floor's ``checks`` are filled in once the add-on's first crawl has run)."""
    spider = {"spider": "links", "start": [server.url("/index.html")]}
    least = {
        **settings(args, None),
        "SPIDER_MIDDLEWARES": {"bench.least_addon.LeastAddon": 40},
        "LEAST_ADDON_SQLITE": str(work / "least.sqlite"),
    }
    return {
        "plain first": {**spider, "settings": settings(args, None)},
        "least first": {**spider, "settings": least},
        "fresh first": {**spider, "settings": settings(args, store)},
        "plain again": {**spider, "settings": settings(args, None)},
        "fresh again": {**spider, "settings": settings(args, store), "clock_offset": MONTH},
        "scrapy checks": {
            **spider,
            "spider": "checks",
            "settings": {
                **settings(args, None),
                "DOWNLOADER_MIDDLEWARES": {"tests.realsite_runner.DropNotModified": 540},
            },
        },
    }


def one_run(args: argparse.Namespace, server: Nginx, work: Path) -> dict[str, Measured]:
    store = work / "fresh"
    out: dict[str, Measured] = {}
    crawls = crawl_configs(args, server, work, store).items()
    for name, config in crawls:
        if name == "scrapy checks":
            config["checks"] = validators(store)
        out[name] = m = measure(args, server, work, name, config)
        print(
            f"  {name}: {m.pages} pages in {m.seconds:.1f} s ({m.rate:.1f} pages/s), "
            f"{m.cpu:.1f} CPU s",
            flush=True,
        )
    first, again = ratios(out)
    print(
        f"  add-on / plain Scrapy: first crawl {first:.2f}x (the least add-on: "
        f"{out['least first'].rate / out['plain first'].rate:.2f}x), re-crawl {again:.2f}x "
        f"(Scrapy's floor: {ceiling(out):.2f}x)",
        flush=True,
    )
    return out


def measure(
    args: argparse.Namespace, server: Nginx, work: Path, name: str, config: dict[str, Any]
) -> Measured:
    """Run one crawl in its own process; what nginx answered, the CPU it took, its time
    in the garbage collector and the connections it opened."""
    config = {**config, "measure": True}
    server.new_requests()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    crawl = run_crawl(config, work / name.replace(" ", "-"), timeout=args.timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    system = after.ru_stime - before.ru_stime
    cpu = (after.ru_utime - before.ru_utime) + system
    crawl.check()
    return Measured(name, crawl, server.new_requests(), cpu, system)


def validators(store: Path) -> list[list[str | None]]:
    """``[url, etag, last_modified]`` of every page the add-on's store has validators for."""
    from scrapy_fresh.store.sqlite import SQLiteStore

    with SQLiteStore(store / "state.sqlite") as opened:
        return [
            [s.url, s.etag, s.last_modified] for s in opened.iterate() if s.etag or s.last_modified
        ]


def ceiling(run: dict[str, Measured]) -> float:
    """Plain Scrapy's full re-crawl time over Scrapy's floor (the ``checks`` crawl): the
    re-crawl ratio of an add-on that cost nothing."""
    return run["scrapy checks"].rate / run["plain again"].rate


def ratios(run: dict[str, Measured]) -> tuple[float, float]:
    """The add-on's pages/s over plain Scrapy's: first crawl, re-crawl."""
    first = run["fresh first"].rate / run["plain first"].rate
    return first, run["fresh again"].rate / run["plain again"].rate


def median_run(runs: list[dict[str, Measured]]) -> dict[str, Measured]:
    """The run whose first-crawl ratio is the median (the crawls of one run are paired:
    run back to back, they share the machine's load of the moment)."""
    ordered = sorted(runs, key=lambda r: ratios(r)[0])
    return ordered[(len(ordered) - 1) // 2]


def table(results: dict[str, Measured]) -> str:
    rows = [
        (
            "| crawl | crawler | pages | 200 | 304 | MB | seconds | pages/s | vs plain Scrapy "
            "| CPU s | of it system s | CPU vs plain | GC s | connections |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, label, crawler, base in (
        ("plain first", "first crawl", "plain Scrapy", "plain first"),
        ("least first", "first crawl", "the least add-on (bench/least_addon.py)", "plain first"),
        ("fresh first", "first crawl", "scrapy_fresh", "plain first"),
        ("plain again", "re-crawl (nothing changed)", "plain Scrapy", "plain again"),
        ("fresh again", "re-crawl (nothing changed)", "scrapy_fresh (all due)", "plain again"),
        (
            "scrapy checks",
            "re-crawl (nothing changed)",
            "Scrapy alone, 304s dropped",
            "plain again",
        ),
    ):
        m, b = results[name], results[base]
        statuses = m.statuses()
        rows.append(
            f"| {label} | {crawler} | {m.pages} | {statuses[200]} | {statuses[304]} | "
            f"{m.megabytes():.1f} | {m.seconds:.1f} | {m.rate:.1f} | "
            f"{m.rate / b.rate:.2f}x | {m.cpu:.1f} | {m.system:.1f} | {b.cpu / m.cpu:.2f}x | "
            f"{m.crawl.measured.get('gc_seconds', 0.0):.1f} | "
            f"{int(m.crawl.measured.get('connections', 0))} |"
        )
    return "\n".join(rows)


def profiled(
    args: argparse.Namespace, server: Nginx, work: Path, out: Path, fresh: bool,
    clock_offset: float = 0.0,
) -> float:  # fmt: skip
    """One crawl (the add-on's, or plain Scrapy's) under cProfile in the crawl process;
    the profile goes to ``out``. The add-on's store is ``work/profiled``: fresh for its
    first crawl, then re-crawled with ``clock_offset``. Return its total seconds."""
    import json

    config: dict[str, Any] = {
        "spider": "links",
        "start": [server.url("/index.html")],
        "settings": settings(args, work / "profiled" if fresh else None),
        "output": str(out.with_suffix(".json")),
    }
    if clock_offset:
        config["clock_offset"] = clock_offset
    config_path = out.with_suffix(".config.json")
    config_path.write_text(json.dumps(config))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    runner = ROOT / "tests" / "realsite_runner.py"
    with out.with_suffix(".log").open("w") as log:  # the crawl's log, next to its profile
        subprocess.run(
            [sys.executable, "-m", "cProfile", "-o", str(out), str(runner), str(config_path)],
            check=True,
            env=env,
            cwd=work,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=args.timeout * 3,
        )
    return float(getattr(pstats.Stats(str(out)), "total_tt", 0.0))


def counted(args: argparse.Namespace, work: Path, name: str, config: dict[str, Any]) -> int:
    """One crawl under ``valgrind --tool=callgrind``: the instructions it executed."""
    import json
    import re

    config = {
        **config,
        "settings": {**config["settings"], "DOWNLOAD_TIMEOUT": 600},  # ~50x slower
        "output": str(work / f"{name}.json"),
    }
    config_path = work / f"{name}.config.json"
    config_path.write_text(json.dumps(config))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    runner = ROOT / "tests" / "realsite_runner.py"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={work / name}.callgrind",
         sys.executable, str(runner), str(config_path)],
        env=env, cwd=work, capture_output=True, text=True, timeout=args.timeout * 60, check=False,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise RuntimeError(f"callgrind run {name} failed: {done.stderr[-2000:]}")
    return int(found.group(1))


#: The add-on with the features a throughput goal could be bought with switched off.
LEAN = {"FRESH_PROVIDER_SIGNALS": False, "FRESH_VISIT_LOG": ""}
COUNTED = (
    ("plain first", "plain Scrapy, first crawl"),
    ("least first", "the least add-on, first crawl"),
    ("fresh first", "scrapy_fresh, first crawl"),
    ("lean first", "  without provider signals and visit log"),
    ("plain again", "plain Scrapy, full re-crawl"),
    ("fresh again", "scrapy_fresh, all-due re-crawl (304s)"),
    ("lean again", "  without provider signals and visit log"),
    ("scrapy checks", "Scrapy alone re-checking (the floor)"),
)


def counted_crawls(args: argparse.Namespace, server: Nginx, work: Path) -> dict[str, int]:
    """The instructions of every crawl of :data:`COUNTED` against ``server``."""
    work.mkdir(parents=True, exist_ok=True)
    configs = crawl_configs(args, server, work, work / "fresh")
    lean = settings(args, work / "lean")
    configs["lean first"] = {**configs["fresh first"], "settings": {**lean, **LEAN}}
    configs["lean again"] = {**configs["fresh again"], "settings": {**lean, **LEAN}}
    counts: dict[str, int] = {}
    for name, _ in COUNTED:
        if name == "scrapy checks":
            configs[name]["checks"] = validators(work / "fresh")
        counts[name] = counted(args, work, name.replace(" ", "-"), configs[name])
    return counts


def instructions(args: argparse.Namespace, server: Nginx, work: Path) -> None:
    """Count the instructions of every crawl of a run, and of the add-on's two crawls
    with :data:`LEAN` settings, on the site and on a site of one page (the same crawls:
    start-up, imports and opening the store, nearly all of it outside the clock's
    ``elapsed_time_seconds``). Print them, the count per page without the start-up
    (the difference over the pages between), and plain Scrapy's per-page count over
    each crawl's: the throughput ratio if time followed the instructions. Unlike
    seconds, the counts do not move with the machine's load."""
    counts = counted_crawls(args, server, work / "site")
    make_linked_site(work / "one", 1, args.links, int(args.kb * 1000))
    with Nginx(work / "one", work / "one-nginx") as tiny:
        startup = counted_crawls(args, tiny, work / "one-page")
    pages = args.pages - 1  # between a site of args.pages pages and one of 1
    per_page = {name: (counts[name] - startup[name]) / pages for name in counts}
    print(f"\nInstructions (callgrind; {args.pages + 1} pages, and 2 for the start-up):")
    print("| crawl | G | start-up G | M per page | plain Scrapy's / this, per page |")
    print("|---|---:|---:|---:|---:|")
    for name, label in COUNTED:
        base = per_page["plain again" if "again" in name or "checks" in name else "plain first"]
        print(
            f"| {label} | {counts[name] / 1e9:.2f} | {startup[name] / 1e9:.2f} "
            f"| {per_page[name] / 1e6:.2f} | {base / per_page[name]:.2f}x |"
        )
    budget_first = per_page["plain first"] * (1 / 0.95 - 1)
    budget_again = per_page["plain again"] / 3 - per_page["scrapy checks"]
    print(
        f"\nper page: the add-on's first crawl costs "
        f"{(per_page['fresh first'] - per_page['plain first']) / 1e6:+.2f} M "
        f"(goal 0.95x: at most {budget_first / 1e6:+.2f} M); its re-crawl "
        f"{(per_page['fresh again'] - per_page['scrapy checks']) / 1e6:+.2f} M over "
        f"the floor (goal 3x: at most {budget_again / 1e6:+.2f} M)"
    )


def profile(args: argparse.Namespace, server: Nginx, work: Path, out: Path) -> None:
    """Profile plain Scrapy's and the add-on's first crawls, then the add-on's all-due
    re-crawl (to FILE with the suffix ``.again.prof``); print where the add-on's time
    goes: its own functions by cumulative time (nested calls overlap), as a share of
    the add-on's crawl."""
    out.parent.mkdir(parents=True, exist_ok=True)
    plain_total = profiled(args, server, work, out.with_suffix(".plain.prof"), fresh=False)
    total = profiled(args, server, work, out, fresh=True)
    print(
        f"\nProfiles (cProfile, first crawl): plain Scrapy {plain_total:.1f} s, "
        f"the add-on {total:.1f} s ({total - plain_total:+.1f} s); {out} and "
        f"{out.with_suffix('.plain.prof')}"
    )
    show(args, out, total)
    again = out.with_suffix(".again.prof")
    total = profiled(args, server, work, again, fresh=True, clock_offset=MONTH)
    print(f"\nProfile (cProfile, the add-on's all-due re-crawl): {total:.1f} s; {again}")
    show(args, again, total)


def show(args: argparse.Namespace, out: Path, total: float) -> None:
    """Print scrapy_fresh's functions of the profile ``out`` by cumulative time."""
    stats = pstats.Stats(str(out))
    rows = []
    for (file, line, func), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if f"{os.sep}scrapy_fresh{os.sep}" in file:
            where = file.split(f"{os.sep}scrapy_fresh{os.sep}")[-1]
            rows.append((cumulative, own, calls, f"{where}:{line}({func})"))
    print("scrapy_fresh functions by cumulative time (share of the add-on's crawl):")
    print(f"{'cumul. s':>9} {'share':>6} {'own s':>6} {'calls':>8}  function")
    for cumulative, own, calls, name in sorted(rows, reverse=True)[: args.top]:
        print(f"{cumulative:9.2f} {cumulative / total:6.1%} {own:6.2f} {calls:8d}  {name}")
    own_total = sum(r[1] for r in rows)
    print(f"own time in scrapy_fresh code: {own_total:.1f} s ({own_total / total:.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--links", type=int, default=6)
    parser.add_argument("--kb", type=float, default=5.0, help="kB of text per page")
    parser.add_argument("--concurrency", type=int, default=32, help="CONCURRENT_REQUESTS")
    parser.add_argument(
        "--per-domain", type=int, default=0, help="CONCURRENT_REQUESTS_PER_DOMAIN (0: Scrapy's)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs (the median one shown)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per crawl")
    parser.add_argument("--profile", type=Path, help="also profile the add-on's first crawl")
    parser.add_argument("--top", type=int, default=25, help="profile rows shown")
    parser.add_argument(
        "--callgrind", action="store_true", help="also count instructions (valgrind)"
    )
    args = parser.parse_args()
    if args.callgrind and args.pages < 2:
        parser.error("--callgrind needs --pages 2 or more (a one-page site counts the start-up)")
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
            if len(runs) > 1:
                print(
                    "first-crawl and re-crawl ratios per run (Scrapy's floor): "
                    + ", ".join(
                        f"{a:.2f}x / {b:.2f}x ({ceiling(r):.2f}x)"
                        for r, (a, b) in zip(runs, map(ratios, runs), strict=True)
                    )
                )
                print("the run with the median first-crawl ratio:")
            median = median_run(runs)
            print(table(median))
            again = median["fresh again"]
            floor = median["scrapy checks"]
            print(
                f"\nthe add-on's re-crawl over Scrapy's floor: "
                f"{(again.seconds - floor.seconds) / max(floor.pages, 1) * 1e3:+.2f} ms per page "
                f"({(again.cpu - floor.cpu) / max(floor.pages, 1) * 1e3:+.2f} ms of CPU)"
            )
            if args.profile is not None:
                profile(args, server, work, args.profile.resolve())
            if args.callgrind:
                instructions(args, server, work / "callgrind")


if __name__ == "__main__":
    main()
