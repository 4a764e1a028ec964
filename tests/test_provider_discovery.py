"""Sitemap discovery: robots.txt ``Sitemap:`` lines and sitemap indexes followed by the crawl.

The pure part (:mod:`scrapy_fresh.providers.discovery`) is tested directly; the glue in
real crawls (tests/crawl_runner.py in a subprocess, as in test_crawl_providers.py) against
a local site on 127.0.0.1 whose robots.txt names a sitemap index, which lists a gzip
sitemap of the articles, hostile documents (a gzip bomb, a billion-laughs file, one over
the download size limit, garbage, a 404) and a chain of nested indexes.
"""

from __future__ import annotations

import contextlib
import gzip
import threading
import time
import zlib
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.config import FreshConfig
from scrapy_fresh.exceptions import ConfigError
from scrapy_fresh.providers.discovery import DiscoveryLimits, SitemapDiscovery, robots_url_of
from scrapy_fresh.store.base import PageState, Provider
from scrapy_fresh.store.sqlite import SQLiteStore

# -- the pure part -----------------------------------------------------------------------


def test_robots_lines_of_the_same_site_are_taken_once_at_depth_zero() -> None:
    d = SitemapDiscovery()
    text = (
        "User-agent: *\nDisallow: /x\nSitemap: /a.xml\nSITEMAP: https://www.site.test/b.xml\n"
        "Sitemap: https://evil.test/c.xml\nSitemap: /a.xml\nSitemap: ftp://site.test/d\n"
    )
    found = d.from_robots(text, "https://site.test/robots.txt")
    assert found == [("https://site.test/a.xml", 0), ("https://www.site.test/b.xml", 0)]
    assert d.skipped == {"other_host": 1}
    # the same lines again (another robots.txt answer in the same run): nothing new
    assert d.from_robots(text, "https://site.test/robots.txt") == []
    assert d.skipped["repeated"] == 2


def test_index_children_newest_first_within_the_per_host_limit() -> None:
    d = SitemapDiscovery(DiscoveryLimits(max_depth=2, max_per_host=3))
    children = [f"https://s.test/{n}.xml" for n in range(6)]
    lastmods = {children[4]: 400.0, children[1]: 100.0, children[5]: 500.0}
    found = d.from_index(0, [*children, children[5]], lastmods)
    assert found == [(children[5], 1), (children[4], 1), (children[1], 1)]
    assert d.skipped == {"over_limit": 3}
    assert d.taken("s.test") == 3
    # the limit is per host: another host's sitemaps are still taken
    assert d.from_index(0, ["https://t.test/0.xml"], {}) == [("https://t.test/0.xml", 1)]


def test_depth_limit_stops_nested_indexes() -> None:
    d = SitemapDiscovery(DiscoveryLimits(max_depth=1, max_per_host=50))
    assert d.from_index(0, ["https://s.test/a.xml"], {}) == [("https://s.test/a.xml", 1)]
    assert d.from_index(1, ["https://s.test/b.xml", "https://s.test/c.xml"], {}) == []
    assert d.skipped == {"too_deep": 2}
    robots_only = SitemapDiscovery(DiscoveryLimits(max_depth=0))
    assert robots_only.from_index(0, ["https://s.test/a.xml"], {}) == []


def test_first_visit_of_an_origin_and_robots_urls() -> None:
    d = SitemapDiscovery()
    assert d.first_visit("http://a.test/x/y?z") == "http://a.test/robots.txt"
    assert d.first_visit("http://a.test/other") is None
    assert d.first_visit("https://a.test/") == "https://a.test/robots.txt"  # another origin
    d.seen_origin("http://b.test:8080/robots.txt")
    assert d.first_visit("http://b.test:8080/p") is None
    assert robots_url_of("http://[::1]:8000/p") == "http://[::1]:8000/robots.txt"
    assert robots_url_of("mailto:x@y") is None
    assert robots_url_of("http://bad:port/") is None


@pytest.mark.parametrize(
    ("limits", "message"),
    [({"max_depth": -1}, "max_depth"), ({"max_per_host": 0}, "max_per_host")],
)
def test_limits_are_checked(limits: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DiscoveryLimits(**limits)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FRESH_PROVIDER_MAX_SITEMAPS", 0),
        ("FRESH_PROVIDER_MAX_SITEMAPS", 2.5),
        ("FRESH_PROVIDER_MAX_SITEMAP_DEPTH", -1),
        ("FRESH_PROVIDER_MAX_SITEMAP_DEPTH", "deep"),
    ],
)
def test_bad_settings_are_refused_naming_the_setting(name: str, value: Any) -> None:
    from scrapy.settings import Settings

    with pytest.raises(ConfigError, match=name):
        FreshConfig.from_settings(Settings({name: value}))


def test_settings_defaults() -> None:
    from scrapy.settings import Settings

    config = FreshConfig.from_settings(Settings())
    assert config.provider_sitemaps is True
    assert config.provider_fetch_robots is False
    assert (config.provider_max_sitemaps, config.provider_max_sitemap_depth) == (50, 2)


# -- a site that publishes its sitemaps in robots.txt ------------------------------------

ARTICLES = [f"/a/{n}" for n in range(5)]
#: The articles' true modification times (fixed, in the past).
BASE_TIME = 1_700_000_000.0
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
#: Every sitemap the index lists, directly or through nested indexes (/sm/deep.xml, at
#: depth 3, is never fetched with the default depth of 2).
SITEMAPS = [
    "/sm/index.xml",
    "/sm/articles.xml.gz",
    "/sm/bomb.xml.gz",
    "/sm/laughs.xml",
    "/sm/big.xml",
    "/sm/garbage.xml",
    "/sm/missing.xml",
    "/sm/nested.xml",
    "/sm/nested2.xml",
    "/sm/other.xml",
]


def w3c(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat()


class Site:
    """The site's state (modification times) and what it served."""

    def __init__(self) -> None:
        self.modified = {path: BASE_TIME + 3600 * n for n, path in enumerate(ARTICLES)}
        self.log: list[str] = []
        self.lock = threading.Lock()
        self.big = self._big()
        self.bomb = self._bomb()

    def requests(self, path: str) -> int:
        with self.lock:
            return self.log.count(path)

    def touch(self, path: str) -> float:
        with self.lock:
            self.modified[path] = float(int(time.time()))
            return self.modified[path]

    def articles_sitemap(self, base: str) -> bytes:
        with self.lock:
            urls = "".join(
                f"<url><loc>{base}{p}</loc><lastmod>{w3c(t)}</lastmod></url>"
                for p, t in self.modified.items()
            )
        return f'<?xml version="1.0"?><urlset {NS}>{urls}</urlset>'.encode()

    def index(self, base: str) -> bytes:
        with self.lock:
            newest = max(self.modified.values())
        entries = [
            ("/sm/bomb.xml.gz", BASE_TIME - 86400),
            ("/sm/laughs.xml", BASE_TIME - 86400),
            ("/sm/big.xml", BASE_TIME - 86400),
            ("/sm/garbage.xml", None),
            ("/sm/missing.xml", None),
            ("/sm/nested.xml", None),
            ("/sm/other.xml", None),
            ("/sm/index.xml", None),  # itself
            ("/sm/articles.xml.gz", newest),
        ]
        body = "".join(
            f"<sitemap><loc>{base}{p}</loc>"
            + (f"<lastmod>{w3c(t)}</lastmod>" if t is not None else "")
            + "</sitemap>"
            for p, t in entries
        )
        body += "<sitemap><loc>http://elsewhere.test/s.xml</loc></sitemap>"
        return f'<?xml version="1.0"?><sitemapindex {NS}>{body}</sitemapindex>'.encode()

    @staticmethod
    def nested(base: str, child: str) -> bytes:
        return (
            f'<?xml version="1.0"?><sitemapindex {NS}><sitemap><loc>{base}{child}</loc>'
            "</sitemap></sitemapindex>"
        ).encode()

    @staticmethod
    def _big() -> bytes:
        """A well-formed sitemap of about 6 MB (over the download limit of the tests)."""
        url = "<url><loc>http://127.0.0.1/x/{n}</loc></url>"
        return (
            f"<urlset {NS}>" + "".join(url.format(n=n) for n in range(150_000)) + "</urlset>"
        ).encode()

    @staticmethod
    def _bomb() -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        parts = [packer.compress(f"<urlset {NS}>".encode())]
        block = b" " * (1 << 20)
        parts.extend(packer.compress(block) for _ in range(16))
        parts.append(packer.flush())
        return b"".join(parts)


def laughs() -> bytes:
    entities = '<!ENTITY l0 "lol">' + "".join(
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)
    )
    return (
        f'<?xml version="1.0"?><!DOCTYPE urlset [{entities}]><urlset {NS}>'
        "<url><loc>&l9;</loc></url></urlset>"
    ).encode()


class _Handler(BaseHTTPRequestHandler):
    server: SiteServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # the crawler hangs up on /sm/big.xml: it is over its download limit
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def do_GET(self) -> None:
        site = self.server.site
        path = self.path.split("?", 1)[0]
        with site.lock:
            site.log.append(path)
        base = self.server.url("")
        xml = "application/xml"
        if path == "/robots.txt":
            body = (
                "User-agent: *\nDisallow: /private/\nSitemap: /sm/index.xml\n"
                "Sitemap: http://elsewhere.test/sitemap.xml\n"
            )
            self._send(200, body.encode(), "text/plain")
        elif path == "/sm/index.xml":
            self._send(200, site.index(base), xml)
        elif path == "/sm/articles.xml.gz":
            self._send(200, gzip.compress(site.articles_sitemap(base)), "application/x-gzip")
        elif path == "/sm/bomb.xml.gz":
            self._send(200, site.bomb, "application/x-gzip")
        elif path == "/sm/laughs.xml":
            self._send(200, laughs(), xml)
        elif path == "/sm/big.xml":
            self._send(200, site.big, xml)
        elif path == "/sm/garbage.xml":
            self._send(200, b"<html><body>not a sitemap \x00\xff</body></html>", xml)
        elif path == "/sm/nested.xml":
            self._send(200, site.nested(base, "/sm/nested2.xml"), xml)
        elif path == "/sm/nested2.xml":
            self._send(200, site.nested(base, "/sm/deep.xml"), xml)
        elif path == "/sm/other.xml":  # pages of a section this crawl never visits
            urls = "".join(f"<url><loc>{base}/other/{n}</loc></url>" for n in range(20))
            self._send(200, f"<urlset {NS}>{urls}</urlset>".encode(), xml)
        elif path == "/sm/deep.xml":
            self._send(200, site.articles_sitemap(base), xml)
        elif path in site.modified:
            body = f"<html><head><title>{path}</title></head><body><article><p>"
            body += f"Article {path}, version {site.modified[path]}</p></article></body></html>"
            self._send(200, body.encode(), "text/html; charset=utf-8")  # no Last-Modified
        else:
            self._send(404, b"not found", "text/plain")


class SiteServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, site: Site) -> None:
        self.site = site
        super().__init__(("127.0.0.1", 0), _Handler)
        self.port = self.server_address[1]
        self.thread = threading.Thread(
            target=self.serve_forever, daemon=True, kwargs={"poll_interval": 0.05}
        )

    def __enter__(self) -> SiteServer:  # noqa: PYI034
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def site() -> Any:
    s = Site()
    with SiteServer(s) as server:
        yield s, server


def settings(db: Path, **extra: Any) -> dict[str, Any]:
    return {
        "ADDONS": {"scrapy_fresh.Addon": 0},
        "FRESH_SQLITE_PATH": str(db),
        "FRESH_VISIT_LOG": "",
        "LOG_LEVEL": "INFO",
        "ROBOTSTXT_OBEY": True,
        "FRESH_PROVIDER_MAX_BYTES": 1 << 20,
        "FRESH_PROVIDER_MAX_INFLATED_BYTES": 4 << 20,
        **extra,
    }


def start(server: SiteServer, *paths: str, callback: str = "parse_item") -> list[dict[str, Any]]:
    return [{"url": server.url(p), "callback": callback} for p in paths]


def records(db: Path) -> dict[str, PageState]:
    store = SQLiteStore(str(db))
    try:
        return {"/" + s.url.split("/", 3)[3]: s for s in store.iterate()}
    finally:
        store.close()


def fetched(site: Site, paths: list[str]) -> dict[str, int]:
    return {p: site.requests(p) for p in paths if site.requests(p)}


@pytest.mark.slow
def test_robots_sitemap_lines_make_the_pages_smart_and_hostile_ones_are_refused(
    crawl: Any, site: Any, tmp_path: Path
) -> None:
    s, server = site
    db = tmp_path / "s.sqlite"
    first = crawl({"settings": settings(db), "start": start(server, *ARTICLES)}, tmp_path / "c1")
    now = time.time()
    # robots.txt read once (Scrapy's own request), each sitemap fetched once, politely
    assert s.requests("/robots.txt") == 1
    assert fetched(s, [*SITEMAPS, "/sm/deep.xml"]) == dict.fromkeys(SITEMAPS, 1)
    assert first.stat("fresh/providers/sitemaps/requested") == len(SITEMAPS)
    assert first.stat("fresh/providers/sitemaps/skipped/other_host") == 1  # robots.txt line
    assert first.stat("fresh/providers/skipped/other_host") == 1  # the index entry
    assert first.stat("fresh/providers/sitemaps/skipped/too_deep") == 1  # /sm/deep.xml
    assert first.stat("fresh/providers/sitemaps/skipped/repeated") == 1  # the index itself
    # hostile documents: refused, counted, logged; nothing else lost
    assert first.stat("fresh/providers/outcome/too_large") == 1  # the gzip bomb
    assert first.stat("fresh/providers/outcome/entities_refused") == 1
    assert first.stat("fresh/providers/sitemaps/failed") == 2  # over download_maxsize, 404
    assert first.stat("fresh/providers/sitemaps/refused") == 4  # bomb, laughs, big, garbage
    assert "too_large provider document" in first.log
    assert "/sm/big.xml, found by sitemap discovery, could not be read" in first.log
    assert "/sm/garbage.xml, found by sitemap discovery, is not a sitemap" in first.log
    # only the articles became items
    assert sorted(item["url"] for item in first.items) == [server.url(p) for p in ARTICLES]
    got = records(db)
    for path in ARTICLES:  # no Last-Modified: smart by the gzip sitemap's lastmod alone
        assert got[path].provider is Provider.SMART
        assert got[path].past_updates == [s.modified[path]]
    # the documents are records of their own, marked, re-read when the store says so
    assert got["/sm/index.xml"].request["meta"] == {"fresh_sitemap": 0}
    assert got["/sm/articles.xml.gz"].request["meta"] == {"fresh_sitemap": 1}
    assert got["/sm/nested2.xml"].request["meta"] == {"fresh_sitemap": 2}
    for refused in ("/sm/bomb.xml.gz", "/sm/laughs.xml", "/sm/big.xml", "/sm/garbage.xml"):
        assert got[refused].next_due > now + 29 * 86400, refused
    # a sitemap none of whose pages the crawl knows by the end of the run: read monthly
    assert first.stat("fresh/providers/sitemaps/unused") == 1
    assert f"the sitemap {server.url('/sm/other.xml')} lists no page" in first.log
    assert got["/sm/other.xml"].next_due > now + 29 * 86400
    assert got["/sm/index.xml"].next_due < now + 2 * 86400
    assert got["/sm/articles.xml.gz"].next_due < now + 2 * 86400

    # a minute later nothing is due: no sitemap is read again
    crawl(
        {"settings": settings(db), "clock_offset": 60.0, "start": start(server, *ARTICLES)},
        tmp_path / "c2",
    )
    assert fetched(s, SITEMAPS) == dict.fromkeys(SITEMAPS, 1)

    # two days later an article changed: the due sitemaps are read again (the refused ones
    # are not), and the article is due and smart with its new update time
    changed = s.touch("/a/2")
    third = crawl(
        {"settings": settings(db), "clock_offset": 2 * 86400.0, "start": []}, tmp_path / "c3"
    )
    again = fetched(s, SITEMAPS)
    assert again["/sm/index.xml"] == 2
    assert again["/sm/articles.xml.gz"] == 2
    for refused in (
        "/sm/bomb.xml.gz",
        "/sm/laughs.xml",
        "/sm/big.xml",
        "/sm/garbage.xml",
        "/sm/other.xml",
    ):
        assert again[refused] == 1, refused
    assert third.stat("fresh/providers/outcome/too_large") == 0
    assert changed in records(db)["/a/2"].past_updates
    pages = [item for item in third.items if "reason" not in item]  # PageGone items aside
    assert all(item["url"].startswith(server.url("/a/")) for item in pages)


@pytest.mark.slow
def test_robots_txt_is_requested_only_when_asked_and_robots_are_not_obeyed(
    crawl: Any, site: Any, tmp_path: Path
) -> None:
    s, server = site
    # ROBOTSTXT_OBEY off (the test runner's default): no robots.txt, no sitemaps
    db = tmp_path / "off.sqlite"
    result = crawl(
        {"settings": settings(db, ROBOTSTXT_OBEY=False), "start": start(server, *ARTICLES)},
        tmp_path / "c1",
    )
    assert s.requests("/robots.txt") == 0
    assert fetched(s, SITEMAPS) == {}
    assert result.stat("fresh/providers/sitemaps/requested") == 0
    # FRESH_PROVIDER_FETCH_ROBOTS: one robots.txt request per host, through the scheduler
    db = tmp_path / "fetch.sqlite"
    result = crawl(
        {
            "settings": settings(db, ROBOTSTXT_OBEY=False, FRESH_PROVIDER_FETCH_ROBOTS=True),
            "start": start(server, *ARTICLES),
        },
        tmp_path / "c2",
    )
    assert s.requests("/robots.txt") == 1
    assert result.stat("fresh/providers/robots/requested") == 1
    assert s.requests("/sm/articles.xml.gz") == 1
    assert len(result.items) == 5
    got = records(db)
    assert got["/robots.txt"].request["meta"] == {"fresh_robots": True}
    assert {got[p].provider for p in ARTICLES} == {Provider.SMART}


@pytest.mark.slow
def test_a_sitemap_the_spider_fetches_stays_the_spiders_and_its_children_are_followed(
    crawl: Any, site: Any, tmp_path: Path
) -> None:
    s, server = site
    db = tmp_path / "s.sqlite"
    crawl(
        {
            "settings": settings(db),
            "start": [
                *start(server, "/sm/index.xml", callback="parse_noitem"),
                *start(server, *ARTICLES),
            ],
        },
        tmp_path / "c1",
    )
    assert s.requests("/sm/index.xml") == 1  # robots.txt names it too: not fetched twice
    assert s.requests("/sm/articles.xml.gz") == 1
    got = records(db)
    assert got["/sm/index.xml"].request.get("callback") == "parse_noitem"
    assert "fresh_sitemap" not in (got["/sm/index.xml"].request.get("meta") or {})
    assert got["/sm/articles.xml.gz"].request["meta"] == {"fresh_sitemap": 1}
    assert {got[p].provider for p in ARTICLES} == {Provider.SMART}


@pytest.mark.slow
def test_limits_and_switching_discovery_off(crawl: Any, site: Any, tmp_path: Path) -> None:
    s, server = site
    # two sitemaps per host: the index and its newest child, the gzip sitemap
    db = tmp_path / "two.sqlite"
    result = crawl(
        {
            "settings": settings(db, FRESH_PROVIDER_MAX_SITEMAPS=2),
            "start": start(server, *ARTICLES),
        },
        tmp_path / "c1",
    )
    assert fetched(s, SITEMAPS) == {"/sm/index.xml": 1, "/sm/articles.xml.gz": 1}
    assert result.stat("fresh/providers/sitemaps/skipped/over_limit") == 7
    assert "did not follow 7 (over_limit)" in result.log
    assert {records(db)[p].provider for p in ARTICLES} == {Provider.SMART}
    # off: robots.txt is still read by Scrapy for ROBOTSTXT_OBEY, no sitemap is fetched,
    # and the sitemap records of earlier runs are not read either
    result = crawl(
        {
            "settings": settings(db, FRESH_PROVIDER_SITEMAPS=False),
            "clock_offset": 2 * 86400.0,
            "start": start(server, *ARTICLES),
        },
        tmp_path / "c2",
    )
    assert fetched(s, SITEMAPS) == {"/sm/index.xml": 1, "/sm/articles.xml.gz": 1}
    assert result.stat("fresh/providers/sitemaps/disabled") == 2
    assert len(result.items) == 5
