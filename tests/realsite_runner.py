"""Run one real crawl of a spider written as a Scrapy user writes it (tests/realsite/).

``python tests/realsite_runner.py CONFIG.json``, in a subprocess (the Twisted reactor
cannot be restarted in one process). The JSON object has:

* ``spider``: a key of :data:`SPIDERS`,
* ``start``: start URLs (the sitemap index for ``sitemap``, the feed for ``feed``),
* ``keep_fragments``: the ``links`` spider keeps a link's ``#fragment`` (default: strips it),
* ``once_per_page``: the ``links`` spider yields one Request per distinct URL of a page
  (default: one per link, as many times as the page has the link),
* ``no_items`` / ``no_follow``: the ``links`` spider yields no item / follows no link
  (the page verdict alone then judges each page),
* ``settings``: Scrapy settings on top of :data:`BASE_SETTINGS` (the add-on goes here),
* ``clock_offset``: seconds added to the clock scrapy_fresh reads (with the add-on only),
* ``measure``: also write ``gc_seconds`` (time in Python's garbage collector) and
  ``connections`` (TCP connections Twisted opened) to the output (bench/crawl.py),
* ``checks``: for the ``checks`` spider, a list of ``[url, etag, last_modified]``,
* ``output``: where to write ``{"items": [...], "stats": {...}, "reason": ...}``.

Every spider stays on the host of its first start URL, a local server: nothing else is
ever requested. Items carry the URL they came from without its fragment (``url``) so
that crawls can be compared whichever of a page's links was followed first.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

from scrapy import Request, Spider, signals
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule, SitemapSpider, XMLFeedSpider

BASE_SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": "INFO",
    "TELNETCONSOLE_ENABLED": False,
    "ROBOTSTXT_OBEY": False,
    "CONCURRENT_REQUESTS": 16,
    "USER_AGENT": "fresh-realsite-test",
    # nginx on 127.0.0.1 answers in milliseconds; only a starved machine (a loaded CI
    # runner) makes a page take seconds, and a timeout there would fail the comparison
    # with plain Scrapy for a reason that is not the crawler's
    "DOWNLOAD_TIMEOUT": 60,
}


def page_item(response: Any) -> dict[str, Any]:
    return {
        "url": urldefrag(response.url).url,
        "title": response.css("title::text").get(""),
        "text": " ".join(response.css("body p::text").getall())[:200],
    }


class LocalSpider(Spider):
    """Base: the config, and a host every request must stay on."""

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.start_urls = list(config["start"])
        self.host = urlsplit(self.start_urls[0]).netloc
        self.allowed_domains = [urlsplit(self.start_urls[0]).hostname or "127.0.0.1"]

    def local(self, url: str) -> bool:
        return urlsplit(url).netloc == self.host


class LinkSpider(LocalSpider):
    """A plain spider: an item per page, a Request for every ``.html`` link."""

    name = "realsite_links"

    def parse(self, response: Any) -> Any:
        if not self.config.get("no_items"):
            yield page_item(response)
        if self.config.get("no_follow"):
            return
        keep = self.config.get("keep_fragments", False)
        seen: set[str] | None = set() if self.config.get("once_per_page") else None
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if not self.local(url) or not urlsplit(url).path.endswith(".html"):
                continue
            url = url if keep else urldefrag(url).url
            if seen is not None:
                if url in seen:
                    continue
                seen.add(url)
            yield Request(url, callback=self.parse)


class RulesSpider(CrawlSpider):
    """CrawlSpider with one Rule: follow and parse every ``.html`` link."""

    name = "realsite_rules"
    rules = (Rule(LinkExtractor(allow=r"\.html"), callback="parse_page", follow=True),)

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        self.start_urls = list(config["start"])
        self.allowed_domains = ["127.0.0.1"]
        super().__init__(**kwargs)

    def parse_start_url(self, response: Any, **kwargs: Any) -> Any:
        return [page_item(response)]

    def parse_page(self, response: Any) -> Any:
        yield page_item(response)


class EverythingSpider(CrawlSpider):
    """CrawlSpider following every link of the site, whatever its extension (text
    files, PDFs, archives, directory listings): an item per HTML page (none with
    ``no_items``); other answers yield nothing and are judged by their content."""

    name = "realsite_everything"
    rules = (Rule(LinkExtractor(deny_extensions=[]), callback="parse_page", follow=True),)

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        self.config = config
        self.start_urls = list(config["start"])
        self.allowed_domains = ["127.0.0.1"]
        super().__init__(**kwargs)

    def parse_start_url(self, response: Any, **kwargs: Any) -> Any:
        return list(self.parse_page(response))

    def parse_page(self, response: Any) -> Any:
        if isinstance(response, HtmlResponse) and not self.config.get("no_items"):
            yield page_item(response)


class MapSpider(SitemapSpider):
    """SitemapSpider from a sitemap index: an item per page its child sitemap lists."""

    name = "realsite_sitemap"

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        self.sitemap_rules = [(r"\.html$", "parse_page")]
        self.sitemap_urls = list(config["start"])
        self.allowed_domains = ["127.0.0.1"]
        super().__init__(**kwargs)

    def parse_page(self, response: Any) -> Any:
        yield page_item(response)


class FeedSpider(XMLFeedSpider):
    """XMLFeedSpider over an RSS feed: an item per feed entry, then one per linked page."""

    name = "realsite_feed"
    iterator = "iternodes"
    itertag = "item"

    def __init__(self, config: dict[str, Any], **kwargs: Any) -> None:
        self.start_urls = list(config["start"])
        self.allowed_domains = ["127.0.0.1"]
        super().__init__(**kwargs)

    def parse_node(self, response: Any, selector: Any) -> Any:
        link = selector.xpath("link/text()").get("")
        yield {"url": response.url, "entry": selector.xpath("title/text()").get(""), "link": link}
        yield Request(link, callback=self.parse_page)

    def parse_page(self, response: Any) -> Any:
        yield page_item(response)


class KwargsSpider(LocalSpider):
    """Requests with cb_kwargs and an errback: a listing links pages, some missing (404)
    and one on a port nobody listens on; errbacks yield an item too."""

    name = "realsite_kwargs"

    def parse(self, response: Any) -> Any:
        yield page_item(response)
        hrefs = response.css("a::attr(href)").getall()
        for n, href in enumerate(hrefs):
            url = response.urljoin(href)
            yield Request(
                url,
                callback=self.parse_detail,
                errback=self.on_error,
                cb_kwargs={"n": n, "listing": response.url},
            )
        for extra in self.config.get("extra", []):
            yield Request(
                extra,
                callback=self.parse_detail,
                errback=self.on_error,
                cb_kwargs={"n": -1, "listing": response.url},
            )

    def parse_detail(self, response: Any, n: int, listing: str) -> Any:
        yield {**page_item(response), "n": n, "listing": listing}

    def on_error(self, failure: Any) -> Any:
        request = failure.request
        yield {
            "url": request.url,
            "error": type(failure.value).__name__,
            "n": request.cb_kwargs.get("n"),
            "listing": request.cb_kwargs.get("listing"),
        }


class PriceSpider(LocalSpider):
    """A price watcher: the catalog (``catalog.html``) yields one item per product row
    and a request per product page; a product page yields its product."""

    name = "realsite_prices"

    def parse(self, response: Any) -> Any:
        for row in response.css("tr.product"):
            yield {
                "sku": row.attrib["data-sku"],
                "price": row.css("td.price::text").get(""),
                "page": "catalog",
            }
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse_product)

    def parse_product(self, response: Any) -> Any:
        yield {
            "url": response.url,
            "sku": response.css("article::attr(data-sku)").get(),
            "name": response.css("h1::text").get(""),
            "price": response.css("span.price::text").get(""),
            "description": response.css("p.description::text").get(""),
            "page": "product",
        }


class DropNotModified:
    """A downloader middleware that drops each 304 (see :class:`ChecksSpider`)."""

    def process_response(self, request: Any, response: Any) -> Any:
        if response.status == 304:
            raise IgnoreRequest("not modified")
        return response


class ChecksSpider(LocalSpider):
    """Scrapy alone re-checking known pages: a GET with ``If-None-Match`` and
    ``If-Modified-Since`` for every ``checks`` entry, each 304 dropped by
    :class:`DropNotModified` (put it where the add-on's downloader middleware is), a
    callback that does nothing. Nothing is recorded: what Scrapy's own download path
    costs for a re-crawl of unchanged pages (bench/crawl.py). The checks are all
    scheduled at once, from the first start URL's answer, so that the downloader is
    as full as in a crawl whose scheduler has every page due."""

    name = "realsite_checks"

    def parse(self, response: Any) -> Any:
        for url, etag, last_modified in self.config["checks"]:
            headers = {"If-None-Match": etag, "If-Modified-Since": last_modified}
            yield Request(
                url,
                headers={k: v for k, v in headers.items() if v},
                callback=self.checked,
                dont_filter=True,
            )

    def checked(self, response: Any) -> Any:
        return ()


SPIDERS: dict[str, type[Spider]] = {
    "checks": ChecksSpider,
    "prices": PriceSpider,
    "links": LinkSpider,
    "rules": RulesSpider,
    "everything": EverythingSpider,
    "sitemap": MapSpider,
    "feed": FeedSpider,
    "kwargs": KwargsSpider,
}


class Measures:
    """Time in the garbage collector and connections opened, for bench/crawl.py."""

    def __init__(self) -> None:
        import gc
        import time

        from twisted.internet import endpoints

        self.gc_seconds = 0.0
        self.connections = 0
        started = [0.0]

        def collecting(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                started[0] = time.perf_counter()
            else:
                self.gc_seconds += time.perf_counter() - started[0]

        gc.callbacks.append(collecting)
        connect = endpoints.HostnameEndpoint.connect

        def counted(endpoint: Any, factory: Any) -> Any:
            self.connections += 1
            return connect(endpoint, factory)

        endpoints.HostnameEndpoint.connect = counted  # type: ignore[method-assign]


def main(path: str) -> None:
    config = json.loads(Path(path).read_text())
    measures = Measures() if config.get("measure") else None
    settings = {**BASE_SETTINGS, **config.get("settings", {})}
    if "ADDONS" in settings:  # shift the clock scrapy_fresh reads (tests/crawl_runner.py)
        settings["EXTENSIONS"] = {
            **settings.get("EXTENSIONS", {}),
            "tests.crawl_runner.ClockOffset": 0,
        }
        settings["TEST_FRESH_CLOCK_OFFSET"] = config.get("clock_offset", 0.0)
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SPIDERS[config["spider"]])
    result: dict[str, Any] = {"items": []}

    def item_scraped(item: Any) -> None:
        result["items"].append(dict(item))

    def spider_closed(reason: str) -> None:
        result["reason"] = reason

    crawler.signals.connect(item_scraped, signal=signals.item_scraped)
    crawler.signals.connect(spider_closed, signal=signals.spider_closed)
    failures: list[Any] = []
    process.crawl(crawler, config=config).addErrback(failures.append)
    process.start()
    if failures:  # the crawl could not start (a ConfigError, say)
        sys.stderr.write(failures[0].getTraceback())
        sys.exit(2)
    result["stats"] = {
        k: (v if isinstance(v, (int, float, str)) else str(v))
        for k, v in crawler.stats.get_stats().items()
    }
    if measures is not None:
        result["gc_seconds"] = measures.gc_seconds
        result["connections"] = measures.connections
    Path(config["output"]).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
