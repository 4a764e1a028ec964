"""Two real crawl cycles against local servers: what changed is found, nothing else is paid for.

Each page family of tests/mockserver.py is served from its own host (address or port),
so that what a host teaches about its validators is the family's behaviour. The first
cycle finds 30 new pages; between the cycles a known subset is rewritten (and one page
only gets new validators); the second cycle runs "two days later" (a shifted clock) and
must report exactly the rewritten pages as changed.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import pytest

from scrapy_fresh.store.base import PageState, Status
from scrapy_fresh.store.sqlite import SQLiteStore

DAY = 86400.0
COUNT = 5
#: family -> (server address, callback): no-item families are judged from the HTML.
FAMILIES = {
    "v": ("127.0.0.1", "parse_item"),
    "i": ("127.0.0.3", "parse_item"),
    "n": ("127.0.0.1", "parse_noitem"),
    "c": ("127.0.0.1", "parse_noitem"),
    "w": ("127.0.0.1", "parse_item"),
    "r": ("127.0.0.1", "parse_item"),
}
CHANGED = ("/v/1", "/i/2", "/n/3", "/c/0", "/w/4", "/r/1")
VALIDATORS_ONLY = ("/v/2",)  # new ETag and Last-Modified, same content


@dataclass
class Cycles:
    servers: dict[str, Any]
    first: Any
    second: Any
    log: list[Any]  # server requests of the second cycle
    before: dict[str, PageState]  # records after the first cycle, by path
    after: dict[str, PageState]  # records after the second cycle, by path
    now: float  # the (shifted) time of the second cycle


def _count_in_flight(path: Any) -> int:
    store = SQLiteStore(path)
    try:
        return store.counts()[Status.IN_FLIGHT]
    finally:
        store.close()


@pytest.fixture(scope="module")
def cycles(
    mockserver: Any, crawl: Any, records_by_path: Any, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    import time

    site = mockserver.MockSite(count=COUNT, seed=7)
    work = tmp_path_factory.mktemp("cycles")
    db = work / "state.sqlite"
    with contextlib.ExitStack() as stack:
        servers = {
            f: stack.enter_context(mockserver.MockServer(site, host=host))
            for f, (host, _) in FAMILIES.items()
        }
        start = [
            {"url": servers[f].url(f"/{f}/{n}"), "callback": callback}
            for f, (_, callback) in FAMILIES.items()
            for n in range(COUNT)
        ]
        config = {
            "settings": {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_SQLITE_PATH": str(db),
                # Space the requests to the "conditionals ignored" host so that it can
                # learn from its first answers (HEAD probes for the rest).
                "DOWNLOAD_SLOTS": {"127.0.0.3": {"delay": 0.15}},
                # Pages without validators downloaded in full (length probes, which
                # cannot see /n/3's same-length rewrite: tests/test_length_probes.py).
                "FRESH_LENGTH_PROBE_FULL_EVERY": 0,
            },
            "start": start,
        }
        first = crawl(config, work)
        before = records_by_path(db)
        for path in CHANGED:
            site.change(path)
        for path in VALIDATORS_ONLY:
            site.touch_cosmetic(path)
        mark = len(site.log)
        now = time.time() + 2 * DAY
        second_config = {**config, "clock_offset": 2 * DAY}
        second_config["settings"] = {**config["settings"], "FRESH_DROP_UNCHANGED_ITEMS": True}
        second = crawl(second_config, work)
        log = site.log[mark:]
        after = records_by_path(db)
        assert _count_in_flight(db) == 0
        yield Cycles(servers, first, second, log, before, after, now)


def _requests(cycles: Cycles, path: str) -> list[Any]:
    return [r for r in cycles.log if r.path == path]


def test_first_cycle_finds_every_page_new(cycles: Cycles) -> None:
    total = COUNT * len(FAMILIES)
    assert cycles.first.stat("fresh/requests/new") == total
    assert cycles.first.stat("fresh/new") == total
    assert len(cycles.before) == total
    assert all(
        s.last_crawl is not None and s.fingerprint is not None for s in cycles.before.values()
    )
    assert cycles.before["/v/0"].etag
    assert cycles.before["/v/0"].last_modified
    assert cycles.before["/w/0"].etag.startswith('W/"')
    assert cycles.before["/n/0"].etag is None


def test_second_cycle_reports_exactly_the_changed_pages(cycles: Cycles) -> None:
    changed = {p for p, s in cycles.after.items() if s.changes}
    assert changed == set(CHANGED)
    second = cycles.second
    total = COUNT * len(FAMILIES)
    assert second.stat("fresh/requests/refresh") == total
    assert second.stat("fresh/requests/new") == 0
    assert second.stat("fresh/changed") == len(CHANGED)
    assert second.stat("fresh/unchanged") + second.stat("fresh/not_modified") == total - len(
        CHANGED
    )
    # Every visit recorded exactly once.
    outcomes = sum(
        second.stat(f"fresh/{o}")
        for o in ("new", "changed", "unchanged", "not_modified", "gone", "errors")
    )
    assert outcomes == total
    assert all(s.visits == 1 for s in cycles.after.values())


def test_validators_honoured_pages_cost_no_body(cycles: Cycles) -> None:
    for family in ("v", "w"):
        for n in range(COUNT):
            path = f"/{family}/{n}"
            requests = _requests(cycles, path)
            assert [r.method for r in requests] == ["GET"], path
            if path in CHANGED or path in VALIDATORS_ONLY:
                assert requests[0].status == 200, path
                assert requests[0].body_bytes > 0, path
            else:
                assert requests[0].status == 304, path
                assert requests[0].body_bytes == 0, path
                assert "if-none-match" in requests[0].headers, path
    assert cycles.after["/v/2"].changes == 0  # new validators, same text: unchanged
    assert cycles.second.stat("fresh/bytes_saved") > 0


def test_host_ignoring_conditionals_gets_head_probes(cycles: Cycles) -> None:
    assert cycles.second.stat("fresh/head_probes") >= 1
    probed = [
        n for n in range(COUNT) if any(r.method == "HEAD" for r in _requests(cycles, f"/i/{n}"))
    ]
    assert probed
    for n in probed:
        methods = [r.method for r in _requests(cycles, f"/i/{n}")]
        if f"/i/{n}" in CHANGED:
            assert methods == ["HEAD", "GET"]
        else:
            assert methods == ["HEAD"]  # same validators: the body is never downloaded


def test_records_show_new_p_c_and_refresh_times(cycles: Cycles) -> None:
    for path, state in cycles.after.items():
        old = cycles.before[path]
        assert state.last_crawl == pytest.approx(cycles.now, abs=60)
        assert state.next_due == pytest.approx(state.last_crawl + state.refresh_secs)
        if path in CHANGED:
            assert state.p_c > 0
            assert state.refresh_secs < old.refresh_secs, path
        else:
            assert state.p_c == 0
            assert state.refresh_secs > old.refresh_secs, path


def test_cosmetic_churn_is_unchanged_and_a_rewritten_paragraph_is_changed(cycles: Cycles) -> None:
    # /c/ pages change their footer (time, ad) on every response and yield no item:
    # they are judged from the page text, boilerplate left out.
    for n in range(COUNT):
        path = f"/c/{n}"
        assert [r.status for r in _requests(cycles, path)] == [200]
        assert bool(cycles.after[path].changes) == (path in CHANGED)
    # /n/3 yields no item either: its rewritten paragraph is found in the HTML.
    assert cycles.after["/n/3"].changes == 1
    # /r/ pages send a new random ETag every time: still unchanged unless rewritten.
    assert {p for p in cycles.after if p.startswith("/r/") and cycles.after[p].changes} == {"/r/1"}


def test_unchanged_items_are_dropped_and_changed_ones_marked(cycles: Cycles) -> None:
    items = cycles.second.items
    with_items = [p for p in CHANGED if FAMILIES[p.split("/")[1]][1] == "parse_item"]
    assert sorted("/" + i["url"].split("/", 3)[3] for i in items) == sorted(with_items)
    assert all(i["fresh_changed"] is True for i in items)
    # Items of pages that answered 200 but did not change were dropped; 304s yield none.
    assert cycles.second.dropped == cycles.second.stat("fresh/items_dropped_unchanged") > 0
    first_items = cycles.first.items
    assert len(first_items) == COUNT * 4
    assert all(i["fresh_changed"] is True for i in first_items)
