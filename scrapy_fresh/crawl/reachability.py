"""Hosts that stop answering: download attempts in a row that got no answer at all.

A re-crawl asks a host for every page of it that is due: thousands, where a plain
Scrapy crawl of the same spider would have stopped at its start URL. When a host is
down (connection refused, no DNS answer, no answer in time), each of those pages would
cost Scrapy's retries and an error traceback in the log. After
:setting:`FRESH_UNREACHABLE_ATTEMPTS` attempts at one host in a row failed that way
(Scrapy's retries included: the default 9 is three pages tried three times), with no
answer from the host in between, the host is paused: the scheduler holds its other
pages back (they stay due, untouched) for the error back-off
(:setting:`FRESH_ERROR_BACKOFF_SECS`, doubled each time the host is paused again in the
run, at most :setting:`FRESH_MAX_REFRESH_SECS`); in cycle mode that is usually past the
end of the run, so they wait for the next one. Nutch's
``fetcher.max.exceptions.per.queue`` does the same for a fetch queue.
"""

from __future__ import annotations

from scrapy import exceptions as scrapy_exceptions
from twisted.internet.error import ConnectError, DNSLookupError
from twisted.internet.error import TimeoutError as TwistedTimeout

__all__ = ["UNREACHABLE_ERRORS", "Reachability"]

#: Download errors that mean the host did not answer: refused or failed connections, no
#: DNS answer, no answer in DOWNLOAD_TIMEOUT. Twisted's (ConnectError covers
#: ConnectionRefusedError and TCPTimedOutError), as Scrapy up to 2.13 raises them, and
#: Scrapy's own, as later versions raise them instead.
UNREACHABLE_ERRORS: tuple[type[Exception], ...] = (
    ConnectError,
    DNSLookupError,
    TwistedTimeout,
    *(
        getattr(scrapy_exceptions, name)
        for name in ("DownloadConnectionRefusedError", "CannotResolveHostError",
                     "DownloadTimeoutError")
        if hasattr(scrapy_exceptions, name)
    ),
)  # fmt: skip


class Reachability:
    """Counts, per host, the download attempts in a row that got no answer.

    >>> hosts = Reachability(limit=2, backoff_secs=60.0, max_secs=600.0)
    >>> hosts.failed("a.test"), hosts.answered("a.test"), hosts.failed("a.test")
    (None, None, None)
    >>> hosts.failed("a.test")  # two in a row: paused for the back-off
    60.0
    >>> hosts.failed("a.test"), hosts.failed("a.test")  # again: twice as long
    (None, 120.0)
    >>> Reachability(limit=0, backoff_secs=60.0, max_secs=600.0).failed("a.test") is None
    True
    """

    def __init__(self, limit: int, backoff_secs: float, max_secs: float) -> None:
        #: Attempts in a row that make a host paused (0: never).
        self.limit = limit
        self.backoff_secs = backoff_secs
        self.max_secs = max_secs
        self._failed: dict[str, int] = {}
        #: Times each host was paused in this run.
        self.pauses: dict[str, int] = {}

    def answered(self, host: str) -> None:
        """``host`` answered a request (any status): it is reachable."""
        self._failed.pop(host, None)

    def failed(self, host: str) -> float | None:
        """An attempt at ``host`` got no answer. Returns how long to pause the host if
        this makes :attr:`limit` in a row, else None."""
        if self.limit <= 0:
            return None
        count = self._failed.get(host, 0) + 1
        if count < self.limit:
            self._failed[host] = count
            return None
        self._failed.pop(host, None)
        pauses = self.pauses[host] = self.pauses.get(host, 0) + 1
        return min(self.backoff_secs * 2.0 ** min(pauses - 1, 30), self.max_secs)
