"""Per-host politeness: the earliest time each host may be contacted again.

Mercator's back queues (seed ``clifton-web-crawling-lecture``: "a heap of the earliest
time each host can be contacted") and Castillo's wait ``w`` between two requests to one
site (seed ``castillo-scheduling-algorithms-web-crawling``, Section 2). A host's delay is
the largest of the configured download delay, its robots.txt ``Crawl-delay`` and any
back-off it asked for (429/503 with ``Retry-After``).
"""

from __future__ import annotations

__all__ = ["Politeness"]


class Politeness:
    """Next-allowed contact time per host; pure bookkeeping, the caller passes ``now``.

    :param default_delay: seconds between two requests to one host (Scrapy's
        ``DOWNLOAD_DELAY``).
    """

    def __init__(self, default_delay: float = 0.0) -> None:
        if default_delay < 0:
            raise ValueError(f"default_delay ({default_delay!r}) must be at least 0.")
        self.default_delay = float(default_delay)
        self._delays: dict[str, float] = {}
        self._next: dict[str, float] = {}

    def set_delay(self, host: str, delay: float) -> None:
        """Raise ``host``'s delay to at least ``delay`` seconds (e.g. its Crawl-delay)."""
        if delay < 0:
            raise ValueError(f"delay ({delay!r}) for {host!r} must be at least 0.")
        self._delays[host] = max(self.default_delay, float(delay))

    def delay(self, host: str) -> float:
        """The wait between two requests to ``host``."""
        return self._delays.get(host, self.default_delay)

    def ready_at(self, host: str) -> float:
        """The earliest time ``host`` may be contacted (``-inf`` if never contacted)."""
        return self._next.get(host, float("-inf"))

    def is_ready(self, host: str, now: float) -> bool:
        return self.ready_at(host) <= now

    def contacted(self, host: str, now: float) -> float:
        """Record a request to ``host`` at ``now``; return when it may be contacted next."""
        ready = now + self.delay(host)
        self._next[host] = max(self._next.get(host, ready), ready)
        return self._next[host]

    def back_off(self, host: str, until: float) -> None:
        """Keep away from ``host`` until ``until`` (429/503 ``Retry-After``)."""
        self._next[host] = max(self._next.get(host, until), until)
