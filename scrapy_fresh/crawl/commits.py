"""Commit the store's writes once every few seconds, not once a visit
(:setting:`FRESH_COMMIT_SECS`, 0 by default: off).

A visit's record, its site and the new records its page yielded are one atomic write
whatever this setting says (the store's ``grouped()``); what the setting chooses is how
often those writes are made durable. One SQLite commit per visit costs about as much as
the rest of the store's work per visit (``bench/visit_commits.py``: the WAL append and
its locks are system calls, which instruction counts do not see). Committed once every
``FRESH_COMMIT_SECS`` seconds, the store writes many visits per commit; what a
``SIGKILL`` loses is then the visits of the last interval at most: their pages were
marked in flight before they were fetched, so the next run fetches them again (an
at-least-once record, never an older state written over a newer one). The store
commits by itself when the interval has passed at a write; this timer commits the
writes of a quiet spell, and the store's ``close()`` whatever is left.

The price, and why it is off by default: between two commits the crawl holds the
file's write lock, so another process that writes to the same file (``scrapy-fresh
block``, ``forget``, the notify server) waits for seconds, or fails after its timeout,
instead of milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twisted.internet import task

from scrapy_fresh.exceptions import StoreError

if TYPE_CHECKING:
    from scrapy_fresh.crawl.runtime import FreshRuntime

__all__ = ["CommitTimer"]


class CommitTimer:
    """Commits what the store holds every ``FRESH_COMMIT_SECS`` (started when the
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
