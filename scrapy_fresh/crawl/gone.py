"""Gone pages told downstream: a :class:`~scrapy_fresh.crawl.items.PageGone` item per page that
becomes gone, through the item pipelines and feed exports.

The visit that confirms a 404 or 410 is recorded by
:class:`~scrapy_fresh.crawl.middlewares.FreshDownloaderMiddleware`; the response then goes on to
the spider middlewares, where Scrapy's ``HttpErrorMiddleware`` (order 50) turns it into an
``HttpError`` for the request's errback, or swallows it. Either way Scrapy hands the rest
of the spider middleware chain the response and the (often empty) output: a middleware
below 50 sees it in ``process_spider_output`` whatever the spider does with errors, and
adds the item there. A request with ``handle_httpstatus_list`` takes the same path with
its callback's output.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from scrapy_fresh.config import flag
from scrapy_fresh.crawl.items import PageGone
from scrapy_fresh.crawl.runtime import FreshRuntime

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from scrapy_fresh.outcome import Outcome
    from scrapy_fresh.store.base import PageState

__all__ = ["PageGoneMiddleware"]

logger = logging.getLogger(__name__)


class PageGoneMiddleware:
    """Spider middleware: yield a :class:`~scrapy_fresh.crawl.items.PageGone` after the response
    whose visit made its page gone (:setting:`FRESH_GONE_ITEMS`). The add-on installs it at
    45, below ``HttpErrorMiddleware`` (50).

    A page is gone from the visit that confirms it until a visit finds it again; the item
    is sent at the first of those visits only (the record was not gone when the visit
    began), and only for a page that was once there (a URL that answered 404 from its
    first fetch, a broken link, left nothing downstream to delete). Stats:
    ``fresh/gone_items``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.runtime: FreshRuntime | None = None
        #: Items of pages that became gone, by key, until their response comes by.
        self.pending: dict[str, PageGone] = {}
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not flag(crawler.settings, "FRESH_ENABLED"):
            raise NotConfigured("FRESH_ENABLED is False.")
        return cls(crawler)

    def _opened(self) -> None:
        self.runtime = runtime = FreshRuntime.of(self.crawler)
        if runtime.config.changes.gone_items:  # (validated now, with every setting)
            runtime.outcome_listeners.append(self._visited)

    def _closed(self) -> None:
        if self.pending:  # their answers never reached the spider middlewares
            logger.warning(
                "scrapy_fresh: %(n)d pages became gone but their PageGone items could not "
                "be sent (their responses were dropped before the spider): %(urls)s",
                {
                    "n": len(self.pending),
                    "urls": ", ".join(i["url"] for i in self.pending.values()),
                },
            )

    def _visited(
        self, state: PageState, outcome: Outcome, now: float, headers: Mapping[str, str | None]
    ) -> None:
        assert self.runtime is not None
        if not self.runtime.visits.became_gone or state.last_crawl is None:
            return  # (a URL that was never there leaves nothing downstream to delete)
        self.pending[state.key] = PageGone(
            url=state.url, key=state.key, last_seen=state.last_crawl, status=None, reason="gone"
        )

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for element in result:
            yield element
        request = response.request
        key = None if request is None else request.meta.get("fresh_key")
        item = self.pending.pop(key, None) if isinstance(key, str) else None
        if item is None:
            return
        item["status"] = response.status
        if request is not None and request.meta.get("redirect_urls"):
            item["reason"] = "redirected to a gone page"
        if self.runtime is not None:
            self.runtime.stat("fresh/gone_items")
        yield item
