"""Hosts an operator blocked (``scrapy-fresh block``), as a running crawl sees them.

The store keeps the blocked hosts (:meth:`~scrapy_fresh.store.base.StateStore.blocked_hosts`);
a crawl reads them again every :data:`POLL_SECS` seconds, so a block or an unblock given
from the shell while it runs takes effect within that time. The scheduler parks the pages
of a blocked host (due ones and new ones alike) and hands them out again once the host is
unblocked. Pure bookkeeping: the caller passes ``now``.
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
        self.hosts: frozenset[str] = frozenset()
        #: When the blocked hosts are read next.
        self.next_poll = float("-inf")
        #: Reads failed in a row (the store is unreachable).
        self.failures = 0

    def __contains__(self, host: object) -> bool:
        return host in self.hosts

    def __bool__(self) -> bool:
        return bool(self.hosts)

    def poll(self, now: float) -> tuple[frozenset[str], frozenset[str]] | None:
        """Read the blocked hosts if it is time; return (newly blocked, newly unblocked),
        or None if it is not time yet.

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
        try:
            hosts = frozenset(self._read())
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
            return frozenset(), frozenset()
        if self.failures:
            logger.info("scrapy_fresh: the blocked hosts are read again")
            self.failures = 0
        blocked, unblocked = hosts - self.hosts, self.hosts - hosts
        self.hosts = hosts
        return blocked, unblocked
