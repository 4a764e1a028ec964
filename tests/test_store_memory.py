"""The memory store: the store contract, plus what is particular to the reference backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from scrapy_fresh.store.memory import MemoryStore
from tests.store_contract import StoreContract, page

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


class TestMemoryStore(StoreContract):
    thread_safe = False  # documented: one store, one thread

    @pytest.fixture
    def make_store(self) -> Iterator[Callable[[], MemoryStore]]:
        stores: list[MemoryStore] = []

        def make() -> MemoryStore:
            stores.append(MemoryStore())
            return stores[-1]

        yield make
        for store in stores:
            store.close()


def test_due_heap_stays_bounded() -> None:
    store = MemoryStore()
    store.put_many(page(n, next_due=float(n)) for n in range(100))
    for round_ in range(100):
        store.put_many(page(n, next_due=float(n + round_)) for n in range(100))
    assert len(store._heap) <= 2 * len(store) + 1024
    assert [s.next_due for s in store.due(1e9, 3)] == [99.0, 100.0, 101.0]


def test_repr() -> None:
    store = MemoryStore()
    store.put(page(1))
    assert repr(store) == "<MemoryStore 1 records>"
    store.close()
    assert repr(store) == "<MemoryStore closed>"
