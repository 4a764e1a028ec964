"""The SQLite store on a file it found empty (writing behind) answers "not here" for a
record it never wrote without reading the file, and is never wrong: another
connection's record is seen at once, a record added twice is added once. Real files, a
second connection to them as the other process (scrapy-fresh notify, forget)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_fresh.store import _file_keys as file_keys_module
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.store_contract import page
from tests.test_sqlite_row_memory import _page_reads, seed
from tests.test_writebehind_adversarial import NOW, behind, visited

if TYPE_CHECKING:
    from pathlib import Path


def test_a_first_crawl_reads_no_record_it_never_wrote(tmp_path: Path) -> None:
    crawl = behind(tmp_path / "state.sqlite")
    try:
        assert crawl.get(page(0).key) is None  # finds the file empty (one look)
        reads = _page_reads(crawl)
        assert crawl.get(page(1).key) is None
        assert crawl.get_many([page(2).key, page(3).key]) == {}
        assert crawl.add_many([page(1), page(2)]) == [page(1).key, page(2).key]
        assert reads == []  # not one record read from the file
        got = crawl.get(page(1).key)  # waiting: answered from memory
        assert got is not None
        assert got.url == page(1).url
        crawl.flush()
        assert crawl.get(page(2).key) is not None  # written: known to be in the file
        assert crawl.add_many([page(2)]) == []  # added once
    finally:
        crawl.close()


def test_another_connections_record_is_seen_at_once(tmp_path: Path) -> None:
    """No ``commit_secs`` wait: the next lookup after another connection's commit reads
    the file, and the add is refused (the other's record stays, with its fields)."""
    path = tmp_path / "state.sqlite"
    crawl = behind(path)
    other = SQLiteStore(path)
    try:
        assert crawl.get(page(1).key) is None
        other.put(visited(1, 3, NOW, etag='"op"'))
        got = crawl.get(page(1).key)
        assert got is not None
        assert got.visits == 3
        other.put(visited(2, 1, NOW))
        assert crawl.add_many([page(2), page(3)]) == [page(3).key]
        crawl.flush()
        stored = other.get(page(2).key)
        assert stored is not None
        assert stored.visits == 1  # not the crawl's blank record
    finally:
        crawl.close()
        other.close()


def test_a_file_with_records_is_read_as_before(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW))
    crawl = behind(path)
    try:
        reads = _page_reads(crawl)
        assert crawl.get(page(2).key) is None
        assert len(reads) == 1  # the file is read: it may hold page 2
        assert crawl._file_keys.keys is None
    finally:
        crawl.close()


def test_past_the_cap_every_lookup_reads_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_keys_module, "KEYS_MAX", 2)
    crawl = behind(tmp_path / "state.sqlite")
    try:
        assert crawl.get(page(0).key) is None
        assert crawl.add_many([page(1), page(2), page(3)]) == [page(n).key for n in (1, 2, 3)]
        crawl.flush()
        reads = _page_reads(crawl)
        assert crawl.get(page(4).key) is None
        assert len(reads) == 1
        assert crawl.get(page(3).key) is not None
    finally:
        crawl.close()


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "get",
                "get_many",
                "add",
                "put",
                "delete",
                "group",
                "flush",
                "reopen",
                "other_add",
                "other_put",
                "other_delete",
            ]
        ),
        st.integers(0, 4),
    ),
    max_size=25,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, cap=st.sampled_from([3, 1 << 18]))
@example(ops=[("get", 0), ("other_add", 1), ("add", 1), ("get", 1)], cap=1 << 18)
def test_no_record_in_the_file_is_ever_answered_absent(tmp_path_factory, ops, cap) -> None:
    """The crawl's store (writing behind, on a file it finds empty) and another
    connection interleaved at random. After every step: each record the file holds or
    the crawl has waiting is found by the crawl's ``get`` and ``get_many``; an add
    returns only keys no one had; and once it writes its rows out (which sees another
    connection's writes, as the rows kept in memory are), it answers what the file
    holds."""
    path = tmp_path_factory.mktemp("keys") / "state.sqlite"
    old_max = file_keys_module.KEYS_MAX
    file_keys_module.KEYS_MAX = cap
    crawl = behind(path)
    other = SQLiteStore(path)
    keys = [page(m).key for m in range(5)]
    try:
        for step, (op, n) in enumerate(ops):
            key = keys[n]
            if op == "get":
                crawl.get(key)
            elif op == "get_many":
                crawl.get_many([key, keys[(n + 1) % 5]])
            elif op == "add":
                # in the file, or waiting to be written (a row the crawl kept in memory
                # of a record another connection deleted since is no record: a get may
                # answer with it for commit_secs, add_many reads the file)
                had = other.get(key) is not None or bytes.fromhex(key) in crawl._waiting.pages
                added = crawl.add_many([page(n)])
                assert added == ([] if had else [key]), (step, op, n)
            elif op == "put":
                crawl.put(visited(n, step + 1, NOW + step))
            elif op == "delete":
                crawl.delete(key)
            elif op == "group":
                with crawl.grouped():
                    crawl.add_many([page(n), page((n + 1) % 5)])
                    crawl.counts()  # a read that writes the waiting rows into the group
            elif op == "flush":
                crawl.flush()
            elif op == "reopen":
                crawl.close()
                crawl = behind(path)
            elif op == "other_add":
                other.add_many([page(n)])
            elif op == "other_put":
                other.put(visited(n, 100 + step, NOW + step))
            else:
                other.delete(key)
            in_file = other.get_many(keys)
            waiting = {k for k in keys if bytes.fromhex(k) in crawl._waiting.pages}
            found = crawl.get_many(keys)
            for k in keys:
                if k in in_file or k in waiting:
                    assert crawl.get(k) is not None, (step, op, n, k)
                    assert k in found, (step, op, n, k)
        crawl.put(visited(9, 1, NOW))  # a write-out sees another connection's writes
        crawl.flush()
        in_file = other.get_many(keys)
        assert crawl.get_many(keys) == in_file
        for k in keys:
            assert crawl.get(k) == in_file.get(k)
    finally:
        crawl.close()
        other.close()
        file_keys_module.KEYS_MAX = old_max
