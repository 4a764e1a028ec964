"""A crawl of a real site killed with SIGKILL, writing behind (FRESH_COMMIT_SECS, 1 s by
default): the next run reaches every page the first did not record, fetches none that it
did record again, and no record is written over by an older state.

nginx serves a generated site of linked pages; the spider (tests/realsite_runner.py's
``links``) is a plain ``scrapy.Spider``. The first run is killed once nginx has answered
a third of the pages, when some visits are in the file and the last second's still wait
in memory. A page's new links and its visit are written in one transaction, so the file
never holds a visit whose links are missing.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.nginx_support import Nginx, make_linked_site
from tests.realsite_support import got, run_crawl, start_crawl

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]

PAGES = 300


def test_sigkill_writing_behind_loses_no_page_and_fetches_none_twice(tmp_path: Path) -> None:
    paths = make_linked_site(tmp_path / "site", PAGES, 6, 2000)
    db = tmp_path / "state.sqlite"
    with Nginx(tmp_path / "site", tmp_path / "nginx") as server:
        config = {
            "spider": "links",
            "start": [server.url("/index.html")],
            "settings": {
                "ADDONS": {"scrapy_fresh.Addon": 0},
                "FRESH_SQLITE_PATH": str(db),
                "CONCURRENT_REQUESTS": 4,
                "DOWNLOAD_DELAY": 0.01,  # long enough to be killed half way, at any speed
            },
        }
        first = start_crawl(config, tmp_path / "first")
        deadline = time.monotonic() + 60
        while len(server.requests()) < PAGES // 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        first.process.send_signal(signal.SIGKILL)
        assert first.finish(timeout=30).returncode == -signal.SIGKILL
        before = got(server.new_requests())
        with SQLiteStore(db) as store:
            recorded = {s.url.split("/", 3)[3] for s in store.iterate() if s.last_crawl}
        assert 0 < len(recorded) < PAGES  # killed half way
        second = run_crawl(config, tmp_path / "second")
        second.check()
        after = got(server.new_requests())
    assert {p.lstrip("/") for p in after}.isdisjoint(recorded - {"index.html"})
    assert set(before) | set(after) == set(paths)  # every page, in one run or the other
    assert second.stat("fresh/store/regressions_refused") == 0
    with SQLiteStore(db) as store:
        final = list(store.iterate())
    assert len(final) == len(paths)
    assert all(s.status is Status.IDLE and s.last_crawl is not None for s in final)
