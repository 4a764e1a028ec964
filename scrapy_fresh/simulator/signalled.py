"""The ``fresh`` policy with publishers: provider signals read, checked and trusted as in a crawl.

When :attr:`~scrapy_fresh.simulator.providers.ProviderMix.signals` is ``honest`` or
``lying``, the simulated providers do not push into the records directly. Each crawl
cycle the crawler reads every host's documents
(:class:`~scrapy_fresh.simulator.publishers.Publishers`) and hands what they say to the
crawl's own :class:`~scrapy_fresh.providers.tracker.SignalTracker`, the code behind
:class:`~scrapy_fresh.crawl.provider_middleware.FreshProviderMiddleware`: it writes past and
announced updates into the records, sets levels (fixed by hand, or autodetected) and due
times, and after each visit judges the claims and keeps each host's trust, in a
:class:`~scrapy_fresh.store.memory.MemoryStore` holding the trust records only (the page
records stay in the policy's list, as for plain ``fresh``).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from scrapy_fresh.outcome import Outcome
from scrapy_fresh.providers.ledger import iter_trust
from scrapy_fresh.providers.signals import Signals
from scrapy_fresh.providers.tracker import SignalTracker
from scrapy_fresh.simulator.engine import Context
from scrapy_fresh.simulator.policies import Fresh, page_host, page_key
from scrapy_fresh.simulator.providers import Level
from scrapy_fresh.simulator.publishers import Publishers
from scrapy_fresh.store.base import PageState, Provider
from scrapy_fresh.store.memory import MemoryStore

__all__ = ["SignalledFresh"]


class _RecordView:
    """The policy's records as the tracker's :class:`~scrapy_fresh.providers.tracker.PageRecords`
    (the very objects: writing them back is a no-op)."""

    def __init__(self, states: list[PageState]) -> None:
        self.by_key = {s.key: s for s in states}

    def get_many(self, keys: Iterable[str]) -> dict[str, PageState]:
        by_key = self.by_key
        return {k: by_key[k] for k in keys if k in by_key}

    def put_many(self, states: Iterable[PageState]) -> None:
        pass


class SignalledFresh(Fresh):
    """``fresh`` whose provider signals come from publishers through the tracker."""

    #: What a lying sitemap stamps on its pages
    #: (:data:`~scrapy_fresh.simulator.publishers.LIE_STAMPS`).
    lie_stamp = "now"
    #: What the lying hosts lie about (:data:`~scrapy_fresh.simulator.publishers.LIES`).
    lie = "sitemap"

    def __init__(self, ctx: Context) -> None:
        # The plain model's pushes and announcements are off (the publishers speak
        # instead); lastmod pages keep showing Last-Modified at their visits.
        self.true_levels = list(ctx.levels)
        quiet = [lv if lv is Level.LASTMOD else Level.NORMAL for lv in ctx.levels]
        super().__init__(replace(ctx, levels=quiet))
        mix = ctx.config.providers
        hosts = [page_host(p) for p in ctx.trace.pages]
        self.publishers = Publishers(
            ctx.trace, self.true_levels, hosts, mix, ctx.config.seed, self.lie_stamp, self.lie
        )
        self.readers = sorted(self.publishers.hosts)
        self.counts: Counter[str] = Counter()
        self.trust_store = MemoryStore()
        self.tracker = SignalTracker(
            self.trust_store,
            autodetect=mix.autodetect,
            trust=mix.trust,
            max_wait_secs=self.revisit.max_refresh_secs,
            records=_RecordView(self.states),
            key_of=page_key,
            host_of=page_host,
            fixed_level=None if mix.autodetect else self._hand_level,
            stat=self._stat,
            rules=self.revisit.rules,
        )

    def _level(self, page: int) -> Level:
        mix = self.ctx.config.providers
        if mix.autodetect:
            return self.ctx.levels[page]  # normal, or lastmod (smart once it shows a date)
        return self.true_levels[page]

    def _hand_level(self, state: PageState) -> Provider:
        return self.true_levels[self.index[state.key]].provider

    def _stat(self, name: str, count: int = 1) -> None:
        self.counts[name] += count

    def signals(self, prev: float, now: float) -> None:
        heard = None
        for host in self.readers:
            said = self.publishers.publish(host, now)
            if len(said):
                if heard is None:
                    heard = said
                else:
                    heard.extend(said)
        if heard is None:
            return
        for state in self.tracker.apply(heard, now):
            self._requeue(self.index[state.key])

    def visited(self, page: int, now: float, changed: bool, latest: float | None) -> None:
        state = self.states[page]
        self.tracker.before_visit(state)
        if changed and latest is not None and self.ctx.levels[page] is Level.LASTMOD:
            state.add_past_update(latest)  # as the runtime stores Last-Modified
        self.record(page, now, changed)
        own = self.own_signals(state.url, now)  # the answer's own headers (max-age)
        if len(own):
            self.tracker.add_own(state.key, own)
        outcome = Outcome.CHANGED if changed else Outcome.UNCHANGED
        self.tracker.after_visit(state, outcome, now)
        self.due.discard(page)
        heapq.heappush(self.heap, (state.next_due, state.key, page))

    def own_signals(self, url: str, now: float) -> Signals:
        """What the page's own answer says (:meth:`Publishers.own
        <scrapy_fresh.simulator.publishers.Publishers.own>`)."""
        return self.publishers.own(url, now)

    def demoted_hosts(self) -> tuple[set[str], set[str]]:
        """(lying hosts, honest hosts) with at least one kind of signal demoted now."""
        demoted = {t.host for t in iter_trust(self.trust_store) if t.record.demoted}
        liars = self.publishers.liars
        return demoted & liars, demoted - liars
