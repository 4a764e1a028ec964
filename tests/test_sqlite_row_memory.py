"""The SQLite store's rows in memory (writing behind): the rows it read and the rows it
wrote answer its next ``get`` without reading the file, and are never older than the
file once the store has written its waiting rows (another process's writes included).
Real files, a second connection to them as the other process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_fresh.store import _waiting as waiting_module
from scrapy_fresh.store import sqlite as sqlite_store
from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.store_contract import page
from tests.test_writebehind_adversarial import NOW, behind, visited

if TYPE_CHECKING:
    from pathlib import Path

    from scrapy_fresh.store.base import PageState


def seed(path: Path, *states: PageState) -> None:
    """Write ``states`` to the file at ``path`` before the crawl's store opens it."""
    with SQLiteStore(path) as setup:
        setup.put_many(states)


def in_file(path: Path, n: int) -> PageState:
    """Page ``n``'s record as another connection reads it from the file now."""
    with SQLiteStore(path) as other:
        stored = other.get(page(n).key)
    assert stored is not None
    return stored


def _page_reads(store: SQLiteStore) -> list[str]:
    """Start recording the statements of ``store`` that read records by key."""
    seen: list[str] = []
    conn = store._conn
    assert conn is not None

    def trace(sql: str) -> None:
        if sql.lstrip().upper().startswith("SELECT KEY, URL") and "WHERE key" in sql:
            seen.append(sql)

    conn.set_trace_callback(trace)
    return seen


def test_the_row_positions_the_waiting_rows_change_are_the_stores_columns() -> None:
    """_waiting patches rows by position: its positions must name the store's columns."""
    columns = sqlite_store._PAGE_COLUMNS
    assert columns.index("doc_id") == waiting_module._DOC_ID
    assert columns.index("status") == waiting_module._STATUS
    assert columns.index("in_flight_since") == waiting_module._SINCE


def test_a_record_written_out_is_read_back_from_memory(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    crawl = behind(path)
    crawl.add_many([page(1), page(2)])
    crawl.flush()  # the waiting rows go to the file
    reads = _page_reads(crawl)
    got = crawl.get(page(1).key)
    assert reads == []  # answered from the rows it wrote
    with SQLiteStore(path) as other:
        assert got == other.get(page(1).key)  # doc id and all, as the file holds it
    crawl.close()


def test_a_due_record_leased_is_read_from_memory_with_its_in_flight_mark(
    tmp_path: Path,
) -> None:
    """The scheduler reads due records in batches and marks them in flight; each visit
    then reads its record: no second read of the file, and the mark is in it."""
    path = tmp_path / "state.sqlite"
    seed(path, *(visited(n, 1, NOW - 7200) for n in range(5)))
    crawl = behind(path)
    due = crawl.due(NOW, 10)
    assert len(due) == 5
    crawl.mark_in_flight([s.key for s in due], NOW)
    reads = _page_reads(crawl)
    got = [crawl.get(s.key) for s in due]
    assert reads == []
    assert all(s is not None and s.status is Status.IN_FLIGHT for s in got)
    assert all(s is not None and s.in_flight_since == NOW for s in got)
    with SQLiteStore(path) as other:
        assert got == [other.get(s.key) for s in due]
    crawl.close()


def test_an_in_flight_mark_inside_a_group_reaches_the_rows_it_wrote(tmp_path: Path) -> None:
    """Inside a group (a visit) the waiting rows are written into the group's
    transaction by the in-flight mark's own write, which then marks one of them: once the
    group commits, the row in memory has the mark, as the file has."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW - 7200))
    crawl = behind(path)
    with crawl.grouped():
        record = crawl.get(page(1).key)
        assert record is not None
        record.next_due = NOW - 60
        crawl.put(record)  # waiting
        crawl.mark_in_flight([page(1).key], NOW)  # writes the waiting row, then marks it
    reads = _page_reads(crawl)
    got = crawl.get(page(1).key)
    assert reads == []
    assert got is not None
    assert (got.status, got.in_flight_since, got.next_due) == (Status.IN_FLIGHT, NOW, NOW - 60)
    with SQLiteStore(path) as other:
        assert got == other.get(page(1).key)
    crawl.close()


def test_another_processs_write_drops_the_rows_once_the_store_writes(tmp_path: Path) -> None:
    """The operator changes a record the crawl holds in memory: the crawl's next write of
    its waiting rows sees the file changed, and its next get reads the file."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW - 7200), visited(2, 1, NOW - 7200))
    crawl = behind(path)
    assert crawl.get(page(1).key) is not None  # kept in memory
    with SQLiteStore(path) as operator:
        operator.make_due([page(1).key], NOW)
        expected = operator.get(page(1).key)
    crawl.put(visited(2, 2, NOW))  # another record's visit, written out:
    crawl.flush()
    assert crawl.get(page(1).key) == expected
    crawl.close()


def test_another_processs_write_is_read_after_commit_secs_without_a_write(
    tmp_path: Path, monkeypatch
) -> None:
    """With nothing of its own to write, the crawl still reads the file again once
    ``commit_secs`` passed since it last looked (its clock moved by hand here)."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW - 7200))
    crawl = behind(path)
    assert crawl.get(page(1).key) is not None
    with SQLiteStore(path) as operator:
        operator.make_due([page(1).key], NOW)
        expected = operator.get(page(1).key)
    clock = [sqlite_store.time.monotonic() + 2 * crawl.commit_secs]
    monkeypatch.setattr(sqlite_store.time, "monotonic", lambda: clock[0])
    assert crawl.get(page(1).key) == expected
    crawl.close()


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "add",
                "get",
                "visit",
                "group",
                "lease",
                "other_visit",
                "other_due",
                "other_delete",
                "flush",
            ]
        ),
        st.integers(0, 3),
    ),
    max_size=25,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
@example(ops=[("add", 0), ("flush", 0), ("other_due", 0), ("lease", 0), ("get", 0)])
def test_memory_never_holds_an_older_row_than_the_file_after_a_write(
    tmp_path_factory, ops
) -> None:
    """The crawl's store (writing behind) and another process interleaved at random.
    After each step the crawl writes its waiting rows (a sentinel visit makes sure it
    has some): then every record it answers for is the file's, exactly."""
    path = tmp_path_factory.mktemp("memory") / "state.sqlite"
    crawl = behind(path)
    other = SQLiteStore(path)
    sentinel = 0

    def visit(store: SQLiteStore, n: int) -> None:
        current = store.get(page(n).key)
        if current is not None:
            current.visits += 1
            current.last_crawl = NOW + current.visits
            current.status = Status.IDLE
            store.put(current)

    try:
        for op, n in ops:
            key = page(n).key
            if op == "add":
                crawl.add_many([page(n)])
            elif op == "get":
                crawl.get(key)
            elif op == "visit":
                visit(crawl, n)
            elif op == "group":
                with crawl.grouped():
                    visit(crawl, n)
                    crawl.due(NOW + 10**6, 10)  # a read that writes the waiting rows
                    visit(crawl, (n + 1) % 4)
            elif op == "lease":
                crawl.mark_in_flight([s.key for s in crawl.due(NOW + 10**6, 3)], NOW)
            elif op == "other_visit":
                visit(other, n)
            elif op == "other_due":
                other.make_due([key], NOW)
            elif op == "other_delete":
                other.delete(key)
            else:
                crawl.flush()
            sentinel += 1
            crawl.put(visited(9, sentinel, NOW + sentinel))
            crawl.flush()
            for m in (0, 1, 2, 3, 9):  # 9: put without its doc id (the file keeps it)
                assert crawl.get(page(m).key) == other.get(page(m).key), (op, m)
    finally:
        crawl.close()
        other.close()


def test_a_record_another_process_added_first_is_not_kept_with_the_crawls_doc_id(
    tmp_path: Path,
) -> None:
    """The crawl finds a new URL (absent from the file, its row waits with the next doc
    id); another process adds the same URL before the row is written: the file keeps
    the other's doc id, so the crawl must not keep its own row as the file's."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW - 7200))
    crawl = behind(path)
    assert crawl.add_many([page(2)]) == [page(2).key]  # absent: a new record, waiting
    with SQLiteStore(path) as other:
        other.add_many([page(3), page(2)])  # page 2 gets the other's doc id
        theirs = other.get(page(2).key)
    crawl.flush()
    assert theirs is not None
    got = crawl.get(page(2).key)
    assert got is not None
    assert got.doc_id == theirs.doc_id
    with SQLiteStore(path) as after:
        assert got == after.get(page(2).key)
    crawl.close()


def test_a_record_put_after_the_stores_own_direct_write_is_written_as_given(
    tmp_path: Path,
) -> None:
    """A row kept in memory is not the base of a record put after this store changed the
    file directly (``release_in_flight`` here): the caller's record is written as given,
    as the reference model of the store contract says (found by its Hypothesis test)."""
    crawl = behind(tmp_path / "state.sqlite")
    crawl.add_many([page(0, status=Status.IN_FLIGHT)])
    crawl.release_in_flight(None)  # writes the new row out (kept), then changes the file
    crawl.put(page(0, status=Status.IN_FLIGHT))
    assert crawl.counts()[Status.IN_FLIGHT] == 1
    crawl.close()


def test_a_waiting_site_row_is_the_site_as_given_and_written_as_a_direct_write_writes_it(
    tmp_path: Path,
) -> None:
    """Writing behind, a site's ``checks`` wait as a copy of the dict given and are
    encoded when written: changing the caller's dict after ``put_site``, or the one a
    ``get_site`` returned, changes nothing stored; the file then holds the text a store
    writing at once writes."""
    from scrapy_fresh.store.base import SiteState

    site = SiteState("a.example", visits=3, changes=1, p_c=0.5, refresh_secs=60.0,
                     updated_at=NOW, checks={"not_modified": 2, "lying": 0})  # fmt: skip
    store = behind(tmp_path / "behind.sqlite")
    store.put_site(site)
    site.checks["not_modified"] = 99  # the visit's next counts: not given yet
    got = store.get_site("a.example")
    assert got is not None
    assert got.checks == {"not_modified": 2, "lying": 0}
    got.checks["lying"] = 1
    again = store.get_site("a.example")
    assert again is not None
    assert again.checks == {"not_modified": 2, "lying": 0}
    store.close()
    site.checks["not_modified"] = 2
    with SQLiteStore(tmp_path / "direct.sqlite") as direct:
        direct.put_site(site)

    def file_row(path: Path) -> tuple[object, ...]:
        import sqlite3

        with sqlite3.connect(path) as conn:
            row = conn.execute("SELECT * FROM sites WHERE host = 'a.example'").fetchone()
        assert row is not None
        return tuple(row)

    assert file_row(tmp_path / "behind.sqlite") == file_row(tmp_path / "direct.sqlite")
    with SQLiteStore(tmp_path / "behind.sqlite") as reader:
        assert reader.get_site("a.example") == SiteState(
            "a.example", 3, 1, 0.5, 60.0, NOW, {"not_modified": 2, "lying": 0}
        )
