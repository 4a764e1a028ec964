"""Adversarial review (session 18) of 47bbc44, eb05078, 25ca9a4, 27ca115, 39a9f91."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from scrapy_fresh.store.base import Status
from scrapy_fresh.store.sqlite import SQLiteStore
from tests.store_contract import page
from tests.test_adv_row_memory import got_from_a_waiting_row_made_due
from tests.test_sqlite_row_memory import in_file, seed
from tests.test_writebehind_adversarial import NOW, behind, visited

if TYPE_CHECKING:
    from pathlib import Path

FAR = 4_000_000_000.0


# -- 47bbc44: writing behind, merged rows kept as stale bases -------------------------


@pytest.mark.parametrize("put_when", ["in the group", "after the group"])
def test_an_in_flight_mark_in_a_group_after_a_merging_write_reaches_the_merged_base(
    tmp_path: Path, put_when: str
) -> None:
    """Record 1 waits (a sighting); the operator makes it due; the visit gets record 1
    from its waiting row. Inside a group the waiting rows are written merged (the
    operator's due time), then the scheduler marks record 1 in flight in the same group.
    The visit then writes record 1 idle. The base kept for it (Waiting.merged_away via
    uncommitted_merged) must carry the mark, as the stale/read/uncommitted rows do
    (Waiting.marked): otherwise the merge takes the file's in-flight status as a column
    the crawl left as found, and the visited record stays in flight."""
    path = tmp_path / "state.sqlite"
    crawl, record = got_from_a_waiting_row_made_due(path)
    with crawl.grouped():
        crawl.put(visited(2, 2, NOW + 10))
        crawl.counts()  # the waiting rows: written merged into the group's transaction
        crawl.mark_in_flight([page(1).key], NOW + 20)
        record.visits, record.last_crawl = 2, NOW + 30
        record.status, record.in_flight_since = Status.IDLE, None
        if put_when == "in the group":
            crawl.put(record)
    if put_when == "after the group":
        crawl.put(record)
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.visits == 2
    assert (stored.status, stored.in_flight_since) == (Status.IDLE, None)
    assert stored.next_due == NOW  # the operator's due time stays
    assert crawl.get(page(1).key) == stored
    crawl.close()


def test_control_an_in_flight_mark_after_a_merging_write_out_outside_a_group(
    tmp_path: Path,
) -> None:
    """Control of the test above: the same without a group holds (the mark reaches the
    stale base through Waiting.marked)."""
    path = tmp_path / "state.sqlite"
    crawl, record = got_from_a_waiting_row_made_due(path)
    crawl.put(visited(2, 2, NOW + 10))
    crawl.flush()  # written merged
    crawl.mark_in_flight([page(1).key], NOW + 20)
    record.visits, record.last_crawl = 2, NOW + 30
    record.status, record.in_flight_since = Status.IDLE, None
    crawl.put(record)
    crawl.flush()
    stored = in_file(path, 1)
    assert (stored.visits, stored.status, stored.in_flight_since) == (2, Status.IDLE, None)
    assert stored.next_due == NOW
    assert crawl.get(page(1).key) == stored
    crawl.close()


def test_a_visit_given_again_after_an_in_flight_mark_in_its_group_stays_idle_after_another_write(
    tmp_path: Path,
) -> None:
    """No operator change of record 1 at all. Inside a group, record 1's waiting row is
    written (by the in-flight mark's own write) and then marked in flight; the visit
    gives record 1 again, idle, in the group. Once the group commits, the row given
    again takes the row written as its base (Waiting.committed) -- without the mark.
    Another process then writes an unrelated record, so the next write-out merges: the
    crawl's idle status equals the (unmarked) base, so the file's in-flight mark wins
    and the visited record stays in flight."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW, next_due=FAR), visited(2, 1, NOW, next_due=FAR))
    crawl = behind(path)
    with crawl.grouped():
        record = crawl.get(page(1).key)
        assert record is not None
        record.request = {"seen": 1}
        crawl.put(record)  # waiting
        crawl.mark_in_flight([page(1).key], NOW + 20)  # writes it, then marks it
        record.visits, record.last_crawl = 2, NOW + 30
        record.status, record.in_flight_since = Status.IDLE, None
        crawl.put(record)  # given again, idle
    with SQLiteStore(path) as operator:
        assert operator.make_due([page(2).key], NOW)  # another record
    crawl.flush()
    stored = in_file(path, 1)
    assert stored.visits == 2
    assert (stored.status, stored.in_flight_since) == (Status.IDLE, None)
    assert crawl.get(page(1).key) == stored
    crawl.close()


@pytest.mark.parametrize("kept_as", ["read row made stale", "merged waiting row"])
def test_a_record_another_process_deleted_is_not_written_back_after_a_write_out(
    tmp_path: Path, kept_as: str
) -> None:
    """The visit got record 1 (from memory); the operator forgets it from another
    process; another record's rows are written out (the file's change seen: the row
    record 1 was got from is kept as a stale base); the visit then puts record 1. The
    store knows the record was in the file and is gone (its own deletes drop the stale
    bases), as when the put comes before the write-out, where merged() leaves it out:
    the forgotten record must not come back. With the stale base the put finds no file
    row, takes the record for a new one naming its doc id, and writes it directly."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW, next_due=FAR), visited(2, 1, NOW, next_due=FAR))
    crawl = behind(path)
    record = crawl.get(page(1).key)
    assert record is not None
    if kept_as == "merged waiting row":
        record.request = {"seen": 1}
        crawl.put(record)  # waiting; base: the file's row
        with SQLiteStore(path) as operator:
            assert operator.make_due([page(1).key], NOW)
        record = crawl.get(page(1).key)  # the waiting row
        assert record is not None
        crawl.flush()  # written merged: kept as a stale base (Waiting.merged_away)
    else:
        assert crawl.get(page(2).key) is not None
    with SQLiteStore(path) as operator:
        assert operator.delete(page(1).key)  # scrapy-fresh forget
    crawl.put(visited(2, 2, NOW + 10))
    crawl.flush()  # the file's change seen
    record.visits, record.last_crawl = 2, NOW + 30
    crawl.put(record)
    crawl.flush()
    with SQLiteStore(path) as other:
        assert other.get(page(1).key) is None  # forgotten, as the operator was told
    assert crawl.get(page(1).key) is None
    crawl.close()


def test_control_a_record_deleted_between_get_and_put_without_a_write_out_stays_deleted(
    tmp_path: Path,
) -> None:
    """Control: the same without the write-out in between holds (merged() leaves the
    record out)."""
    path = tmp_path / "state.sqlite"
    seed(path, visited(1, 1, NOW, next_due=FAR), visited(2, 1, NOW, next_due=FAR))
    crawl = behind(path)
    record = crawl.get(page(1).key)
    assert record is not None
    with SQLiteStore(path) as operator:
        assert operator.delete(page(1).key)
    record.visits, record.last_crawl = 2, NOW + 30
    crawl.put(record)
    crawl.flush()
    with SQLiteStore(path) as other:
        assert other.get(page(1).key) is None
    assert crawl.get(page(1).key) is None
    crawl.close()
