"""Write the crawl's records to the SQLite store once a second, not once a visit
(:setting:`FRESH_COMMIT_SECS`, 1 s by default; 0: a transaction per visit).

A visit's record, its site and the new records its page yielded are one write whatever
this setting says (the store's ``grouped()``). With ``FRESH_COMMIT_SECS`` above 0 the
store writes behind (:mod:`scrapy_fresh.store._waiting`): those rows wait in memory,
where the crawl reads them back, and go to the file in one short transaction once the
interval has passed since the oldest, before any call that needs the file (the
scheduler's due queries, leases, meta records), on this timer (the writes of a quiet
spell) and when the store closes. ``python bench/visit_commits.py`` measures the store's
work per visit both ways, and ``--writer`` how long another process's writes to the
same file (``scrapy-fresh block``, ``forget``, the notify server) wait beside each: the
file's write lock is held only while the rows are written, so they wait no longer than
beside a transaction per visit.

What a ``SIGKILL`` loses is the visits of the last interval at most: their pages were
marked in flight before they were fetched, so the next run fetches them again (an
at-least-once record, never an older state written over a newer one). Processes that
read the file while the crawl runs see it up to the interval late. The Redis store
writes each visit at once and ignores the setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.internet import task

from scrapy_fresh.exceptions import StoreError

if TYPE_CHECKING:
    from scrapy_fresh.crawl.runtime import FreshRuntime

__all__ = ["CommitTimer"]


class CommitTimer:
    """Writes what the store holds every ``FRESH_COMMIT_SECS`` (started when the
    scheduler opens, stopped before the store closes; nothing when the setting is 0)."""

    def __init__(self, runtime: FreshRuntime) -> None:
        self.runtime = runtime
        self._loop: task.LoopingCall | None = None

    def start(self) -> None:
        secs = self.runtime.config.commit_secs
        if secs > 0 and self._loop is None:
            self._loop = task.LoopingCall(self.commit)
            self._loop.start(secs, now=False)

    def commit(self) -> None:
        store = self.runtime.store_if_open
        if store is None:
            return
        try:
            store.flush()
        except StoreError as exc:  # the writes stay pending: committed at the next try
            self.runtime.store_error("commit its writes", exc)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
