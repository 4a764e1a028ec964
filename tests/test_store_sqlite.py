"""The SQLite store: the store contract, plus files, schema versions, pragmas and batching."""

from __future__ import annotations

import sqlite3
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import scrapy_fresh.store.sqlite as sqlite_module
from scrapy_fresh.exceptions import SchemaVersionError, StoreError
from scrapy_fresh.keys import url_key
from scrapy_fresh.store.base import PageState, SiteState, Status
from scrapy_fresh.store.sqlite import APPLICATION_ID, SCHEMA_VERSION, SQLiteStore
from tests.store_contract import StoreContract, full_page, page

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


class TestSQLiteStore(StoreContract):
    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Iterator[Callable[[], SQLiteStore]]:
        stores: list[SQLiteStore] = []

        def make() -> SQLiteStore:
            stores.append(SQLiteStore(tmp_path / f"store-{len(stores)}.sqlite"))
            return stores[-1]

        yield make
        for store in stores:
            store.close()


class TestBatchedSQLiteStore(StoreContract):
    """The contract holds whatever the batch size: reads see uncommitted writes."""

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Iterator[Callable[[], SQLiteStore]]:
        stores: list[SQLiteStore] = []

        def make() -> SQLiteStore:
            path = tmp_path / f"store-{len(stores)}.sqlite"
            stores.append(SQLiteStore(path, batch_size=7))
            return stores[-1]

        yield make
        for store in stores:
            store.close()


class TestWriteBehindSQLiteStore(StoreContract):
    """The contract holds writing behind (FRESH_COMMIT_SECS): the rows waiting in memory
    are read back, refused when they would move a record back, and written before any
    call that needs the file. ``batch_size`` 5 writes them now and then mid-sequence."""

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Iterator[Callable[[], SQLiteStore]]:
        stores: list[SQLiteStore] = []

        def make() -> SQLiteStore:
            path = tmp_path / f"store-{len(stores)}.sqlite"
            stores.append(SQLiteStore(path, batch_size=5, commit_secs=3600.0))
            return stores[-1]

        yield make
        for store in stores:
            store.close()


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


# -- files -----------------------------------------------------------------------------------


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "fresh.sqlite"  # parent directories are created
    with SQLiteStore(str(path)) as store:
        store.put_many([full_page(), page(1, next_due=3.0)])
        store.put_site(SiteState("example.com", visits=3, refresh_secs=60.0))
        store.mark_in_flight([page(1).key], 9.0)
        store.put(page(2))
        store.delete(page(2).key)
    with SQLiteStore(path) as store:
        got = store.get(full_page().key)
        expected = full_page()
        assert got is not None
        expected.doc_id = got.doc_id
        assert got == expected
        assert store.counts()[Status.IN_FLIGHT] == 1
        assert store.get_site("example.com") == SiteState(
            "example.com", visits=3, refresh_secs=60.0
        )
        store.put(page(3))
        assert store.get(page(3).key).doc_id == 4  # type: ignore[union-attr]  # 3 was used


def test_wal_mode_and_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path, synchronous="full", cache_size_kib=1024, pragmas={"mmap_size": 0}):
        conn = raw(path)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        conn.close()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"commit_secs": -1.0}, "commit_secs"),
        ({"commit_secs": float("nan")}, "commit_secs"),
        ({"synchronous": "sometimes"}, "synchronous"),
        ({"pragmas": {"x; DROP TABLE pages": 1}}, "PRAGMA name"),
        ({"pragmas": {"mmap_size": "1; DROP TABLE pages"}}, "number or a keyword"),
    ],
)
def test_bad_options(tmp_path: Path, kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SQLiteStore(tmp_path / "fresh.sqlite", **kwargs)  # type: ignore[arg-type]


def test_in_memory_database() -> None:
    with SQLiteStore(":memory:") as store:
        store.put(page(1))
        assert len(store) == 1


def test_directory_path(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"is a directory; expected a file path"):
        SQLiteStore(tmp_path)


def test_not_an_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are not the pages you are looking for\n" * 100)
    with pytest.raises(StoreError, match=r"notes.txt.*is not an SQLite database"):
        SQLiteStore(path)
    assert path.read_bytes().startswith(b"these are not")  # left alone


def test_another_applications_database(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = raw(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY)")
    conn.close()
    with pytest.raises(StoreError, match=r"not a scrapy_fresh store.*customers"):
        SQLiteStore(path)


def test_empty_file_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    path.touch()
    with SQLiteStore(path) as store:
        store.put(page(1))
    with SQLiteStore(path) as store:
        assert len(store) == 1


@pytest.mark.parametrize(
    ("version", "hint"),
    [(SCHEMA_VERSION + 1, "newer scrapy_fresh"), (0, "no migration")],
)
def test_schema_version_mismatch(tmp_path: Path, version: int, hint: str) -> None:
    path = tmp_path / "fresh.sqlite"
    SQLiteStore(path).close()
    conn = raw(path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    with pytest.raises(SchemaVersionError) as info:
        SQLiteStore(path)
    message = str(info.value)
    assert str(path) in message
    assert f"schema version {version}," in message
    assert f"reads version {SCHEMA_VERSION}" in message
    assert hint in message


def test_migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as store:
        store.put(page(1))
    monkeypatch.setattr(sqlite_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setattr(
        sqlite_module,
        "_MIGRATIONS",
        {SCHEMA_VERSION: ("CREATE TABLE migrated (x INTEGER)",)},
    )
    with SQLiteStore(path) as store:
        assert len(store) == 1
    conn = raw(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    assert conn.execute("SELECT count(*) FROM migrated").fetchone()[0] == 0
    conn.close()


# -- layout ------------------------------------------------------------------------------------


def test_columns_cover_every_field() -> None:
    columns = [c.replace("host_id", "host") for c in sqlite_module._PAGE_COLUMNS]
    assert columns == [f.name for f in fields(PageState)]


def test_compact_plain_columns(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as store:
        store.put(full_page())
        store.put(page(1, fingerprint=1 << 63))
    conn = raw(path)
    row = conn.execute(
        "SELECT typeof(key), length(key), typeof(url), typeof(host_id), typeof(status), "
        "typeof(request), typeof(past_updates), typeof(future_updates) FROM pages "
        "WHERE key = ?",
        (bytes.fromhex(full_page().key),),
    ).fetchone()
    assert row == ("blob", 20, "text", "integer", "integer", "text", "text", "text")
    assert conn.execute("SELECT min(fingerprint) FROM pages").fetchone()[0] == -(1 << 63)
    # Nothing but the 20-byte keys is a BLOB: no pickles anywhere.
    for table in ("pages", "hosts", "sites", "status_counts"):
        names = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        for name in names:
            kinds = {r[0] for r in conn.execute(f"SELECT DISTINCT typeof({name}) FROM {table}")}
            assert "blob" not in kinds or (table, name) == ("pages", "key")
    view = conn.execute("SELECT key, status, fingerprint FROM pages_view WHERE doc_id = 2")
    assert view.fetchone() == (page(1).key, "queued", "8000000000000000")
    conn.close()


def test_queries_use_the_indexes(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as store:
        store.put_many(page(n, next_due=float(n % 3)) for n in range(200))
    conn = raw(path)

    def plan(sql: str, *args: object) -> str:
        return " | ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}", args))

    due = plan(
        f"{sqlite_module._SELECT_PAGES} WHERE status IN (0, 1, 3) AND next_due <= ? "
        "ORDER BY next_due, key LIMIT ?",
        1.0,
        10,
    )
    assert "USING INDEX pages_due" in due
    assert "TEMP B-TREE" not in due  # no sort: the index gives the order
    assert "pages_due" in plan("SELECT min(next_due) FROM pages WHERE status IN (0, 1, 3)")
    assert "pages_in_flight" in plan(
        "UPDATE pages SET status = 0 WHERE status = 2 AND (in_flight_since < ? "
        "OR in_flight_since IS NULL)",
        1.0,
    )
    conn.close()


def test_status_counts_match_the_table(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as store:
        store.put_many(page(n, status=list(Status)[n % 4]) for n in range(100))
        store.put_many(page(n, status=Status.IDLE) for n in range(0, 100, 3))
        store.mark_in_flight([page(n).key for n in range(0, 100, 5)], 1.0)
        store.release_in_flight(older_than=2.0)
        for n in range(0, 100, 7):
            store.delete(page(n).key)
        counts = store.counts()
    conn = raw(path)
    codes = {v: k for k, v in sqlite_module.STATUS_CODES.items()}
    actual = dict.fromkeys(Status, 0)
    for code, n in conn.execute("SELECT status, count(*) FROM pages GROUP BY status"):
        actual[codes[code]] = n
    assert counts == actual
    conn.close()


# -- batching, transactions, concurrency ----------------------------------------------------


def committed(path: Path) -> int:
    conn = raw(path)
    try:
        n: int = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
        return n
    finally:
        conn.close()


def test_batch_size_and_flush(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path, batch_size=10) as store:
        for n in range(9):
            store.put(page(n))
        assert store.pending == 9
        assert len(store) == 9  # this connection sees its own writes
        assert committed(path) == 0  # others do not, yet
        store.put(page(9))  # the 10th record commits the batch
        assert store.pending == 0
        assert committed(path) == 10
        store.put(page(10))
        store.flush()
        assert committed(path) == 11
        store.put(page(11))
    assert committed(path) == 12  # close commits


def test_commit_secs_writes_behind_in_short_transactions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FRESH_COMMIT_SECS: a crawl's store writes once a second, however many visits. The
    writes wait in memory, readable to this store, and go to the file in one short
    transaction once the interval has passed since the oldest, before a call that needs
    the file, on flush and on close; meanwhile nothing holds the file's write lock."""
    import scrapy_fresh.store._waiting as waiting_module

    clock = [100.0]
    monkeypatch.setattr(waiting_module.time, "monotonic", lambda: clock[0])
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path, batch_size=1000, commit_secs=1.0) as store:
        for n in range(5):
            with store.grouped():  # a visit: its record and its site
                store.put(page(n))
                store.put_site(SiteState("example.com", visits=n + 1))
            clock[0] += 0.1
        assert committed(path) == 0
        assert store.pending == 6  # five records, one site
        got = store.get(page(3).key)
        assert got is not None
        assert got.doc_id > 0
        site = store.get_site("example.com")
        assert site is not None
        assert site.visits == 5
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process writes at once: no lock held
        other.execute("INSERT OR REPLACE INTO meta VALUES ('x', 'y', '{}')")
        other.execute("COMMIT")
        other.close()
        clock[0] += 0.6  # 1.1 s since the oldest waiting write
        store.put(page(5))
        assert committed(path) == 6
        assert store.pending == 0
        store.put(page(6))  # waits from now on
        clock[0] += 0.5
        store.put(page(7))
        assert committed(path) == 6
        assert len(store) == 8  # a call that reads the file writes what waits first
        assert committed(path) == 8
        store.put(page(8))
        store.flush()  # the crawl's timer: the writes of a quiet spell
        assert committed(path) == 9
        store.put(page(9))
    assert committed(path) == 10  # close writes them


def test_writing_behind_refuses_regressions_when_given(tmp_path: Path) -> None:
    """A write that would move a record back is refused when it is given, against the
    waiting row or the file's, and counted; the newer state is what is read and written."""
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path, batch_size=1000, commit_secs=60.0) as store:
        store.put(page(1, visits=2, last_crawl=50.0))
        store.put(page(1, visits=1, last_crawl=40.0))  # older than the waiting row
        assert store.regressions_refused == 1
        got = store.get(page(1).key)
        assert got is not None
        assert got.visits == 2
        store.flush()
        store.put(page(1, visits=2, last_crawl=45.0))  # older than the file's row
        assert store.regressions_refused == 2
        store.put_many([page(2, visits=3, last_crawl=9.0), page(2, visits=2, last_crawl=8.0)])
        assert store.regressions_refused == 3
    with SQLiteStore(path) as store:
        first, second = store.get(page(1).key), store.get(page(2).key)
        assert first is not None
        assert second is not None
        assert (first.visits, first.last_crawl, second.visits) == (2, 50.0, 3)


def test_writing_behind_gives_doc_ids_as_the_file_would(tmp_path: Path) -> None:
    """New records get the next doc ids when given; if another process added records
    meanwhile, the waiting ones get the next ones again when written (no collision)."""
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as store:
        store.put(page(1))
    with SQLiteStore(path, batch_size=1000, commit_secs=60.0) as store:
        assert store.add_many([page(2), page(1), page(3)]) == [page(2).key, page(3).key]
        ids = [store.get(page(n).key).doc_id for n in (1, 2, 3)]  # type: ignore[union-attr]
        assert ids == [1, 2, 3]
        with SQLiteStore(path) as other:  # another process adds a record
            other.put(page(4))
        store.flush()
    with SQLiteStore(path) as store:
        ids = sorted(store.get(page(n).key).doc_id for n in (1, 2, 3, 4))  # type: ignore[union-attr]
        assert ids == [1, 2, 3, 4]
        assert store.get(page(4).key).doc_id == 2  # type: ignore[union-attr]


def test_a_failed_write_behind_keeps_the_rows(tmp_path: Path) -> None:
    """Rows that could not be written (the lock held elsewhere) stay waiting and are
    written by the next try: nothing is lost."""
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path, batch_size=1000, commit_secs=60.0, timeout=0.05) as store:
        store.put(page(1))
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="write lock"):
            store.flush()
        assert store.pending == 1
        blocker.execute("ROLLBACK")
        blocker.close()
        store.flush()
        assert committed(path) == 1


def test_default_commits_every_call(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as store:
        store.put(page(1))
        assert committed(path) == 1
        store.mark_in_flight([page(1).key], 1.0)
        store.put_site(SiteState("example.com"))
        assert store.pending == 0


def test_failed_call_keeps_earlier_pending_writes(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path, batch_size=100) as store:
        store.put(page(1))
        store.put(page(2, doc_id=50))
        with pytest.raises(StoreError, match="doc_id"):
            store.put_many([page(3), page(4, doc_id=50)])
        assert store.pending == 2
        store.put_many([page(5)])
    with SQLiteStore(path) as store:
        assert sorted(s.url for s in store.iterate()) == sorted(page(n).url for n in (1, 2, 5))


def test_failed_call_in_a_new_transaction_is_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as store:
        store.put(page(1, doc_id=5))
        bad = PageState(key=page(3).key, url=page(3).url, host="new-host.example")
        with pytest.raises(StoreError, match="doc_id"):
            store.put_many([bad, page(4, doc_id=5)])
        store.put(bad.__class__(key=bad.key, url=bad.url, host="new-host.example"))
        got = store.get(bad.key)
        assert got is not None
        assert got.host == "new-host.example"  # the host cache forgot the undone insert
    assert committed(path) == 2


def test_readers_see_committed_writes(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as writer, SQLiteStore(path) as reader:
        writer.put_many([page(1), page(2)])
        assert len(reader) == 2
        assert reader.get(page(1).key) is not None
        writer.put(page(1, next_due=7.0, host="other.example"))
        got = reader.get(page(1).key)
        assert got is not None
        assert (got.next_due, got.host) == (7.0, "other.example")


def test_second_writer_gets_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path, batch_size=100) as first:
        first.put(page(1))  # holds the write lock until it commits
        second = SQLiteStore(path, timeout=0.05)
        with pytest.raises(StoreError, match="write lock"):
            second.put(page(2))
        first.flush()
        second.put(page(2))
        second.close()


def test_repr(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "fresh.sqlite")
    assert "0 pending" in repr(store)
    store.close()
    assert "closed" in repr(store)


def test_damaged_file(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as store:
        store.put_many(page(n, etag="x" * 200) for n in range(3000))
    data = bytearray(path.read_bytes())
    for offset in range(8192, len(data), 4096):  # scribble over every page but the first two
        data[offset + 10 : offset + 60] = b"\xff" * 50
    path.write_bytes(bytes(data))
    stores = []
    with pytest.raises(StoreError, match=r"fresh.sqlite.*malformed"):  # noqa: PT012
        stores.append(SQLiteStore(path))  # may already fail here
        list(stores[0].iterate())
    for store in stores:
        store.close()


def test_version_1_file_is_migrated_and_keeps_its_sites(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    with SQLiteStore(path) as store:
        store.put(page(1))
        store.put_site(SiteState("example.com", visits=4, p_c=0.5))
    conn = raw(path)  # make it a version 1 file: sites without the checks column
    conn.execute("DROP VIEW pages_view")  # (and pages without the columns of versions 3, 5)
    conn.execute("DROP TABLE blocked_hosts")  # (nor the table of version 4)
    conn.execute("DROP TABLE meta")  # (nor the table of version 6)
    for table, column in (
        ("sites", "checks"),
        ("pages", "field_hashes"),
        ("pages", "content_hash"),
        ("pages", "kept_items"),
    ):
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        site = store.get_site("example.com")
        assert site == SiteState("example.com", visits=4, p_c=0.5)
        site.checks = {"ignored": 2}
        store.put_site(site)
        assert store.get_site("example.com").checks == {"ignored": 2}  # type: ignore[union-attr]
        assert len(store) == 1
        assert store.block_host("example.com", 1.0)  # version 4's table is there
    conn = raw(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    conn.close()


#: A version 2 store written by scrapy_fresh before version 3 (the commit before it, from
#: /work/main at 3e82b7c): two pages of shop.example (one visited) and its site record.
V2_FILE = Path(__file__).parent / "data" / "store-v2.sqlite"


def test_version_2_file_written_by_the_previous_code_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    path.write_bytes(V2_FILE.read_bytes())
    conn = raw(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    conn.close()
    key = url_key("https://shop.example/p/1")
    with SQLiteStore(path) as store:
        got = store.get(key)
        assert got is not None
        assert (got.visits, got.last_crawl, got.fingerprint, got.etag, got.content_length) == (
            3, 1_700_086_400.5, (1 << 64) - 1, 'W/"v1"', 5120
        )  # fmt: skip
        assert got.request == {"callback": "parse_product", "priority": 2}
        assert (got.field_hashes, got.content_hash) == ([], None)  # nothing known yet
        assert len(store) == 2
        assert store.get_site("shop.example").checks == {"not_modified": 2}  # type: ignore[union-attr]
        got.visits, got.last_crawl = 4, 1_700_100_000.0
        got.field_hashes = [{"price": (1 << 64) - 1, "stock": 5}]
        got.content_hash = 1 << 63
        store.put(got)
    with SQLiteStore(path) as store:  # and the new fields are kept
        again = store.get(key)
        assert again == got
        assert [s.url for s in store.due(1_700_100_000.0, 10)] == ["https://shop.example/p/2"]
    conn = raw(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    assert conn.execute("SELECT count(*) FROM blocked_hosts").fetchone() == (0,)
    view = conn.execute("SELECT field_hashes, content_hash FROM pages_view WHERE visits = 4")
    assert view.fetchone() == ('[{"price":18446744073709551615,"stock":5}]', "8000000000000000")
    conn.close()


#: A version 3 store written by scrapy_fresh before version 4 (/work/main at f5ba9bc):
#: one visited page of shop.example, due at 1_700_086_400, and its site record.
V3_FILE = Path(__file__).parent / "data" / "store-v3.sqlite"


def test_version_3_file_gets_the_blocked_hosts_table(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    path.write_bytes(V3_FILE.read_bytes())
    key = url_key("https://shop.example/p/1")
    with SQLiteStore(path) as store:
        assert store.blocked_hosts() == {}
        assert store.block_host("shop.example", 5.0) is True
        assert store.make_due([key], 1_700_000_100.0) == [key]
        got = store.get(key)
        assert got is not None
        assert (got.visits, got.next_due) == (2, 1_700_000_100.0)
    with SQLiteStore(path) as store:
        assert store.blocked_hosts() == {"shop.example": 5.0}


#: Another version 3 store (the same code): two pages of shop.example (one visited,
#: with field hashes) and its site.
V3_ITEMS_FILE = Path(__file__).parent / "data" / "store-v3-items.sqlite"


def test_version_3_file_is_migrated_and_keeps_items_afterwards(tmp_path: Path) -> None:
    path = tmp_path / "fresh.sqlite"
    path.write_bytes(V3_ITEMS_FILE.read_bytes())
    conn = raw(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 3
    conn.close()
    key = url_key("https://shop.example/p/1")
    with SQLiteStore(path) as store:
        got = store.get(key)
        assert got is not None
        assert (got.visits, got.field_hashes, got.kept_items) == (
            2,
            [{"price": 7, "name": 9}],
            None,
        )
        got.visits, got.last_crawl = 3, 1_700_100_000.0
        got.kept_items = b"x\x9c\x00\xff compressed"
        store.put(got)
    with SQLiteStore(path) as store:
        again = store.get(key)
        assert again == got
        assert len(store) == 2
    conn = raw(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
