"""Hosts a running crawl does not fetch: blocked by an operator, or paused.

The store keeps the hosts an operator blocked (``scrapy-fresh block``,
:meth:`~scrapy_fresh.store.base.StateStore.blocked_hosts`); a crawl reads them again every
:data:`POLL_SECS` seconds, so a block or an unblock given from the shell while it runs
takes effect within that time. A host that stopped answering is *paused* by the crawl
itself until a given time (:mod:`scrapy_fresh.crawl.reachability`), in this crawl only.
The scheduler parks the pages of a blocked or paused host (due ones and new ones alike)
and hands them out again once it is neither. Pure bookkeeping: the caller passes ``now``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from scrapy_fresh.exceptions import StoreError

__all__ = ["MAX_FAILING_POLL_SECS", "POLL_SECS", "HostBlocks"]

logger = logging.getLogger(__name__)

#: Seconds between two reads of the blocked hosts by a running crawl.
POLL_SECS = 1.0
#: Longest wait between two reads while the store fails (doubling from POLL_SECS).
MAX_FAILING_POLL_SECS = 30.0


class HostBlocks:
    """The blocked hosts, read through ``read`` at most every ``poll_secs`` seconds.

    >>> stored = {"a.test": 1.0}
    >>> blocks = HostBlocks(lambda: dict(stored))
    >>> blocks.poll(0.0), "a.test" in blocks
    ((frozenset({'a.test'}), frozenset()), True)
    >>> stored.clear()
    >>> blocks.poll(0.5), blocks.poll(1.0)
    (None, (frozenset(), frozenset({'a.test'})))
    """

    def __init__(self, read: Callable[[], dict[str, float]], poll_secs: float = POLL_SECS) -> None:
        self._read = read
        self.poll_secs = poll_secs
        #: Blocked or paused hosts.
        self.hosts: frozenset[str] = frozenset()
        #: Hosts blocked in the store, as last read.
        self.stored: frozenset[str] = frozenset()
        #: Paused hosts, by the time they are tried again.
        self.paused: dict[str, float] = {}
        #: When the blocked hosts are read next.
        self.next_poll = float("-inf")
        #: Reads failed in a row (the store is unreachable).
        self.failures = 0

    def __contains__(self, host: object) -> bool:
        return host in self.hosts

    def __bool__(self) -> bool:
        return bool(self.hosts)

    def pause(self, host: str, until: float) -> bool:
        """Pause ``host`` until ``until`` (later if it is paused longer already); return
        whether that newly keeps its pages back.

        >>> blocks = HostBlocks(dict)
        >>> blocks.pause("a.test", 5.0), blocks.pause("a.test", 3.0), "a.test" in blocks
        (True, False, True)
        >>> blocks.poll(4.0), blocks.poll(5.0)
        ((frozenset(), frozenset()), (frozenset(), frozenset({'a.test'})))
        """
        was = host in self.hosts
        self.paused[host] = max(until, self.paused.get(host, until))
        self.hosts = self.stored | frozenset(self.paused)
        return not was

    def poll(self, now: float) -> tuple[frozenset[str], frozenset[str]] | None:
        """Read the blocked hosts if it is time, and end the pauses that are over; return
        (newly blocked, newly unblocked), or None if it is not time yet.

        A store failure keeps the hosts as they were: logged once, and read again after
        a wait that doubles while it fails (up to :data:`MAX_FAILING_POLL_SECS`).

        >>> def down() -> dict[str, float]:
        ...     raise StoreError("down")
        >>> blocks = HostBlocks(down)
        >>> [blocks.poll(t) is not None for t in (0.0, 1.0, 2.0, 3.0, 4.0)]
        [True, True, False, True, False]
        """
        if now < self.next_poll:
            return None
        self.next_poll = now + self.poll_secs
        self.stored = self._read_stored(now)
        for host in [h for h, until in self.paused.items() if until <= now]:
            del self.paused[host]
        hosts = self.stored | frozenset(self.paused)
        blocked, unblocked = hosts - self.hosts, self.hosts - hosts
        self.hosts = hosts
        return blocked, unblocked

    def _read_stored(self, now: float) -> frozenset[str]:
        try:
            stored = frozenset(self._read())
        except StoreError as exc:
            self.failures += 1
            wait = min(self.poll_secs * 2.0 ** (self.failures - 1), MAX_FAILING_POLL_SECS)
            self.next_poll = now + wait
            if self.failures == 1:
                logger.warning(
                    "scrapy_fresh: cannot read the blocked hosts (%s); the last ones read "
                    "hold, and they are read again as the store comes back.",
                    exc,
                )
            return self.stored
        if self.failures:
            logger.info("scrapy_fresh: the blocked hosts are read again")
            self.failures = 0
        return stored
