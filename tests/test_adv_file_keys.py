"""Adversarial tests of the SQLite store's key set on a file it found empty
(:mod:`scrapy_fresh.store._file_keys`) and of its waiting site checks: real SQLite
files, a second real connection (or a ``scrapy-fresh`` process) as the other process;
the only stand-in is _CommitFails (a COMMIT that fails as on a full disk)."""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.store.base import SiteState
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.store_contract import page
from tests.test_sqlite_row_memory import seed
from tests.test_writebehind_adversarial import NOW, _CommitFails, behind, operator, visited

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@contextmanager
def found_empty(path: Path) -> Iterator[SQLiteStore]:
    """A crawl's store (writing behind) on a new file, once its first lookup found the
    file empty: its key set answers from then on (else an attack proves nothing)."""
    with behind(path) as crawl:
        assert crawl.get(page(0).key) is None
        assert crawl._file_keys.keys is not None
        yield crawl


# --------------------------------------------------------------------------------------
# A. The file found empty inside a group's own transaction that deleted the last record;
#    the group's commit fails (rolled back): the record is back in the file.
# --------------------------------------------------------------------------------------


def test_a_delete_rolled_back_after_the_file_was_found_empty_hides_the_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 3, NOW))  # written by an earlier run: never given by this store
    crawl = _CommitFails(path, batch_size=10_000, commit_secs=3600.0)
    try:
        crawl.fail_next = True
        with pytest.raises(StoreError), crawl.grouped():  # noqa: PT012
            assert crawl.delete(page(1).key)  # in the group's open transaction
            # first lookup: inside that transaction the file holds no record
            assert crawl.get(page(2).key) is None
        # the commit failed and was rolled back: record 1 is in the file again
        with SQLiteStore(path) as other:
            assert other.get(page(1).key) is not None
        got = crawl.get(page(1).key)
        assert got is not None, "get answers None for a record the file holds"
        assert page(1).key in crawl.get_many([page(1).key])
        assert crawl.add_many([page(1)]) == [], "add_many reports as added a key in the file"
    finally:
        crawl.close()


def test_a_delete_rolled_back_then_written_out_does_not_clobber(tmp_path: Path) -> None:
    """Consequence of A in a crawl: the scheduler's lookup says "new", add_many takes the
    record as new (a fresh doc id), and the write-out replaces the earlier run's
    record by a blank one or keeps a doc id the file does not hold."""
    path = tmp_path / "state.sqlite"
    seed(path, page(1))  # a queued (never visited) record of an earlier run: doc id 1
    crawl = _CommitFails(path, batch_size=10_000, commit_secs=3600.0)
    try:
        crawl.fail_next = True
        with pytest.raises(StoreError), crawl.grouped():  # noqa: PT012
            crawl.delete(page(1).key)
            crawl.get(page(2).key)
        added = crawl.add_many([page(1, first_seen=NOW)])
        crawl.flush()
        with SQLiteStore(path) as other:
            stored = other.get(page(1).key)
        assert stored is not None
        assert added == []
        assert crawl.get(page(1).key) == stored
    finally:
        crawl.close()


# --------------------------------------------------------------------------------------
# B. Another connection commits between the absence answer (PRAGMA data_version in
#    _absent_from_file) and the data_version _reads_from takes for the write-out.
#    The commit is timed with a trace callback on the crawl's connection: it fires when
#    _encode looks up the host, after the absence check. The other connection is real.
# --------------------------------------------------------------------------------------


def test_writeout_after_race_keeps_the_files_doc_id(tmp_path: Path) -> None:
    """Another connection adds the record between the absence answer and the data_version
    _reads_from takes. (That add_many then reports it added is the same race as a commit
    just after a SELECT of the file would be: not asserted.) Once written out, get must answer the
    file's row: the write-out must see the other commit and not keep its own row (doc id
    2) as the file's (the file kept doc id 1)."""
    path = tmp_path / "state.sqlite"
    crawl = behind(path)
    other = SQLiteStore(path)
    try:
        assert crawl.get(page(0).key) is None
        assert crawl._file_keys.keys is not None  # found empty: the set answers
        fired: list[str] = []

        def trace(sql: str) -> None:
            if not fired and sql.startswith("SELECT host_id FROM hosts"):
                fired.append(sql)
                other.add_many([page(1)])

        assert crawl._conn is not None
        crawl._conn.set_trace_callback(trace)
        crawl.add_many([page(1)])
        crawl._conn.set_trace_callback(None)
        crawl.flush()
        stored = other.get(page(1).key)
        got = crawl.get(page(1).key)
        assert got is not None
        assert stored is not None
        assert got.doc_id == stored.doc_id, (got.doc_id, stored.doc_id)
    finally:
        crawl.close()
        other.close()


# --------------------------------------------------------------------------------------
# C. Claims that should hold: other connections, processes, checkpoints, groups, cap.
# --------------------------------------------------------------------------------------


def test_a_second_store_in_the_same_process_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with found_empty(path) as a, found_empty(path) as b:
        assert a.add_many([page(1)]) == [page(1).key]
        assert b.add_many([page(2)]) == [page(2).key]
        a.flush()
        assert b.get(page(1).key) is not None
        assert b.add_many([page(1)]) == []
        b.flush()
        assert a.get(page(2).key) is not None
        assert a.get_many([page(2).key, page(1).key]).keys() == {page(1).key, page(2).key}


def test_a_checkpoint_and_truncate_after_another_write_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with found_empty(path) as crawl:
        raw = sqlite3.connect(path, isolation_level=None)
        with SQLiteStore(path) as other:
            other.add_many([page(1)])
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        raw.close()
        assert crawl.get(page(1).key) is not None


def test_another_process_notify_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with found_empty(path) as crawl:
        done = operator("notify", page(1).url, "--sqlite-path", str(path))
        assert done.returncode == 0, done.stderr
        assert crawl.get(page(1).key) is not None
        assert crawl.add_many([page(1)]) == []


def test_another_process_forget_then_readd(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with found_empty(path) as crawl:
        crawl.add_many([page(1), page(2)])
        crawl.flush()
        done = operator("forget", page(1).url, "--sqlite-path", str(path))
        assert done.returncode == 0, done.stderr
        crawl.put(visited(9, 1, NOW))  # a write-out sees the other process's write
        crawl.flush()
        assert crawl.get_many([page(1).key, page(2).key]).keys() == {page(2).key}
        assert crawl.add_many([page(1)]) == [page(1).key]


def test_found_empty_inside_a_group_whose_rows_wait(tmp_path: Path) -> None:
    """Rows wait, a group writes them into its transaction, the first lookup is there;
    the commit fails: the rows wait still and are found, and written later."""
    path = tmp_path / "state.sqlite"
    with _CommitFails(path, batch_size=10_000, commit_secs=3600.0) as crawl:
        crawl.add_many([page(1)])
        crawl.fail_next = True
        with pytest.raises(StoreError), crawl.grouped():  # noqa: PT012
            crawl.counts()  # waiting rows into the group's transaction
            assert crawl.get(page(2).key) is None  # first lookup
        assert crawl.get(page(1).key) is not None
        crawl.flush()
        assert crawl.get(page(1).key) is not None
        with SQLiteStore(path) as other:
            assert other.get(page(1).key) is not None


def test_a_rolled_back_add_then_readd(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with _CommitFails(path, batch_size=10_000, commit_secs=3600.0) as crawl:
        assert crawl.get(page(0).key) is None
        assert crawl._file_keys.keys is not None
        crawl.fail_next = True
        with pytest.raises(StoreError), crawl.grouped():  # noqa: PT012
            crawl.add_many([page(1)])
            crawl.counts()
        assert crawl.get(page(1).key) is not None  # still waiting
        crawl.flush()
        assert crawl.add_many([page(1)]) == []


def test_reopen_after_own_writes(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with found_empty(path) as crawl:
        crawl.add_many([page(1)])
    with behind(path) as crawl:
        assert crawl.get(page(1).key) is not None
        assert crawl._file_keys.keys is None  # the file holds a record: no set


def test_own_delete_then_readd(tmp_path: Path) -> None:
    with found_empty(tmp_path / "state.sqlite") as crawl:
        crawl.add_many([page(1)])
        crawl.flush()
        assert crawl.delete(page(1).key)
        assert crawl.get(page(1).key) is None
        assert crawl.add_many([page(1)]) == [page(1).key]
        crawl.flush()
        assert crawl.get(page(1).key) is not None


def test_mark_release_make_due_keep_records_found(tmp_path: Path) -> None:
    with found_empty(tmp_path / "state.sqlite") as crawl:
        crawl.add_many([page(1), page(2)])
        crawl.flush()
        crawl.mark_in_flight([page(1).key], NOW)
        assert crawl.release_in_flight() == 1
        crawl.make_due([page(2).key], NOW)
        assert crawl.get_many([page(1).key, page(2).key]).keys() == {page(1).key, page(2).key}


def test_a_new_record_naming_its_doc_id_is_found(tmp_path: Path) -> None:
    """Records that name their doc id are written directly (only the file can check
    it), not behind: their keys are given all the same."""
    with found_empty(tmp_path / "state.sqlite") as crawl:
        crawl.put(page(1, doc_id=77))
        crawl.add_many([page(2, doc_id=78)])
        assert crawl.get(page(1).key) is not None
        assert crawl.get(page(2).key) is not None


# --------------------------------------------------------------------------------------
# D. HostChecks.counts, saved as a site's checks
# --------------------------------------------------------------------------------------


def test_host_checks_counts_of_a_subclass_are_the_counters() -> None:
    """counts() is saved as the site's checks (str -> int). A subclass (or an instance
    given an attribute) must still give the counters alone, as fields() did."""
    from scrapy_fresh.store._checks import check_site
    from scrapy_fresh.validators import HostChecks

    @dataclasses.dataclass
    class Named(HostChecks):
        label: str = "x"

    counts = Named(not_modified=2).counts()
    check_site(SiteState("example.com", checks=counts))  # must not raise
