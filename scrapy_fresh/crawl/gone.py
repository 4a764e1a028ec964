"""Gone pages told downstream: a :class:`~scrapy_fresh.crawl.items.PageGone` item per page that
becomes gone, through the item pipelines and feed exports.

The visit that confirms a 404 or 410 is recorded by
:class:`~scrapy_fresh.crawl.middlewares.FreshDownloaderMiddleware`; the response then goes on to
the spider middlewares, where Scrapy's ``HttpErrorMiddleware`` (order 50) turns it into an
``HttpError`` for the request's errback, or swallows it. Either way Scrapy hands the rest
of the spider middleware chain the response and the (often empty) output: a middleware
below 50 sees it in ``process_spider_output`` whatever the spider does with errors.
:class:`~scrapy_fresh.crawl.middlewares.FreshSpiderMiddleware` (40) is one: it adds the
item there (:class:`GoneItems`). A request with ``handle_httpstatus_list`` takes the same
path with its callback's output.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from scrapy_fresh.crawl.items import PageGone

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from scrapy_fresh.crawl.runtime import FreshRuntime
    from scrapy_fresh.outcome import Outcome
    from scrapy_fresh.store.base import PageState

__all__ = ["GoneItems", "PageGoneMiddleware"]

logger = logging.getLogger(__name__)


class GoneItems:
    """The :class:`~scrapy_fresh.crawl.items.PageGone` items of one crawl
    (:setting:`FRESH_GONE_ITEMS`), from the visit that made a page gone until its response
    passes :class:`~scrapy_fresh.crawl.middlewares.FreshSpiderMiddleware`, which yields
    the item after the response's own output.

    A page is gone from the visit that confirms it until a visit finds it again; the item
    is sent at the first of those visits only (the record was not gone when the visit
    began), and only for a page that was once there (a URL that answered 404 from its
    first fetch, a broken link, left nothing downstream to delete). Stats:
    ``fresh/gone_items``.
    """

    def __init__(self, runtime: FreshRuntime) -> None:
        self.runtime = runtime
        #: Items of pages that became gone, by key, until their response comes by.
        self.pending: dict[str, PageGone] = {}
        runtime.outcome_listeners.append(self._visited)

    def _visited(
        self, state: PageState, outcome: Outcome, now: float, headers: Mapping[str, str | None]
    ) -> None:
        if not self.runtime.visits.became_gone or state.last_crawl is None:
            return  # (a URL that was never there leaves nothing downstream to delete)
        self.pending[state.key] = PageGone(
            url=state.url, key=state.key, last_seen=state.last_crawl, status=None, reason="gone"
        )

    def item_for(self, response: Response) -> PageGone | None:
        """The item of the page ``response`` made gone (taken: sent once), or None."""
        if not self.pending:
            return None
        request = response.request
        key = None if request is None else request.meta.get("fresh_key")
        item = self.pending.pop(key, None) if isinstance(key, str) else None
        if item is None:
            return None
        item["status"] = response.status
        if request is not None and request.meta.get("redirect_urls"):
            item["reason"] = "redirected to a gone page"
        self.runtime.stat("fresh/gone_items")
        return item

    def closed(self) -> None:
        if self.pending:  # their answers never reached the spider middlewares
            logger.warning(
                "scrapy_fresh: %(n)d pages became gone but their PageGone items could not "
                "be sent (their responses were dropped before the spider): %(urls)s",
                {
                    "n": len(self.pending),
                    "urls": ", ".join(i["url"] for i in self.pending.values()),
                },
            )


class PageGoneMiddleware:
    """Removed: :class:`~scrapy_fresh.crawl.middlewares.FreshSpiderMiddleware` sends the
    PageGone items itself (one spider middleware less for every element a callback
    yields). Left in ``SPIDER_MIDDLEWARES`` (a setup copied from older docs), it logs a
    warning and is not installed."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        logger.warning(
            "scrapy_fresh.crawl.gone.PageGoneMiddleware is no longer needed: "
            "FreshSpiderMiddleware sends the PageGone items (FRESH_GONE_ITEMS). Remove it "
            "from SPIDER_MIDDLEWARES."
        )
        raise NotConfigured("PageGone items are sent by FreshSpiderMiddleware.")
