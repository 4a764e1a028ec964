"""Attacks on the SQLite store's rows in memory (writing behind, commit 5be8855): the
rows it read and wrote answer its ``get`` and are the bases of its next writes. Real
files; a second :class:`SQLiteStore` on the same file is the other process."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.store import _waiting as waiting_module
from scrapy_fresh.store import sqlite as sqlite_store
from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.store_contract import page
from tests.test_sqlite_row_memory import in_file, seed
from tests.test_writebehind_adversarial import NOW, _CommitFails, behind, visited

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy_fresh.store.base import PageState

FAR = 4_000_000_000.0


def test_a_group_commit_does_not_hide_another_processs_write_from_a_row_still_waiting(
    tmp_path: Path,
) -> None:
    """A sighting of record 1 waits (its base read before the operator's ``due``). A
    group writes it into its transaction (merged with the operator's due time), then
    the record is given again (another sighting, made from the waiting row). Once the
    group commits, the row waits on; when it is written, the operator's due time must
    stay. The group's commit took the file's data_version as the one the waiting rows
    were read at, so the write did not merge and put the old due time back."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 3, NOW, next_due=FAR), visited(2, 1, NOW, next_due=FAR))
    crawl = behind(path)
    record = crawl.get(page(1).key)
    assert record is not None
    record.request = {"meta": {"seen": "once"}}
    crawl.put(record)  # waiting; base: the file's row before the operator's write
    with SQLiteStore(path) as operator:
        assert operator.make_due([page(1).key], NOW) == [page(1).key]
    with crawl.grouped():
        crawl.counts()  # a read that needs the file: the waiting rows go into the group
        again = crawl.get(page(1).key)
        assert again is not None
        again.request = {"meta": {"seen": "twice"}}
        crawl.put(again)  # given again inside the group: waits after it
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.request == {"meta": {"seen": "twice"}}
    assert stored.next_due == NOW  # the operator's due time stays
    assert crawl.get(page(1).key) == stored
    crawl.close()


def test_a_row_read_before_another_processs_write_is_not_a_base_after_a_group_commit(
    tmp_path: Path,
) -> None:
    """The crawl read record 1 (kept in memory) before the operator made it due; inside
    a group, after the waiting rows were written (the file's data_version then seen to
    have changed), the visit's sighting of record 1 takes the kept row as its base.
    After the group commits that write must still merge with the operator's."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 3, NOW, next_due=FAR), visited(2, 1, NOW, next_due=FAR))
    crawl = behind(path)
    assert crawl.get(page(1).key) is not None  # kept in memory
    assert crawl.get(page(2).key) is not None  # (checks the file's version: unchanged)
    with SQLiteStore(path) as operator:
        assert operator.make_due([page(1).key], NOW) == [page(1).key]
    with crawl.grouped():
        crawl.put(visited(2, 2, NOW + 10))  # another record's visit, waiting
        crawl.counts()  # written into the group's transaction
        record = crawl.get(page(1).key)
        assert record is not None
        record.request = {"meta": {"seen": "again"}}
        crawl.put(record)  # its base: the row kept in memory
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.request == {"meta": {"seen": "again"}}
    assert stored.next_due == NOW  # the operator's due time stays
    assert crawl.get(page(1).key) == stored
    crawl.close()


def test_after_a_group_writes_the_waiting_rows_get_reads_another_processs_write(
    tmp_path: Path,
) -> None:
    """Invariant 2 inside a group: once the waiting rows were written and the file was
    seen to have changed, a kept row of a record the other process wrote is not given."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 3, NOW, next_due=FAR), visited(2, 1, NOW, next_due=FAR))
    crawl = behind(path)
    assert crawl.get(page(1).key) is not None
    assert crawl.get(page(2).key) is not None
    with SQLiteStore(path) as operator:
        operator.make_due([page(1).key], NOW)
    with crawl.grouped():
        crawl.put(visited(2, 2, NOW + 10))
        crawl.counts()  # the waiting rows are written: the file changed since they were read
        got = crawl.get(page(1).key)
    assert got is not None
    assert got.next_due == NOW
    crawl.close()


def test_a_new_record_another_process_added_meanwhile_is_remembered_with_the_files_doc_id(
    tmp_path: Path,
) -> None:
    """The crawl adds record 5 (waiting, with the next doc id); another process adds the
    same record first. The waiting row's upsert keeps the file's doc id: the row kept in
    memory must be the file's, doc id included."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW))
    crawl = behind(path)
    assert crawl.add_many([page(5)]) == [page(5).key]  # waiting
    with SQLiteStore(path) as other:
        other.add_many([page(5)])
    crawl.flush()
    got = crawl.get(page(5).key)
    with SQLiteStore(path) as other:
        assert got == other.get(page(5).key)
    crawl.close()


def test_an_in_flight_mark_lost_with_its_groups_commit_is_not_kept_in_memory(
    tmp_path: Path,
) -> None:
    """A group marks record 1 in flight and its commit fails (a full disk): the file has
    the record idle, and so must every later get once the waiting rows were written."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW))
    crawl = _CommitFails(path, batch_size=10_000, commit_secs=3600.0)
    assert crawl.get(page(1).key) is not None  # kept in memory
    crawl.fail_next = True
    with pytest.raises(StoreError), crawl.grouped():  # the commit at its end fails
        crawl.mark_in_flight([page(1).key], NOW)
    crawl.put(visited(9, 1, NOW))  # a later write of waiting rows
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.status is Status.IDLE
    assert crawl.get(page(1).key) == stored
    crawl.close()


def test_a_row_read_inside_a_group_whose_commit_fails_is_not_kept(tmp_path: Path) -> None:
    """Inside a group the operator-style ``make_due`` changes record 1 and a ``get``
    reads it back from the open transaction; the commit fails: the row read is not the
    file's and must not answer later gets."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW, next_due=FAR))
    crawl = _CommitFails(path, batch_size=10_000, commit_secs=3600.0)
    crawl.fail_next = True
    with pytest.raises(StoreError), crawl.grouped():  # noqa: PT012  # the commit at its end fails
        crawl.make_due([page(1).key], NOW)
        assert crawl.get(page(1).key).next_due == NOW  # type: ignore[union-attr]
    crawl.put(visited(9, 1, NOW))
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.next_due == FAR
    assert crawl.get(page(1).key) == stored
    crawl.close()


def _stale_visit_setup(path: Path) -> SQLiteStore:
    """Records 1 and 2 in the file; the crawl keeps both in memory (its version checked
    once), then the operator makes record 1 due from another process."""
    seed(path, visited(1, 3, NOW, next_due=FAR), visited(2, 1, NOW, next_due=FAR))
    crawl = behind(path)
    assert crawl.get(page(1).key) is not None  # kept in memory
    assert crawl.get(page(2).key) is not None  # (the file's version checked: unchanged)
    with SQLiteStore(path) as operator:
        assert operator.make_due([page(1).key], NOW) == [page(1).key]
    return crawl


def test_a_record_got_from_memory_then_put_after_a_write_out_keeps_the_operators_due(
    tmp_path: Path,
) -> None:
    """The visit's get is answered from memory (the operator's write not yet seen: within
    commit_secs of the last check); another record's rows are written out before the
    visit's put. The put must still merge with the row its record was made from, not
    take the file's row as its base (which makes the old due time look like the crawl's
    change)."""
    path = tmp_path / "state.sqlite"
    crawl = _stale_visit_setup(path)
    record = crawl.get(page(1).key)
    assert record is not None  # from memory: the operator's write not seen yet (allowed)
    crawl.put(visited(2, 2, NOW + 10))
    crawl.flush()  # written out: the file's change is seen now
    record.request = {"meta": {"seen": "again"}}
    crawl.put(record)
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.request == {"meta": {"seen": "again"}}
    assert stored.next_due == NOW  # the operator's due time stays
    assert crawl.get(page(1).key) == stored
    crawl.close()


def test_a_record_got_from_memory_then_put_after_a_groups_write_keeps_the_operators_due(
    tmp_path: Path,
) -> None:
    """The same inside a group (one visit): get from memory, the waiting rows written
    into the group's transaction, then the put."""
    path = tmp_path / "state.sqlite"
    crawl = _stale_visit_setup(path)
    with crawl.grouped():
        record = crawl.get(page(1).key)
        assert record is not None
        crawl.put(visited(2, 2, NOW + 10))
        crawl.counts()  # the waiting rows go into the group's transaction
        record.request = {"meta": {"seen": "again"}}
        crawl.put(record)
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.request == {"meta": {"seen": "again"}}
    assert stored.next_due == NOW  # the operator's due time stays
    assert crawl.get(page(1).key) == stored
    crawl.close()


def test_a_record_this_store_deleted_and_puts_again_is_written(tmp_path: Path) -> None:
    """A kept row stale after the store's own direct write (a delete) is no proof that
    the record is in the file: the put after the delete adds it again."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW))
    crawl = behind(path)
    record = crawl.get(page(1).key)  # kept in memory
    assert record is not None
    assert crawl.delete(page(1).key)
    record.visits, record.last_crawl, record.doc_id = 2, NOW + 10, 0
    crawl.put(record)
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.visits == 2
    assert crawl.get(page(1).key) == stored
    crawl.close()


def test_a_stale_kept_row_does_not_let_a_regression_through(tmp_path: Path) -> None:
    """Another process visited record 1 after the crawl kept it; the crawl's put of an
    older visit (made from the kept row) is refused and counted, not written."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW), visited(2, 1, NOW))
    crawl = behind(path)
    assert crawl.get(page(1).key) is not None
    with SQLiteStore(path) as other:
        other.put(visited(1, 3, NOW + 30))
    crawl.put(visited(2, 2, NOW + 10))
    crawl.flush()  # the other process's write seen: the kept row is stale
    crawl.put(visited(1, 2, NOW + 20))
    crawl.flush()
    assert crawl.regressions_refused == 1
    stored = in_file(path, 1)
    assert stored.visits == 3
    assert crawl.get(page(1).key) == stored
    crawl.close()


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "add", "get", "get_many", "visit", "sighting", "group", "lease", "release",
                "make_due", "delete", "fail_group", "flush", "tick", "reopen", "split",
                "check", "check",
                "other_visit", "other_etag", "other_due", "other_delete", "other_add",
            ]
        ),
        st.integers(0, 4),
    ),
    max_size=40,
)  # fmt: skip


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, read_max=st.sampled_from([2, 8192]))
@example(
    ops=[("get", 1), ("get", 2), ("other_etag", 1), ("split", 1)], read_max=8192
)  # fmt: skip
@example(
    ops=[("get", 1), ("get", 2), ("other_etag", 1), ("sighting", 1), ("group", 3)],
    read_max=8192,
)  # fmt: skip
def test_memory_against_another_process_at_random(tmp_path_factory, ops, read_max) -> None:
    """The crawl's store (writing behind, commits that may fail) and another process,
    interleaved. The other process alone sets ``etag`` (an operator's column the crawl
    never changes): the file must keep the last it set. At each check (and at the end)
    the crawl writes its waiting rows (a sentinel visit): every record it answers for is
    the file's, and no record's visits went back."""
    path = tmp_path_factory.mktemp("adv16") / "state.sqlite"
    clock = [1_000_000.0]
    real_monotonic = sqlite_store.time.monotonic
    old_max = waiting_module.READ_MAX
    sqlite_store.time.monotonic = lambda: clock[0]  # type: ignore[assignment]
    waiting_module.READ_MAX = read_max
    other = SQLiteStore(path)
    other.put_many(visited(m, 1, NOW, next_due=FAR) for m in range(5))
    crawl = _CommitFails(path, batch_size=10_000, commit_secs=3600.0)
    etags: dict[int, str | None] = {}  # the operator's etag the file must hold
    visits: dict[int, int] = {}  # the most visits the file was seen with
    sentinel = 0
    keys = [page(m).key for m in (0, 1, 2, 3, 4, 9)]

    def write_out(store: SQLiteStore) -> None:
        """A visit of the sentinel record 9, written out at once."""
        nonlocal sentinel
        sentinel += 1
        store.put(visited(9, sentinel, NOW + sentinel))
        store.flush()

    def check(op: str) -> None:
        write_out(crawl)
        in_file = other.get_many(keys)
        for m, k in zip((0, 1, 2, 3, 4, 9), keys, strict=True):
            stored = in_file.get(k)
            assert crawl.get(k) == stored, (op, m)
            if m == 9 or stored is None:
                continue
            assert stored.etag == etags.get(m), (op, m)  # the operator's write stays
            assert stored.visits >= visits.get(m, 0), (op, m)
            visits[m] = stored.visits
        assert crawl.get_many(keys) == in_file

    def visit(store: SQLiteStore, n: int, *, sighting: bool = False, split: bool = False) -> None:
        # (not for a record whose own row waits: test_pre_existing_... below)
        split = split and bytes.fromhex(page(n).key) not in crawl._waiting.pages
        current = store.get(page(n).key)
        if split:  # another record's rows written out between the get and the put
            write_out(store)
        if current is not None:
            if sighting:
                current.request = {"seen": current.access_count + 1}
                current.access_count += 1
            else:
                current.visits += 1
                current.last_crawl = NOW + 100 * current.visits + n
                current.status = Status.IDLE
                current.in_flight_since = None
            store.put(current)

    try:
        for step, (op, n) in enumerate(ops):
            key = page(n).key
            if op == "add":
                crawl.add_many([page(n)])
            elif op == "get":
                crawl.get(key)
            elif op == "get_many":
                crawl.get_many([key, page((n + 1) % 5).key])
            elif op in ("visit", "sighting", "split"):
                visit(crawl, n, sighting=op != "visit", split=op == "split")
            elif op == "group":
                with crawl.grouped():
                    visit(crawl, n)
                    crawl.counts()  # a read that writes the waiting rows into the group
                    visit(crawl, n, sighting=True)
                    visit(crawl, (n + 1) % 5, sighting=True)
            elif op == "lease":
                crawl.mark_in_flight([s.key for s in crawl.due(NOW + 10**7, 3)], NOW)
            elif op == "release":
                crawl.release_in_flight()
            elif op == "make_due":
                crawl.make_due([key], NOW)
            elif op == "delete":
                if crawl.delete(key):
                    etags.pop(n, None)
                    visits.pop(n, None)
            elif op == "fail_group":
                crawl.fail_next = True
                with pytest.raises(StoreError), crawl.grouped():  # noqa: PT012  # (its commit)
                    visit(crawl, n, sighting=True)
                    crawl.mark_in_flight([key], NOW)
            elif op == "flush":
                crawl.flush()
            elif op == "check":
                check(op)
            elif op == "tick":
                clock[0] += 7200.0
            elif op == "reopen":
                crawl.close()
                crawl = _CommitFails(path, batch_size=10_000, commit_secs=3600.0)
            elif op == "other_visit":
                visit(other, n)
            elif op == "other_etag":
                current = other.get(key)
                if current is not None:
                    current.etag = f"op-{step}"
                    other.put(current)
                    etags[n] = current.etag
            elif op == "other_due":
                other.make_due([key], NOW)
            elif op == "other_delete":
                if other.delete(key):
                    etags.pop(n, None)
                    visits.pop(n, None)
            else:
                other.add_many([page(n)])
        check("end")
    finally:
        crawl.close()
        other.close()
        sqlite_store.time.monotonic = real_monotonic  # type: ignore[assignment]
        waiting_module.READ_MAX = old_max


def got_from_a_waiting_row_made_due(path: Path) -> tuple[SQLiteStore, PageState]:
    """Records 1 and 2 visited, not due, at ``path``; record 1 given again to a store
    writing behind (a sighting: its row waits, its base the file's row), then made due by
    another connection (``scrapy-fresh due``). Returns the store and record 1 as a
    ``get`` answers it then: from its waiting row."""
    seed(path, visited(1, 1, NOW, next_due=FAR), visited(2, 1, NOW, next_due=FAR))
    crawl = behind(path)
    record = crawl.get(page(1).key)
    assert record is not None
    record.request = {"seen": 1}
    crawl.put(record)  # waiting; base: the file's row
    with SQLiteStore(path) as other:
        assert other.make_due([page(1).key], NOW)
    record = crawl.get(page(1).key)  # the waiting row
    assert record is not None
    return crawl, record


def test_a_waiting_row_got_then_put_after_a_merging_write_out_keeps_the_merge(
    tmp_path: Path,
) -> None:
    """A record got from its own waiting row, whose write then merges another process's
    change, and put after that write: its base is the row it was got from (kept as a
    stale base, Waiting.merged_away), so the other process's column stays."""
    path = tmp_path / "state.sqlite"
    crawl, record = got_from_a_waiting_row_made_due(path)
    crawl.put(visited(9, 1, NOW))
    crawl.flush()  # record 1 written merged with the operator's due time
    record.request = {"seen": 2}
    crawl.put(record)
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.next_due == NOW
    assert stored.request == {"seen": 2}
    assert crawl.get(page(1).key) == stored
    crawl.close()


@pytest.mark.parametrize("given_again", ["in the group", "after the group"])
def test_a_waiting_row_got_then_put_after_a_merging_write_in_a_group_keeps_the_merge(
    tmp_path: Path, given_again: str
) -> None:
    """The same inside a group (one visit): the waiting rows are written merged into the
    group's transaction, and the record got from its waiting row before is given again
    inside the group or after its commit. The operator's due time stays either way."""
    path = tmp_path / "state.sqlite"
    crawl, record = got_from_a_waiting_row_made_due(path)
    record.request = {"seen": 2}
    with crawl.grouped():
        crawl.put(visited(2, 2, NOW + 10))
        crawl.counts()  # written merged into the group's transaction
        if given_again == "in the group":
            crawl.put(record)
    if given_again == "after the group":
        crawl.put(record)
    crawl.flush()
    stored = in_file(path, 1)
    assert (stored.next_due, stored.request) == (NOW, {"seen": 2})
    assert crawl.get(page(1).key) == stored
    crawl.close()


def test_a_visit_put_after_an_in_flight_mark_of_a_stale_kept_row_leaves_it_idle(
    tmp_path: Path,
) -> None:
    """The crawl got record 1 from memory; a write-out saw another process's write (the
    kept row no longer answers gets); the scheduler marks record 1 in flight; the visit
    (made from the record got) writes it idle. The mark must not survive the visit."""
    path = tmp_path / "state.sqlite"
    crawl = _stale_visit_setup(path)
    record = crawl.get(page(1).key)
    assert record is not None
    crawl.put(visited(2, 2, NOW + 10))
    crawl.flush()  # the other process's write seen
    crawl.mark_in_flight([page(1).key], NOW + 20)
    record.visits, record.last_crawl = 4, NOW + 30
    record.status, record.in_flight_since = Status.IDLE, None
    crawl.put(record)
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.visits == 4
    assert (stored.status, stored.in_flight_since) == (Status.IDLE, None)
    assert stored.next_due == NOW  # the operator's due time stays
    assert crawl.get(page(1).key) == stored
    crawl.close()
