"""The visit log never lags the store: beside an SQLite store, whose commits hold a
second's visits, the log's lines are written out just before each commit.

Checked from outside the crawl process's view, as ``scrapy-fresh changes`` or a killed
crawl would see it: after every step, every visit committed to the file has its line in
the log file.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scrapy_fresh.crawl.visitlog import VisitLog
from scrapy_fresh.outcome import Outcome
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.conftest import HARNESS_NOW, known_record

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.conftest import Harness

PAGES = 60


def _records() -> list[Any]:
    return [
        known_record(
            f"http://example.com/p{i}",
            last_crawl=HARNESS_NOW - 1000,
            next_due=HARNESS_NOW - 10,
            etag=f'"e{i}"',
        )
        for i in range(PAGES)
    ]


def _committed_visits(db: Path) -> set[str]:
    """Keys of the records the file holds as visited in this run (another connection)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT key FROM pages WHERE last_crawl = ?", (HARNESS_NOW,))
        return {blob.hex() for (blob,) in rows}


def _logged_visits(log: Path) -> set[str]:
    if not log.exists():
        return set()
    lines = log.read_text(encoding="utf-8").splitlines()
    return {e["key"] for e in map(json.loads, lines) if e["e"] == "visit"}


def _open_log(h: Harness, log: Path) -> VisitLog:
    visit_log = VisitLog(h.crawler, str(log))
    visit_log._opened()
    return visit_log


@pytest.mark.parametrize("commit_secs", [0, 1.0])
def test_every_committed_visit_is_in_the_log_file(
    harness: Callable[..., Harness], tmp_path: Path, commit_secs: float
) -> None:
    db, log = tmp_path / "state.sqlite", tmp_path / "visits.jsonl"
    h = harness(
        {
            "FRESH_STORE": "sqlite",
            "FRESH_SQLITE_PATH": str(db),
            "FRESH_COMMIT_SECS": commit_secs,
            "FRESH_VISIT_LOG": str(log),
        },
        records=_records(),
    )
    h.runtime.store.flush()
    visit_log = _open_log(h, log)
    assert visit_log._batched  # SQLite commits in batches: the lines wait for them
    rng = random.Random(7)
    requests = h.drain()
    assert len(requests) == PAGES
    for request in requests:
        h.record(request, Outcome.NOT_MODIFIED)
        if rng.random() < 0.2:
            h.runtime.store.flush()
        committed = _committed_visits(db)
        assert committed <= _logged_visits(log), "a committed visit is missing from the log"
    h.runtime.store.flush()
    assert len(_committed_visits(db)) == PAGES
    visit_log._closed("finished")
    assert _logged_visits(log) == {r.meta["fresh_key"] for r in requests}
    store = h.runtime.store
    assert isinstance(store, SQLiteStore)
    assert store.before_commit == []  # the closed log is no hook any more


def test_beside_a_store_without_commits_each_line_is_written_at_once(
    harness: Callable[..., Harness], tmp_path: Path
) -> None:
    log = tmp_path / "visits.jsonl"
    h = harness({"FRESH_VISIT_LOG": str(log)}, records=_records()[:5])  # the memory store
    visit_log = _open_log(h, log)
    assert not visit_log._batched
    for request in h.drain():
        h.record(request, Outcome.NOT_MODIFIED)
        assert request.meta["fresh_key"] in _logged_visits(log)
    visit_log._closed("finished")


def test_a_failing_commit_hook_does_not_stop_the_commit(
    harness: Callable[..., Harness], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "state.sqlite"
    h = harness({"FRESH_STORE": "sqlite", "FRESH_SQLITE_PATH": str(db)}, records=_records()[:3])

    def broken() -> None:
        raise OSError("disk gone")

    store = h.runtime.store
    assert isinstance(store, SQLiteStore)
    store.before_commit.append(broken)
    for request in h.drain():
        h.record(request, Outcome.NOT_MODIFIED)
    h.runtime.store.flush()
    assert len(_committed_visits(db)) == 3
    assert "before-commit hook failed" in caplog.text
