"""A stock SitemapSpider run again before its sitemap index is due (cron every few hours,
FRESH_DEFAULT_REFRESH_SECS a day): plain Scrapy re-reads the index and downloads the
pages whose ``<lastmod>`` moved; the add-on must too (found by an adversarial run: it
refused the index as "known, not due" and made no request at all).

Site: ``make_small_site`` on nginx (``sitemap_index.xml`` -> ``sitemap-items.xml`` with
each page's ``<lastmod>``). Cycle 1: plain Scrapy, then the add-on. Two item pages are
then edited, dated 12 hours later (the simulated time of cycle 2), and the sitemaps
rewritten; cycle 2 runs 12 hours later (``clock_offset``).

The same for a stock XMLFeedSpider whose feed says nothing of when to read it again (no
``<ttl>``, no Cache-Control): entry 3 is retitled and its page edited; cycle 2 must read
the feed and get the new entry, and a third run a minute later checks it with a 304.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest

from tests.nginx_support import Nginx, edit_page, make_small_site, write_site_maps
from tests.realsite_support import run_crawl

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

    from tests.nginx_support import Logged

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]

LATER = 12 * 3600.0
EDITED = ["/i3.html", "/i12.html"]


def gets(logged: Iterable[Logged], status: int) -> Counter[str]:
    return Counter(r.path for r in logged if r.method == "GET" and r.status == status)


@contextmanager
def first_cycle(
    work: Path, spider: str, start: str
) -> Iterator[tuple[Nginx, Path, dict[str, Any], dict[str, Any]]]:
    """nginx serving ``make_small_site``, crawled once by plain Scrapy and once with the
    add-on (``spider`` from ``start``); yields the server, the site's root, the spider's
    config and the add-on's settings."""
    root = work / "site"
    root.mkdir()
    with Nginx(root, work / "nginx") as server:
        make_small_site(root, server.url(""))
        config = {"spider": spider, "start": [server.url(start)]}
        settings = {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
            "FRESH_VISIT_LOG": str(work / "visits.jsonl"),
        }
        run_crawl(config, work / "plain1").check()
        run_crawl({**config, "settings": settings}, work / "fresh1").check()
        yield server, root, config, settings


def edit_later(root: Path, path: str, version: int) -> None:
    """Edit an item page, dated LATER from now (the site's clock agrees with the crawler's)."""
    edit_page(root / path.lstrip("/"), version)
    when = time.time() + LATER
    os.utime(root / path.lstrip("/"), (when, when))


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("sitemap-due")
    out: dict[str, Any] = {}
    with first_cycle(work, "sitemap", "/sitemap_index.xml") as (server, root, config, settings):
        base = server.url("")
        for version, path in enumerate(EDITED, 1):
            edit_later(root, path, version)
        write_site_maps(root, base, 30)
        server.new_requests()
        out["plain"] = run_crawl(config, work / "plain2")
        out["plain_log"] = server.new_requests()
        run = {**config, "settings": settings, "clock_offset": LATER}
        out["fresh"] = run_crawl(run, work / "fresh2")
        out["fresh_log"] = server.new_requests()
    return out


def test_plain_scrapy_downloads_the_edited_pages(second: dict[str, Any]) -> None:
    second["plain"].check()
    assert all(gets(second["plain_log"], 200)[p] == 1 for p in EDITED)


def test_the_addon_reads_its_sitemaps_and_downloads_the_edited_pages(
    second: dict[str, Any],
) -> None:
    second["fresh"].check()
    log = second["fresh_log"]
    fetched = gets(log, 200) + gets(log, 304)
    assert fetched["/sitemap_index.xml"] == 1
    assert {p: gets(log, 200)[p] for p in EDITED} == dict.fromkeys(EDITED, 1)
    # the index (304), the changed child sitemap and the two pages; plain Scrapy: all 32
    assert sum(1 for r in log if r.method == "GET") == 4
    assert sum(1 for r in second["plain_log"] if r.method == "GET") == 32


@pytest.fixture(scope="module")
def feed_cycles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("feed-due")
    out: dict[str, Any] = {}
    with first_cycle(work, "feed", "/feed.xml") as (server, root, config, settings):
        edit_later(root, "/i3.html", 1)
        write_site_maps(root, server.url(""), 30, titles={3: "Item 3, now in blue"})
        server.new_requests()
        out["plain"] = run_crawl(config, work / "plain2")
        server.new_requests()
        run = {**config, "settings": settings, "clock_offset": LATER}
        out["fresh"] = run_crawl(run, work / "fresh2")
        out["fresh_log"] = server.new_requests()
        out["fresh3"] = run_crawl({**run, "clock_offset": LATER + 60}, work / "fresh3")
        out["fresh3_log"] = server.new_requests()
    return out


def entries(crawl: Any) -> set[str]:
    return {item["entry"] for item in crawl.items if "entry" in item}


def test_plain_scrapy_reads_the_new_feed_entry(feed_cycles: dict[str, Any]) -> None:
    feed_cycles["plain"].check()
    assert "Item 3, now in blue" in entries(feed_cycles["plain"])


def test_the_addon_reads_its_feed_and_gets_the_new_entry(feed_cycles: dict[str, Any]) -> None:
    feed_cycles["fresh"].check()
    assert gets(feed_cycles["fresh_log"], 200)["/feed.xml"] == 1
    assert "Item 3, now in blue" in entries(feed_cycles["fresh"])


def test_an_unchanged_feed_is_checked_again_with_a_304(feed_cycles: dict[str, Any]) -> None:
    feed_cycles["fresh3"].check()
    log = feed_cycles["fresh3_log"]
    assert gets(log, 304)["/feed.xml"] == 1
    assert sum(1 for r in log if r.method == "GET") == 1
