"""URL state stores behind one protocol (:class:`~scrapy_fresh.store.base.StateStore`).

:class:`~scrapy_fresh.store.memory.MemoryStore` is the reference (and the store of
tests and simulations); :class:`~scrapy_fresh.store.sqlite.SQLiteStore` is the embedded
default. See :doc:`/topics/stores`.
"""

from __future__ import annotations

from scrapy_fresh.store.base import PageState, Provider, SiteState, StateStore, Status
from scrapy_fresh.store.memory import MemoryStore
from scrapy_fresh.store.sqlite import SQLiteStore

__all__ = [
    "MemoryStore",
    "PageState",
    "Provider",
    "SQLiteStore",
    "SiteState",
    "StateStore",
    "Status",
]
