"""The least a change-tracking add-on could do per page, as a floor for bench/crawl.py.

A Scrapy spider middleware that, for each page, fingerprints the items the callback
yielded (scrapy_fresh's simhash of their text and a SHA-1 of it) and records the page
(URL, fingerprint, digest, ETag, Last-Modified, time) and every URL the page links in
one SQLite file, written in batches of 64 pages. No scheduling, no verdict, no provider
signals, no visit log: the cost issue 14 had in mind ("a fingerprint and a batched
SQLite write per page should cost a few percent"). Enabled with::

    SPIDER_MIDDLEWARES = {"bench.least_addon.LeastAddon": 40}
    LEAST_ADDON_SQLITE = "/tmp/least.sqlite"
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from typing import Any

from scrapy import Request, signals

from scrapy_fresh.fingerprint.shingles import fingerprint_text

BATCH = 64


def _key(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()


class LeastAddon:
    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS pages (key BLOB PRIMARY KEY, url TEXT, fp INTEGER, "
            "digest BLOB, etag TEXT, last_modified TEXT, last_crawl REAL)"
        )
        self.pages: list[tuple[Any, ...]] = []
        self.links: list[tuple[bytes, str]] = []

    @classmethod
    def from_crawler(cls, crawler: Any) -> LeastAddon:
        component = cls(crawler.settings["LEAST_ADDON_SQLITE"])
        crawler.signals.connect(component.write, signal=signals.spider_closed)
        return component

    def write(self, *_: Any, **__: Any) -> None:
        self.db.execute("BEGIN")
        self.db.executemany("INSERT OR IGNORE INTO pages (key, url) VALUES (?, ?)", self.links)
        self.db.executemany(
            "INSERT OR REPLACE INTO pages VALUES (?, ?, ?, ?, ?, ?, ?)", self.pages
        )
        self.db.execute("COMMIT")
        self.pages, self.links = [], []

    async def process_spider_output(self, response: Any, result: Any) -> Any:
        items = []
        async for element in result:
            if isinstance(element, Request):
                self.links.append((_key(element.url), element.url))
                yield element
            else:
                items.append(element)
        text = "\n".join(str(value) for item in items for value in dict(item).values())
        fingerprint = fingerprint_text(text)
        headers = response.headers
        self.pages.append(
            (
                _key(response.url),
                response.url,
                fingerprint - (1 << 64) if fingerprint >= 1 << 63 else fingerprint,
                hashlib.sha1(text.encode()).digest(),
                (headers.get(b"ETag") or b"").decode("latin-1"),
                (headers.get(b"Last-Modified") or b"").decode("latin-1"),
                time.time(),
            )
        )
        if len(self.pages) >= BATCH:
            self.write()
        for item in items:
            yield item
