"""A Hypothesis stateful test of a crawl's records over a random link-dense graph.

The real :class:`~scrapy_fresh.crawl.scheduler.FreshScheduler` and runtime on a real SQLite
file, and on a real Redis (the frontier workers share), run after run: pages are re-discovered before, during and
after their visits, with fragments and other meta, visits complete in random order, the
clock moves. After every step (DESIGN.md, invariants):

* no committed visit is missing from the store or overwritten by an older state;
* no store write was refused as a regression (nothing tried to);
* no page is handed out twice in one run (but for the redirects of its request);
* at the end of a run every URL seen in it was fetched, or reached by a redirect, unless
  its record says it was not due (the first run, on an empty store, fetches every URL it
  sees, as plain Scrapy does);
* a redirect to a URL the run has already seen is dropped, as Scrapy's dupefilter drops
  it; its source page is recorded ``blocked``;
* a page that goes (404/410) is told gone once per disappearance (per last good visit),
  across runs and given-back leases.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from scrapy import Request
from scrapy.utils.test import get_crawler

from scrapy_fresh.crawl.runtime import FreshRuntime
from scrapy_fresh.crawl.scheduler import FreshScheduler
from scrapy_fresh.keys import url_key
from scrapy_fresh.outcome import Outcome
from tests.conftest import HARNESS_NOW, HarnessSpider
from tests.redis_helpers import SHARED_URL, delete_prefix, shared_client, unique_prefix

N_PAGES = 8
URLS = [f"http://g.example/p{n}" for n in range(N_PAGES)]
KEYS = [url_key(u) for u in URLS]
FRAGMENTS = ["", "#a", "#b"]


class CrawlRecords(RuleBasedStateMachine):
    #: FRESH_STORE: "sqlite", or "redis" (the frontier shared by workers).
    store = "sqlite"

    @initialize(
        links=st.lists(
            st.lists(st.integers(0, N_PAGES - 1), min_size=1, max_size=N_PAGES),
            min_size=N_PAGES,
            max_size=N_PAGES,
        )
    )
    def open(self, links: list[list[int]]) -> None:
        self.links = links
        self.tmp = tempfile.TemporaryDirectory()
        self.prefix = unique_prefix("records")
        self.now = HARNESS_NOW
        self.committed: dict[str, tuple[int, float | None, int | None, str | None]] = {}
        self.runs = 0
        self.told: list[tuple[str, float | None]] = []
        self.scheduler: FreshScheduler | None = None
        self._start_run()

    def _start_run(self) -> None:
        config: dict[str, Any] = {
            "FRESH_STORE": self.store,
            "REDIS_URL": SHARED_URL,
            "FRESH_REDIS_KEY": self.prefix,
            "FRESH_REDIS_LEASE_SECS": 1e9,  # no lease runs out: one worker, never killed
            "FRESH_SQLITE_PATH": str(Path(self.tmp.name) / "fresh.sqlite"),
            "FRESH_CYCLE_LOOKAHEAD_SECS": 0.0,
            "FRESH_MIN_REFRESH_SECS": 60.0,
            "FRESH_DEFAULT_REFRESH_SECS": 3600.0,
        }
        crawler = get_crawler(HarnessSpider, config)
        crawler.spider = HarnessSpider.from_crawler(crawler)
        crawler.stats.open_spider()
        runtime = FreshRuntime.of(crawler)
        runtime.clock = lambda: self.now
        runtime.outcome_listeners.append(self._heard)
        self.crawler, self.runtime = crawler, runtime
        self.scheduler = FreshScheduler.from_crawler(crawler)
        self.scheduler.open(crawler.spider)
        self.opened_at = self.now
        self.handed: dict[str, int] = {}
        self.continued: dict[str, int] = {}  # redirects taken, by the source's key
        self.redirected: set[str] = set()  # keys reached by a redirect
        self.inflight: list[Request] = []
        self.seen: set[str] = set()
        self.runs += 1

    def _heard(self, state: Any, outcome: Outcome, now: float, headers: Any) -> None:
        if self.runtime.visits.became_gone:
            self.told.append((state.key, state.last_crawl))

    # -- the crawl -------------------------------------------------------------------

    def _enqueue(self, n: int, fragment: str, variant: int) -> None:
        assert self.scheduler is not None
        url = URLS[n] + fragment
        request = Request(url, meta={"v": variant}, cb_kwargs={"k": variant})
        self.seen.add(KEYS[n])
        self.scheduler.enqueue_request(request)

    @rule(n=st.integers(0, N_PAGES - 1), fragment=st.sampled_from(FRAGMENTS),
          variant=st.integers(0, 2))  # fmt: skip
    def discover(self, n: int, fragment: str, variant: int) -> None:
        self._enqueue(n, fragment, variant)

    def _pop(self) -> bool:
        assert self.scheduler is not None
        request = self.scheduler.next_request()
        if request is None:
            return False
        key = request.meta["fresh_key"]
        self.handed[key] = self.handed.get(key, 0) + 1
        if self.store == "redis" and key in self.committed:
            # a shared frontier hands a page out whenever it is due, run or not
            last = self.runtime.store.get(key)
            assert last is not None
            assert last.next_due <= self.now, f"{request.url} handed out before due"
        else:
            allowed = 1 + self.continued.get(key, 0)
            assert self.handed[key] <= allowed, f"{request.url} handed out twice in one run"
        self.inflight.append(request)
        return True

    @rule()
    def hand_out(self) -> None:
        self._pop()

    def _complete(self, index: int, kind: int, fingerprint: int) -> None:
        request = self.inflight.pop(index % len(self.inflight))
        meta = request.meta
        runtime = self.runtime
        if kind == 0:
            runtime.visits.record_outcome(meta, Outcome.ERROR)
        elif kind == 4:
            runtime.visits.record_outcome(meta, Outcome.GONE)
        elif kind == 1 and runtime.leases[meta["fresh_key"]].visited:
            runtime.visits.record_outcome(meta, Outcome.NOT_MODIFIED, headers={"etag": '"same"'})
        else:
            runtime.visits.record_fetch(
                meta, fingerprint, headers={"etag": f'"{fingerprint}"'}, content_length=10
            )
        self._note(meta["fresh_key"])
        n = KEYS.index(meta["fresh_key"])
        for i, target in enumerate(self.links[n]):  # the page's links, with fragments
            self._enqueue(target, FRAGMENTS[i % len(FRAGMENTS)], i)

    @precondition(lambda self: bool(self.inflight))
    @rule(index=st.integers(0, 50), kind=st.integers(0, 4),
          fingerprint=st.sampled_from([0, 0xFFFF, 0xFFFF_0000_0000]))  # fmt: skip
    def complete(self, index: int, kind: int, fingerprint: int) -> None:
        self._complete(index, kind, fingerprint)

    def _note(self, key: str) -> None:
        state = self.runtime.store.get(key)
        assert state is not None
        self.committed[state.key] = (state.visits, state.last_crawl, state.fingerprint, state.etag)

    @precondition(lambda self: bool(self.inflight))
    @rule(index=st.integers(0, 50), to=st.integers(0, N_PAGES - 1))
    def redirect(self, index: int, to: int) -> None:
        """The server redirects an in-flight request, as Scrapy's RedirectMiddleware
        sends it on: the same meta, the URLs so far in ``redirect_urls``."""
        assert self.scheduler is not None
        request = self.inflight.pop(index % len(self.inflight))
        key = request.meta["fresh_key"]
        urls = [*request.meta.get("redirect_urls", []), request.url]
        moved = request.replace(url=URLS[to], meta={**request.meta, "redirect_urls": urls})
        # A redirect to the URL being fetched (a loop through a cookie, say) goes on; one
        # to a URL this run has seen (found, leased, fetched, reached) is dropped.
        seen = KEYS[to] in self.seen or KEYS[to] in self.handed or KEYS[to] in self.redirected
        already = (
            KEYS[to] != key
            and moved.url != request.url
            and (seen or KEYS[to] in self.runtime.leases)
        )
        dropped = self.crawler.stats.get_value("fresh/requests/duplicate_redirect", 0)
        taken = self.scheduler.enqueue_request(moved)
        assert taken is not already, (request.url, moved.url)
        if taken:
            self.continued[key] = self.continued.get(key, 0) + 1
            self.redirected.add(KEYS[to])
        else:  # recorded blocked: looked at again in FRESH_MAX_REFRESH_SECS
            stats = self.crawler.stats
            assert stats.get_value("fresh/requests/duplicate_redirect") == dropped + 1
            assert key not in self.runtime.leases
            self._note(key)

    @rule(secs=st.sampled_from([1.0, 120.0, 4000.0]))
    def advance(self, secs: float) -> None:
        self.now += secs

    @rule(start=st.integers(0, N_PAGES - 1), kind=st.sampled_from([3, 3, 4]))
    def end_run(self, start: int, kind: int) -> None:
        """Crawl until nothing is left (every page fetched, or with ``kind`` 4 every page
        answering 404), then close; the next run starts."""
        self._enqueue(start, "", 0)
        idle = 0
        while idle < 3:  # a shared frontier is polled again after a short wait
            if self._pop() or self.inflight:
                idle = 0
                if self.inflight:
                    self._complete(0, kind, 0xFFFF)
            else:
                idle += 1
                self.now += 0.5
        assert self.scheduler is not None
        self.runtime.flush_new()
        records = self.runtime.store.get_many(self.seen)
        for key in self.seen:  # a URL reached by a redirect is recorded as its source
            fetched = self.handed.get(key, 0) >= 1 or key in self.redirected
            state = records.get(key)
            assert fetched or (
                state is not None and self.runs > 1 and state.next_due > self.opened_at
            ), key
        self.scheduler.close("finished")
        self.now += 5000.0
        self._start_run()

    # -- invariants ------------------------------------------------------------------

    @invariant()
    def no_visit_lost_or_overwritten(self) -> None:
        if not getattr(self, "committed", None):
            return
        stored = self.runtime.store.get_many(self.committed)
        for key, (visits, last, fingerprint, etag) in self.committed.items():
            state = stored.get(key)
            assert state is not None, key
            assert state.visits >= visits
            if last is not None:
                assert state.last_crawl is not None
                assert state.last_crawl >= last
                if state.last_crawl == last and state.visits == visits:
                    assert (state.fingerprint, state.etag) == (fingerprint, etag)
        assert getattr(self.runtime.store, "regressions_refused", 0) == 0

    @invariant()
    def told_gone_once_per_disappearance(self) -> None:
        told = getattr(self, "told", [])
        assert len(set(told)) == len(told), told

    def teardown(self) -> None:
        if getattr(self, "scheduler", None) is not None:
            self.scheduler.close("finished")  # type: ignore[union-attr]
        if hasattr(self, "tmp"):
            self.tmp.cleanup()
            client = shared_client()
            delete_prefix(client, self.prefix)
            client.close()


class SharedCrawlRecords(CrawlRecords):
    store = "redis"


@pytest.mark.parametrize("machine", [CrawlRecords, SharedCrawlRecords], ids=["sqlite", "redis"])
def test_crawl_records_over_random_link_graphs(machine: type[CrawlRecords]) -> None:
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=40,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
