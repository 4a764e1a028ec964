"""A real crawl of a site whose sitemap dates every URL at the time it is read (issue 5,
"a sitemap that stamps every URL with today's date"): its dates are ignored from its
second such read, before any visit judges them. Local HTTP server, real SQLite, each
crawl a subprocess (tests/crawl_runner.py); a later run shifts the clock of both the
crawler and the site."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from scrapy_fresh.providers.ledger import iter_trust
from scrapy_fresh.store.sqlite import SQLiteStore

pytestmark = pytest.mark.slow

ARTICLES = [f"/a/{n}" for n in range(5)]
BYPASS = {"fresh_enabled": False}  # a sitemap read on every run, whatever is due


class StampingSite(ThreadingHTTPServer):
    """Five articles that never change, and a sitemap generated on request that gives
    each the generation time as ``<lastmod>`` (the site's clock runs ``offset`` seconds
    ahead, as the crawler's does in a later run). ``stamping=False``: their real date."""

    daemon_threads = True

    def __init__(self, *, stamping: bool) -> None:
        self.stamping = stamping
        self.offset = 0.0
        self.published = time.time() - 10 * 86400.0
        self.sitemap_reads = 0
        super().__init__(("127.0.0.1", 0), _Handler)
        self.port = self.server_address[1]
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    def __enter__(self) -> StampingSite:  # noqa: PYI034
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def sitemap(self) -> bytes:
        self.sitemap_reads += 1
        when = time.time() + self.offset if self.stamping else self.published
        stamp = datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="seconds")
        entries = "".join(
            f"<url><loc>{self.url(p)}</loc><lastmod>{stamp}</lastmod></url>" for p in ARTICLES
        )
        return (
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
        ).encode()


class _Handler(BaseHTTPRequestHandler):
    server: StampingSite
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        if self.path == "/sitemap.xml":
            body, ctype = self.server.sitemap(), "application/xml"
        elif self.path in ARTICLES:
            body = f"<html><body><p>article {self.path}</p></body></html>".encode()
            ctype = "text/html; charset=utf-8"
        else:
            body, ctype = b"not found", "text/plain"
        self.send_response(200 if ctype != "text/plain" else 404)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def settings(db: Path) -> dict[str, Any]:
    return {
        "ADDONS": {"scrapy_fresh.Addon": 0},
        "FRESH_SQLITE_PATH": str(db),
        "FRESH_VISIT_LOG": "",
        "LOG_LEVEL": "INFO",
    }


def read_sitemap(site: StampingSite) -> list[dict[str, Any]]:
    return [{"url": site.url("/sitemap.xml"), "callback": "parse_noitem", "meta": BYPASS}]


def past_updates(db: Path) -> dict[str, list[float]]:
    store = SQLiteStore(str(db))
    try:
        return {"/" + s.url.split("/", 3)[3]: list(s.past_updates) for s in store.iterate()}
    finally:
        store.close()


def sitemap_trust(db: Path) -> Any:
    store = SQLiteStore(str(db))
    try:
        (record,) = [t.record for t in iter_trust(store) if t.kind == "sitemap"]
        return record
    finally:
        store.close()


def crawl_twice(crawl: Any, tmp_path: Path, site: StampingSite) -> tuple[Any, Any, Path]:
    """A first run fetches the articles and reads the sitemap; an hour later (by both
    clocks) a second run reads the sitemap again."""
    db = tmp_path / "s.sqlite"
    start = [{"url": site.url(p), "callback": "parse_item", "meta": {}} for p in ARTICLES]
    first = crawl({"settings": settings(db), "start": start + read_sitemap(site)}, tmp_path / "c1")
    site.offset = 3600.0
    second = crawl(
        {"settings": settings(db), "clock_offset": 3600.0, "start": read_sitemap(site)},
        tmp_path / "c2",
    )
    assert site.sitemap_reads == 2
    return first, second, db


def test_a_sitemap_stamping_every_url_at_read_time_is_ignored_from_its_second_read(
    crawl: Any, tmp_path: Path
) -> None:
    with StampingSite(stamping=True) as site:
        first, second, db = crawl_twice(crawl, tmp_path, site)
    # the first read is believed (every page may have just changed) ...
    assert first.stat("fresh/providers/stamped") == 0
    after_first = past_updates(db)
    assert all(len(after_first[p]) == 1 for p in ARTICLES)
    # ... the second, an hour later and again "now" for every URL, gives itself away
    assert second.stat("fresh/providers/stamped") == len(ARTICLES)
    assert second.stat("fresh/providers/stamping") == 1
    assert second.stat("fresh/providers/due_now") == 0
    assert second.stat("fresh/providers/claims/sitemap") == 0
    assert "dates every entry at the time it is read" in second.log
    assert past_updates(db) == after_first  # no date written, no page made due
    # counted against the host's sitemap trust at once, no visit needed
    assert sitemap_trust(db).refuted >= 1.0


def test_a_sitemap_with_real_dates_is_read_as_before(crawl: Any, tmp_path: Path) -> None:
    with StampingSite(stamping=False) as site:
        first, second, db = crawl_twice(crawl, tmp_path, site)
    assert first.stat("fresh/providers/stamped") == 0
    assert second.stat("fresh/providers/stamped") == 0
    assert "dates every entry" not in second.log
    assert all(past_updates(db)[p] == [pytest.approx(site.published, abs=1.0)] for p in ARTICLES)
