"""Docs: *normal* providers. Pages change rarely and say nothing about it: some have
ETag/Last-Modified, some no validators, some a footer that changes on every request."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response

from example_project.items import Article


class DocsSpider(scrapy.Spider):
    name = "docs"
    # Xu et al.'s provider level: only our own visits show whether a page changed.
    fresh_provider = "normal"

    async def start(self) -> AsyncIterator[Any]:
        base = self.settings.get("DEMO_SITE_URL").rstrip("/")
        yield scrapy.Request(f"{base}/docs/", callback=self.parse_index)

    def parse_index(self, response: Response) -> Iterator[Any]:
        # Every link, including /private/admin: robots.txt keeps the crawl out of it.
        for href in response.css("main a::attr(href)").getall():
            yield response.follow(href, callback=self.parse_page)

    def parse_page(self, response: Response) -> Iterator[Any]:
        yield Article(
            url=response.url,
            section="docs",
            title=response.css("h1.title::text").get(default="").strip(),
            body="\n".join(response.css("div.body p::text").getall()),
            date="",  # docs pages show no date: normal providers say nothing
        )
