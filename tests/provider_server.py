"""A local news site that publishes update signals: sitemaps, a feed, headers.

Paths (``N`` is 0..count-1):

* ``/a/N``        an article; ``Last-Modified`` is its real modification time,
  ``Cache-Control: max-age`` when ``max_age`` is set; with ``conditional=True`` a
  ``304`` (with the same headers) to an ``If-Modified-Since`` not older than it.
* ``/sitemap.xml`` every article with ``<lastmod>`` (the real time, or with
  ``lie=True`` the time of the request: a sitemap that stamps everything "now") and
  ``<changefreq>`` when ``changefreq`` is set.
* ``/sitemap.xml.gz`` the same, gzip-compressed; ``/sitemap_index.xml`` an index of it.
* ``/feed.xml``   RSS 2.0 with every article's ``pubDate``, ``<ttl>``, and an
  ``sy:updatePeriod`` schedule (``sy_period``).
* ``/bomb.xml.gz`` a gzip bomb (``bomb_bytes`` of spaces inside a sitemap).
* ``/laughs.xml`` a billion-laughs sitemap; ``/garbage.xml`` random bytes.

Every request is logged (path, time) so tests can see what crossed the wire.
"""

from __future__ import annotations

import gzip
import random
import threading
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = ["river", "market", "signal", "garden", "copper", "window", "harbor", "lantern", "meadow"]


def w3c(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="microseconds")


@dataclass
class Article:
    path: str
    text: str
    modified: float


@dataclass
class NewsSite:
    count: int = 5
    lie: bool = False
    changefreq: str | None = None
    sy_period: str | None = None
    ttl_minutes: int | None = None
    max_age: int | None = None
    conditional: bool = False
    bomb_bytes: int = 64 << 20
    seed: int = 3
    articles: dict[str, Article] = field(default_factory=dict)
    log: list[tuple[str, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        for n in range(self.count):
            path = f"/a/{n}"
            self.articles[path] = Article(path, self._text(), time.time() - 86400)

    def _text(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(80))

    def change(self, path: str) -> None:
        with self.lock:
            article = self.articles[path]
            article.text = self._text()
            article.modified = time.time()

    def requests(self, path: str) -> int:
        with self.lock:
            return sum(1 for p, _ in self.log if p == path)

    def lastmod(self, article: Article) -> float:
        return time.time() if self.lie else article.modified

    def sitemap(self, base: str) -> bytes:
        entries = []
        for a in self.articles.values():
            freq = f"<changefreq>{self.changefreq}</changefreq>" if self.changefreq else ""
            entries.append(
                f"<url><loc>{base}{a.path}</loc><lastmod>{w3c(self.lastmod(a))}</lastmod>"
                f"{freq}</url>"
            )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(entries)
            + "</urlset>"
        ).encode()

    def feed(self, base: str) -> bytes:
        items = "".join(
            f"<item><link>{base}{a.path}</link>"
            f"<pubDate>{formatdate(self.lastmod(a), usegmt=True)}</pubDate></item>"
            for a in self.articles.values()
        )
        extra = ""
        if self.ttl_minutes is not None:
            extra += f"<ttl>{self.ttl_minutes}</ttl>"
        if self.sy_period:
            extra += f"<sy:updatePeriod>{self.sy_period}</sy:updatePeriod>"
        return (
            '<?xml version="1.0"?><rss version="2.0" '
            'xmlns:sy="http://purl.org/rss/1.0/modules/syndication/"><channel>'
            f"<title>news</title><link>{base}/</link>{extra}{items}</channel></rss>"
        ).encode()

    def bomb(self) -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        parts = [packer.compress(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">')]
        block = b" " * (1 << 20)
        parts.extend(packer.compress(block) for _ in range(self.bomb_bytes >> 20))
        parts.append(packer.flush())
        return b"".join(parts)


def laughs() -> bytes:
    entities = '<!ENTITY l0 "lol">' + "".join(
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)
    )
    return (
        f'<?xml version="1.0"?><!DOCTYPE urlset [{entities}]>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>&l9;</loc></url></urlset>"
    ).encode()


class _Handler(BaseHTTPRequestHandler):
    server: NewsServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        site = self.server.site
        path = self.path.split("?", 1)[0]
        with site.lock:
            site.log.append((path, time.time()))
        base = f"http://{self.server.host}:{self.server.port}"
        xml = {"Content-Type": "application/xml"}
        if path == "/sitemap.xml":
            self._send(200, site.sitemap(base), xml)
        elif path == "/sitemap.xml.gz":
            self._send(
                200, gzip.compress(site.sitemap(base)), {"Content-Type": "application/x-gzip"}
            )
        elif path == "/sitemap_index.xml":
            body = (
                '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<sitemap><loc>{base}/sitemap.xml.gz</loc><lastmod>{w3c(time.time())}"
                "</lastmod></sitemap></sitemapindex>"
            ).encode()
            self._send(200, body, xml)
        elif path == "/feed.xml":
            self._send(200, site.feed(base), {"Content-Type": "application/rss+xml"})
        elif path == "/bomb.xml.gz":
            self._send(200, site.bomb(), {"Content-Type": "application/x-gzip"})
        elif path == "/laughs.xml":
            self._send(200, laughs(), xml)
        elif path == "/garbage.xml":
            self._send(200, bytes(random.Random(1).getrandbits(8) for _ in range(3000)), xml)
        elif path in site.articles:
            with site.lock:
                a = site.articles[path]
                body = (
                    f"<html><head><title>{a.path}</title></head><body><article><p>{a.text}</p>"
                    "</article></body></html>"
                ).encode()
                headers = {
                    "Content-Type": "text/html; charset=utf-8",
                    "Last-Modified": formatdate(a.modified, usegmt=True),
                }
            if site.max_age is not None:
                headers["Cache-Control"] = f"max-age={site.max_age}"
            since = self.headers.get("If-Modified-Since")
            if (
                site.conditional
                and since
                and parsedate_to_datetime(since).timestamp() >= int(a.modified)
            ):
                del headers["Content-Type"]
                self._send(304, b"", headers)
                return
            self._send(200, body, headers)
        else:
            self._send(404, b"not found", {"Content-Type": "text/plain"})


class NewsServer(ThreadingHTTPServer):
    """``with NewsServer(NewsSite()) as server: server.url("/sitemap.xml")``."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, site: NewsSite, host: str = "127.0.0.1") -> None:
        self.site = site
        self.host = host
        super().__init__((host, 0), _Handler)
        self.port = self.server_address[1]
        self.thread = threading.Thread(
            target=self.serve_forever, daemon=True, kwargs={"poll_interval": 0.05}
        )

    def __enter__(self) -> NewsServer:  # noqa: PYI034
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"
