"""FRESH_COMMIT_SECS: the crawl's timer commits what a quiet spell left pending
(scrapy_fresh.crawl.commits)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from scrapy_fresh.crawl.commits import CommitTimer
from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.store.base import PageState
from scrapy_fresh.store.sqlite import SQLiteStore


def _runtime(store: Any, secs: float = 1.0) -> Any:
    errors: list[str] = []
    return SimpleNamespace(
        config=SimpleNamespace(commit_secs=secs),
        store_if_open=store,
        store_error=lambda action, exc, url="": errors.append(f"{action}: {exc}"),
        errors=errors,
    )


def _committed(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        n: int = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    return n


def test_the_timer_commits_what_is_pending(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SQLiteStore(path, batch_size=1000, commit_secs=1.0)
    try:
        store.put(PageState("a" * 40, "http://x.test/a"))
        assert _committed(path) == 0
        runtime = _runtime(store)
        CommitTimer(runtime).commit()
        assert _committed(path) == 1
        assert runtime.errors == []
    finally:
        store.close()


def test_a_failed_commit_is_reported_and_tried_again() -> None:
    class Failing:
        fail = True

        def flush(self) -> None:
            if self.fail:
                raise StoreError("disk full")

    runtime = _runtime(Failing())
    timer = CommitTimer(runtime)
    timer.commit()
    assert runtime.errors == ["commit its writes: disk full"]
    runtime.store_if_open.fail = False
    timer.commit()
    assert len(runtime.errors) == 1


def test_no_timer_without_an_interval_or_a_store() -> None:
    timer = CommitTimer(_runtime(None, secs=0.0))
    timer.start()
    assert timer._loop is None
    timer.commit()  # the store never opened: nothing to do
    timer.stop()
