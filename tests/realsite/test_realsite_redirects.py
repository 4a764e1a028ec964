"""Redirects on nginx: a redirect to a page this run has fetched (or fetches later) is not
downloaded and scraped again, as Scrapy's dupefilter keeps it (found by an adversarial
run: ``a.html`` was fetched three times, once per way to it).

The index links ``a.html``, ``c.html`` and ``q.html?a=1&b=2`` (and the same with its
parameters swapped), and redirect sources: ``/old1.html`` (301 to ``/a.html``),
``/old4.html`` (301 to ``/old1.html``), ``/old3.html`` (301 to ``q.html?b=2&a=1``) and
``/old5.html`` (302 to ``/c.html#top``); ``a.html`` links ``/old2.html`` (301 to
``b.html``), which ``c.html`` links too. The same spider (``links``, fragments kept)
runs with plain Scrapy, then with the add-on for two cycles (the second with every page
due); nginx's access log tells what was fetched.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from tests.nginx_support import Nginx
from tests.realsite_support import ALL_DUE_OFFSET, html_gets, item_paths, run_crawl

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]

REDIRECTS = """
        location = /old1.html { return 301 /a.html; }
        location = /old2.html { return 301 /b.html; }
        location = /old3.html { return 301 /q.html?b=2&a=1; }
        location = /old4.html { return 301 /old1.html; }
        location = /old5.html { return 302 /c.html#top; }
"""
LINKS = {
    "index.html": ["a.html", "a.html#x", "q.html?a=1&b=2", "q.html?b=2&a=1", "old1.html",
                   "old3.html", "old4.html", "old5.html", "c.html"],
    "a.html": ["old2.html"],
    "b.html": [],
    "c.html": ["b.html"],
    "q.html": [],
}  # fmt: skip


def make_site(root: Path) -> None:
    root.mkdir(parents=True)
    for name, links in LINKS.items():
        anchors = " ".join(f'<a href="{link}">{link}</a>' for link in links)
        (root / name).write_text(
            f"<!DOCTYPE html><html><head><title>{name}</title></head><body><main>"
            f"<h1>{name}</h1><p>The page {name}.</p>{anchors}</main></body></html>\n"
        )


@pytest.fixture(scope="module")
def crawls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("redirects")
    make_site(work / "site")
    out: dict[str, Any] = {}
    with Nginx(work / "site", work / "nginx", REDIRECTS) as server:
        config = {"spider": "links", "keep_fragments": True, "start": [server.url("/index.html")]}
        server.new_requests()
        out["plain"] = run_crawl(config, work / "plain")
        out["plain_log"] = server.new_requests()
        settings = {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
            "FRESH_VISIT_LOG": str(work / "visits.jsonl"),
        }
        for cycle, offset in ((1, 0.0), (2, ALL_DUE_OFFSET)):
            run = {**config, "settings": settings, "clock_offset": offset}
            out[cycle] = run_crawl(run, work / f"fresh{cycle}")
            out[f"log{cycle}"] = server.new_requests()
    return out


@pytest.mark.parametrize("cycle", [1, 2])
def test_no_page_is_fetched_more_often_than_by_plain_scrapy(
    crawls: dict[str, Any], cycle: int
) -> None:
    crawls[cycle].check()
    plain = html_gets(crawls["plain_log"])
    fresh = html_gets(crawls[f"log{cycle}"])
    assert {p: (n, plain[p]) for p, n in fresh.items() if n > plain[p]} == {}


def test_the_first_cycle_scrapes_what_plain_scrapy_scrapes_once_each(
    crawls: dict[str, Any],
) -> None:
    """Every page once: the redirect sources' duplicates are dropped, as in plain Scrapy."""
    plain, fresh = item_paths(crawls["plain"]), item_paths(crawls[1])
    assert set(fresh) == set(plain)
    assert fresh == Counter(dict.fromkeys(plain, 1))
    assert crawls[1].stat("fresh/requests/duplicate_redirect") >= 2


def test_the_second_cycle_reaches_every_page_again(crawls: dict[str, Any]) -> None:
    """All due, nothing changed: every page is checked (304s: no items); none twice."""
    fresh = html_gets(crawls["log2"])
    for page in ("/index.html", "/a.html", "/b.html", "/c.html", "/q.html?a=1&b=2"):
        assert fresh[page] == 1, (page, fresh)
