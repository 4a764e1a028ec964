"""Extension: a Prometheus endpoint for a continuous-mode crawl (:setting:`FRESH_PROMETHEUS_PORT`).

Serves, at ``http://FRESH_PROMETHEUS_ADDRESS:FRESH_PROMETHEUS_PORT/metrics``, the crawl's
``fresh/*`` stats as counters (read at each scrape) and the store's state as gauges: pages
per status, the due backlog, the pages in flight and the blocked hosts (read every
:data:`SNAPSHOT_SECS`), and the estimated freshness (a pass over every record, repeated
no sooner than :data:`FRESHNESS_COST_FACTOR` times what the last pass took: at most 2 %
of the crawl's time goes to it). See :mod:`scrapy_fresh.monitoring` and :doc:`/reference/stats`. Needs
``prometheus-client`` (``pip install 'scrapy-fresh[prometheus]'``).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from scrapy_fresh.crawl.runtime import FreshRuntime
from scrapy_fresh.exceptions import ConfigError, StoreError
from scrapy_fresh.monitoring import Sample, StoreSnapshot, estimated_freshness, registry_of
from scrapy_fresh.monitoring import stats_samples as _stats_samples

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = ["FRESHNESS_COST_FACTOR", "SNAPSHOT_SECS", "FreshPrometheus"]

logger = logging.getLogger(__name__)

#: Seconds between two reads of the store's counts, backlog and blocked hosts.
SNAPSHOT_SECS = 5.0
#: The next freshness estimate (a pass over every record) comes no sooner than this many
#: times the last one took after it, nor sooner than the next snapshot.
FRESHNESS_COST_FACTOR = 50.0


class FreshPrometheus:
    """Serve the crawl's metrics over HTTP while the spider is open (continuous mode)."""

    def __init__(self, crawler: Crawler, runtime: FreshRuntime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.snapshot = StoreSnapshot()
        self.registry = registry_of(self.samples)
        self._server: Any = None
        self._loop: task.LoopingCall | None = None
        self._next_estimate = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = FreshRuntime.of(crawler)
        if not runtime.config.enabled or not runtime.config.prometheus_port:
            raise NotConfigured("FRESH_PROMETHEUS_PORT is 0 (or scrapy_fresh is off)")
        try:
            ext = cls(crawler, runtime)
        except ConfigError as exc:
            raise ConfigError(f"FRESH_PROMETHEUS_PORT is set, but: {exc}") from None
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def samples(self) -> list[Sample]:
        """What a scrape gets (called in the HTTP server's thread)."""
        stats = self.crawler.stats.get_stats() if self.crawler.stats is not None else {}
        return _stats_samples(dict(stats)) + self.snapshot.samples()

    def spider_opened(self, spider: Any) -> None:
        from prometheus_client import start_http_server

        config = self.runtime.config
        self.take_snapshot()
        try:
            served = start_http_server(
                config.prometheus_port, config.prometheus_address, registry=self.registry
            )
        except OSError as exc:
            raise ConfigError(
                f"FRESH_PROMETHEUS_PORT ({config.prometheus_port!r}) cannot be served on "
                f"{config.prometheus_address!r}: {exc}"
            ) from None
        self._server = served[0] if isinstance(served, tuple) else None
        self._loop = task.LoopingCall(self.take_snapshot)
        self._loop.start(SNAPSHOT_SECS, now=False)
        logger.info(
            "scrapy_fresh: Prometheus metrics at http://%(addr)s:%(port)d/metrics",
            {"addr": config.prometheus_address, "port": config.prometheus_port},
            extra={"spider": spider},
        )

    def take_snapshot(self) -> None:
        store = self.runtime.store
        try:
            counts = store.counts()
            due = store.count_due(self.runtime.clock())
            blocked = len(store.blocked_hosts())
        except StoreError as exc:
            logger.warning("scrapy_fresh: metrics cannot read the store: %s", exc)
            return
        self.snapshot.counts, self.snapshot.due, self.snapshot.blocked = counts, due, blocked
        if time.monotonic() >= self._next_estimate:
            self.estimate_freshness()

    def estimate_freshness(self) -> None:
        began = time.monotonic()
        try:
            self.snapshot.freshness = estimated_freshness(
                self.runtime.store.iterate(), self.runtime.clock()
            )
        except StoreError as exc:
            logger.warning("scrapy_fresh: metrics cannot read the store: %s", exc)
        took = time.monotonic() - began
        self._next_estimate = began + took * FRESHNESS_COST_FACTOR

    def spider_closed(self, spider: Any, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
