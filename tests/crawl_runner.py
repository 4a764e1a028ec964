"""Run one real Scrapy crawl with scrapy_fresh; the crawl tests start it as a subprocess.

``python tests/crawl_runner.py CONFIG.json`` where the JSON object has:

* ``settings``: Scrapy settings (the test gives FRESH_SQLITE_PATH, ADDONS or components),
* ``start``: a list of ``{"url": ..., "callback": "parse_item" | "parse_noitem" |
  "parse_links" | "parse_product", "errback": "on_error" (optional), "meta": {...}}`` start requests,
* ``clock_offset``: seconds added to the clock scrapy_fresh reads (a later cycle "days
  later" without waiting),
* ``provider``: a ``fresh_provider`` spider attribute (optional),
* ``spider``: ``"sitemap"`` (a SitemapSpider over ``sitemap_urls``) or ``"xmlfeed"`` (an
  XMLFeedSpider over ``feed_urls`` whose items' links are followed), instead of the
  test spider driven by ``start`` (optional),
* ``output``: where to write ``{"stats": ..., "items": [...], "dropped": n, "errbacks":
  [[url, exception class name], ...]}`` at the end.

The Twisted reactor cannot be restarted in one process, hence one process per crawl.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import CrawlerProcess
from scrapy.spiders import SitemapSpider, XMLFeedSpider

from scrapy_fresh.crawl.runtime import FreshRuntime


class ClockOffset:
    """Extension: shift the clock scrapy_fresh reads by ``TEST_FRESH_CLOCK_OFFSET`` seconds."""

    def __init__(self, offset: float) -> None:
        self.offset = offset

    @classmethod
    def from_crawler(cls, crawler: Any) -> ClockOffset:
        offset = crawler.settings.getfloat("TEST_FRESH_CLOCK_OFFSET")
        runtime = FreshRuntime.of(crawler)
        runtime.clock = lambda: time.time() + offset
        return cls(offset)


class FreshTestSpider(Spider):
    name = "fresh_test"

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config = config
        if config.get("provider") is not None:
            self.fresh_provider = config["provider"]
        self.items: list[dict[str, Any]] = []
        self.dropped = 0
        self.errbacks: list[list[str]] = []

    async def start(self) -> Any:
        for entry in self.config.get("start", []):
            yield Request(
                entry["url"],
                callback=getattr(self, entry.get("callback", "parse_item")),
                errback=getattr(self, entry["errback"]) if entry.get("errback") else None,
                meta=entry.get("meta", {}),
                priority=entry.get("priority", 0),
            )

    def parse(self, response: Any) -> Any:
        return self.parse_item(response)

    def parse_item(self, response: Any) -> Any:
        yield {
            "url": response.url,
            "title": response.css("title::text").get(""),
            "text": " ".join(response.css("article p::text").getall()),
        }

    def parse_product(self, response: Any) -> Any:
        """A shop's product page (tests/test_crawl_shop.py): one item of its fields."""
        yield {
            "url": response.url,
            "name": response.css("h1::text").get(""),
            "price": response.css(".price::text").get(""),
            "stock": response.css(".stock::text").get(""),
            "description": " ".join(response.css(".description p::text").getall()),
            "sidebar": " ".join(response.css("aside ::text").getall()),
        }

    def parse_noitem(self, response: Any) -> Any:
        return []

    def on_error(self, failure: Any) -> Any:
        self.errbacks.append([failure.request.url, type(failure.value).__name__])
        return []

    def parse_links(self, response: Any) -> Any:
        callback = self.config.get("link_callback", "parse_item")
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=getattr(self, callback))


def _page_item(response: Any) -> dict[str, Any]:
    return {
        "url": response.url,
        "title": response.css("title::text").get(""),
        "text": " ".join(response.css("article p::text").getall()),
    }


class SitemapTestSpider(SitemapSpider):
    """Scrapy's SitemapSpider as its documentation shows it: one item per page listed."""

    name = "fresh_sitemap_test"

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        self.sitemap_urls = config["sitemap_urls"]
        super().__init__(**kwargs)

    def parse(self, response: Any) -> Any:
        yield _page_item(response)


class FeedTestSpider(XMLFeedSpider):
    """Scrapy's XMLFeedSpider over an RSS feed: an item per page its ``<item>``s link."""

    name = "fresh_feed_test"
    itertag = "item"

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        self.start_urls = config["feed_urls"]
        super().__init__(**kwargs)

    def parse_node(self, response: Any, selector: Any) -> Any:
        link = selector.xpath("link/text()").get()
        if link:
            yield Request(link, callback=self.parse_page)

    def parse_page(self, response: Any) -> Any:
        yield _page_item(response)


SPIDERS = {"sitemap": SitemapTestSpider, "xmlfeed": FeedTestSpider}


def main(path: str) -> None:
    config = json.loads(Path(path).read_text())
    settings = {
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_DELAY_JITTER": 0,
        "USER_AGENT": "fresh-test",
        "EXTENSIONS": {"__main__.ClockOffset": 0},
        "TEST_FRESH_CLOCK_OFFSET": config.get("clock_offset", 0.0),
        **config.get("settings", {}),
    }
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SPIDERS.get(config.get("spider"), FreshTestSpider))
    result: dict[str, Any] = {"items": [], "dropped": 0}

    def item_scraped(item: Any) -> None:
        result["items"].append(dict(item))

    def item_dropped(item: Any) -> None:
        result["dropped"] += 1

    def spider_closed(reason: str) -> None:
        result["reason"] = reason

    crawler.signals.connect(item_scraped, signal=signals.item_scraped)
    crawler.signals.connect(item_dropped, signal=signals.item_dropped)
    crawler.signals.connect(spider_closed, signal=signals.spider_closed)
    failures: list[Any] = []
    process.crawl(crawler, config=config).addErrback(failures.append)
    process.start()
    if failures:  # the crawl could not start (a ConfigError, say)
        sys.stderr.write(failures[0].getTraceback())
        sys.exit(2)
    result["errbacks"] = getattr(crawler.spider, "errbacks", [])
    result["stats"] = {
        k: (v if isinstance(v, (int, float, str)) else str(v))
        for k, v in crawler.stats.get_stats().items()
    }
    Path(config["output"]).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
