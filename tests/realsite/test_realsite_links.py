"""A plain link-following spider on real sites served by nginx, without and with the add-on.

Issue 14: on a link-dense real site the add-on lost visits and pages. Each scenario
crawls one site with plain Scrapy, then with ``ADDONS = {"scrapy_fresh.Addon": 0}``
for two cycles (the second "a month later", so that every page is due), editing a few
pages in between. nginx decides every answer (its own ETag, Last-Modified and 304), and
its access log is the proof of what was fetched and what it cost.

Scenarios: a generated link-dense site where every link also appears with a
``#section`` fragment (the spider keeps fragments) on the SQLite store, and on Redis
with two worker processes; the Python 3.11 HTML docs (fragments stripped) on SQLite.

Run them: ``.venv/bin/python -m pytest -m realsite tests/realsite``.
"""

from __future__ import annotations

import shutil
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from scrapy_fresh.store.base import Status
from tests.nginx_support import Nginx, copy_python_docs, edit_page, make_dense_site
from tests.realsite_support import (
    ALL_DUE_OFFSET,
    Cycles,
    RealCrawl,
    by_path,
    got,
    html_gets,
    item_paths,
    nginx_validators,
    outcomes_by_path,
    redis_records,
    run_crawl,
    site_validators,
    sqlite_records,
    start_crawl,
    visits,
)
from tests.redis_helpers import SHARED_URL

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from scrapy_fresh.store.base import PageState

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]

DENSE_PAGES = 200
DENSE_LINKS = 100  # distinct pages each page links to, each link twice (with a #fragment)
DENSE_EDITED = ["/p3.html", "/p77.html", "/p150.html"]
DOCS_EDITED = ["/library/os.html", "/howto/enum.html", "/library/functions.html"]
TIMEOUT = 150.0  # seconds per crawl process: a hung crawl fails instead of blocking


def crawl_cycles(
    root: Path,
    work: Path,
    spider: dict[str, Any],
    settings: Callable[[str], dict[str, Any]],
    records: Callable[[], list[PageState]],
    edited: list[str],
    plain: tuple[RealCrawl, list[Any]] | None = None,
    workers: int = 1,
) -> Cycles:
    """Plain Scrapy (unless given), then ``workers`` add-on crawls at once, twice.

    ``settings(name)`` gives the add-on settings of one worker of one cycle (``name``
    is e.g. ``c1w0``); ``records()`` reads the store.
    """
    pages = sum(1 for _ in root.rglob("*.html"))
    # A crawl gone round in circles stops (plain Scrapy fetches the start page twice).
    guard = {"CLOSESPIDER_PAGECOUNT": 2 * pages}
    with Nginx(root, work / "nginx") as server:
        config = {**spider, "start": [server.url("/index.html")]}
        if plain is None:
            plain_crawl = run_crawl({**config, "settings": guard}, work / "plain", TIMEOUT)
            plain = (plain_crawl, server.new_requests())
        server.new_requests()
        started = [
            start_crawl({**config, "settings": {**guard, **settings(f"c1w{w}")}}, work / f"c1w{w}")
            for w in range(workers)
        ]
        first = [s.finish(TIMEOUT) for s in started]
        cycles = Cycles(
            root,
            plain[0],
            plain[1],
            first,
            server.new_requests(),
            records(),
            edited,
            site_validators(root),
        )
        for version, path in enumerate(edited, 1):
            edit_page(root / path.lstrip("/"), version)
        started = [
            start_crawl(
                {
                    **config,
                    "clock_offset": ALL_DUE_OFFSET,
                    "settings": {**guard, **settings(f"c2w{w}")},
                },
                work / f"c2w{w}",
            )
            for w in range(workers)
        ]
        cycles.second = [s.finish(TIMEOUT) for s in started]
        cycles.second_log = server.new_requests()
        cycles.second_records = records()
    cycles.workers = workers
    cycles.visit_logs = [
        work / f"visits-{c}w{w}.jsonl" for c in ("c1", "c2") for w in range(workers)
    ]
    return cycles


def sqlite_settings(work: Path) -> Callable[[str], dict[str, Any]]:
    def settings(name: str) -> dict[str, Any]:
        return {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(work / "state.sqlite"),
            "FRESH_VISIT_LOG": str(work / f"visits-{name}.jsonl"),
        }

    return settings


DENSE_SPIDER = {"spider": "links", "keep_fragments": True}
DOCS_SPIDER = {"spider": "links", "once_per_page": True}


@pytest.fixture(scope="module")
def dense_plain(
    nginx_available: None, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, RealCrawl, list[Any]]:
    """The dense site, as generated, and plain Scrapy's crawl of it."""
    work = tmp_path_factory.mktemp("dense-plain")
    make_dense_site(work / "site", DENSE_PAGES, DENSE_LINKS)
    with Nginx(work / "site", work / "nginx") as server:
        config = {**DENSE_SPIDER, "start": [server.url("/index.html")]}
        crawl = run_crawl(config, work / "plain", TIMEOUT)
        return work / "site", crawl, server.new_requests()


@pytest.fixture(scope="module")
def dense_sqlite(
    dense_plain: tuple[Path, RealCrawl, list[Any]], tmp_path_factory: pytest.TempPathFactory
) -> Cycles:
    work = tmp_path_factory.mktemp("dense-sqlite")
    shutil.copytree(dense_plain[0], work / "site")
    return crawl_cycles(
        work / "site",
        work,
        DENSE_SPIDER,
        sqlite_settings(work),
        lambda: sqlite_records(work / "state.sqlite"),
        DENSE_EDITED,
        plain=dense_plain[1:],
    )


@pytest.fixture(scope="module")
def dense_redis(
    dense_plain: tuple[Path, RealCrawl, list[Any]],
    tmp_path_factory: pytest.TempPathFactory,
    module_prefix: str,
) -> Cycles:
    work = tmp_path_factory.mktemp("dense-redis")
    shutil.copytree(dense_plain[0], work / "site")

    def settings(name: str) -> dict[str, Any]:
        return {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_STORE": "redis",
            "REDIS_URL": SHARED_URL,
            "FRESH_REDIS_KEY": module_prefix,
            "FRESH_VISIT_LOG": str(work / f"visits-{name}.jsonl"),
        }

    return crawl_cycles(
        work / "site",
        work,
        DENSE_SPIDER,
        settings,
        lambda: redis_records(SHARED_URL, module_prefix),
        DENSE_EDITED,
        plain=dense_plain[1:],
        workers=2,
    )


@pytest.fixture(scope="module")
def docs_sqlite(
    nginx_available: None, python_docs_available: None, tmp_path_factory: pytest.TempPathFactory
) -> Cycles:
    work = tmp_path_factory.mktemp("docs-sqlite")
    copy_python_docs(work / "site")
    return crawl_cycles(
        work / "site",
        work,
        DOCS_SPIDER,
        sqlite_settings(work),
        lambda: sqlite_records(work / "state.sqlite"),
        DOCS_EDITED,
    )


SCENARIOS = ["dense_sqlite", "dense_redis", "docs_sqlite"]


@pytest.fixture(params=SCENARIOS)
def cycles(request: pytest.FixtureRequest) -> Cycles:
    value: Cycles = request.getfixturevalue(request.param)
    return value


# -- the checks, for every scenario ----------------------------------------------------------


def test_plain_scrapy_reaches_the_whole_site(cycles: Cycles) -> None:
    """The baseline itself: plain Scrapy fetched every page the site links (a sanity
    check of the site and spider, so that the comparisons below mean something)."""
    cycles.plain.check()
    assert len(cycles.plain_pages()) >= 200
    assert set(item_paths(cycles.plain)) == cycles.plain_pages()


def test_cycles_finish(cycles: Cycles) -> None:
    for crawl in cycles.first + cycles.second:
        crawl.check()


def test_first_cycle_reaches_exactly_what_plain_scrapy_reaches(cycles: Cycles) -> None:
    fetched = got(cycles.first_log)
    plain = cycles.plain_pages()
    assert sorted(plain - set(fetched))[:20] == [], f"{len(plain - set(fetched))} not reached"
    assert sorted(set(fetched) - plain)[:20] == []
    items = Counter[str]()
    for crawl in cycles.first:
        items.update(item_paths(crawl))
    assert set(items) == plain
    # No page fetched (or scraped) more often than plain Scrapy fetched it; each worker
    # sends its own start request (dont_filter=True, as plain Scrapy's start_urls).
    plain_gets = html_gets(cycles.plain_log)
    plain_gets[cycles.start] += cycles.workers - 1
    more = {
        p: (n, plain_gets[p]) for p, n in html_gets(cycles.first_log).items() if n > plain_gets[p]
    }
    assert dict(list(more.items())[:20]) == {}, f"{len(more)} pages fetched more often"
    assert {p: n for p, n in items.items() if n > plain_gets[p]} == {}


def test_first_cycle_leaves_a_complete_record_per_fetched_page(cycles: Cycles) -> None:
    records = by_path(cycles.first_records)
    fetched = got(cycles.first_log)
    incomplete = {}
    for path in fetched:
        states = records.get(path, [])
        if len(states) != 1:
            incomplete[path] = f"{len(states)} records"
            continue
        s = states[0]
        etag, last_modified = cycles.first_validators[path]
        wrong = [
            name
            for name, ok in (
                ("status", s.status == Status.IDLE),
                ("last_crawl", s.last_crawl is not None),
                ("fingerprint", s.fingerprint is not None),
                ("etag", s.etag == etag),
                ("last_modified", s.last_modified == last_modified),
            )
            if not ok
        ]
        if wrong:
            incomplete[path] = f"{s.status.value} visits={s.visits} wrong: {', '.join(wrong)}"
    shown = dict(sorted(incomplete.items())[:10])
    assert shown == {}, f"{len(incomplete)} of {len(fetched)} fetched pages: {shown}"
    left = Counter(
        s.status.value
        for s in cycles.first_records
        if s.status in (Status.QUEUED, Status.IN_FLIGHT)
    )
    assert left == Counter()


def test_second_cycle_unchanged_pages_are_304_without_body(cycles: Cycles) -> None:
    answers: dict[str, list[tuple[int, int, bool]]] = {}
    for r in cycles.second_log:
        if r.method == "GET" and ".html" in r.path:
            answers.setdefault(r.path, []).append((r.status, r.body_bytes, r.conditional))
    unchanged = cycles.plain_pages() - set(cycles.edited)
    # The start page: once per worker (each sends its start request), each time a 304.
    wrong = {
        p: answers.get(p, [])
        for p in sorted(unchanged)
        if answers.get(p, []) != [(304, 0, True)]
        and not (
            p == cycles.start
            and 0 < len(answers[p]) <= cycles.workers
            and set(answers[p]) == {(304, 0, True)}
        )
    }
    shown = dict(list(wrong.items())[:10])
    assert shown == {}, f"{len(wrong)} of {len(unchanged)} unchanged pages not one 304: {shown}"


def test_second_cycle_downloads_and_reports_the_edited_pages(cycles: Cycles) -> None:
    second = [line for log in cycles.visit_logs if "-c2" in log.name for line in visits(log)]
    outcomes = outcomes_by_path(second)
    for path in cycles.edited:
        assert [
            (r.status, r.conditional)
            for r in cycles.second_log
            if r.path == path and r.method == "GET"
        ] == [(200, True)], path
        assert outcomes.get(path) == ["changed"], path
    items = Counter[str]()
    for crawl in cycles.second:
        items.update(item_paths(crawl))
    assert {p: items[p] for p in cycles.edited} == dict.fromkeys(cycles.edited, 1)


def test_no_page_is_new_twice(cycles: Cycles) -> None:
    lines = [line for log in cycles.visit_logs for line in visits(log)]
    assert lines, "no visit logged"
    news = Counter(p for p, outs in outcomes_by_path(lines).items() for o in outs if o == "new")
    twice = {p: n for p, n in news.items() if n > 1}
    assert dict(list(twice.items())[:10]) == {}, f"{len(twice)} pages judged new twice"
    assert sum(c.stat("fresh/new") for c in cycles.second) == 0
    # Only pages never downloaded in cycle 1 (a broken link: 404) are in the new stream.
    never = sum(1 for s in cycles.first_records if s.last_crawl is None)
    assert sum(c.stat("fresh/requests/new") for c in cycles.second) == never


def test_second_cycle_records_one_more_visit(cycles: Cycles) -> None:
    before = {p: s[0] for p, s in by_path(cycles.first_records).items() if len(s) == 1}
    after = by_path(cycles.second_records)
    wrong = {}
    without = 0  # edited pages answered in the second of their edit: no validators kept
    for path in sorted(cycles.plain_pages()):
        states = after.get(path, [])
        if len(states) != 1 or path not in before:
            wrong[path] = f"{len(states)} records after, {int(path in before)} before"
            continue
        old, new = before[path], states[0]
        validators = nginx_validators(cycles.root / path.lstrip("/"))
        dropped = path in cycles.edited and (new.etag, new.last_modified) == (None, None)
        without += dropped
        if not (
            new.status == Status.IDLE
            and new.visits == old.visits + 1
            and new.last_crawl is not None
            and old.last_crawl is not None
            and new.last_crawl > old.last_crawl
            and ((new.etag, new.last_modified) == validators or dropped)
            and (new.changes == old.changes + 1) == (path in cycles.edited)
        ):
            wrong[path] = (
                f"{new.status.value} visits {old.visits}->{new.visits} "
                f"changes {old.changes}->{new.changes}"
            )
    shown = dict(list(wrong.items())[:10])
    assert shown == {}, f"{len(wrong)} pages: {shown}"
    same_second = sum(c.stats.get("fresh/validators_same_second", 0) for c in cycles.second)
    assert without == same_second
