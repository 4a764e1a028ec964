"""Progress of a crawl: periodic log lines, and a progress bar in a terminal.

A cycle over many due pages can take hours; :class:`FreshProgress` says every
:setting:`FRESH_PROGRESS_SECS` how many pages of the run are still waiting, how the
visits ended so far and when the run should be done at the pace so far::

    scrapy_fresh progress: 1,240 of 5,000 pages left; 3,760 visited (not modified 2,911,
    changed 402, unchanged 301, new 96, other 50); 12.4 pages/s; done in about 1m40s

When the log goes to a terminal (standard error is a TTY and no ``LOG_FILE`` is set)
a one-line bar on standard error shows the same between the log lines.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from scrapy_fresh.crawl.runtime import FreshRuntime
from scrapy_fresh.crawl.visits import OUTCOME_STATS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from scrapy_fresh.outcome import Outcome

__all__ = ["FreshProgress", "Progress", "format_duration"]

#: Seconds between redraws of the terminal bar.
BAR_SECS = 1.0
_SHOWN = ("not_modified", "changed", "unchanged", "new")


def format_duration(secs: float) -> str:
    """``secs`` as a short human duration.

    >>> format_duration(100), format_duration(3725), format_duration(5)
    ('1m40s', '1h02m', '5s')
    """
    secs = max(0, round(secs))
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{secs % 3600 // 60:02d}m"


class Progress:
    """Counts of one run at one moment, and what they say (pure; tested on its own).

    :param left: pages leased to this run and not visited yet.
    :param outcomes: visits so far per outcome value (``"changed"``, ...).
    :param elapsed: seconds since the run started.
    """

    def __init__(self, left: int, outcomes: dict[str, int], elapsed: float) -> None:
        self.left = left
        self.outcomes = outcomes
        self.elapsed = elapsed
        self.done = sum(outcomes.values())
        self.total = self.left + self.done

    @property
    def rate(self) -> float:
        """Visits per second so far."""
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta_secs(self) -> float | None:
        """Seconds to visit what is left at the pace so far (None before any visit)."""
        return self.left / self.rate if self.rate > 0 else None

    def line(self) -> str:
        """The log line."""
        shown = ", ".join(
            f"{name.replace('_', ' ')} {self.outcomes.get(name, 0):,}" for name in _SHOWN
        )
        other = self.done - sum(self.outcomes.get(name, 0) for name in _SHOWN)
        eta = self.eta_secs
        return (
            f"scrapy_fresh progress: {self.left:,} of {self.total:,} pages left; "
            f"{self.done:,} visited ({shown}, other {other:,}); {self.rate:.1f} pages/s; "
            + ("done in about " + format_duration(eta) if eta is not None else "no visit yet")
        )

    def bar(self, width: int = 30) -> str:
        """The terminal bar: ``[#####.....]  50% 100/200 ETA 1m40s``."""
        share = self.done / self.total if self.total else 1.0
        filled = int(share * width)
        eta = self.eta_secs
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {share:4.0%} {self.done:,}/{self.total:,}"
            + (f" ETA {format_duration(eta)}" if eta is not None else "")
        )


class FreshProgress:
    """Extension: log :class:`Progress` every :setting:`FRESH_PROGRESS_SECS` seconds.

    Installed by the add-on; ``FRESH_PROGRESS_SECS = 0`` turns it off.
    """

    def __init__(self, crawler: Crawler, runtime: FreshRuntime, interval: float,
                 stream: TextIO | None) -> None:  # fmt: skip
        self.crawler = crawler
        self.runtime = runtime
        self.interval = interval
        self.stream = stream
        self._started = time.monotonic()
        self._last_log = self._started
        self._loop: task.LoopingCall | None = None
        self._drawn = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = FreshRuntime.of(crawler)
        if not runtime.config.enabled or runtime.config.progress_secs <= 0:
            raise NotConfigured("FRESH_PROGRESS_SECS is 0 (or scrapy_fresh is off)")
        tty = sys.stderr.isatty() and not crawler.settings.get("LOG_FILE")
        ext = cls(crawler, runtime, runtime.config.progress_secs, sys.stderr if tty else None)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def progress(self) -> Progress:
        stats = self.crawler.stats
        outcomes: dict[str, int] = {}
        if stats is not None:
            for outcome, name in OUTCOME_STATS.items():
                value = stats.get_value(name, 0)
                if value:
                    outcomes[_value(outcome)] = int(value)
        return Progress(len(self.runtime.leases), outcomes, time.monotonic() - self._started)

    def spider_opened(self, spider: Any) -> None:
        self._started = self._last_log = time.monotonic()
        self._loop = task.LoopingCall(self.tick)
        self._loop.start(BAR_SECS if self.stream is not None else self.interval, now=False)

    def tick(self) -> None:
        now = time.monotonic()
        progress = self.progress()
        if now - self._last_log >= self.interval - 1e-3:
            self._last_log = now
            self._clear()
            self.crawler.spider.logger.info(progress.line())  # type: ignore[union-attr]
        if self.stream is not None:
            text = progress.bar()
            self.stream.write("\r" + text.ljust(self._drawn))
            self.stream.flush()
            self._drawn = len(text)

    def _clear(self) -> None:
        if self.stream is not None and self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0

    def spider_closed(self, spider: Any, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._clear()


def _value(outcome: Outcome) -> str:
    return str(outcome.value)
