"""Scrapy's built-in spiders on a small site served by nginx, with the add-on's defaults.

Issue 14: a user adds ``ADDONS = {"scrapy_fresh.Addon": 0}`` to a project of ordinary
spiders and changes nothing else. Each spider here (CrawlSpider with a Rule,
SitemapSpider from a sitemap index, XMLFeedSpider, a spider whose requests carry
cb_kwargs and an errback) crawls the site twice with plain Scrapy and twice with the
add-on; between the cycles two item pages are edited (the sitemap's ``<lastmod>`` and
the feed follow). The add-on's second cycle runs "a month later" (everything due).

What must hold: the first cycle scrapes exactly plain Scrapy's items; the second
scrapes nothing plain Scrapy would not (same items for what it re-reads), re-reads every
edited page, answers every unchanged page with a 304 (or leaves it alone) and never
takes a known page for new.

Run them: ``.venv/bin/python -m pytest -m realsite tests/realsite``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from tests.nginx_support import Logged, Nginx, edit_page, make_small_site, write_site_maps
from tests.realsite_support import (
    ALL_DUE_OFFSET,
    RealCrawl,
    got,
    html_gets,
    html_path,
    outcomes_by_path,
    run_crawl,
    visits,
)
from tests.redis_helpers import free_port

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]

COUNT = 30
EDITED = (3, 12)  # item pages edited between the cycles; entry 3 of the feed is retitled
TIMEOUT = 120.0

#: spider -> its start document
STARTS = {
    "rules": "/index.html",
    "sitemap": "/sitemap_index.xml",
    "feed": "/feed.xml",
    "kwargs": "/index.html",
}


@dataclass
class Run:
    crawl: RealCrawl
    log: list[Logged]


@dataclass
class SpiderCycles:
    spider: str
    plain: list[Run]
    fresh: list[Run]
    visit_logs: list[Path]
    changed: set[str]  # paths whose content changed between the cycles

    def edited(self) -> set[str]:
        """The edited item pages the spider reaches (the feed lists only ten)."""
        return {f"/i{n}.html" for n in EDITED} & set(got(self.plain[0].log))


#: Item fields the add-on adds (docs/reference/meta.rst, "Item fields").
ADDED_FIELDS = frozenset({"fresh_changed", "fresh_changed_fields"})


def canonical(items: list[dict[str, Any]]) -> Counter[str]:
    """Items as JSON, without the ``fresh_changed`` fields the add-on adds (documented in
    docs/topics/conditional.rst), so that they compare with plain Scrapy's."""
    return Counter(
        json.dumps({k: v for k, v in i.items() if k not in ADDED_FIELDS}, sort_keys=True)
        for i in items
    )


@pytest.fixture(scope="module", params=sorted(STARTS))
def spider_cycles(
    request: pytest.FixtureRequest, nginx_available: None, tmp_path_factory: pytest.TempPathFactory
) -> SpiderCycles:
    spider: str = request.param
    work = tmp_path_factory.mktemp(f"spider-{spider}")
    root = work / "site"
    root.mkdir()
    with Nginx(root, work / "nginx") as server:
        base = server.url("")
        make_small_site(root, base)
        config: dict[str, Any] = {"spider": spider, "start": [server.url(STARTS[spider])]}
        if spider == "kwargs":  # and one request nobody answers (connection refused)
            config["extra"] = [f"http://127.0.0.1:{free_port()}/refused.html"]

        def fresh(cycle: int) -> dict[str, Any]:
            return {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
                "FRESH_VISIT_LOG": str(work / f"visits-c{cycle}.jsonl"),
            }

        def run(name: str, **extra: Any) -> Run:
            crawl = run_crawl({**config, **extra}, work / name, TIMEOUT)
            return Run(crawl, server.new_requests())

        plain = [run("plain1")]
        fresh_runs = [run("fresh1", settings=fresh(1))]
        for version, n in enumerate(EDITED, 1):
            edit_page(root / f"i{n}.html", version)
        write_site_maps(root, base, COUNT, titles={EDITED[0]: f"Item {EDITED[0]} (new)"})
        plain.append(run("plain2"))
        fresh_runs.append(run("fresh2", settings=fresh(2), clock_offset=ALL_DUE_OFFSET))
    changed = {f"/i{n}.html" for n in EDITED} | {"/sitemap-items.xml", "/feed.xml"}
    return SpiderCycles(
        spider, plain, fresh_runs, [work / "visits-c1.jsonl", work / "visits-c2.jsonl"], changed
    )


def test_every_crawl_finishes(spider_cycles: SpiderCycles) -> None:
    for run in spider_cycles.plain + spider_cycles.fresh:
        run.crawl.check()


def test_plain_scrapy_scrapes_the_site(spider_cycles: SpiderCycles) -> None:
    """The baseline: plain Scrapy scraped every item page (so the comparisons mean something)."""
    scraped = {html_path(i["url"]) for i in spider_cycles.plain[0].crawl.items}
    listed = 10 if spider_cycles.spider == "feed" else COUNT  # the feed has ten entries
    assert {f"/i{n}.html" for n in range(listed)} <= scraped


def test_first_cycle_scrapes_what_plain_scrapy_scrapes(spider_cycles: SpiderCycles) -> None:
    plain = canonical(spider_cycles.plain[0].crawl.items)
    fresh = canonical(spider_cycles.fresh[0].crawl.items)
    assert sorted(set(plain) - set(fresh)) == []  # nothing missed
    assert sorted(set(fresh) - set(plain)) == []  # nothing else
    assert {i: n for i, n in fresh.items() if n > plain[i]} == {}  # not more often


def test_first_cycle_fetches_what_plain_scrapy_fetches(spider_cycles: SpiderCycles) -> None:
    plain = html_gets(spider_cycles.plain[0].log)
    fresh = html_gets(spider_cycles.fresh[0].log)
    assert set(fresh) == set(plain)
    assert {p: n for p, n in fresh.items() if n > plain[p]} == {}


def test_second_cycle_scrapes_only_what_plain_scrapy_scrapes(spider_cycles: SpiderCycles) -> None:
    plain = canonical(spider_cycles.plain[1].crawl.items)
    fresh = canonical(spider_cycles.fresh[1].crawl.items)
    assert sorted(set(fresh) - set(plain)) == []
    # Whatever plain Scrapy scraped from a changed document, the add-on scraped too.
    wanted = {i for i in plain if html_path(json.loads(i)["url"]) in spider_cycles.changed}
    assert sorted(wanted - set(fresh)) == []


def test_second_cycle_downloads_only_the_edited_pages(spider_cycles: SpiderCycles) -> None:
    log = spider_cycles.fresh[1].log
    assert got(log) == Counter(
        spider_cycles.edited()
    )  # unchanged pages: a 304 or no request at all
    not_modified = [r for r in log if r.status == 304]
    assert not_modified
    assert all(r.body_bytes == 0 and r.conditional for r in not_modified)


def test_no_page_is_new_twice(spider_cycles: SpiderCycles) -> None:
    first, second = (visits(log) for log in spider_cycles.visit_logs)
    assert first, "no visit logged"
    news = Counter(
        p for p, outs in outcomes_by_path(first + second).items() for o in outs if o == "new"
    )
    assert {p: n for p, n in news.items() if n > 1} == {}
    assert spider_cycles.fresh[1].crawl.stat("fresh/new") == 0
    outcomes = outcomes_by_path(second)
    edited = spider_cycles.edited()
    assert {p: outcomes.get(p) for p in edited} == {p: ["changed"] for p in edited}
