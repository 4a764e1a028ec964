"""News: a *super* provider. Its RSS feed announces when it updates (sy:updatePeriod,
sy:updateFrequency, sy:updateBase, ttl) and dates every item (pubDate)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response

from example_project.items import Article


class NewsSpider(scrapy.Spider):
    name = "news"
    # Xu et al.'s provider level: future updates are announced.
    fresh_provider = "super"

    async def start(self) -> AsyncIterator[Any]:
        base = self.settings.get("DEMO_SITE_URL").rstrip("/")
        # No dont_filter=True (Spider.start_urls would set it): scrapy_fresh then manages
        # these pages too, and fetches them only when they are due.
        yield scrapy.Request(f"{base}/news/feed.rss", callback=self.parse_feed)
        yield scrapy.Request(f"{base}/news/", callback=self.parse_index)

    def parse_feed(self, response: Response) -> Iterator[Any]:
        response.selector.remove_namespaces()
        for link in response.xpath("//item/link/text()").getall():
            yield response.follow(link.strip(), callback=self.parse_story)

    def parse_index(self, response: Response) -> Iterator[Any]:
        # The index changes when a listed page does, and then only a date in it moves
        # (the fingerprint reads digits as 0): its dates are its update times.
        response.meta["fresh_updates"] = response.css("ul.index time::text").getall()
        yield from response.follow_all(css="ul.index a", callback=self.parse_story)

    def parse_story(self, response: Response) -> Iterator[Any]:
        yield Article(
            url=response.url,
            section="news",
            title=response.css("h1.title::text").get(default="").strip(),
            body="\n".join(response.css("div.body p::text").getall()),
            date=response.css("time.updated::attr(datetime)").get(default=""),
        )
