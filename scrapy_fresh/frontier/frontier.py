"""Two-level frontier: hosts first (politeness, then best page), pages within a host by score.

Castillo's two-level scheduling (seed ``castillo-scheduling-algorithms-web-crawling``,
Section 2: choose a site, then pages within it; never two requests to one site closer
than ``w``) over Mercator-style back queues (seed ``clifton-web-crawling-lecture``: one
queue per host and a heap of each host's earliest contact time). Among the hosts that
may be contacted now, the one holding the highest-scoring page goes first, so a big host
never starves the others: after each request it waits out its delay while the rest flow.

Two streams, as in WebFountain (seed ``edwards-adaptive-incremental-crawler-webfountain``,
Section 4: separate never-crawled and re-crawl queues mixed by a share): ``new`` for URLs
never fetched and ``refresh`` for due re-crawls. :class:`Frontier` serves the new stream
``new_share`` of the time when both have work, and either one alone when the other is empty.

Pure bookkeeping: no clock reads (every call takes ``now``), no I/O.
"""

from __future__ import annotations

import enum
import heapq
import itertools
from dataclasses import dataclass, field

from scrapy_fresh.frontier.politeness import Politeness

__all__ = ["Frontier", "Popped", "Stream"]


class Stream(str, enum.Enum):
    """Where a queued page came from."""

    NEW = "new"
    REFRESH = "refresh"


@dataclass(frozen=True)
class Popped:
    """A page the frontier hands out: fetch it now."""

    key: str
    host: str
    stream: Stream
    score: float


@dataclass
class _HostQueue:
    pages: list[tuple[float, int, str]] = field(default_factory=list)  # (-score, seq, key)

    def best(self) -> float:
        return -self.pages[0][0]


class _StreamQueues:
    """Per-host page heaps of one stream, plus the heaps of ready and waiting hosts."""

    def __init__(self, counter: itertools.count[int]) -> None:
        self.hosts: dict[str, _HostQueue] = {}
        self.ready: list[tuple[float, int, str]] = []  # (-best score, seq, host), lazy
        self.waiting: list[tuple[float, int, str]] = []  # (ready_at, seq, host), lazy
        self.size = 0
        self._counter = counter

    def push(
        self, key: str, host: str, score: float, politeness: Politeness, now: float, seq: int
    ) -> None:
        queue = self.hosts.get(host)
        if queue is None:
            queue = self.hosts[host] = _HostQueue()
        heapq.heappush(queue.pages, (-score, seq, key))
        self.size += 1
        if queue.pages[0][2] == key:  # the host's best page changed: (re)announce the host
            self._announce(host, queue, politeness, now)

    def _announce(self, host: str, queue: _HostQueue, politeness: Politeness, now: float) -> None:
        ready_at = politeness.ready_at(host)
        if ready_at <= now:
            heapq.heappush(self.ready, (-queue.best(), next(self._counter), host))
        else:
            heapq.heappush(self.waiting, (ready_at, next(self._counter), host))

    def _promote(self, politeness: Politeness, now: float) -> None:
        while self.waiting and self.waiting[0][0] <= now:
            _, _, host = heapq.heappop(self.waiting)
            queue = self.hosts.get(host)
            if queue is not None and queue.pages:
                self._announce(host, queue, politeness, now)

    def pop(
        self,
        politeness: Politeness,
        now: float,
        live: dict[str, tuple[str, Stream, int]],
        stream: Stream,
    ) -> tuple[str, str, float] | None:
        self._promote(politeness, now)
        while self.ready:
            neg_best, _, host = heapq.heappop(self.ready)
            queue = self.hosts.get(host)
            if queue is None:
                continue
            self._drop_dead(queue, live)
            if not queue.pages:
                del self.hosts[host]
                continue
            if not politeness.is_ready(host, now):  # contacted through the other stream
                heapq.heappush(
                    self.waiting, (politeness.ready_at(host), next(self._counter), host)
                )
                continue
            if -neg_best != queue.best():  # stale announcement: re-rank the host
                heapq.heappush(self.ready, (-queue.best(), next(self._counter), host))
                continue
            neg_score, _, key = heapq.heappop(queue.pages)
            self.size -= 1
            if queue.pages:
                heapq.heappush(self.waiting, (float("-inf"), next(self._counter), host))
            else:
                del self.hosts[host]
            return key, host, -neg_score
        return None

    def _drop_dead(self, queue: _HostQueue, live: dict[str, tuple[str, Stream, int]]) -> None:
        """Drop the entries of discarded pages (and of pages queued again since)."""
        while queue.pages:
            _, seq, key = queue.pages[0]
            entry = live.get(key)
            if entry is not None and entry[2] == seq:
                return
            heapq.heappop(queue.pages)
            self.size -= 1

    def next_time(self, politeness: Politeness) -> float | None:
        times = [politeness.ready_at(h) for h, q in self.hosts.items() if q.pages]
        return min(times) if times else None


class Frontier:
    """Pages waiting to be fetched, handed out politely and best-first.

    :param politeness: the per-host contact times (shared with whoever else contacts hosts).
    :param new_share: share of pops that go to never-fetched URLs when both streams have
        work (WebFountain's mix); 0 serves new URLs only when no re-crawl is ready.
    """

    def __init__(self, politeness: Politeness | None = None, *, new_share: float = 0.2) -> None:
        if not 0.0 <= new_share <= 1.0:
            raise ValueError(f"new_share ({new_share!r}) must be within [0, 1].")
        self.politeness = politeness if politeness is not None else Politeness()
        self.new_share = new_share
        counter = itertools.count()
        self._streams = {
            Stream.NEW: _StreamQueues(counter),
            Stream.REFRESH: _StreamQueues(counter),
        }
        self._counter = counter
        #: key -> (host, stream, sequence number of its live heap entry)
        self._live: dict[str, tuple[str, Stream, int]] = {}
        self.served = {Stream.NEW: 0, Stream.REFRESH: 0}

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def count(self, stream: Stream) -> int:
        """Pages queued in ``stream``."""
        return sum(1 for _, s, _ in self._live.values() if s is stream)

    def push(self, key: str, host: str, score: float, stream: Stream, now: float) -> bool:
        """Queue ``key`` (at ``host``, priority ``score``, higher first); False if already queued."""
        if key in self._live:
            return False
        seq = next(self._counter)
        self._live[key] = (host, stream, seq)
        self._streams[stream].push(key, host, score, self.politeness, now, seq)
        return True

    def discard(self, key: str) -> bool:
        """Forget a queued page; True if it was queued."""
        return self._live.pop(key, None) is not None

    def _preferred(self) -> tuple[Stream, Stream]:
        total = self.served[Stream.NEW] + self.served[Stream.REFRESH]
        if self.served[Stream.NEW] < self.new_share * (total + 1):
            return Stream.NEW, Stream.REFRESH
        return Stream.REFRESH, Stream.NEW

    def pop(self, now: float) -> Popped | None:
        """The next page to fetch at ``now``, or None if every queued host must still wait.

        The page's host is marked contacted at ``now`` (its delay starts).
        """
        for stream in self._preferred():
            got = self._streams[stream].pop(self.politeness, now, self._live, stream)
            if got is not None:
                key, host, score = got
                del self._live[key]
                self.served[stream] += 1
                self.politeness.contacted(host, now)
                return Popped(key, host, stream, score)
        return None

    def next_ready_time(self) -> float | None:
        """When the earliest queued host may be contacted (None when nothing is queued)."""
        times = [
            t for q in self._streams.values() if (t := q.next_time(self.politeness)) is not None
        ]
        return min(times) if times else None
