"""Blog: a *smart* provider. It tells when each post last changed: sitemap.xml
<lastmod>, the Atom feed's <updated> and Last-Modified headers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response

from example_project.items import Article


class BlogSpider(scrapy.Spider):
    name = "blog"
    # Xu et al.'s provider level: past update times are known.
    fresh_provider = "smart"

    async def start(self) -> AsyncIterator[Any]:
        base = self.settings.get("DEMO_SITE_URL").rstrip("/")
        yield scrapy.Request(f"{base}/sitemap.xml", callback=self.parse_sitemap)
        yield scrapy.Request(f"{base}/blog/atom.xml", callback=self.parse_atom)
        yield scrapy.Request(f"{base}/blog/", callback=self.parse_index)

    def parse_sitemap(self, response: Response) -> Iterator[Any]:
        response.selector.remove_namespaces()
        for loc in response.xpath("//url/loc/text()").getall():
            yield response.follow(loc.strip(), callback=self.parse_post)

    def parse_atom(self, response: Response) -> Iterator[Any]:
        response.selector.remove_namespaces()
        for href in response.xpath("//entry/link/@href").getall():
            yield response.follow(href, callback=self.parse_post)

    def parse_index(self, response: Response) -> Iterator[Any]:
        # The index changes when a listed page does, and then only a date in it moves
        # (the fingerprint reads digits as 0): its dates are its update times.
        response.meta["fresh_updates"] = response.css("ul.index time::text").getall()
        yield from response.follow_all(css="ul.index a", callback=self.parse_post)

    def parse_post(self, response: Response) -> Iterator[Any]:
        yield Article(
            url=response.url,
            section="blog",
            title=response.css("h1.title::text").get(default="").strip(),
            body="\n".join(response.css("div.body p::text").getall()),
            date=response.css("time.updated::attr(datetime)").get(default=""),
        )
