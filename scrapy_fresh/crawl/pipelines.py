"""FreshItemPipeline: what the page judgement means for items.

The judging itself (fingerprint, outcome, record update) happens once per page in
:class:`~scrapy_fresh.crawl.middlewares.FreshSpiderMiddleware`, which sees the response and
all the items of one page; a pipeline sees one item at a time and no response. This
pipeline acts on the verdict the middleware attached to each item.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DropItem, NotConfigured

from scrapy_fresh.crawl.runtime import FreshRuntime
from scrapy_fresh.outcome import Outcome

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

__all__ = ["FreshItemPipeline"]

logger = logging.getLogger(__name__)


class FreshItemPipeline:
    """Drop the items of unchanged pages when :setting:`FRESH_DROP_UNCHANGED_ITEMS` is True.

    Items of pages judged ``new`` or ``changed`` carry ``fresh_changed = True`` (where
    the item type takes the field: dicts, or items that declare it), items of unchanged
    pages ``fresh_changed = False``.

    Not built when :setting:`FRESH_DROP_UNCHANGED_ITEMS` is False (the default): it would
    pass every item on, at the cost of Scrapy's pipeline machinery per item.

    Stats: ``fresh/items_dropped_unchanged``.
    """

    def __init__(self, crawler: Crawler, runtime: FreshRuntime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        runtime.pipeline_enabled = True
        crawler.signals.connect(self._forget, signal=signals.item_dropped)
        crawler.signals.connect(self._forget, signal=signals.item_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        runtime = FreshRuntime.of(crawler)
        if not runtime.config.enabled:
            raise NotConfigured("FRESH_ENABLED is False.")
        if not runtime.config.drop_unchanged_items:
            raise NotConfigured("FRESH_DROP_UNCHANGED_ITEMS is False: no item to drop.")
        return cls(crawler, runtime)

    def _outcome(self, item: Any) -> Outcome | None:
        entry = self.runtime.item_outcomes.pop(id(item), None)
        if entry is None or entry[0] is not item:
            return None
        return entry[1]

    def _forget(self, item: Any) -> None:
        self._outcome(item)

    def process_item(self, item: Any) -> Any:
        outcome = self._outcome(item)
        if outcome is Outcome.UNCHANGED:
            self.runtime.stat("fresh/items_dropped_unchanged")
            raise DropItem(
                "The page of this item did not change since the last visit "
                "(FRESH_DROP_UNCHANGED_ITEMS)."
            )
        return item
