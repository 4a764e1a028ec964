"""Benchmark: the provider signals' work around each visit, this tree against a baseline.

:meth:`FreshProviderMiddleware._after_visit
<scrapy_fresh.crawl.provider_middleware.FreshProviderMiddleware._after_visit>` runs once
per visit (through the visit amenders, before the record is written) and calls
:meth:`SignalTracker.after_visit <scrapy_fresh.providers.tracker.SignalTracker.after_visit>`.
This times it in-process for ``--pages`` synthetic visits per repetition (30 hosts), the
code of this tree against the same modules as a git revision has them (``--baseline``;
default :data:`BASELINE`, the code before the shortcuts for visits with nothing to learn),
both in the same run, repetitions interleaved. Rows:

* ``304 plain`` -- the common re-crawl: a 304 with ``ETag``, ``Last-Modified`` and
  ``Date`` (nginx's), no provider claim, no meta signal, a normal page;
* ``304 etag only`` -- the same without ``Last-Modified``;
* ``304 plain, smart pages`` -- the plain 304 for pages with an update on record (their
  ``Last-Modified`` at a change), whose level is worked out from their host's trust;
* ``304 max-age`` -- a 304 with ``Cache-Control: max-age=86400`` (a quiet claim; its
  host's claims trusted, judged at the next repetition);
* ``sitemap claimed`` -- a 304 for pages a sitemap said changed since their last crawl
  (the claims remembered, then refuted by the visit);
* ``meta signals`` -- a 304 for pages whose spider puts ``fresh_updates`` and
  ``fresh_schedule`` in their meta;
* ``tracker after_visit, no signals`` -- ``SignalTracker.after_visit`` alone, given none;
* ``tracker before_visit`` -- ``SignalTracker.before_visit`` (``process_request``'s share).

Before the timed loop each repetition rebuilds its records, begins their visits
(``process_request``'s ``before_visit``) and records them with the refresh rule, as the
crawl does before the amenders run; only the timed calls are in the loop (the garbage
collector off while it runs). After the runs each row checks that both versions left
the same records, stats and store meta records (trust, quiet claims), and stops with an
error if not. Modules outside :data:`MODULES` are this tree's in both (the
``FRESH_PROVIDERS`` shortcut of :meth:`FreshConfig.provider_for_host
<scrapy_fresh.config.FreshConfig.provider_for_host>` counts for the baseline too).

Usage::

    python bench/provider_visit.py [--pages 3000] [--repeat 15] [--baseline REV] [--only ROW]

Prints a markdown table: µs per visit (min and median of the repetitions) of each
version, and their ratios.
"""

from __future__ import annotations

import argparse
import copy
import gc
import importlib
import importlib.util
import logging
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy import Spider
from scrapy.utils.test import get_crawler

from scrapy_fresh.crawl.runtime import FreshRuntime
from scrapy_fresh.frontier.revisit import RevisitPolicy, record_visit
from scrapy_fresh.keys import url_host, url_key
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.providers.ledger import QUIET_NAMESPACE, TRUST_NAMESPACE
from scrapy_fresh.store.base import PageState, Provider, SiteState, Status

ROOT = Path(__file__).resolve().parents[1]
#: The modules a baseline is loaded from, in import order; those it has as this tree
#: has them are left as they are.
MODULES = (
    "scrapy_fresh.providers.signals",
    "scrapy_fresh.providers._common",
    "scrapy_fresh.providers.dates",
    "scrapy_fresh.providers.http",
    "scrapy_fresh.providers.meta",
    "scrapy_fresh.providers.apply",
    "scrapy_fresh.providers.ledger",
    "scrapy_fresh.providers.tracker",
    "scrapy_fresh.crawl.provider_middleware",
)
#: The code before the shortcuts for visits with nothing to learn (main at 2c93637).
BASELINE = "2c936373dfb2"
NOW = 1_800_000_000.0
DAY = 86400.0
HOSTS = 30
LAST_MODIFIED = "Thu, 01 Jan 2026 00:00:00 GMT"
NGINX_304 = {
    "etag": '"6b08a30b-156b"',
    "last-modified": LAST_MODIFIED,
    "content-length": None,
    "date": "Fri, 15 Jan 2027 08:00:00 GMT",
    "cache-control": None,
    "expires": None,
    "age": None,
}
SCRAPY_META = {"download_timeout": 180.0, "download_slot": "", "download_latency": 0.01}


class BenchSpider(Spider):
    name = "bench"


# -- the baseline's modules ------------------------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def _path(module: str) -> str:
    return module.replace(".", "/") + ".py"


@contextmanager
def _swapped(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    """``sys.modules`` with ``modules`` in place of this tree's (put back after)."""
    saved = {name: sys.modules[name] for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        sys.modules.update(saved)


def load_baseline(rev: str, workdir: Path) -> tuple[type[Any], list[str]]:
    """The middleware class as ``rev`` has it, each of :data:`MODULES` that differs from
    this tree loaded from ``rev`` (its files written under ``workdir``; importing the
    others' ``rev`` versions); and the names of the modules loaded so."""
    for name in MODULES:  # this tree's versions, imported first
        importlib.import_module(name)
    loaded: dict[str, types.ModuleType] = {}
    for name in MODULES:
        source = _git("show", f"{rev}:{_path(name)}")
        if source == (ROOT / _path(name)).read_text():
            continue
        path = workdir / _path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        with _swapped({**loaded, name: module}):
            spec.loader.exec_module(module)
        loaded[name] = module
    middleware = loaded.get(MODULES[-1], sys.modules[MODULES[-1]])
    return middleware.FreshProviderMiddleware, sorted(loaded)


# -- one version's crawl ---------------------------------------------------------------


@dataclass
class Scenario:
    name: str
    headers: dict[str, str | None]
    #: meta of each page's request (beyond fresh_key and Scrapy's own)
    meta: dict[str, Any]
    #: a sitemap claims an update between the last crawl and now
    sitemap: bool = False
    #: a quiet claim judged before (its host's claims trusted)
    quiet_trust: bool = False
    #: the pages have a past update on record (their Last-Modified at a change): smart
    smart: bool = False
    #: what is timed: the middleware's ``_after_visit``, the tracker's ``after_visit``
    #: (``tracker``) or its ``before_visit`` (``before``: process_request's share)
    call: str = "middleware"


SCENARIOS = (
    Scenario("304 plain", NGINX_304, {}),
    Scenario("304 etag only", {**NGINX_304, "last-modified": None}, {}),
    Scenario("304 plain, smart pages", NGINX_304, {}, smart=True),
    Scenario("304 max-age", {**NGINX_304, "cache-control": "max-age=86400"}, {}, quiet_trust=True),
    Scenario("sitemap claimed", NGINX_304, {}, sitemap=True),
    Scenario(
        "meta signals",
        NGINX_304,
        {"fresh_updates": [NOW - 3600.0], "fresh_schedule": [[NOW + DAY, 0.5]]},
    ),
    Scenario("tracker after_visit, no signals", NGINX_304, {}, call="tracker"),
    Scenario("tracker before_visit", NGINX_304, {}, call="before"),
)


def records(pages: int, *, smart: bool) -> list[PageState]:
    """``pages`` records over :data:`HOSTS` hosts, last crawled a day ago, due now."""
    out = []
    for i in range(pages):
        url = f"http://site{i % HOSTS}.example/page/{i}"
        state = PageState(url_key(url), url, host=url_host(url), status=Status.QUEUED)
        record_visit(state, Outcome.NEW, NOW - 30 * DAY, RevisitPolicy(), SiteState(state.host))
        record_visit(state, Outcome.CHANGED, NOW - DAY, RevisitPolicy(), SiteState(state.host))
        state.etag, state.last_modified = NGINX_304["etag"], LAST_MODIFIED
        state.next_due = NOW
        if smart:
            state.past_updates = [NOW - 2 * DAY]
            state.provider = Provider.SMART
        out.append(state)
    return out


class Run:
    """One version's middleware on its own crawler and memory store."""

    def __init__(self, middleware_class: type[Any], scenario: Scenario, pages: int) -> None:
        crawler = get_crawler(BenchSpider, {"FRESH_STORE": "memory"})
        crawler.spider = BenchSpider.from_crawler(crawler)
        crawler.stats.open_spider()
        self.crawler = crawler
        self.runtime = runtime = FreshRuntime.of(crawler)
        self.clock = [NOW]
        runtime.clock = lambda: self.clock[0]
        self.mw = middleware_class(crawler, runtime)
        self.scenario = scenario
        self.templates = records(pages, smart=scenario.smart)
        runtime.store.put_many(copy.deepcopy(self.templates))
        if scenario.quiet_trust:
            for host in {s.host for s in self.templates}:
                runtime.store.put_meta(
                    TRUST_NAMESPACE, f"cache/{host}", {"observations": 9, "confirmed": 9.0}
                )
        self.states: list[PageState] = []

    def prepare(self, round_: int) -> None:
        """Fresh records (the clock a day on each round), their visits begun and recorded
        as the crawl does before the amenders run (begun in :meth:`timed` for
        ``before``)."""
        now = self.clock[0] = NOW + round_ * DAY
        self.states = copy.deepcopy(self.templates)
        for state in self.states:
            state.last_crawl = now - DAY
        if self.scenario.sitemap:
            self.mw.tracker.apply(
                _sitemap([s.url for s in self.states], now - 3600.0), now - 1800.0
            )
        if self.scenario.call != "before":
            self._begin()

    def _begin(self) -> None:
        """What ``process_request`` and the visit do before the amenders run."""
        now, mw, tracker = self.clock[0], self.mw, self.mw.tracker
        for state in self.states:
            if self.scenario.call != "before":
                tracker.before_visit(state)
            meta = {**SCRAPY_META, "fresh_key": state.key, **self.scenario.meta}
            mw._visits[state.key] = (meta, state.url)
            record_visit(state, Outcome.NOT_MODIFIED, now, self.runtime.policy)

    def timed(self) -> float:
        """Seconds the visits' ``_after_visit`` (or what ``call`` says) took."""
        gc.disable()
        try:
            return self._loop()
        finally:
            gc.enable()

    def _loop(self) -> float:
        now, headers, states = self.clock[0], self.scenario.headers, self.states
        not_modified = Outcome.NOT_MODIFIED
        if self.scenario.call == "before":
            begin = self.mw.tracker.before_visit
            t0 = time.perf_counter()
            for state in states:
                begin(state)
            return time.perf_counter() - t0
        if self.scenario.call == "tracker":
            after = self.mw.tracker.after_visit
            t0 = time.perf_counter()
            for state in states:
                after(state, not_modified, now, None)
            return time.perf_counter() - t0
        amend = self.mw._after_visit
        t0 = time.perf_counter()
        for state in states:
            amend(state, not_modified, now, headers)
        return time.perf_counter() - t0

    def finish(self) -> None:
        """End the visits (``before``: untimed) and write the records back."""
        if self.scenario.call == "before":
            self._begin()
            now = self.clock[0]
            for state in self.states:
                self.mw._after_visit(state, Outcome.NOT_MODIFIED, now, self.scenario.headers)
        self.runtime.store.put_many(self.states)

    def outcome(self) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
        """The records, stats and store meta records (trust, quiet claims) left."""
        store = self.runtime.store
        meta = {ns: dict(store.meta(ns)) for ns in (TRUST_NAMESPACE, QUIET_NAMESPACE)}
        stats = {k: v for k, v in self.crawler.stats.get_stats().items() if "time" not in k}
        return [s.__dict__ for s in self.states], stats, meta


def _sitemap(urls: list[str], when: float) -> Any:
    from scrapy_fresh.providers.signals import PastUpdate, Signals

    return Signals(past=[PastUpdate(url, when, "sitemap") for url in urls])


def measure(
    scenario: Scenario, versions: dict[str, type[Any]], pages: int, repeat: int
) -> dict[str, list[float]]:
    runs = {name: Run(cls, scenario, pages) for name, cls in versions.items()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    order = list(runs)
    for round_ in range(repeat):
        for name in order if round_ % 2 else reversed(order):  # alternate who goes first
            run = runs[name]
            run.prepare(round_)
            gc.collect()
            times[name].append(run.timed() / pages * 1e6)
            run.finish()
    first, *others = runs.values()
    for other in others:
        if other.outcome() != first.outcome():
            raise SystemExit(f"{scenario.name}: the versions left different records or stats")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000, help="visits per repetition (3000)")
    parser.add_argument("--repeat", type=int, default=15, help="repetitions (15)")
    parser.add_argument(
        "--baseline", default=BASELINE, help=f"git revision to compare with ({BASELINE})"
    )
    parser.add_argument("--only", default=None, help="run only the rows whose name has this")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the trust changes the rows make are logged
    rev = _git("rev-parse", args.baseline).strip()
    with tempfile.TemporaryDirectory() as workdir:
        baseline, loaded = load_baseline(rev, Path(workdir))
    from scrapy_fresh.crawl.provider_middleware import FreshProviderMiddleware

    versions = {"baseline": baseline, "this tree": FreshProviderMiddleware}
    print(f"Machine: Python {platform.python_version()}, {platform.machine()}")
    print(f"Baseline: {rev[:12]} ({', '.join(loaded) or 'the same modules as this tree'})")
    print(f"{args.pages} visits x {args.repeat} repetitions per row")
    print()
    print(
        "| row | baseline µs/visit min | median | this tree µs/visit min | median "
        "| speed-up min | median |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for scenario in SCENARIOS:
        if args.only and args.only not in scenario.name:
            continue
        times = measure(scenario, versions, args.pages, args.repeat)
        old, new = times["baseline"], times["this tree"]
        old_min, old_med = min(old), statistics.median(old)
        new_min, new_med = min(new), statistics.median(new)
        print(
            f"| {scenario.name} | {old_min:.2f} | {old_med:.2f} | {new_min:.2f} | "
            f"{new_med:.2f} | {old_min / new_min:.2f}x | {old_med / new_med:.2f}x |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
