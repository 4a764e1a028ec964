"""A stock SitemapSpider run again before its sitemap index is due (cron every few hours,
FRESH_DEFAULT_REFRESH_SECS a day): plain Scrapy re-reads the index and downloads the
pages whose ``<lastmod>`` moved; the add-on must too (found by an adversarial run: it
refused the index as "known, not due" and made no request at all).

Site: ``make_small_site`` on nginx (``sitemap_index.xml`` -> ``sitemap-items.xml`` with
each page's ``<lastmod>``). Cycle 1: plain Scrapy, then the add-on. Two item pages are
then edited, dated 12 hours later (the simulated time of cycle 2), and the sitemaps
rewritten; cycle 2 runs 12 hours later (``clock_offset``).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from tests.nginx_support import Nginx, edit_page, make_small_site, write_site_maps
from tests.realsite_support import run_crawl

if TYPE_CHECKING:
    from collections.abc import Iterable

    from tests.nginx_support import Logged

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]

LATER = 12 * 3600.0
EDITED = ["/i3.html", "/i12.html"]


def gets(logged: Iterable[Logged], status: int) -> Counter[str]:
    return Counter(r.path for r in logged if r.method == "GET" and r.status == status)


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("sitemap-due")
    root = work / "site"
    root.mkdir()
    out: dict[str, Any] = {}
    with Nginx(root, work / "nginx") as server:
        base = server.url("")
        make_small_site(root, base)
        config = {"spider": "sitemap", "start": [server.url("/sitemap_index.xml")]}
        settings = {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
            "FRESH_VISIT_LOG": str(work / "visits.jsonl"),
        }
        run_crawl(config, work / "plain1").check()
        run_crawl({**config, "settings": settings}, work / "fresh1").check()
        for version, path in enumerate(EDITED, 1):
            edit_page(root / path.lstrip("/"), version)
            when = time.time() + LATER  # the site's clock agrees with the crawler's
            os.utime(root / path.lstrip("/"), (when, when))
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
