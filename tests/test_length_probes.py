"""Pages without ETag or Last-Modified, checked by a HEAD probe of their Content-Length.

Nine real crawl runs, 40 simulated days apart (every page due each time), against three
local hosts: 127.0.0.1 serves ``/n/N`` (no validators, a stable length), 127.0.0.2
``/c/N`` (no validators and a footer whose time and ad change the length on every
answer) and 127.0.0.3 ``/n/N`` too (never edited; *steady* below). Between the runs some ``/n``
pages are rewritten, one of them keeping its byte length. FRESH_LENGTH_PROBE_FULL_EVERY
is 4: the first fetch (run 0) and the fourth after it (run 4) are full downloads, runs
1-3 and 5-7 length probes. Run 4 finds the same-length edit on 127.0.0.1, so that host's
next full download comes 4 fetches later (run 8); 127.0.0.3 never hid a change, so its
gap doubles and run 8 is a probe there too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import pytest

from scrapy_fresh.store.base import PageState
from scrapy_fresh.store.sqlite import SQLiteStore

DAY = 86400.0
COUNT = 5
RUNS = 9
SHIFT = 40 * DAY
#: Rewritten before run 2: with a new length, and keeping the length.
LONGER = "/n/0"
SAME_LENGTH = "/n/3"


@dataclass
class Runs:
    results: list[Any]
    logs: list[list[Any]]  # the servers' requests of each run, both hosts
    records: list[dict[str, PageState]]  # the store after each run, by path
    db: Any
    cosmetic_host: str  # the record host (address and port) of the /c/ pages
    plain_host: str  # ... and of the /n/ pages
    steady_logs: list[list[Any]]  # the steady host's requests of each run


@pytest.fixture(scope="module")
def runs(
    mockserver: Any, crawl: Any, records_by_path: Any, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    work = tmp_path_factory.mktemp("length")
    db = work / "state.sqlite"
    plain = mockserver.MockSite(count=COUNT, seed=3)
    cosmetic = mockserver.MockSite(count=COUNT, seed=4)
    steady = mockserver.MockSite(count=COUNT, seed=5)
    with contextlib.ExitStack() as stack:
        n_server = stack.enter_context(mockserver.MockServer(plain, host="127.0.0.1"))
        c_server = stack.enter_context(mockserver.MockServer(cosmetic, host="127.0.0.2"))
        s_server = stack.enter_context(mockserver.MockServer(steady, host="127.0.0.3"))
        start = [
            {"url": server.url(f"/{kind}/{i}"), "callback": "parse_noitem"}
            for server, kind in ((n_server, "n"), (c_server, "c"), (s_server, "n"))
            for i in range(COUNT)
        ]
        config = {
            "settings": {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_SQLITE_PATH": str(db),
                "FRESH_LENGTH_PROBE": True,
                "FRESH_LENGTH_PROBE_FULL_EVERY": 4,
                "FRESH_PROVIDER_AUTODETECT": False,
            },
            "start": start,
        }
        out = Runs([], [], [], db, c_server.url().split("/")[2], n_server.url().split("/")[2], [])
        for run in range(RUNS):
            if run == 2:
                plain.change(LONGER)
                plain.change_same_length(SAME_LENGTH)
            marks = (len(plain.log), len(cosmetic.log), len(steady.log))
            out.results.append(crawl({**config, "clock_offset": run * SHIFT}, work))
            assert out.results[-1].returncode == 0, out.results[-1].log[-3000:]
            out.logs.append(plain.log[marks[0] :] + cosmetic.log[marks[1] :])
            out.steady_logs.append(steady.log[marks[2] :])
            out.records.append(records_by_path(db, (out.plain_host, out.cosmetic_host)))
        yield out


def _methods(runs: Runs, run: int, path: str) -> list[str]:
    return [r.method for r in runs.logs[run] if r.path == path]


def _site_checks(runs: Runs, host: str) -> dict[str, int]:
    store = SQLiteStore(runs.db)
    try:
        site = store.get_site(host)
    finally:
        store.close()
    assert site is not None
    return site.checks


def test_unchanged_pages_cost_a_head_answer_between_full_downloads(runs: Runs) -> None:
    for run in (1, 2, 3, 5, 6, 7):
        for i in range(COUNT):
            path = f"/n/{i}"
            if run == 2 and path == LONGER:
                continue
            assert _methods(runs, run, path) == ["HEAD"], (run, path)
            assert all(r.body_bytes == 0 for r in runs.logs[run] if r.path == path)
    for i in range(COUNT):
        assert _methods(runs, 4, f"/n/{i}") == ["GET"]  # every fourth fetch: in full
    assert runs.results[1].stat("fresh/length_probes") >= COUNT
    assert runs.results[1].stat("fresh/not_modified") >= COUNT
    state = runs.records[3]["/n/1"]
    assert state.changes == 0
    assert state.visits == 3


def test_a_new_length_is_fetched_and_judged_changed(runs: Runs) -> None:
    assert _methods(runs, 2, LONGER) == ["HEAD", "GET"]
    assert runs.records[2][LONGER].changes == 1


def test_a_same_length_edit_is_found_at_the_next_full_download(runs: Runs) -> None:
    # Runs 2 and 3 compare lengths only and cannot see it; run 4 downloads the page.
    for run in (2, 3):
        assert _methods(runs, run, SAME_LENGTH) == ["HEAD"]
        assert runs.records[run][SAME_LENGTH].changes == 0, run
    assert runs.records[4][SAME_LENGTH].changes == 1
    # ... and counts it for its host: the only change the length hid, kept for later runs.
    assert _site_checks(runs, runs.plain_host)["length_blind"] == 1


def test_full_downloads_spread_out_while_lengths_hide_nothing(runs: Runs) -> None:
    # 127.0.0.1 hid a change (run 4): a full download every 4th fetch again (run 8).
    # 127.0.0.3 never did: its gap doubled, run 8 is a probe, the next full is fetch 12.
    for i in range(COUNT):
        assert _methods(runs, 8, f"/n/{i}") == ["GET"], i
        steady = [[r.method for r in runs.steady_logs[run] if r.path == f"/n/{i}"]
                  for run in range(1, RUNS)]  # fmt: skip
        assert steady == [
            ["HEAD"], ["HEAD"], ["HEAD"], ["GET"], ["HEAD"], ["HEAD"], ["HEAD"], ["HEAD"]
        ], i  # fmt: skip


def test_a_length_that_moves_on_its_own_costs_a_head_and_no_false_change(runs: Runs) -> None:
    # The /c/ footer (request time, a random ad) moves the length on some answers: a
    # probe then fetches the body, which is judged unchanged (boilerplate left out).
    for run in range(1, RUNS):
        for i in range(COUNT):
            methods = _methods(runs, run, f"/c/{i}")
            assert methods in (["HEAD"], ["HEAD", "GET"], ["GET"]), (run, i, methods)
            assert runs.records[run][f"/c/{i}"].changes == 0, (run, i)
    checks = _site_checks(runs, runs.cosmetic_host)
    # Counted exactly, and kept for the next run: a probe that led to a download of an
    # unchanged page is churn, a probe that saved the download a match.
    visits = [_methods(runs, run, f"/c/{i}") for run in range(1, RUNS) for i in range(COUNT)]
    assert checks["length_churn"] == visits.count(["HEAD", "GET"])
    assert checks["length_not_modified"] == visits.count(["HEAD"])
    assert checks["length_blind"] == 0


def test_host_length_trust_weighs_what_probes_save_against_what_they_waste() -> None:
    from scrapy_fresh.validators import HostChecks

    def plan(checks: HostChecks) -> str:
        return checks.plan("auto", has_validators=False, has_head_validators=True).value

    assert plan(HostChecks(length_churn=2)) == "head"  # not enough evidence yet
    assert plan(HostChecks(length_churn=3)) == "none"  # never matched: no probes
    # A 2% probe that saves a page now and then pays for many wasted ones ...
    cheap = {"check_bytes": 200, "check_full_bytes": 10_200}
    assert plan(HostChecks(length_churn=20, length_not_modified=1, **cheap)) == "head"
    # ... but not for any number.
    assert plan(HostChecks(length_churn=60, length_not_modified=1, **cheap)) == "none"
    # A page whose own length moved is downloaded in full whatever the host shows.
    checks = HostChecks(length_not_modified=5, **cheap)
    assert (
        checks.plan(
            "auto", has_validators=False, has_head_validators=True, page_length_churns=True
        ).value
        == "none"
    )
