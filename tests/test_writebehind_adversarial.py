"""Attacks on the SQLite store writing behind (``commit_secs``, :setting:`FRESH_COMMIT_SECS`)
with real files and real processes: the operator's commands (``scrapy-fresh forget``,
``due``) run in another process while a store holds rows waiting in memory."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_fresh.exceptions import StoreError
from scrapy_fresh.store.base import PageState, SiteState, Status
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.store_contract import page

NOW = 1_700_000_000.0
ROOT = Path(__file__).resolve().parent.parent


def behind(path: Path, **kwargs: object) -> SQLiteStore:
    """A store as a crawl opens it: writing behind, flushed only when asked."""
    return SQLiteStore(path, batch_size=10_000, commit_secs=3600.0, **kwargs)  # type: ignore[arg-type]


def operator(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``scrapy-fresh ARGS`` in another process, as an operator would."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy_fresh.commands", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def visited(n: int, visits: int, when: float, **fields: object) -> PageState:
    """The record of page ``n`` after its ``visits``-th visit at ``when``."""
    fields.setdefault("next_due", when + 3600)
    return page(n, status=Status.IDLE, visits=visits, last_crawl=when, **fields)


def test_forget_during_a_waiting_visit_is_not_undone(tmp_path: Path) -> None:
    """The crawl visited a page (its row waits in memory); the operator forgets the page
    from another process; writing the waiting rows must not bring the record back."""
    path = tmp_path / "state.sqlite"
    with SQLiteStore(path) as setup:
        setup.put(visited(1, 1, NOW))
        setup.put(visited(2, 1, NOW))
    crawl = behind(path)
    crawl.put(visited(1, 2, NOW + 10))  # a visit, waiting
    crawl.put(visited(2, 2, NOW + 10))
    done = operator("forget", page(1).url, "--sqlite-path", str(path))
    assert done.returncode == 0, done.stderr
    assert "1 pages forgotten" in done.stdout
    crawl.flush()
    assert crawl.get(page(1).key) is None  # forgotten, as the operator was told
    assert crawl.get(page(2).key).visits == 2  # the other visit is written
    crawl.close()
    with SQLiteStore(path) as after:
        assert after.get(page(1).key) is None
        assert after.get(page(2).key).visits == 2


def test_due_during_a_waiting_discovery_update_is_kept(tmp_path: Path) -> None:
    """The crawl merged a sighting into a stored record (same visit, new request data,
    waiting); the operator makes the page due from another process; the waiting row
    must not put the old due time back."""
    path = tmp_path / "state.sqlite"
    with SQLiteStore(path) as setup:
        setup.put(visited(1, 3, NOW, next_due=4_000_000_000.0))
    crawl = behind(path)
    record = crawl.get(page(1).key)
    record.request = {"meta": {"seen": "again"}}
    crawl.put(record)  # a discovery field only: waiting
    done = operator("due", page(1).url, "--sqlite-path", str(path))
    assert done.returncode == 0, done.stderr
    assert "1 of 1 pages made due" in done.stdout
    crawl.flush()
    after = crawl.get(page(1).key)
    assert after.next_due < 4_000_000_000.0  # the operator's due time stays
    assert after.request == {"meta": {"seen": "again"}}  # and the crawl's sighting too
    assert after.visits == 3
    crawl.close()


def test_due_between_a_read_and_its_write_is_kept(tmp_path: Path) -> None:
    """The crawl read a record (a visit begins, or a sighting) and writes it back; the
    operator made the page due from another process in between: the write merges with
    the record as the crawl read it, so the operator's due time stays."""
    path = tmp_path / "state.sqlite"
    with SQLiteStore(path) as setup:
        setup.put(visited(1, 3, NOW, next_due=4_000_000_000.0))
    crawl = behind(path)
    record = crawl.get(page(1).key)
    done = operator("due", page(1).url, "--sqlite-path", str(path))
    assert done.returncode == 0, done.stderr
    record.request = {"meta": {"seen": "again"}}
    crawl.put(record)  # made from the copy read before the operator's write
    crawl.flush()
    after = crawl.get(page(1).key)
    assert after.next_due < 4_000_000_000.0  # the operator's due time stays
    assert after.request == {"meta": {"seen": "again"}}
    crawl.close()


def test_due_between_a_batch_read_and_its_write_is_kept(tmp_path: Path) -> None:
    """The same with records read in a batch (``get_many``: the scheduler sorting out
    known URLs, the provider signals): each row read is its record's merge base."""
    path = tmp_path / "state.sqlite"
    with SQLiteStore(path) as setup:
        setup.put_many([visited(n, 3, NOW, next_due=4_000_000_000.0) for n in (1, 2)])
    crawl = behind(path)
    records = crawl.get_many([page(1).key, page(2).key])
    done = operator("due", page(1).url, "--sqlite-path", str(path))
    assert done.returncode == 0, done.stderr
    for record in records.values():
        record.request = {"meta": {"seen": "again"}}
    crawl.put_many(records.values())
    crawl.flush()
    first, second = crawl.get(page(1).key), crawl.get(page(2).key)
    assert first.next_due < 4_000_000_000.0  # the operator's due time stays
    assert second.next_due == 4_000_000_000.0
    assert first.request == second.request == {"meta": {"seen": "again"}}
    crawl.close()


LOCK_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def hold_write_lock(path: Path) -> subprocess.Popen[str]:
    """Another process holding the file's write lock until its stdin gets a line."""
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "locked\n"
    return holder


def release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.communicate("go\n", timeout=30)
    assert holder.returncode == 0


def test_a_visit_given_while_another_process_holds_the_lock_does_not_fail(
    tmp_path: Path,
) -> None:
    """A visit's group ends after the interval while another process holds the write
    lock past the timeout: its rows were taken (they wait, and are written once the
    lock is free), so the visit must not fail (a crawl would drop the page's items and
    still write its visit later: a changed page whose items are never delivered)."""
    path = tmp_path / "state.sqlite"
    with SQLiteStore(path) as setup:
        setup.put(visited(1, 1, NOW))
    crawl = SQLiteStore(path, batch_size=10_000, commit_secs=0.05, timeout=0.2)
    holder = hold_write_lock(path)
    try:
        with crawl.grouped():  # one visit, as the crawl records it
            crawl.put(visited(1, 2, NOW + 10))
            time.sleep(0.1)  # the interval passes: the group's end writes them
            crawl.put_site(SiteState("example.com", visits=2, updated_at=NOW + 10))
        crawl.put(visited(2, 1, NOW + 11))  # and a write after it, interval passed too
        assert crawl.pending == 3  # still waiting, still read back
        assert crawl.get(page(1).key).visits == 2
    finally:
        release(holder)
    crawl.flush()
    crawl.close()
    with SQLiteStore(path) as after:
        assert after.get(page(1).key).visits == 2
        assert after.get(page(2).key).visits == 1
        assert after.get_site("example.com").visits == 2


VISIT_KILLED_INSIDE = """
import sys, time
from scrapy_fresh.store.base import SiteState
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.store_contract import page
from tests.test_writebehind_adversarial import NOW, visited
store = SQLiteStore(sys.argv[1], batch_size=10_000, commit_secs=3600.0)
with store.grouped():  # one visit: its record, its site, a meta record (gone feed)
    store.put(visited(1, 2, NOW + 10))
    store.put_site(SiteState("example.com", visits=2, updated_at=NOW + 10))
    store.update_meta("gone", page(1).key, lambda value: {"last_seen": NOW + 10})
    print("inside", flush=True)
    time.sleep(60)
"""


def test_a_visit_killed_before_its_group_ends_is_written_whole_or_not_at_all(
    tmp_path: Path,
) -> None:
    """A meta record written inside a visit's group makes the waiting rows go to the
    file first; they must go in the group's transaction, not one committed before it:
    killed before the group ends, the visit is all there or not at all."""
    path = tmp_path / "state.sqlite"
    with SQLiteStore(path) as setup:
        setup.put(visited(1, 1, NOW))
    child = subprocess.Popen(
        [sys.executable, "-c", VISIT_KILLED_INSIDE, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,  # imports tests.*
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "inside\n"
    finally:
        child.kill()
        child.communicate(timeout=30)
    with SQLiteStore(path) as after:
        record = after.get(page(1).key)
        site = after.get_site("example.com")
        meta = after.get_meta("gone", page(1).key)
        written = (record.visits == 2, site is not None, meta is not None)
        assert written in ((False, False, False), (True, True, True)), written


OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "visit", "other_add", "other_visit", "other_delete", "flush"]),
        st.integers(0, 2),
    ),
    max_size=40,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
@example(ops=[("other_add", 0), ("visit", 0), ("other_delete", 0), ("flush", 0)])
def test_doc_ids_and_visits_with_another_writer(tmp_path_factory, ops) -> None:
    """A store writing behind and another connection to the file (a second writer:
    the notify server, ``scrapy-fresh forget``) interleaved at random: once written, a
    doc id names one record forever, and a record's visits never move back."""
    path = tmp_path_factory.mktemp("ids") / "state.sqlite"
    crawl = behind(path)
    other = SQLiteStore(path)
    owner: dict[int, str] = {}  # doc id -> the key it named once written
    highest: dict[str, int] = {}  # key -> the most visits written
    forgotten: set[str] = set()  # deleted by the other writer, not added again since
    # Found by the crawl while absent from the file, waiting: a new record of its own
    # (written even if the other writer added and deleted one meanwhile).
    found: set[str] = set()

    def check() -> None:
        for state in other.iterate():
            assert owner.setdefault(state.doc_id, state.key) == state.key, "doc id reused"
            assert state.key not in forgotten, "a forgotten record came back"
            assert state.visits >= highest.get(state.key, 0), "visits moved back"
            highest[state.key] = state.visits

    try:
        for op, n in ops:
            key = page(n).key
            if op in ("add", "other_add"):
                added = (crawl if op == "add" else other).add_many([page(n)])
                if op == "add":
                    found.update(added)
                forgotten.discard(key)  # found again: a new record
                highest.pop(key, None)
            elif op in ("visit", "other_visit"):
                store = crawl if op == "visit" else other
                current = store.get(key)
                if current is not None:
                    store.put(visited(n, current.visits + 1, NOW + current.visits + 1))
            elif op == "other_delete":
                if other.delete(key):
                    highest.pop(key, None)
                    if key not in found:
                        forgotten.add(key)
            else:
                crawl.flush()
                found.clear()
            if op.startswith("other") or op == "flush":
                check()
        crawl.flush()
        check()
    finally:
        crawl.close()
        other.close()


class _CommitFails(SQLiteStore):
    """A store whose next commit of an open transaction fails as SQLite's does on a full
    disk or an I/O error: the transaction is rolled back. (The one stand-in here: a real
    disk-full COMMIT cannot be had on demand; ``max_page_count`` fails statements.)"""

    fail_next = False

    def _commit(self, conn: sqlite3.Connection) -> None:
        if self.fail_next and conn.in_transaction:
            self.fail_next = False
            conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        super()._commit(conn)


def test_a_group_whose_commit_fails_loses_no_earlier_waiting_visit(tmp_path: Path) -> None:
    """Review finding: rows waiting from an earlier visit went into a later group's
    transaction (a meta write in it) and were dropped from memory before it committed;
    its commit failed, and the earlier visit, acknowledged, was lost."""
    path = tmp_path / "s.sqlite"
    with SQLiteStore(path) as first:
        first.put(visited(1, 1, NOW))
    store = _CommitFails(path, batch_size=10_000, commit_secs=3600.0)
    store.put(visited(1, 2, NOW + 5))  # an earlier visit: waiting, its caller told "done"
    store.fail_next = True
    with pytest.raises(StoreError), store.grouped():
        store.put_meta("ns", "k", {"a": 1})  # the next visit's meta write
    assert store.get(page(1).key).visits == 2  # type: ignore[union-attr]
    store.close()
    with SQLiteStore(path) as reopened:
        assert reopened.get(page(1).key).visits == 2  # type: ignore[union-attr]
