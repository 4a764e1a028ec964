"""Attacks on the merge bases of the SQLite store writing behind (``commit_secs``):
real files, the operator's commands in another process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy_fresh.store.sqlite import SQLiteStore
from tests.store_contract import page
from tests.test_writebehind_adversarial import NOW, behind, operator, visited

if TYPE_CHECKING:
    from pathlib import Path


def test_a_row_given_again_after_a_group_wrote_it_keeps_the_crawls_change(
    tmp_path: Path,
) -> None:
    """Inside one group (a visit) the record is written behind, the rows are written
    into the group's transaction (a read that needs the file), then the record is given
    again (the provider signals) with a column back at the value the file had before
    the group. After the group commits, the row waits on, with the base of the first
    write: once another process writes the file, the merge takes the group's own
    committed value for that column ("left as found") and the crawl's last write of it
    is lost."""
    path = tmp_path / "state.sqlite"
    announced = NOW + 7 * 86_400  # an announced update: the record's due time
    with SQLiteStore(path) as setup:
        setup.put(visited(1, 1, NOW, next_due=announced))
        setup.put(visited(2, 1, NOW, next_due=4_000_000_000.0))
    crawl = behind(path)
    with crawl.grouped():
        record = crawl.get(page(1).key)
        record.visits, record.last_crawl, record.next_due = 2, NOW + 10, NOW + 3600
        crawl.put(record)  # the visit's write (its own due time)
        crawl.due(NOW + 20, 10)  # a read that needs the file: rows go into the group's
        record = crawl.get(page(1).key)
        record.next_due = announced  # the signals: due at the announced update again
        crawl.put(record)
    done = operator("due", page(2).url, "--sqlite-path", str(path))  # another record
    assert done.returncode == 0, done.stderr
    assert "1 of 1 pages made due" in done.stdout
    crawl.flush()
    assert crawl.get(page(1).key).next_due == announced
    crawl.close()
    with SQLiteStore(path) as after:
        assert after.get(page(1).key).next_due == announced


def test_a_new_record_given_again_after_its_group_committed_is_not_brought_back(
    tmp_path: Path,
) -> None:
    """A new record written into a group's transaction and given again before the group
    ends is in the file once the group commits: the operator may forget it, and the row
    still waiting must not write it back."""
    path = tmp_path / "state.sqlite"
    with SQLiteStore(path) as setup:
        setup.put(visited(2, 1, NOW))
    crawl = behind(path)
    with crawl.grouped():
        crawl.put(visited(1, 1, NOW))  # a new record (its first visit)
        crawl.due(NOW + 20, 10)  # a read that needs the file: rows go into the group's
        record = crawl.get(page(1).key)
        record.request = {"meta": {"seen": "again"}}
        crawl.put(record)
    done = operator("forget", page(1).url, "--sqlite-path", str(path))
    assert done.returncode == 0, done.stderr
    assert "1 pages forgotten" in done.stdout
    crawl.flush()
    assert crawl.get(page(1).key) is None  # forgotten, as the operator was told
    crawl.close()
    with SQLiteStore(path) as after:
        assert after.get(page(1).key) is None
