"""A page whose file time is ahead of the server's clock: nginx answers with a
``Last-Modified`` later than its ``Date`` and an ETag made of that second
(``"<mtime hex>-<length hex>"``). RFC 9110, Section 8.8.2.2: a ``Last-Modified`` is
strong only when ``Date`` is at least a second later. Kept, such validators had nginx
answer 304 to an edit of the same size within that second: a new price never seen
(found by an adversarial run: file times ahead on NFS or in deploys that keep them).

Real nginx, the ``links`` spider of tests/realsite_runner.py, real SQLite.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import pytest

from tests.nginx_support import Nginx
from tests.realsite_support import ALL_DUE_OFFSET, outcomes_by_path, run_crawl, visits

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.realsite, pytest.mark.usefixtures("nginx_available")]

PAGE = "<html><head><title>Widget</title></head><body><p>Price: {} EUR, in stock</p></body></html>"


def write(path: Path, price: str, mtime: int) -> None:
    path.write_text(PAGE.format(price))
    os.utime(path, (mtime, mtime))


def test_same_size_edit_in_a_future_last_modified_second_is_seen(tmp_path: Path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    page = root / "p.html"
    future = int(time.time()) + 300  # mtime ahead of the server's Date
    write(page, "100", future)
    with Nginx(root, tmp_path / "nginx") as server:
        settings = {
            "ADDONS": {"scrapy_fresh.Addon": 0},
            "FRESH_SQLITE_PATH": str(tmp_path / "state.sqlite"),
            "FRESH_VISIT_LOG": str(tmp_path / "visits.jsonl"),
        }
        config = {"spider": "links", "start": [server.url("/p.html")], "no_follow": True,
                  "settings": settings}  # fmt: skip
        run_crawl(config, tmp_path / "c1").check()
        write(page, "900", future)  # same size, same (future) second: another edit
        server.new_requests()
        second = run_crawl({**config, "clock_offset": ALL_DUE_OFFSET}, tmp_path / "c2")
        second.check()
        log = server.new_requests()
    statuses = [r.status for r in log if r.path == "/p.html"]
    outcomes = outcomes_by_path(visits(tmp_path / "visits.jsonl"))["/p.html"]
    assert statuses == [200], (statuses, outcomes)
    assert outcomes[-1] == "changed", outcomes
    assert [i["text"] for i in second.items] == ["Price: 900 EUR, in stock"]
