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

__all__ = ["POLL_SECS", "HostBlocks"]

logger = logging.getLogger(__name__)

#: Seconds between two reads of the blocked hosts by a running crawl.
POLL_SECS = 1.0


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

    def __contains__(self, host: object) -> bool:
        return host in self.hosts

    def __bool__(self) -> bool:
        return bool(self.hosts)

    def poll(self, now: float) -> tuple[frozenset[str], frozenset[str]] | None:
        """Read the blocked hosts if it is time; return (newly blocked, newly unblocked),
        or None if it is not time yet.

        A store failure keeps the hosts as they were (logged; read again next time).
        """
        if now < self.next_poll:
            return None
        self.next_poll = now + self.poll_secs
        try:
            hosts = frozenset(self._read())
        except StoreError as exc:
            logger.warning("scrapy_fresh: cannot read the blocked hosts: %s", exc)
            return frozenset(), frozenset()
        blocked, unblocked = hosts - self.hosts, self.hosts - hosts
        self.hosts = hosts
        return blocked, unblocked
